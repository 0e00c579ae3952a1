"""Failures poison only their dependents; the server, the device and other streams live on;
memory returns to its baseline."""

from __future__ import annotations

import gc

import anyio
import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.backends.faults import InjectedFault
from tests.conftest import assert_close


async def expect_execution_error(t: af.Tensor, cause=InjectedFault) -> af.ExecutionError:
    with pytest.raises(af.ExecutionError) as info:
        await t.to_data()
    assert isinstance(info.value.__cause__, cause), info.value.__cause__
    assert f"tensor t{t.id} could not be computed" in str(info.value)  # names the tensor read
    return info.value


@pytest.fixture(params=["fused", "plain"])
async def any_dev(request, blockbuster):
    async with af.open_device(fusion=request.param == "fused") as d:
        yield d


async def test_seed_scenario_good_reads_bad_and_worse_fail(any_dev):
    dev = any_dev
    a = af.tensor([1.0, 2.0], device=dev)
    b = af.tensor([3.0, 4.0], device=dev)
    with dev.inject_fault("launch", op="cat"):
        bad = af.cat([a, b], 0)
        worse = bad + 1.0
        good = a * 10.0
        assert_close(await good.to_data(), np.array([10.0, 20.0], np.float32))
    err = await expect_execution_error(bad)
    assert "could not be computed" in str(err) and "injected launch failure of cat" in str(err)
    await expect_execution_error(worse)
    # nothing else is affected, and the next program is correct
    assert_close(await af.cat([a, b], 0).to_data(), np.array([1, 2, 3, 4], np.float32))


async def test_failed_op_inside_a_fused_block_poisons_only_its_dependents(any_dev):
    dev = any_dev
    x = af.tensor(np.arange(4, dtype=np.float32), device=dev)
    with dev.inject_fault("launch", op="exp"):
        a = x * 2.0          # same block as the failing exp, independent of it
        b = (x + 1.0).exp()  # fails
        c = b * 3.0          # depends on the failure
        d = a - 1.0
        assert_close(await d.to_data(), np.arange(4, dtype=np.float32) * 2 - 1)
        assert_close(await a.to_data(), np.arange(4, dtype=np.float32) * 2)
        await expect_execution_error(b)
        await expect_execution_error(c)
    assert_close(await (x + 1.0).exp().to_data(), np.exp(np.arange(4, dtype=np.float32) + 1),
                 rtol=1e-5)


async def test_failure_in_one_stream_leaves_other_streams_working(dev):
    x = af.tensor(np.ones(8, np.float32), device=dev)
    results = {}

    async def failing():
        with dev.inject_fault("launch", op="sqrt"):
            y = x.sqrt() + 1.0
            with pytest.raises(af.ExecutionError):
                await y.to_data()
        results["failing"] = True

    async def healthy(i):
        results[i] = await (x * float(i)).to_data()

    async with anyio.create_task_group() as tg:
        tg.start_soon(failing)
        for i in range(5):
            tg.start_soon(healthy, i)
    assert results["failing"]
    for i in range(5):
        assert_close(results[i], np.full(8, i, np.float32))


async def test_failed_allocation_poisons_the_tensor_not_the_device(dev):
    with dev.inject_fault("alloc", count=1):
        x = af.tensor([1.0, 2.0], device=dev)
        y = x + 1.0
        await expect_execution_error(y)
    z = af.tensor([5.0], device=dev)
    assert_close(await (z * 2.0).to_data(), np.array([10.0], np.float32))


async def test_device_loss_fails_reads_clearly_and_a_new_device_works():
    async with af.open_device() as dev:
        x = af.tensor([1.0, 2.0], device=dev)
        await x.to_data()
        y = x * 2.0
        dev.lose_device()
        with pytest.raises(af.DeviceLostError, match="the GPU device was lost .*open a new"):
            await y.to_data()
        with pytest.raises(af.DeviceLostError):
            await (x + 1.0).to_data()
    async with af.open_device() as fresh:
        assert_close(await (af.tensor([1.0], device=fresh) + 1.0).to_data(),
                     np.array([2.0], np.float32))


