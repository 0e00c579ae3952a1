"""The element-wise fuser: element-wise ops of one output shape in one kernel."""

from __future__ import annotations

from collections.abc import Callable

from ..ir import ElementwiseOp, OperationIr
from ..kernel import Level
from .base import BlockFuser, Candidate

__all__ = ["ElementwiseFuser"]


class ElementwiseFuser(BlockFuser):
    name = "elementwise"

    def level(self, op: OperationIr) -> Level | None:
        if type(op) is not ElementwiseOp:
            return None
        if self.space is None:
            self.space = op.out.shape
        return Level.ROW if op.out.shape == self.space else None

    def on_untake(self, op: OperationIr) -> None:
        if not self.taken or all(type(self.ops[i]) is not ElementwiseOp for i in self.taken):
            self.space = None

    def finish(self, later_reads: Callable[[int], set[int]]) -> Candidate | None:
        return self.candidate(self.computing)
