"""The matmul fuser: one matmul with element-wise work on its result fused on write.

A block opens with a :class:`~asyncfusion.ir.MatmulOp`: its index space is the output
plus K, folded. Element-wise ops of the output's shape that follow (a bias add, an
activation, a scale, a residual add) become OUT work: each output tile computes them in
registers before its store, so ``relu(x @ w + b)`` is one launch and the bare product is
never written when nothing else reads it.
"""

from __future__ import annotations

from ..ir import ElementwiseOp, MatmulOp, OperationIr, ViewOp
from ..kernel import Level
from .reduce import ReduceFuser

__all__ = ["MatmulFuser"]


class MatmulFuser(ReduceFuser):
    name = "matmul"

    def level(self, op: OperationIr) -> Level | None:
        if type(op) is MatmulOp:
            if self.computing:
                return None  # the matmul opens its block
            self.space = op.space
            self.reduced = (False,) * len(op.out.shape) + (True,)
            self.out_shapes = [op.out.shape]
            self.keep_shape = op.out.shape + (1,)
            self.reduce_at = len(self.taken)
            self.value_level[op.out.id] = (Level.OUT, op.out.shape)
            return Level.ROW
        if type(op) is not ElementwiseOp or self.reduce_at is None:
            return None
        level = self._after(op)
        if level is not Level.OUT:  # work over the space (with K) is not an epilogue
            self.value_level.pop(op.out.id, None)
            return None
        return level

    def alias(self, op: ViewOp) -> Level | None:
        return None  # a product's views read its stored tiles

    def on_untake(self, op: OperationIr) -> None:
        super().on_untake(op)
        if type(op) is MatmulOp:
            self.reduce_at = None
            self.reduced = ()
            self.space = None
