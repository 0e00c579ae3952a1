"""The caching allocator: freed buffers stay pooled within a budget, an allocation that
fails empties the pool and retries, and repeated identical rounds allocate nothing."""

from __future__ import annotations

import numpy as np

import asyncfusion as af
from asyncfusion.backends.faults import FaultInjector
from asyncfusion.backends.wgpu.memory import BufferPool
from tests.conftest import assert_close


class FakeGpu:
    """A driver with room for ``room`` bytes of live buffers."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.used = 0

    def create(self, size: int) -> "FakeBuffer":
        if self.used + size > self.room:
            raise MemoryError(f"out of device memory ({self.used} + {size} > {self.room})")
        self.used += size
        return FakeBuffer(self, size)


class FakeBuffer:
    def __init__(self, gpu: FakeGpu, size: int) -> None:
        self.gpu, self.size = gpu, size

    def destroy(self) -> None:
        self.gpu.used -= self.size


def test_a_failed_allocation_empties_the_pool_and_retries():
    gpu = FakeGpu(room=4 << 20)
    pool = BufferPool(gpu.create, FaultInjector(), lambda g: None, max_pooled_bytes=64 << 20)
    small = [pool.acquire(1 << 20) for _ in range(3)]
    for b in small:
        pool.release(b)
    assert pool.stats().pooled_bytes == 3 << 20  # kept for reuse, within the budget
    big = pool.acquire(2 << 20)  # does not fit beside the pooled buffers
    assert big.capacity == 2 << 20
    assert pool.stats().pooled_bytes == 0 and gpu.used == 2 << 20


def test_the_pool_budget_bounds_what_stays_cached():
    gpu = FakeGpu(room=1 << 40)
    pool = BufferPool(gpu.create, FaultInjector(), lambda g: None, max_pooled_bytes=3 << 20)
    bufs = [pool.acquire(1 << 20) for _ in range(5)]
    for b in bufs:
        pool.release(b)
    assert pool.stats().pooled_bytes == 3 << 20
    assert gpu.used == 3 << 20


def test_the_default_budget_grows_to_the_peak_a_program_held():
    """to_peak (the default budget's pool): a round that holds more than the budget frees
    into the pool up to the most it ever held at once, so the next equal round creates
    nothing; what was never held together is not kept; empty() gives it all back."""
    gpu = FakeGpu(room=1 << 40)
    pool = BufferPool(gpu.create, FaultInjector(), lambda g: None, max_pooled_bytes=3 << 20,
                      to_peak=True)
    for _ in range(3):
        bufs = [pool.acquire(1 << 20) for _ in range(5)]
        for b in bufs:
            pool.release(b)
    assert pool.stats().allocations == 5 and pool.stats().pooled_bytes == 5 << 20
    one = pool.acquire(8 << 20)  # the new peak: 8 MiB live (the 5 pooled are not)
    pool.release(one)  # kept, the 1 MiB buffers evicted to make room
    assert pool.peak_bytes == 8 << 20 and pool.stats().pooled_bytes == 8 << 20
    pool.empty()
    assert pool.stats().pooled_bytes == 0 and gpu.used == 0


async def test_repeated_rounds_of_large_outputs_allocate_nothing_new(dev):
    x = af.tensor(np.ones((256, 1024), np.float32), device=dev)
    counts = []
    for _ in range(4):
        y = af.softmax(x * 2.0)
        assert_close(await y[0, :4].to_data(), np.full(4, 1 / 1024, np.float32))
        del y
        await dev.sync()
        counts.append(dev.memory_stats().allocations)
    assert counts[1] == counts[2] == counts[3]
