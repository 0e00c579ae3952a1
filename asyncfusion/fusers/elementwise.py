"""The element-wise fuser: element-wise ops of one output shape in one kernel, and gathers
whose input and indices come from memory (a gather cannot read registers: an arange may
be its input, not its indices), and aranges read where they are consumed."""

from __future__ import annotations

from collections.abc import Callable

from ..ir import ElementwiseOp, GatherOp, IotaOp, OperationIr
from ..kernel import Level
from .base import BlockFuser, Candidate

__all__ = ["ElementwiseFuser"]


class ElementwiseFuser(BlockFuser):
    name = "elementwise"

    def level(self, op: OperationIr) -> Level | None:
        if type(op) is IotaOp:
            return Level.ROW  # a source, read where it is consumed
        if type(op) is GatherOp:
            if op.input.id in self.produced or op.index.id in self.produced \
                    or op.index.id in self.iotas:  # indices are loaded, not computed
                return None
        elif type(op) is not ElementwiseOp:
            return None
        if self.space is None:
            self.space = op.out.shape
        return Level.ROW if op.out.shape == self.space else None

    def on_untake(self, op: OperationIr) -> None:
        if not self.taken or all(type(self.ops[i]) not in (ElementwiseOp, GatherOp)
                                 for i in self.taken):
            self.space = None

    def finish(self, later_reads: Callable[[int], set[int]]) -> Candidate | None:
        return self.candidate()
