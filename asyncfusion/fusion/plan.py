"""Execution plans: the steps a segment runs as, and how each step runs.

A plan is built once per *relative* segment signature and then replayed: steps refer to
ops by their position in the segment and to tensors by their relative id, so the same
plan runs every later segment with an equal signature, whatever its tensor ids, sizes
and scalar values.

Every step isolates failure: if its inputs are poisoned or it raises, its outputs become
:class:`Poison` and the rest of the segment runs on. A fused step that fails re-runs its
ops unfused first, so only the op that really fails poisons its dependents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backends.base import Handles, Poison
from ..elementwise import BlockLayout, ElementwiseProgram
from ..ir import OperationIr, TensorStatus
from ..trace import Counters, emit, trace_enabled

__all__ = ["Step", "UnfusedStep", "FusedStep", "run_unfused"]


def _block_line(ops: list[OperationIr]) -> None:
    if trace_enabled():
        names = ", ".join(op.title() for op in ops)
        emit(f"[block] {len(ops)} op(s): {names}")


def _release(backend: Any, handles: Handles, tid: int) -> None:
    h = handles.pop(tid, None)
    if h is not None and not isinstance(h, Poison):
        backend.release(h)


def run_unfused(op: OperationIr, backend: Any, handles: Handles) -> None:
    """Run one op on the inner backend; poison its outputs if it cannot run."""
    ins = op.inputs()
    poison = handles.poisoned([t.id for t in ins])
    if poison is None:
        try:
            backend.run(op, handles)
        except Exception as exc:  # noqa: BLE001 - isolated: recorded as poison
            poison = Poison(exc)
    if poison is not None:
        for t in op.outputs():
            handles[t.id] = poison
    for t in ins:
        if t.status is TensorStatus.READ_WRITE:
            _release(backend, handles, t.id)


class Step:
    __slots__ = ()

    def run(self, ops: list[OperationIr], ids: list[int], backend: Any, handles: Handles,
            counters: Counters) -> None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class UnfusedStep(Step):
    index: int

    def run(self, ops: list[OperationIr], ids: list[int], backend: Any, handles: Handles,
            counters: Counters) -> None:
        op = ops[self.index]
        counters.blocks += 1
        _block_line([op])
        run_unfused(op, backend, handles)


@dataclass(frozen=True, slots=True)
class FusedStep(Step):
    """One element-wise kernel for a block of ops (or none, if nothing in it is live)."""

    indices: tuple[int, ...]
    program: ElementwiseProgram
    inputs: tuple[int, ...]  # relative ids
    outputs: tuple[int, ...]
    frees: tuple[int, ...]
    scalar_refs: tuple[tuple[int, int], ...]  # (op index in segment, scalar index)

    def run(self, ops: list[OperationIr], ids: list[int], backend: Any, handles: Handles,
            counters: Counters) -> None:
        block = [ops[i] for i in self.indices]
        counters.blocks += 1
        counters.fused_blocks += 1
        _block_line(block)
        inputs = tuple(ids[r] for r in self.inputs)
        outputs = tuple(ids[r] for r in self.outputs)
        frees = tuple(ids[r] for r in self.frees)
        if outputs:
            poison = handles.poisoned(inputs)
            if poison is not None:
                for tid in outputs:
                    handles[tid] = poison
            else:
                layout = BlockLayout(self.program, block[0].outputs()[0].shape, inputs,
                                     outputs, (), frees)
                scalars = [ops[i].scalars[k] for i, k in self.scalar_refs]  # type: ignore[attr-defined]
                try:
                    backend.run_elementwise(layout, handles, scalars)
                except Exception:  # noqa: BLE001 - fall back to the ops' own kernels
                    for op in block:
                        run_unfused(op, backend, handles)
                    return
        for tid in frees:
            _release(backend, handles, tid)
