"""What a backend offers the engine: allocate, launch, read. Nothing else.

A backend holds no tensor table (the engine's :class:`~asyncfusion.engine.memory.Memory`
does): it allocates and frees buffers, uploads host data, launches kernels of the
:mod:`asyncfusion.kernel` IR on buffers, and reads buffers back in two halves —
``stage_read`` (inside a round) and ``finish_read`` (blocking until the data is on the
host, after the round's submission). All of it runs on the device's executor thread,
never on the event loop.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .._core.dtype import DType
from ..ir import Layout, dense_strides
from ..kernel import Kernel, LaunchArgs
from .faults import FaultInjector

__all__ = ["Backend", "Buffer", "MemoryStats", "host_view"]

_dense = functools.lru_cache(maxsize=1024)(dense_strides)


class Buffer(Protocol):
    """A backend's buffer; ``nbytes`` is what was asked for."""

    nbytes: int


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """Buffers held by tensors (``live_*``) and kept for reuse (``pooled_*``)."""

    live_buffers: int
    live_bytes: int
    pooled_buffers: int
    pooled_bytes: int
    allocations: int


def host_view(words: np.ndarray, first: int, layout: Layout, dtype: DType) -> np.ndarray:
    """The tensor ``layout`` describes, from storage words starting at word ``first``,
    as a fresh C-ordered array of ``dtype``."""
    out = words.astype(np.bool_) if dtype is DType.bool else words
    if layout.offset == first and layout.strides == _dense(layout.shape):  # the common read
        n = 1
        for d in layout.shape:
            n *= d
        return np.array(out[:n].reshape(layout.shape), dtype=dtype.np, order="C")
    item = out.itemsize
    view = np.lib.stride_tricks.as_strided(
        out[layout.offset - first:] if out.size else out, layout.shape,
        tuple(s * item for s in layout.strides), writeable=False)
    return np.array(view, dtype=dtype.np, order="C")


class Backend(Protocol):
    """The seam between the engine and a device: what the executor thread calls."""

    name: str
    max_storage_bindings: int
    max_buffer_size: int  # bytes: the largest buffer (tensor)
    max_binding: int  # bytes of a buffer one kernel binding reaches (<= max_buffer_size)
    fuses: bool
    faults: FaultInjector
    storage_align: int  # bytes: where a range of a buffer (``sub``) may start
    dtypes: frozenset[DType]  # the dtypes this device holds

    def alloc(self, nbytes: int) -> Buffer: ...

    def free(self, buffer: Any) -> None: ...

    def upload(self, data: np.ndarray) -> Buffer: ...

    def sub(self, buffer: Any, offset: int, nbytes: int) -> Buffer:
        """``nbytes`` of ``buffer`` from byte ``offset`` (a multiple of ``storage_align``),
        usable as a buffer of its own; never freed itself (its buffer is)."""
        ...

    def copy(self, src: Any, dst: Any, nbytes: int, dst_offset: int) -> None:
        """Copy the first ``nbytes`` of ``src`` to ``dst`` at byte ``dst_offset``, after
        the work launched so far."""
        ...

    def launch(self, kernel: Kernel, args: LaunchArgs, loads: list[Any],
               stores: list[Any]) -> None: ...

    def flush(self) -> None: ...

    def stage_read(self, buffer: Any, layout: Layout, dtype: DType) -> object: ...

    def finish_read(self, token: Any) -> np.ndarray: ...

    def discard_read(self, token: Any) -> None: ...

    def wait_idle(self) -> None: ...

    def prepare(self) -> None:
        """Get ready for the next round while none runs (executor thread, idle)."""
        ...

    def empty_cache(self) -> None: ...

    def memory_stats(self) -> MemoryStats: ...

    def close(self) -> None:
        """Give everything back (the device is closing)."""
        ...

    @property
    def lost(self) -> str | None:
        """Why the device is gone for good (a driver reset, a release), or None."""
        ...

    def lose(self, reason: str) -> None:
        """Lose the device on purpose, as a driver reset would (tests)."""
        ...
