"""What a backend offers the device server, and the handle container it runs against.

A backend executes any op unfused (``run``), uploads host data, and reads tensors back in
two halves: ``stage_read`` (inside a batch, on the executor thread) and ``finish_read``
(blocking until the data is on the host; called from a worker thread, never the event loop).
Backends that can fuse element-wise blocks also implement ``run_elementwise``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol
from collections.abc import Callable

import numpy as np

from ..elementwise import BlockLayout
from ..ir import CatOp, DropOp, ElementwiseOp, InitOp, OperationIr, ReduceOp, ReshapeOp

__all__ = ["Backend", "Handles", "Poison", "MemoryStats", "OP_METHODS", "bind_op_table"]

# The unfused lowering of each op kind: the backend method that runs it.
OP_METHODS: dict[type, str] = {
    InitOp: "_init",
    ElementwiseOp: "_elementwise",
    ReduceOp: "_reduce",
    CatOp: "_cat",
    ReshapeOp: "_reshape",
    DropOp: "_drop",
}


def bind_op_table(backend: Any) -> dict[type, Callable[[Any, Handles], None]]:
    """``{op type: bound method}`` for a backend, so ``run`` is one dict lookup."""
    return {kind: getattr(backend, name) for kind, name in OP_METHODS.items()}


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """Buffers held by tensors (``live_*``) and kept for reuse (``pooled_*``)."""

    live_buffers: int
    live_bytes: int
    pooled_buffers: int
    pooled_bytes: int
    allocations: int


class Poison:
    """Stands in the handle container for a tensor whose computation failed."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Handles(dict[int, Any]):
    """Tensor id -> backend handle (or :class:`Poison`). Owned by the executor thread."""

    def poisoned(self, ids: tuple[int, ...] | list[int]) -> Poison | None:
        for tid in ids:
            h = self.get(tid)
            if isinstance(h, Poison):
                return h
        return None


class Backend(Protocol):
    name: str
    max_storage_bindings: int
    max_buffer_size: int
    fuses: bool

    def upload(self, data: np.ndarray) -> Any: ...

    def run(self, op: OperationIr, handles: Handles) -> None: ...

    def run_elementwise(self, layout: BlockLayout, handles: Handles,
                        scalars: list[Any]) -> None: ...

    def release(self, handle: Any) -> None: ...

    def flush(self) -> None: ...

    def stage_read(self, handle: Any, shape: tuple[int, ...], dtype: Any) -> Any: ...

    def finish_read(self, token: Any) -> np.ndarray: ...

    def discard_read(self, token: Any) -> None: ...

    def wait_idle(self) -> None: ...

    def memory_stats(self) -> MemoryStats: ...

    def close(self) -> None: ...