async def test_a_dead_server_fails_every_waiter_at_once(dev):
    xs = [af.tensor([float(i)], device=dev) for i in range(5)]
    dev._server.crash = RuntimeError("simulated bug in the server loop")
    errors = []

    async def reader(t):
        try:
            await t.to_data()
        except af.DeviceClosedError as exc:
            errors.append(exc)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for t in xs:
                tg.start_soon(reader, t)
    assert len(errors) == 5
    assert all("server died" in str(e) for e in errors)
    assert isinstance(errors[0].__cause__, RuntimeError)
    with pytest.raises(af.DeviceClosedError, match="server died"):
        xs[0] + 1.0


async def test_a_failing_round_does_not_kill_the_server(dev, monkeypatch):
    x = af.tensor([1.0, 2.0], device=dev)
    calls = {"n": 0}
    real = dev._server.executor.round

    def flaky(requests, sync):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("bug in a round")
        return real(requests, sync)

    monkeypatch.setattr(dev._server.executor, "round", flaky)
    with pytest.raises(af.ExecutionError, match="bug in a round"):
        await (x * 3.0).to_data()
    assert_close(await (x * 3.0).to_data(), np.array([3.0, 6.0], np.float32))


@pytest.mark.parametrize("backend", ["wgpu", "numpy"])
async def test_ten_thousand_iterations_return_memory_to_baseline(backend):
    async with af.open_device(backend) as dev:
        await dev.sync()
        base = dev.memory_stats()
        assert base.live_buffers == 0
        w = af.tensor(np.linspace(0, 1, 64, dtype=np.float32), device=dev)
        halfway = None
        for i in range(10_000):
            if i == 5_000:
                halfway = dev.memory_stats().allocations
            x = af.tensor(np.full(64, i % 7, np.float32), device=dev)
            y = ((x * w + 1.0).exp() * 0.5 - w).abs()
            z = af.where(y > 1.0, y, x).sum(axis=0)
            if i % 500 == 0:
                await z.to_data()
        await z.to_data()
        if backend == "wgpu":  # steady state: every buffer now comes from the pool
            assert dev.memory_stats().allocations == halfway
        out = await (y + 0.0).to_data()
        assert out.shape == (64,)
        del w, x, y, z
        gc.collect()
        await dev.sync()
        await dev.sync()
        after = dev.memory_stats()
        assert after.live_buffers == base.live_buffers
        assert after.live_bytes == base.live_bytes


async def test_closing_a_device_gives_its_pooled_buffers_back():
    async with af.open_device() as dev:
        x = af.rand(100_000, seed=1, device=dev)
        await (x * 2.0).exp().to_data()
        await dev.sync()
        assert dev.memory_stats().pooled_buffers > 0
    stats = dev.memory_stats()
    assert stats.live_buffers == 0 and stats.pooled_buffers == 0 and stats.pooled_bytes == 0


async def test_a_real_failed_allocation_poisons_only_its_dependents(dev):
    # Past the front end's checks (built from the IR directly), ask wgpu itself for a
    # buffer larger than the device allows: the real allocation failure is isolated.
    from asyncfusion.ir import ElementwiseOp, ScalarIr, TensorIr, TensorStatus

    x = af.tensor([1.0], device=dev)
    limit = dev.backend.rt.device.limits["max-buffer-size"]
    huge = (limit // 4 + 1024,)
    out = af.Tensor(huge, af.float32, dev)
    out_ir = TensorIr(out.id, huge, af.float32, TensorStatus.NOT_INIT)
    dev.register(ElementwiseOp("add", (x.ir(), ScalarIr(af.float32)), (1.0,), out_ir,
                               af.float32), (x.id,), out_ir)
    good = x * 5.0
    with pytest.raises(af.ExecutionError) as info:
        await out.to_data()
    assert info.value.__cause__ is not None
    assert_close(await good.to_data(), np.array([5.0], np.float32))
    assert_close(await (x + 1.0).to_data(), np.array([2.0], np.float32))
