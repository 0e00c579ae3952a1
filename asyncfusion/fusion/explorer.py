"""The explorer: cuts a segment into blocks and asks the element-wise fuser for kernels.

Element-wise ops of one output shape join the open block; drops ride along (they only
carry liveness); any other op closes the block and runs unfused, in order. A block is
also closed when it reaches the per-kernel op cap.
"""

from __future__ import annotations

from ..ir import DropOp, OperationIr
from .elementwise import ElementwiseFuser
from .plan import Step, UnfusedStep

__all__ = ["explore"]


def explore(ops: list[OperationIr], fuser: ElementwiseFuser, rel: dict[int, int]) -> list[Step]:
    steps: list[Step] = []
    block: list[int] = []
    fused_ops = 0
    shape: tuple[int, ...] | None = None

    def close() -> None:
        nonlocal fused_ops
        if block:
            steps.extend(fuser.fuse(ops, list(block), rel))
            block.clear()
            fused_ops = 0

    for i, op in enumerate(ops):
        if op.fusible:
            out_shape = op.outputs()[0].shape
            if block and (out_shape != shape or fused_ops >= fuser.max_ops):
                close()
            if not block:
                shape = out_shape
            block.append(i)
            fused_ops += 1
        elif type(op) is DropOp and block:
            block.append(i)
        else:
            close()
            steps.append(UnfusedStep(i))
    close()
    return steps
