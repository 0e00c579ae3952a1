"""The reduce fuser: one reduction with element-wise work fused on read and on write.

Before the reduction it takes element-wise ops of the reduction's input shape (ROW: they
run in the loop that feeds the fold). The reduction itself fixes the index space and the
reduced axes. After it, an op of the reduction's output shape is OUT work (run once per
output, fused on write); an op of the input shape is POST work (run per element again,
reading OUT values broadcast along the reduced axes: ``e / e.sum(-1, keepdims=True)``).

POST ops at the end whose results are only read by later ops are handed back (trimmed):
the next kernel recomputes them on read instead of this one writing them out whole.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir import ElementwiseOp, IotaOp, OperationIr, ReduceOp, TensorIr
from ..kernel import Level
from .base import BlockFuser, Candidate

__all__ = ["ReduceFuser"]


class ReduceFuser(BlockFuser):
    name = "reduce"

    def start(self, ops: list[OperationIr]) -> None:
        super().start(ops)
        self.reduce_at: int | None = None
        self.out_shape: tuple[int, ...] = ()
        self.keep_shape: tuple[int, ...] = ()
        self.value_level: dict[int, tuple[Level, tuple[int, ...]]] = {}

    def level(self, op: OperationIr) -> Level | None:
        if type(op) is IotaOp:
            return Level.ROW  # a source, read at the level of each op that reads it
        if type(op) is ReduceOp:
            if self.reduce_at is not None:
                return None
            if self.space is None:
                self.space = op.input.shape
            if op.input.shape != self.space:
                return None
            self.reduced = tuple(d in op.axes for d in range(len(self.space)))
            self.out_shape = op.out.shape
            self.keep_shape = tuple(1 if r else s for s, r in zip(self.space, self.reduced,
                                                                  strict=True))
            self.reduce_at = len(self.taken)
            self.value_level[op.out.id] = (Level.OUT, op.out.shape)
            return Level.ROW
        if type(op) is not ElementwiseOp:
            return None
        if self.reduce_at is None:  # prologue
            if self.space is None:
                self.space = op.out.shape
            if op.out.shape != self.space:
                return None
            self.value_level[op.out.id] = (Level.ROW, op.out.shape)
            return Level.ROW
        return self._after(op)

    def _after(self, op: ElementwiseOp) -> Level | None:
        assert self.space is not None
        ins = [self.value_level.get(t.id) for t in op.inputs() if isinstance(t, TensorIr)]
        reads_row = any(v is not None and v[0] is not Level.OUT for v in ins)
        if op.out.shape == self.out_shape and not reads_row:
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
        return level

    def on_untake(self, op: OperationIr) -> None:
        for t in op.outputs():
            self.value_level.pop(t.id, None)
        if type(op) is ReduceOp:
            self.reduce_at = None
            self.reduced = ()

    def complete(self) -> bool:
        return self.reduce_at is not None and self.reduce_at < len(self.taken)

    def finish(self, later_reads: Callable[[int], set[int]]) -> Candidate | None:
        if self.reduce_at is None:
            return None
        trimmed = False
        while True:  # hand back trailing POST ops whose results only feed later ops
            k = max(k for k, p in enumerate(self.taken) if self.ops[p].fusible)
            pos = self.taken[k]
            if self.levels[k] is not Level.POST or not any(
                    t.id in later_reads(pos + 1) for t in self.ops[pos].outputs()):
                break
            del self.taken[k:], self.levels[k:]
            self.computing -= 1
            trimmed = True
        if trimmed:
            self.end = self.taken[-1] + 1
        return self.candidate()
