"""GPU time of compute passes from timestamp queries: an opt-in probe for benchmarks.

While a :class:`GpuTimer` is a runtime's active timer (``Runtime.gpu_timer()``), every
compute pass the runtime begins writes a timestamp at its beginning and its end into the
query set of its batch; submitting the batch resolves those queries into a mappable
buffer. :meth:`GpuTimer.total_ns` maps the resolved buffers once the work has finished and
adds up end - begin of every pass, scaled by the queue's timestamp period.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
import numpy as np
import wgpu

__all__ = ["GpuTimer", "TimedSlot", "timestamp_period"]

PASSES_PER_SUBMIT = 64  # timed passes per submission; later ones count as untimed
_RESOLVE = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
_READBACK = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST


def timestamp_period(queue: wgpu.GPUQueue) -> float:
    """Nanoseconds per timestamp tick. wgpu-py 0.32 does not wrap
    ``wgpuQueueGetTimestampPeriod``, so it is called through wgpu-native's ffi; where
    that fails, 1.0 (what NVIDIA's and Mesa's Vulkan drivers report)."""
    try:
        from wgpu.backends.wgpu_native import _api  # noqa: PLC0415

        return float(_api.libf.wgpuQueueGetTimestampPeriod(queue._internal))
    except Exception:  # noqa: BLE001 - an internal of wgpu-py: degrade to 1 ns per tick
        return 1.0


@dataclass(eq=False, slots=True)
class TimedSlot:
    """The timestamp queries of one submission."""

    timer: GpuTimer
    queries: wgpu.GPUQuerySet
    resolved: wgpu.GPUBuffer
    readback: wgpu.GPUBuffer
    used: int = 0


class GpuTimer:
    """The summed GPU time of the compute passes begun while it is active.

    ``available`` is False where the device has no "timestamp-query" feature; then
    nothing is recorded and :meth:`total_ns` is None.
    """

    def __init__(self, device: wgpu.GPUDevice, period: float, available: bool) -> None:
        self.device = device
        self.period = period
        self.available = available
        self.passes = 0  # passes timed and collected
        self.untimed = 0  # passes begun while active that found no free query
        self._ns = 0
        self._lock = threading.Lock()
        self._pending: list[TimedSlot] = []
        self._free: list[TimedSlot] = []

    def pass_writes(self, slot: TimedSlot | None) -> tuple[TimedSlot | None, dict[str, object]]:
        """(the batch's slot, ``begin_compute_pass`` keyword arguments) for one more pass
        of a batch whose slot so far is ``slot``."""
        if slot is None:
            slot = self._take()
        if slot.used + 2 > 2 * PASSES_PER_SUBMIT:
            self.untimed += 1
            return slot, {}
        at = slot.used
        slot.used += 2
        return slot, {"timestamp_writes": {"query_set": slot.queries,
                                           "beginning_of_pass_write_index": at,
                                           "end_of_pass_write_index": at + 1}}

    def resolve(self, encoder: wgpu.GPUCommandEncoder, slot: TimedSlot) -> None:
        """Encode the resolve of ``slot``'s queries at the end of its submission."""
        if slot.used:
            encoder.resolve_query_set(slot.queries, 0, slot.used, slot.resolved, 0)
            encoder.copy_buffer_to_buffer(slot.resolved, 0, slot.readback, 0, 8 * slot.used)
        with self._lock:
            self._pending.append(slot)

    def total_ns(self) -> int | None:
        """GPU nanoseconds of every timed pass so far (None: no timestamp queries). Maps
        the submissions' results: call it after the timed work has finished (a device
        sync), off the event loop — a map blocks until the GPU is done."""
        if not self.available:
            return None
        with self._lock:
            pending, self._pending = self._pending, []
        for slot in pending:
            if slot.used:
                slot.readback.map_sync(wgpu.MapMode.READ, 0, 8 * slot.used)
                stamps = np.frombuffer(slot.readback.read_mapped(0, 8 * slot.used, copy=True),
                                       np.uint64).astype(np.int64)
                slot.readback.unmap()
                spans = stamps[1::2] - stamps[0::2]
                self._ns += int(spans[spans > 0].sum() * self.period)
                self.passes += slot.used // 2
            slot.used = 0
            with self._lock:
                self._free.append(slot)
        return self._ns

    def _take(self) -> TimedSlot:
        with self._lock:
            if self._free:
                return self._free.pop()
        n = 2 * PASSES_PER_SUBMIT
        return TimedSlot(self, self.device.create_query_set(type="timestamp", count=n),
                         self.device.create_buffer(size=8 * n, usage=_RESOLVE),
                         self.device.create_buffer(size=8 * n, usage=_READBACK))
