"""Several devices in one process: adapters, devices on an adapter, copies between
devices (``x.to``), the device pool and its data-parallel ``map``."""

from __future__ import annotations

import dataclasses

import anyio
import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.pytest_plugin import device_for_test

RNG = np.random.default_rng(24)


def _vulkan() -> af.Adapter:
    return next(a for a in af.adapters() if a.backend == "Vulkan")


@pytest.fixture
async def dev2(request):
    """A second wgpu device of the same adapter (its own server, queues and caches)."""
    async with device_for_test(request) as d:
        yield d


def test_adapters_lists_lavapipe_with_its_limits():
    listed = af.adapters()
    assert [a.index for a in listed] == list(range(len(listed)))
    lava = _vulkan()
    assert "llvmpipe" in lava.name and lava.device_type == "CPU" and not lava.gpu
    assert lava.max_storage_binding == 128 << 20
    assert lava.max_buffer_size >= lava.max_storage_binding
    assert lava.f16 and lava.subgroups
    with pytest.raises(dataclasses.FrozenInstanceError):
        lava.name = "x"  # type: ignore[misc]


async def test_open_device_on_an_adapter_by_index_and_by_predicate():
    lava = _vulkan()
    async with af.open_device(adapter=lava.index) as a, \
            af.open_device(adapter=lambda x: x.backend == "Vulkan") as b:
        assert a.adapter == lava and b.adapter == lava
        x = af.tensor([1.0, 2.0], device=a)
        assert (await (x * 3).to_data()).tolist() == [3.0, 6.0]
    async with af.open_device("numpy") as n:
        assert n.adapter is None


def test_bad_adapter_arguments_are_refused_naming_the_adapters():
    n = len(af.adapters())
    with pytest.raises(ValueError, match=rf"adapter={n} is out of range.*llvmpipe"):
        af.DeviceOptions(adapter=n)
    with pytest.raises(ValueError, match="adapter=-1 is out of range"):
        af.DeviceOptions(adapter=-1)
    with pytest.raises(ValueError, match="predicate matched none.*llvmpipe"):
        af.DeviceOptions(adapter=lambda a: a.backend == "Metal")
    with pytest.raises(TypeError, match="index into asyncfusion.adapters"):
        af.DeviceOptions(adapter="gpu0")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="numpy.*leave adapter out"):
        af.DeviceOptions(backend="numpy", adapter=0)


async def test_open_device_refuses_a_bad_adapter():
    with pytest.raises(ValueError, match="out of range"):
        async with af.open_device(adapter=999):
            pass


async def test_two_devices_keep_their_own_metrics_and_caches(dev, dev2):
    a = af.tensor(RNG.random(64, dtype=np.float32), device=dev)
    for _ in range(2):
        await (a.exp() * 2 + 1).to_data()
    s1, s2 = dev.stats(), dev2.stats()
    assert s1.launches == 2 and s1.kernels_generated == 1 and s1.plan_cache_misses >= 1
    assert s2.launches == 0 and s2.plan_cache_misses == 0 and dev2.metrics().rounds == 0
    b = af.tensor(RNG.random(64, dtype=np.float32), device=dev2)
    await (b.exp() * 2 + 1).to_data()
    s2 = dev2.stats()  # its own plan and kernel caches: misses there, not hits
    assert s2.plan_cache_misses >= 1 and s2.plan_cache_hits == 0 and s2.kernels_generated == 1
    assert dev.stats().launches == 2
    assert dev.metrics().rounds == 2 and dev2.metrics().rounds == 1


@pytest.mark.parametrize("route", ["wgpu->wgpu", "wgpu->numpy", "numpy->wgpu"])
async def test_to_copies_lazily_after_the_pending_producer(dev, dev2, ref, route):
    src, dst = {"wgpu->wgpu": (dev, dev2), "wgpu->numpy": (dev, ref),
                "numpy->wgpu": (ref, dev)}[route]
    host = RNG.random((3, 5), dtype=np.float32)
    x = af.tensor(host, device=src) * 2  # pending: nothing ran
    y = x.to(dst)
    assert y.device is dst and y.shape == (3, 5) and y.dtype is af.float32
    assert src.metrics().rounds == 0 and dst.metrics().rounds == 0  # lazy
    x[0] = 100.0  # x takes a new value; the copy keeps the one it was given
    got = await (y + 1).to_data()
    np.testing.assert_allclose(got, host * 2 + 1, rtol=1e-6)
    assert (await x.to_data())[0].tolist() == [100.0] * 5
    assert x.to(src) is x


async def test_a_strided_view_and_a_round_trip_copy(dev, dev2, ref):
    host = RNG.random((4, 6), dtype=np.float32)
    x = af.tensor(host, device=dev).T[1:]  # a strided view
    back = x.to(dev2).to(ref).to(dev)  # there and back again, all lazy
    np.testing.assert_allclose(await back.to_data(), host.T[1:], rtol=1e-6)


async def test_using_a_tensor_on_another_device_names_both_and_to(dev, ref):
    a = af.tensor([1.0], device=dev)
    b = af.tensor([2.0], device=ref)
    for op in (lambda: a + b, lambda: a @ b, lambda: af.cat([a, b])):
        with pytest.raises(af.DeviceMismatchError) as info:
            op()
        msg = str(info.value)
        assert repr(dev) in msg and repr(ref) in msg and ".to(device)" in msg
    assert (await (a + b.to(dev)).to_data()).tolist() == [3.0]


