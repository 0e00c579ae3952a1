"""The fuser protocol (Burn's ``OperationFuser``) and the machinery fusers share.

The explorer offers a segment's ops, one at a time from a starting position, to every
fuser; each takes the op or refuses, and once it refuses it is closed. The explorer keeps
the fuser whose :class:`Candidate` scores best (ops per launch) and asks what it covers.
A fuser also takes drops (they carry liveness) and views of tensors that exist before its
kernel (they are hoisted: run as aliases before the launch, read through index maps).

An arange (:class:`IotaOp`) is taken as a source: its readers in the block compute it
from their index, and views of it are taken along (read through their layouts). It must
die in the block — else the block is cut before it, and the arange gets a kernel of its
own — unless it has the index space's shape: then the kernel also stores it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..ir import DropOp, IotaOp, OperationIr, TensorStatus, ViewOp, numel
from ..kernel import Level, Lowered, lower

__all__ = ["APART_AT", "Candidate", "Fuser", "BlockFuser"]

# An index space of this many elements fills the GPU with one kernel: ops that share no
# tensor with a block of such a space get a kernel of their own (:meth:`BlockFuser.apart`).
APART_AT = 1 << 24


@dataclass(frozen=True, slots=True)
class Candidate:
    """What a fuser would launch: the kernel for ``taken`` ops, after ``hoisted`` views,
    covering the segment from the start position up to ``end``. ``lower`` lowers it (once,
    however often it is called): the explorer calls it for the best candidate only."""

    lower: Callable[[], Lowered]
    taken: tuple[int, ...]
    hoisted: tuple[int, ...]
    end: int
    score: int


class Fuser(Protocol):
    name: str

    def start(self, ops: list[OperationIr]) -> None: ...

    def try_add(self, pos: int) -> bool: ...

    def finish(self, later_reads: Callable[[int], set[int]]) -> Candidate | None: ...


class BlockFuser:
    """Shared state of a fuser: taken ops and their levels, produced ids, hoisted views,
    the binding and op caps. Subclasses decide each op's level (or refuse)."""

    name = "block"

    def __init__(self, max_bindings: int, max_ops: int = 64) -> None:
        if max_bindings < 4:
            raise ValueError("a fused kernel needs at least 4 storage bindings")
        self.max_bindings = max_bindings
        self.max_ops = max_ops

    def start(self, ops: list[OperationIr]) -> None:
        self.ops = ops
        self.taken: list[int] = []
        self.levels: list[Level] = []
        self.hoisted: list[int] = []
        self.produced: set[int] = set()
        self.computing = 0
        self.space: tuple[int, ...] | None = None
        self.reduced: tuple[bool, ...] = ()
        self.end = -1
        self.iotas: dict[int, int] = {}  # an arange or a view of one: taken index of its op
        self.touched: set[int] = set()  # tensors the taken ops read or make
        # At most this many buffers would be bound (reads of tensors made elsewhere, and
        # outputs): only past the cap is the block lowered to count them exactly.
        self.bindings_bound = 0

    def level(self, op: OperationIr) -> Level | None:
        raise NotImplementedError

    def try_add(self, pos: int) -> bool:
        op = self.ops[pos]
        if type(op) is DropOp:
            self.taken.append(pos)
            self.levels.append(Level.ROW)
            self.end = pos + 1
            return True
        if type(op) is ViewOp:
            if op.input.id in self.iotas:  # a view of an arange: read through its layout
                self.iotas[op.out.id] = self.iotas[op.input.id]
                self.taken.append(pos)
                self.levels.append(Level.ROW)
                self.end = pos + 1
                return True
            if op.input.id in self.produced:  # a value computed here: its producer must
                level = self.alias(op)  # store first, unless the view is the same value
                if level is None:
                    return False
                self.taken.append(pos)
                self.levels.append(level)
                self.produced.add(op.out.id)
                self.end = pos + 1
                return True
            self.hoisted.append(pos)
            self.end = pos + 1
            return True
        if not op.fusible or self.computing >= self.max_ops:
            return False
        level = self.level(op)
        if level is None or self.apart(op):
            return False
        self.taken.append(pos)
        self.levels.append(level)
        if type(op) is IotaOp:  # a source: binds nothing
            self.iotas[op.out.id] = len(self.taken) - 1
        else:
            produced, iotas = self.produced, self.iotas
            more = len(op.outputs()) + sum(1 for t in op.inputs()
                                           if t.id not in produced and t.id not in iotas)
            self.bindings_bound += more
            if self.bindings_bound > self.max_bindings and \
                    self._build().kernel.storage_bindings > self.max_bindings:
                self.bindings_bound -= more
                self.taken.pop()
                self.levels.pop()
                self.on_untake(op)
                return False
        self.end = pos + 1
        if type(op) is not IotaOp:  # an arange is read from the index, like an input
            self.produced.update(t.id for t in op.outputs())
        self.touched.update(t.id for t in (*op.inputs(), *op.outputs()))
        self.computing += 1
        return True

    def apart(self, op: OperationIr) -> bool:
        """Whether ``op`` reads tensors but none that the block reads or makes, in an index
        space of :data:`APART_AT` elements or more: it gets a kernel of its own. Packed
        together, unrelated works of that size save launches that are cheap beside their
        kernels, and every thread holds the registers of all of them (on an H100, 16 seed
        chains of 64M floats ran 8% slower per chain packed 8 to a kernel)."""
        if not self.computing or self.space is None or numel(self.space) < APART_AT:
            return False
        inputs = op.inputs()
        return bool(inputs) and not any(t.id in self.touched for t in inputs)

    def alias(self, op: ViewOp) -> Level | None:
        """The level of a view of a value this kernel computes, if the kernel can hand it
        on as the same value (its storage needs no other order): none by default."""
        return None

    def on_untake(self, op: OperationIr) -> None:
        """Subclasses undo what :meth:`level` recorded for a refused op."""

    def _build(self) -> Lowered:
        assert self.space is not None
        return lower([self.ops[i] for i in self.taken], self.levels, self.space,
                     self.reduced)

    def _cut_escaping_iotas(self) -> None:
        """Cut the block before the first arange with a tensor (it, or a view of it) that
        outlives the block, until none does; an arange of the index space's shape may
        outlive it: the kernel stores it."""
        while True:
            ops = [self.ops[p] for p in self.taken]
            dead = {t.id for op in ops for t in op.inputs()
                    if type(op) is DropOp or t.status is TensorStatus.READ_WRITE}
            stored = {t.id for op in ops if type(op) is IotaOp
                      for t in op.outputs() if t.shape == self.space}
            cut = min((k for tid, k in self.iotas.items() if tid not in dead | stored),
                      default=None)
            if cut is None:
                return
            self.end = self.taken[cut]
            del self.taken[cut:], self.levels[cut:]
            self.iotas = {tid: k for tid, k in self.iotas.items() if k < cut}
            self.computing = sum(1 for p in self.taken if self.ops[p].fusible)

    def complete(self) -> bool:
        """Whether what is left after a cut still makes this fuser's kernel."""
        return True

    def candidate(self) -> Candidate | None:
        self._cut_escaping_iotas()
        if not self.computing or self.space is None or not self.complete():
            return None
        hoisted = tuple(h for h in self.hoisted if h < self.end)
        block = [self.ops[i] for i in self.taken]
        lowering = functools.cache(functools.partial(lower, block, list(self.levels),
                                                     self.space, self.reduced))
        return Candidate(lowering, tuple(self.taken), hoisted, self.end, self.computing)
