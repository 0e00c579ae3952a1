"""The fuser protocol (Burn's ``OperationFuser``) and the machinery fusers share.

The explorer offers a segment's ops, one at a time from a starting position, to every
fuser; each takes the op or refuses, and once it refuses it is closed. The explorer keeps
the fuser whose :class:`Candidate` scores best (ops per launch) and asks what it covers.
A fuser also takes drops (they carry liveness) and views of tensors that exist before its
kernel (they are hoisted: run as aliases before the launch, read through index maps).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..ir import DropOp, OperationIr, ViewOp
from ..kernel import Level, Lowered, lower

__all__ = ["Candidate", "Fuser", "BlockFuser"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """What a fuser would launch: the kernel for ``taken`` ops, after ``hoisted`` views,
    covering the segment from the start position up to ``end``."""

    lowered: Lowered
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
            if op.input.id in self.produced:
                return False  # a view of a value computed here: its producer must store first
            self.hoisted.append(pos)
            self.end = pos + 1
            return True
        if not op.fusible or self.computing >= self.max_ops:
            return False
        level = self.level(op)
        if level is None:
            return False
        self.taken.append(pos)
        self.levels.append(level)
        if self._build().kernel.storage_bindings > self.max_bindings:
            self.taken.pop()
            self.levels.pop()
            self.on_untake(op)
            return False
        self.end = pos + 1
        self.produced.update(t.id for t in op.outputs())
        self.computing += 1
        return True

    def on_untake(self, op: OperationIr) -> None:
        """Subclasses undo what :meth:`level` recorded for a refused op."""

    def _build(self) -> Lowered:
        assert self.space is not None
        return lower([self.ops[i] for i in self.taken], self.levels, self.space,
                     self.reduced)

    def candidate(self, score: int) -> Candidate | None:
        if not score or self.space is None:
            return None
        return Candidate(self._build(), tuple(self.taken),
                         tuple(h for h in self.hoisted if h < self.end), self.end, score)