async def test_a_storm_of_copies_reads_and_cancellations_gives_right_values(dev, dev2, ref):
    devices = [dev, dev2, ref]
    results: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    async def one(i: int, cancel: bool) -> None:
        rng = np.random.default_rng(i)
        host = rng.random(32 + i, dtype=np.float32)
        src, mid, dst = (devices[k] for k in rng.permutation(3))
        x = af.tensor(host, device=src) * 3
        y = (x.to(mid) + 1).to(dst) * 2
        if cancel:
            with anyio.CancelScope() as scope:
                scope.cancel()
                await y.to_data()
            return
        results[i] = (await y.to_data(), (host * 3 + 1) * 2)

    async with anyio.create_task_group() as tg:
        for i in range(24):
            tg.start_soon(one, i, i % 4 == 3)
    for d in devices:  # a cancelled task's unread copy holds its source until the
        await d.sync()  # target's next sync (or crowded round) withdraws it
    assert len(results) == 18
    for got, want in results.values():
        np.testing.assert_allclose(got, want, rtol=1e-6)


def _queue_work(dev: af.Device, n: int) -> list[af.Tensor]:
    """Work registered on ``dev`` and not read: its queued ops are its load."""
    x = af.tensor(np.ones(8, np.float32), device=dev)
    return [x + k for k in range(n)]


async def test_the_pool_picks_the_least_loaded_device(dev, dev2):
    pool = af.DevicePool([dev, dev2])
    held = _queue_work(dev, 5)
    async with pool.device() as got:
        assert got is dev2
    more = _queue_work(dev2, 20)
    async with pool.device() as got:
        assert got is dev
    await af.to_data(*held)
    await af.to_data(*more)


async def test_overloaded_only_when_every_device_is_full():
    async with af.open_device(max_pending=1) as a, af.open_device("numpy", max_pending=1) as b:
        pool = af.DevicePool([a, b])
        async with pool.device() as first:
            async with pool.device() as second:
                assert {first, second} == {a, b}
                with pytest.raises(af.Overloaded, match="every device of the pool"):
                    async with pool.device():
                        pass
            async with pool.device() as again:  # a slot came free
                assert again is second


async def test_the_pool_skips_a_lost_device_and_says_when_none_is_left():
    async with af.open_device(max_storage_bindings=5) as a, \
            af.open_device(max_storage_bindings=6) as b:  # two wgpu devices of their own
        pool = af.DevicePool([a, b])
        a.lose_device()
        for _ in range(2):
            async with pool.device() as got:
                assert got is b
                assert (await (af.tensor([2.0], device=got) * 2).to_data()).tolist() == [4.0]
        b.lose_device()
        with pytest.raises(af.DeviceLostError, match="every device of the pool.*lost"):
            async with pool.device():
                pass


def test_a_pool_refuses_bad_devices():
    with pytest.raises(ValueError, match="at least one device"):
        af.DevicePool([])
    with pytest.raises(TypeError, match="asyncfusion Devices"):
        af.DevicePool(["gpu"])  # type: ignore[list-item]


async def test_open_pool_reopens_a_lost_device():
    async with af.open_pool(per_adapter=2, max_storage_bindings=7) as pool:
        assert len(pool.live()) == 2
        old = pool.devices
        old[0].lose_device()  # both share one wgpu device: both are lost
        with anyio.fail_after(60):
            while len(pool.live()) < 2:
                await anyio.sleep(0.05)
        assert not set(pool.devices) & set(old)
        async with pool.device() as d:
            assert (await (af.tensor([1.0], device=d) + 1).to_data()).tolist() == [2.0]


async def test_pool_map_splits_a_batch_and_gathers_in_order(dev, dev2, ref):
    pool = af.DevicePool([dev, dev2, ref])
    batch = RNG.random((10, 16), dtype=np.float32)

    async def score(d: af.Device, part: np.ndarray) -> af.Tensor:
        return (af.tensor(part, device=d).exp() * 2).sum(axis=1)

    got = await pool.map(score, batch)
    np.testing.assert_allclose(got, (np.exp(batch) * 2).sum(axis=1), rtol=1e-5)

    async def lengths(d: af.Device, part: list[str]) -> list[int]:
        return [len(s) for s in part]

    assert await pool.map(lengths, ["a", "bb", "ccc", "dddd"]) == [1, 2, 3, 4]
    two = await pool.map(score, batch[:2])  # fewer rows than devices: two parts
    np.testing.assert_allclose(two, (np.exp(batch[:2]) * 2).sum(axis=1), rtol=1e-5)


async def test_pool_map_raises_the_failure_as_itself(dev, ref):
    pool = af.DevicePool([dev, ref])

    async def bad(d: af.Device, part: np.ndarray) -> np.ndarray:
        if d is ref:
            raise KeyError("mine")
        return part

    with pytest.raises(KeyError, match="mine"):
        await pool.map(bad, np.zeros((4, 2), np.float32))
    with pytest.raises(TypeError, match="numpy array or a list"):
        await pool.map(bad, (1, 2))


async def test_pool_service_serves_from_the_pool_and_reports_health():
    import httpx
    from starlette.applications import Starlette
    from starlette.routing import Route

    from asyncfusion.contrib.starlette import ArrayJSONResponse, PoolService
    from asyncfusion.testing import asgi_client

    svc = PoolService(per_adapter=2, max_pending=4)

    async def double(request):
        async with svc.device() as d:
            return ArrayJSONResponse({"y": await (af.tensor([1.0, 2.0], device=d) * 2)
                                      .to_data()})

    app = Starlette(routes=[*svc.routes, Route("/double", double)], lifespan=svc.lifespan,
                    exception_handlers=svc.exception_handlers)
    async with asgi_client(app) as c:
        r = await c.get("/double")
        assert r.status_code == 200 and r.json() == {"y": [2.0, 4.0]}
        h = (await c.get("/health")).json()
        assert h["live"] == 2 and len(h["devices"]) == 2
        assert isinstance(c, httpx.AsyncClient)
