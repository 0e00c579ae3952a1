"""The element-wise fuser: one kernel per block, split to respect the binding limit.

A kernel may bind at most ``max_bindings`` storage buffers (the device's limit; the
WebGPU default is 8). When a block's inputs plus live outputs exceed it, the block is
split greedily into the longest prefixes that fit (Burn issue 1970 bailed out of fusion
instead; splitting keeps most of the benefit).
"""

from __future__ import annotations

from ..elementwise import layout_block
from ..ir import OperationIr
from .plan import FusedStep, Step

__all__ = ["ElementwiseFuser"]


class ElementwiseFuser:
    def __init__(self, max_bindings: int, max_ops: int = 64) -> None:
        if max_bindings < 4:
            raise ValueError("a fused kernel needs at least 4 storage bindings")
        self.max_bindings = max_bindings
        self.max_ops = max_ops

    def fuse(self, ops: list[OperationIr], block: list[int], rel: dict[int, int]) -> list[Step]:
        steps: list[Step] = []
        start = 0
        while start < len(block):
            end = self._longest_fit(ops, block, start)
            steps.append(self._step(ops, block, start, end, rel))
            start = end
        return steps

    def _later_reads(self, ops: list[OperationIr], block: list[int], end: int) -> frozenset[int]:
        return frozenset(t.id for i in block[end:] for t in ops[i].inputs())

    def _fits(self, ops: list[OperationIr], block: list[int], start: int, end: int) -> bool:
        layout = layout_block([ops[i] for i in block[start:end]],
                              self._later_reads(ops, block, end))
        return layout.program.storage_bindings <= self.max_bindings

    def _longest_fit(self, ops: list[OperationIr], block: list[int], start: int) -> int:
        if self._fits(ops, block, start, len(block)):
            return len(block)
        end = start + 1
        while end < len(block) and self._fits(ops, block, start, end + 1):
            end += 1
        return end

    def _step(self, ops: list[OperationIr], block: list[int], start: int, end: int,
              rel: dict[int, int]) -> FusedStep:
        idx = block[start:end]
        layout = layout_block([ops[i] for i in idx], self._later_reads(ops, block, end))
        return FusedStep(
            indices=tuple(idx),
            program=layout.program,
            inputs=tuple(rel[t] for t in layout.inputs),
            outputs=tuple(rel[t] for t in layout.outputs),
            frees=tuple(rel[t] for t in layout.frees),
            scalar_refs=tuple((idx[pos], k) for pos, k in layout.scalar_refs),
        )
