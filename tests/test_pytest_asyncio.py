"""asyncfusion in a user's pytest-asyncio suite (most async test suites use that plugin)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af


@pytest.mark.asyncio
async def test_works_under_pytest_asyncio():
    async with af.open_device() as dev:
        x = af.arange(8, dtype=af.float32, device=dev)
        out = await ((x * 2.0 + 1.0).sqrt()).to_data()
    np.testing.assert_allclose(out, np.sqrt(np.arange(8, dtype=np.float32) * 2 + 1), rtol=1e-6)


@pytest.mark.asyncio
async def test_asyncio_native_cancellation_leaves_nothing_behind():
    import asyncio

    async with af.open_device() as dev:
        x = af.rand(1 << 16, seed=2, device=dev)
        await dev.sync()
        base = dev.memory_stats().live_buffers
        for timeout in (0, 1e-5):  # far shorter than any round trip
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(((x * 2.0).exp() + 1.0).to_data(), timeout)
        task = asyncio.ensure_future(((x * 3.0).sin()).to_data())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        del task
        out = await (x * 0.0 + 1.0).to_data()
        np.testing.assert_array_equal(out, np.ones(1 << 16, np.float32))
        import gc

        gc.collect()  # a cancelled *task* holds its frames in a cycle
        await dev.sync()
        await dev.sync()
        assert dev.memory_stats().live_buffers == base
        assert not dev._server.inbox
