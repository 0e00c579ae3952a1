"""asyncio-native cancellation (``task.cancel()``, ``asyncio.wait_for``) of reads leaks no
staging buffer, wherever it lands. anyio's cancel scopes are covered in
test_concurrency.py; these run under pytest-asyncio because native cancellation is
asyncio's own."""

from __future__ import annotations

import asyncio
import gc

import numpy as np
import pytest

import asyncfusion as af


async def _settle(dev: af.Device) -> None:
    gc.collect()  # a cancelled task keeps its frames in a cycle until collected
    await dev.sync()
    await dev.sync()


@pytest.mark.asyncio
async def test_a_native_cancel_landing_at_any_step_after_the_round_leaks_nothing():
    # The read's round is over (its staging buffer is claimed); cancel the reader
    # ``hops`` loop iterations later, which walks the cancel across every await of the
    # read's tail: waking up, waiting for a worker thread, the map, the copy out.
    async with af.open_device() as dev:
        x = af.rand(1 << 14, seed=3, device=dev)
        expected = await x.to_data() * np.float32(2)
        await dev.sync()
        base = dev.memory_stats()
        server = dev._server
        real_finish = server._finish
        loop = asyncio.get_running_loop()
        cancelled = 0
        for hops in range(12):
            reader = asyncio.ensure_future((x * 2.0).to_data())

            def finish(batch, error=None, reader=reader, hops=hops):
                real_finish(batch, error)
                if any(r.tensor is not None for r in batch):
                    _after(loop, hops, reader.cancel)

            server._finish = finish
            try:
                np.testing.assert_array_equal(await reader, expected)
            except asyncio.CancelledError:
                cancelled += 1
            server._finish = real_finish
        assert cancelled > 0  # the cancels did land
        del reader
        await _settle(dev)
        after = dev.memory_stats()
        assert (after.live_buffers, after.live_bytes) == (base.live_buffers, base.live_bytes)
        assert dev.backend.staging.stats().live_buffers == 0


def _after(loop: asyncio.AbstractEventLoop, hops: int, fn) -> None:
    if hops == 0:
        fn()
    else:
        loop.call_soon(_after, loop, hops - 1, fn)


@pytest.mark.asyncio
async def test_wait_for_with_timeouts_across_the_round_trip_leaks_nothing():
    # The reproduction, small: timeouts from 0 to past the round trip, so some
    # reads finish, some are cut before the round and some after it.
    async with af.open_device() as dev:
        x = af.rand((256, 256), seed=4, device=dev)
        xn = await x.to_data()
        await dev.sync()
        base = dev.memory_stats()
        wrong = finished = 0

        async def one(i: int) -> None:
            nonlocal wrong, finished
            try:
                out = await asyncio.wait_for((x * float(i)).to_data(), 0.001 * (i % 40))
            except asyncio.TimeoutError:
                return
            finished += 1
            wrong += not np.array_equal(out, xn * np.float32(i))

        for _ in range(2):
            await asyncio.gather(*(one(i) for i in range(80)))
        await _settle(dev)
        after = dev.memory_stats()
        assert wrong == 0
        assert (after.live_buffers, after.live_bytes) == (base.live_buffers, base.live_bytes)
        assert not dev._server.inbox
        np.testing.assert_array_equal(await (x + 1.0).to_data(), xn + np.float32(1))


@pytest.mark.asyncio
@pytest.mark.parametrize("read", ["method", "af.to_data"])
async def test_cancelled_read_tasks_that_the_caller_keeps_keep_no_buffer(read):
    # A cancelled asyncio task keeps its CancelledError, whose traceback keeps the frames
    # of the read: the caller holding the task objects (a list, or the loop variable of
    # 'for t in tasks: t.cancel()') must not keep the tensors' buffers with them.
    async with af.open_device() as dev:
        await _settle(dev)
        base = dev.memory_stats()

        def reading(i: int):
            t = af.rand(1 << 19, seed=i, device=dev)  # 2 MiB each
            return t.to_data() if read == "method" else af.to_data(t, t * 2.0)

        tasks = [asyncio.create_task(reading(i)) for i in range(12)]
        await asyncio.sleep(0)
        for t in tasks:
            t.cancel()
        await asyncio.wait(tasks)
        assert all(t.cancelled() for t in tasks)
        await _settle(dev)
        after = dev.memory_stats()
        assert (after.live_buffers, after.live_bytes) == (base.live_buffers, base.live_bytes)
        out = await (af.rand(16, seed=1, device=dev) * 2.0).to_data()  # still working
        assert out.shape == (16,)
