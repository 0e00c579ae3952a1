"""The reduce fuser: a chain of reductions over the same axes with element-wise work
fused on read, between them and on write.

Before the first reduction it takes element-wise ops of the reduction's input shape (ROW:
they run in the loop that feeds the fold). The reduction fixes the index space and the
reduced axes. After it, an op of a reduction's output shape that reads only row values
is OUT work (run once per output row, fused on write); an op of the input shape is POST
work (run per element again, reading OUT values broadcast along the reduced axes:
``e / e.sum(-1, keepdims=True)``). A later reduction of an element value over the same
axes opens the next phase of the same kernel, so ``x - x.max(-1, keepdims=True)``, its
``exp``, the ``sum`` of that and the division are one kernel (softmax; layer_norm's mean
then variance likewise) — where the next phase needs the chain: its value reads an
earlier result, or only tensors the chain already reads (``x.argmax(-1) + x.sum(-1)``).
A reduction of other data that reads no result is a kernel of its own: chained, each
row's passes would run one after another in one thread where separate kernels run side
by side (K independent scorings of K databases are K kernels, not K / 3 of 3 passes).

POST ops at the end whose results are only read by later element-wise ops or reductions
are handed back (trimmed) when that leaves the kernel storing row values only: the next
kernel recomputes them on read instead of this one writing them out whole. Where a
matmul, a view or a custom kernel reads them, they stay (``normalize(q) @ db.T``: the
normalization is one kernel, not a reduction and then a division of its own).
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir import ElementwiseOp, IotaOp, OperationIr, ReduceOp, TensorIr, ViewOp
from ..kernel import Level
from ..ops import REDUCTIONS
from .base import BlockFuser, Candidate

__all__ = ["ReduceFuser", "MAX_CHAIN"]

# Reductions one kernel chains (each takes a workgroup array of partials).
MAX_CHAIN = 3
_ON_READ = (ElementwiseOp, ReduceOp)  # readers whose kernels compute element work on read


class ReduceFuser(BlockFuser):
    name = "reduce"

    def start(self, ops: list[OperationIr]) -> None:
        super().start(ops)
        self.reduce_at: int | None = None
        self.chain: list[int] = []  # taken index of each reduction
        self.out_shapes: list[tuple[int, ...]] = []  # of the row values (repeats kept)
        self.keep_shape: tuple[int, ...] = ()
        self.value_level: dict[int, tuple[Level, tuple[int, ...]]] = {}
        # per element value: the tensors made elsewhere it reads per element, and
        # whether it reads a row value (a result of the chain)
        self.reads: dict[int, frozenset[int]] = {}
        self.tied: set[int] = set()
        self.chain_reads: list[frozenset[int]] = []  # per reduction: what its value reads

    def level(self, op: OperationIr) -> Level | None:
        if type(op) is IotaOp:
            return Level.ROW  # a source, read at the level of each op that reads it
        if type(op) is ReduceOp:
            return self._reduction(op)
        if type(op) is not ElementwiseOp:
            return None
        if self.reduce_at is None:  # prologue
            if self.space is None:
                self.space = op.out.shape
            if op.out.shape != self.space:
                return None
            self.value_level[op.out.id] = (Level.ROW, op.out.shape)
            self._track(op)
            return Level.ROW
        return self._after(op)

    def _reduction(self, op: ReduceOp) -> Level | None:
        if self.space is None:
            self.space = op.input.shape
        reduced = tuple(d in op.axes for d in range(len(self.space)))
        if op.input.shape != self.space:
            return None
        if self.reduce_at is None:
            self.reduced = reduced
            self.keep_shape = tuple(1 if r else s for s, r in zip(self.space, reduced,
                                                                  strict=True))
            self.reduce_at = len(self.taken)
            level = Level.ROW
        else:  # a later phase: same axes, one arg reduction at most, an element value
            # (or a row value, where rows have one element)
            src = self.value_level.get(op.input.id)
            if src is None and not any(op.input.id == t.id for p in self.taken
                                       for t in self.ops[p].inputs()):
                return None  # a row this kernel neither computes nor loads: its own kernel
            if reduced != self.reduced or len(self.chain) >= MAX_CHAIN or \
                    REDUCTIONS[op.op].arg or (src is not None and src[0] is Level.OUT
                                              and self.keep_shape != self.space):
                return None
            tied = op.input.id in self.tied or (src is not None and src[0] is Level.OUT)
            if not tied and not self._reads(op.input) <= frozenset().union(*self.chain_reads):
                return None  # independent of the chain and reading other data
            level = Level.POST
        self.chain_reads.append(self._reads(op.input))
        self.chain.append(len(self.taken))
        self.out_shapes.append(op.out.shape)
        self.value_level[op.out.id] = (Level.OUT, op.out.shape)
        return level

    def _after(self, op: ElementwiseOp) -> Level | None:
        assert self.space is not None
        ins = [self.value_level.get(t.id) for t in op.inputs() if isinstance(t, TensorIr)]
        reads_row = any(v is not None and v[0] is not Level.OUT for v in ins)
        if op.out.shape in self.out_shapes and not reads_row:
            level = Level.OUT
        elif op.out.shape == self.space:
            n = len(self.space)
            for v in ins:  # OUT values must broadcast along the reduced axes only
                if v is not None and v[0] is Level.OUT and \
                        (1,) * (n - len(v[1])) + v[1] != self.keep_shape:
                    return None
            level = Level.POST
        else:
            return None
        self.value_level[op.out.id] = (level, op.out.shape)
        if level is Level.POST:
            self._track(op)
        return level

    def _reads(self, t: TensorIr) -> frozenset[int]:
        """The tensors made elsewhere that element value ``t`` reads per element."""
        if t.id in self.reads:
            return self.reads[t.id]
        return frozenset() if t.id in self.value_level or t.id in self.iotas else \
            frozenset((t.id,))

    def _track(self, op: ElementwiseOp) -> None:
        """What element op ``op`` reads, and whether it reads a row value."""
        ins = [t for t in op.inputs() if isinstance(t, TensorIr)]
        self.reads[op.out.id] = frozenset().union(*(self._reads(t) for t in ins))
        if any(t.id in self.tied or self.value_level.get(t.id, (None,))[0] is Level.OUT
               for t in ins):
            self.tied.add(op.out.id)

    def alias(self, op: ViewOp) -> Level | None:
        """A row value seen with or without the reduced dims (``logsumexp``'s result
        without its kept dims) is the same value, stored by row."""
        v = self.value_level.get(op.input.id)
        if v is None or v[0] is not Level.OUT or op.out.layout is not None:
            return None
        squeezed = tuple(s for s, r in zip(self.keep_shape, self.reduced, strict=True)
                         if not r)
        if op.out.shape not in (self.keep_shape, squeezed):
            return None
        self.out_shapes.append(op.out.shape)
        self.value_level[op.out.id] = (Level.OUT, op.out.shape)
        return Level.OUT

    def on_untake(self, op: OperationIr) -> None:
        for t in op.outputs():
            self.value_level.pop(t.id, None)
            self.reads.pop(t.id, None)
            self.tied.discard(t.id)
        if type(op) is ReduceOp:
            self.chain.pop()
            self.chain_reads.pop()
            self.out_shapes.remove(op.out.shape)
            if not self.chain:
                self.reduce_at = None
                self.reduced = ()

    def complete(self) -> bool:
        return self.reduce_at is not None and self.reduce_at < len(self.taken)

    def _recomputable(self, pos: int) -> bool:
        """Whether every later reader of op ``pos``'s result can compute it on read (an
        element-wise op or a reduction: their kernels take element work in); a matmul,
        a view or a custom kernel reads it stored, so handing it back would only cost
        a kernel of its own."""
        outs = {t.id for t in self.ops[pos].outputs()}
        return all(type(op) in _ON_READ for op in self.ops[pos + 1:]
                   if any(t.id in outs for t in op.inputs()))

    def finish(self, later_reads: Callable[[int], set[int]]) -> Candidate | None:
        if self.reduce_at is None:
            return None
        whole = self.candidate()
        if whole is None or self.keep_shape == self.space:  # rows of one element: an
            return whole  # element value is no bigger than a row value
        trimmed = False
        while True:  # hand back trailing POST ops whose results only feed later ops
            k = max(k for k, p in enumerate(self.taken) if self.ops[p].fusible)
            pos = self.taken[k]
            if self.levels[k] is not Level.POST or type(self.ops[pos]) is ReduceOp or not any(
                    t.id in later_reads(pos + 1) for t in self.ops[pos].outputs()) or \
                    not self._recomputable(pos):
                break
            del self.taken[k:], self.levels[k:]
            self.computing -= 1
            trimmed = True
        if not trimmed:
            return whole
        self.end = self.taken[-1] + 1
        cand = self.candidate()
        if cand is None or any(st.level is not Level.OUT for st in cand.lower().kernel.stores):
            return whole  # trimmed, it would write an element value out whole all the same
        return cand
