"""Buffer pools by size class, with accounting for live and pooled bytes.

A buffer released during a batch is *retired* until that batch is submitted:
``queue.write_buffer`` (used for uploads) runs before the batch's commands, so handing a
retired buffer to an upload could overwrite data an earlier dispatch still has to read.
A kernel output may take a retired buffer at once: commands in one encoder run in order.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable

import wgpu

from ..base import MemoryStats
from ..faults import FaultInjector
from .runtime import Buffer, size_class

__all__ = ["BufferPool", "STAGING_CACHE"]


STAGING_CACHE = 512 << 20  # readback (staging) buffers kept for reuse, at most


class BufferPool:
    def __init__(self, create: Callable[[int], wgpu.GPUBuffer], faults: FaultInjector,
                 forget: Callable[[wgpu.GPUBuffer], None],
                 max_pooled_bytes: int = STAGING_CACHE, to_peak: bool = False) -> None:
        """``max_pooled_bytes``: what the pool keeps of freed buffers; ``to_peak``: or up
        to the most bytes ever live at once, if that is more (a program whose repeated
        rounds hold more than the budget then reuses its buffers instead of destroying
        and re-creating some of them every round; as torch's caching allocator, it keeps
        no more than the program once used, until ``empty``)."""
        self._create = create
        self._forget = forget
        self._faults = faults
        self._free: dict[int, list[wgpu.GPUBuffer]] = defaultdict(list)
        self._retired: dict[int, list[Buffer]] = defaultdict(list)
        self._lock = threading.Lock()
        self._max_pooled = max_pooled_bytes
        self._to_peak = to_peak
        self.live = 0
        self.live_bytes = 0
        self.peak_bytes = 0  # the most bytes live at once
        self.pooled = 0
        self.pooled_bytes = 0
        self.allocations = 0

    def acquire(self, nbytes: int, *, ordered: bool = False) -> Buffer:
        """A buffer of at least ``nbytes``; ``ordered`` (written by a command of the current
        batch, not by an upload) allows a buffer retired in this batch."""
        self._faults.check("alloc")
        cap = size_class(nbytes)
        with self._lock:  # a hit takes the lock once
            retired = self._retired.get(cap) if ordered else None
            if retired:
                buf = retired.pop()
                buf.nbytes = nbytes
                return buf
            free = self._free.get(cap)
            if free:
                self.pooled -= 1
                self.pooled_bytes -= cap
                self._count_live(cap)
                return Buffer(free.pop(), cap, nbytes)
        try:
            gpu = self._create(cap)
        except Exception:  # noqa: BLE001 - out of memory: give the pool back, retry once
            self.empty()
            gpu = self._create(cap)
        with self._lock:
            self.allocations += 1
            self._count_live(cap)
        return Buffer(gpu, cap, nbytes)

    def _count_live(self, cap: int) -> None:
        """A buffer of ``cap`` bytes goes live (lock held)."""
        self.live += 1
        self.live_bytes += cap
        if self.live_bytes > self.peak_bytes:
            self.peak_bytes = self.live_bytes

    def retire(self, buf: Buffer) -> None:
        """Release a buffer that the current (unsubmitted) batch may still read."""
        with self._lock:
            self._retired[buf.capacity].append(buf)

    def release(self, buf: Buffer) -> None:
        """Release a buffer that no unsubmitted work refers to."""
        with self._lock:
            self._put(buf)

    def submitted(self) -> None:
        """The batch was submitted: retired buffers may be reused."""
        with self._lock:
            for bufs in self._retired.values():
                for buf in bufs:
                    self._put(buf)
            self._retired.clear()

    def _put(self, buf: Buffer) -> None:
        self.live -= 1
        self.live_bytes -= buf.capacity
        # Over the cap, evict pooled buffers of the most-pooled other size first: a
        # program whose sizes change must not find the pool full of sizes it left behind.
        cap = max(self._max_pooled, self.peak_bytes) if self._to_peak else self._max_pooled
        while self.pooled_bytes + buf.capacity > cap:
            others = [c for c, lst in self._free.items() if lst and c != buf.capacity]
            if not others:
                self._destroy(buf.gpu)
                return
            victim = max(others, key=lambda c: c * len(self._free[c]))
            self._destroy(self._free[victim].pop())
            self.pooled -= 1
            self.pooled_bytes -= victim
        self._free[buf.capacity].append(buf.gpu)
        self.pooled += 1
        self.pooled_bytes += buf.capacity

    def _destroy(self, gpu: wgpu.GPUBuffer) -> None:
        self._forget(gpu)
        gpu.destroy()

    def empty(self) -> None:
        """Destroy every pooled (free) buffer, as torch's ``empty_cache`` does."""
        with self._lock:
            for cap, lst in self._free.items():
                for gpu in lst:
                    self._destroy(gpu)
                self.pooled -= len(lst)
                self.pooled_bytes -= cap * len(lst)
            self._free.clear()

    def clear(self) -> None:
        """Destroy every pooled and retired buffer (the device is closing)."""
        with self._lock:
            for bufs in self._retired.values():
                for buf in bufs:
                    self.live -= 1
                    self.live_bytes -= buf.capacity
                    self._destroy(buf.gpu)
            self._retired.clear()
        self.empty()

    def stats(self) -> MemoryStats:
        with self._lock:
            return MemoryStats(self.live, self.live_bytes, self.pooled, self.pooled_bytes,
                               self.allocations)
