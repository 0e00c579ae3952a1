"""The host path: one persistent executor thread per device runs every round, maps and
copies its reads there, and hands each round back to the event loop with one call;
cancelling a reader mid-round leaks nothing; the buffer cache stays flat over repeated
rounds and ``empty_cache`` gives it back."""

from __future__ import annotations

import threading

import anyio
import numpy as np
import pytest

import asyncfusion as af
from examples.seed_chain import chain as chain8
from examples.seed_chain import chain_np as chain8_np
from tests.conftest import assert_close


async def test_reads_are_copied_on_the_executor_thread_and_handed_back_once_per_round(
        dev, monkeypatch):
    xs = [af.tensor(np.full(16, float(i), np.float32), device=dev) for i in range(40)]
    await dev.sync()
    rounds, handoffs, readers = [], [], set()
    real_round, real_finish = dev._server.executor.round, dev.backend.finish_read
    real_call = dev._server.worker.call

    def counting_round(requests, sync):
        rounds.append(len(requests))
        return real_round(requests, sync)

    def recording_finish(token):
        readers.add(threading.current_thread().name)
        return real_finish(token)

    def counted(fn, *args):
        handoffs.append(fn)
        return real_call(fn, *args)

    def no_worker_threads(*args, **kwargs):
        raise AssertionError("a round trip must not go through anyio.to_thread")

    monkeypatch.setattr(dev._server.executor, "round", counting_round)
    monkeypatch.setattr(dev.backend, "finish_read", recording_finish)
    monkeypatch.setattr(dev._server.worker, "call", counted)
    monkeypatch.setattr(anyio.to_thread, "run_sync", no_worker_threads)
    results: dict[int, np.ndarray] = {}

    async def reader(i: int) -> None:
        results[i] = await (xs[i] * 2.0 + 1.0).to_data()

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(reader, i)
    for i in range(40):
        assert_close(results[i], np.full(16, 2.0 * i + 1.0, np.float32))
    assert readers == {"asyncfusion-executor"}
    assert sum(rounds) == 40 and len(rounds) < 40  # requests of many tasks share rounds
    assert len(handoffs) == len(rounds)  # one wake-up of the loop per round


async def test_cancelling_one_reader_mid_round_spares_the_others_and_leaks_nothing(dev):
    x = af.rand(4096, seed=5, device=dev)
    xn = await x.to_data()
    await dev.sync()
    base = dev.memory_stats()
    entered, gate = threading.Event(), threading.Event()
    real_round = dev._server.executor.round

    def gated_round(requests, sync):
        if any(r.tensor is not None for r in requests):
            entered.set()
            gate.wait()
        return real_round(requests, sync)

    dev._server.executor.round = gated_round
    scopes: list[anyio.CancelScope] = [anyio.CancelScope() for _ in range(6)]
    results: dict[int, np.ndarray] = {}

    async def reader(i: int) -> None:
        with scopes[i]:
            results[i] = await (x * float(i)).to_data()

    try:
        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(reader, i)
            await anyio.to_thread.run_sync(entered.wait)  # the round holds every read
            scopes[3].cancel()
            await anyio.sleep(0.01)  # the cancelled reader is gone before the round ends
            assert 3 not in results
            gate.set()
    finally:
        gate.set()
        del dev._server.executor.round
    assert sorted(results) == [0, 1, 2, 4, 5]
    for i, out in results.items():
        np.testing.assert_array_equal(out, xn * np.float32(i))
    await dev.sync()
    await dev.sync()
    after = dev.memory_stats()
    assert (after.live_buffers, after.live_bytes) == (base.live_buffers, base.live_bytes)
    assert dev.backend.staging.stats().live_buffers == 0


async def test_twenty_chains_of_one_input_allocate_nothing_after_the_first_repetition(dev):
    xn = np.linspace(-1, 1, 1 << 14, dtype=np.float32)
    x = af.tensor(xn, device=dev)
    await dev.sync()
    allocations, live = [], []
    for _ in range(4):
        outs = [chain8(x + float(i)) for i in range(20)]  # all kept
        await dev.sync()
        live.append(dev.memory_stats().live_buffers)
        allocations.append(dev.memory_stats().allocations)
        assert_close(await outs[7].to_data(), chain8_np(xn + np.float32(7)), rtol=1e-4)
        del outs
    assert allocations[1] == allocations[2] == allocations[3]
    assert live[0] == live[3] >= 21  # the input and the 20 kept results


async def test_empty_cache_gives_pooled_buffers_back_and_the_device_keeps_working(dev):
    x = af.tensor(np.arange(1024, dtype=np.float32), device=dev)
    ys = [x * float(i) for i in range(8)]
    await dev.sync()
    del ys
    await dev.sync()
    before = dev.memory_stats()
    assert before.pooled_buffers > 0 and before.pooled_bytes > 0
    await dev.empty_cache()
    after = dev.memory_stats()
    assert (after.pooled_buffers, after.pooled_bytes) == (0, 0)
    assert (after.live_buffers, after.live_bytes) == (before.live_buffers, before.live_bytes)
    assert_close(await (x + 1.0).to_data(), np.arange(1024, dtype=np.float32) + 1.0)
    assert dev.memory_stats().allocations > after.allocations  # the cache refills on demand


async def test_empty_cache_on_the_numpy_backend_is_a_no_op(ref):
    x = af.tensor([1.0, 2.0], device=ref)
    await ref.empty_cache()
    assert_close(await (x * 2.0).to_data(), np.array([2.0, 4.0], np.float32))


async def test_the_cache_budget_is_an_option():
    x = np.ones(4096, np.float32)
    async with af.open_device(cache_bytes=0) as dev:  # keeps nothing: every free releases
        for _ in range(3):
            await (af.tensor(x, device=dev) * 2.0).to_data()
        assert dev.memory_stats().pooled_bytes == 0
    async with af.open_device(cache_bytes=1 << 30) as dev:
        for _ in range(3):
            await (af.tensor(x, device=dev) * 2.0).to_data()
        assert dev.memory_stats().pooled_bytes > 0
    with pytest.raises(ValueError, match="cache_bytes"):
        async with af.open_device(cache_bytes=-1):
            pass


def test_reads_and_dispatches_go_through_wgpu_natives_c_api_and_reads_submit_nothing():
    # With one device on the runtime, a read maps its staging buffer through wgpu-native's
    # C API on the executor thread (native.NativeMap): no empty submit before the map (as
    # map_sync makes), no wgpu-py map_async (which wakes its poller thread). With several
    # devices on the runtime, it maps through wgpu-py's internal "READ_NOSYNC" mode. Both
    # rest on wgpu-py internals: if a release drops or changes them, this fails first.
    import wgpu

    from asyncfusion.backends.wgpu.native import NativeMap, NativePass
    from asyncfusion.backends.wgpu.runtime import MAP_READ_NOSYNC, get_runtime, detach

    rt = get_runtime()
    try:
        dev = rt.device
        assert isinstance(rt._native, NativeMap)  # the internals they need are there
        assert isinstance(rt._pass, NativePass)  # (dispatches: every launch's test uses it)
        assert MAP_READ_NOSYNC == "READ_NOSYNC"
        src = dev.create_buffer_with_data(
            data=np.arange(8, dtype=np.float32).tobytes(), usage=wgpu.BufferUsage.COPY_SRC)
        stage = rt.create_staging(32)
        submits: list[object] = []
        maps: list[object] = []
        queue_type, buffer_type = type(rt.queue), type(stage)
        real_submit, real_map = queue_type.submit, buffer_type.map_async

        def counting(self, buffers):
            submits.append(buffers)
            return real_submit(self, buffers)

        def counting_map(self, mode, *args):
            maps.append(mode)
            return real_map(self, mode, *args)

        want = np.arange(8, dtype=np.float32)
        for users, mapped in ((1, []), (2, [MAP_READ_NOSYNC])):
            enc = dev.create_command_encoder()
            enc.copy_buffer_to_buffer(src, 0, stage, 0, 32)
            rt.queue.submit([enc.finish()])
            queue_type.submit, buffer_type.map_async = counting, counting_map
            rt.users, was = users, rt.users
            try:
                out = rt.read_staging(stage, 32)
            finally:
                queue_type.submit, buffer_type.map_async = real_submit, real_map
                rt.users = was
            np.testing.assert_array_equal(out.view(np.float32), want)
            assert submits == [] and maps == mapped, (users, submits, maps)
            maps.clear()
        stage.map_sync(wgpu.MapMode.READ)  # the public mode it replaces does submit first
        stage.unmap()
        stage.destroy()
        src.destroy()
    finally:
        detach(rt)


def test_a_native_map_that_fails_validation_raises_and_the_next_read_works():
    import wgpu

    from asyncfusion.backends.wgpu.native import native_map
    from asyncfusion.backends.wgpu.runtime import get_runtime, detach

    rt = get_runtime()
    try:
        dev = rt.device
        native = native_map(dev)
        assert native is not None
        src = dev.create_buffer_with_data(
            data=np.arange(8, dtype=np.float32).tobytes(), usage=wgpu.BufferUsage.COPY_SRC)
        stage, storage = rt.create_staging(32), rt.create_storage(32)
        with pytest.raises(wgpu.GPUValidationError, match="MAP_READ"):
            native.read(storage, 32)  # not a mappable buffer
        stage.map_sync(wgpu.MapMode.READ)
        with pytest.raises(wgpu.GPUValidationError, match="already mapped"):
            native.read(stage, 32)
        stage.unmap()
        enc = dev.create_command_encoder()
        enc.copy_buffer_to_buffer(src, 0, stage, 0, 32)
        rt.queue.submit([enc.finish()])
        np.testing.assert_array_equal(native.read(stage, 32).view(np.float32),
                                      np.arange(8, dtype=np.float32))
        for buf in (src, stage, storage):
            buf.destroy()
    finally:
        detach(rt)


async def test_an_open_device_keeps_the_gil_switch_interval_short(dev):
    # Rounds are Python on the executor thread: the event loop waits for the GIL at most
    # one switch interval, which an open device keeps at GIL_SWITCH_S or below.
    import sys

    from asyncfusion.runtime.server import GIL_SWITCH_S

    assert sys.getswitchinterval() <= GIL_SWITCH_S


async def test_a_repeated_launch_is_prepared_once_and_its_encoder_begun_between_rounds(
        dev, monkeypatch):
    from asyncfusion.backends.wgpu import backend as wgpu_backend
    from asyncfusion.backends.wgpu.runtime import Runtime

    x = af.tensor(np.arange(16, dtype=np.float32), device=dev)
    await (x * 3.0).to_data()  # plans, compiles and prepares the launch
    with anyio.fail_after(5):
        while dev.backend.batch.spare is None:  # begun after the read was handed back
            await anyio.sleep(0.001)
    prepared, begun, taken = [], [], []
    real_prepare, real_begin = wgpu_backend.WgpuBackend._prepare, Runtime.prepare
    real_encoder = Runtime.encoder

    def counting_prepare(self, kernel, args):  # type: ignore[no-untyped-def]
        prepared.append(kernel)
        return real_prepare(self, kernel, args)

    def counting_begin(self, batch):  # type: ignore[no-untyped-def]
        before = batch.spare
        real_begin(self, batch)
        if batch.spare is not before:
            begun.append(batch.spare)

    def recording_encoder(self, batch):  # type: ignore[no-untyped-def]
        spare = batch.spare if batch.encoder is None else None
        enc = real_encoder(self, batch)
        if spare is not None:
            taken.append(spare)
            assert enc is spare[0]
        return enc

    monkeypatch.setattr(wgpu_backend.WgpuBackend, "_prepare", counting_prepare)
    monkeypatch.setattr(Runtime, "prepare", counting_begin)
    monkeypatch.setattr(Runtime, "encoder", recording_encoder)
    for k in range(20):
        assert_close(await (x * 3.0).to_data(), np.arange(16, dtype=np.float32) * 3.0)
        with anyio.fail_after(5):
            while dev.backend.batch.spare is None:  # the executor thread begins it after
                await anyio.sleep(0.001)           # handing the round back
    assert prepared == []  # the (kernel, arguments) of a launch are made into bytes once
    assert len(taken) == 20 and len(begun) == 20  # each round takes the spare of the last
    assert all(t is not b for t, b in zip(taken[1:], begun[1:], strict=False))
    assert_close(await (x * 4.0).to_data(), np.arange(16, dtype=np.float32) * 4.0)
    assert len(prepared) == 1  # a new scalar is a new launch to prepare


async def test_a_round_submits_its_dispatches_as_soon_as_they_bind_enough_bytes(plain):
    # Large work goes to the GPU while the round encodes the rest: a submission once the
    # encoded dispatches bind bytes_per_submit (each launch here binds 128 KiB).
    x = af.tensor(np.ones(1 << 14, np.float32), device=plain)
    await plain.sync()
    rt = plain.backend.rt
    default = rt.bytes_per_submit
    try:
        for limit, submissions in ((default, 1), (128 << 10, 4)):
            rt.bytes_per_submit = limit
            plain.reset_stats()
            got = await (((x * 2.0) + 1.0) * 3.0).to_data()
            stats = plain.stats()
            assert stats.launches == 3 and stats.submissions == submissions, (limit, stats)
            np.testing.assert_array_equal(got, np.full(1 << 14, 9.0, np.float32))
    finally:
        rt.bytes_per_submit = default  # the runtime outlives this device


async def test_no_encoder_is_begun_ahead_while_a_gpu_timer_runs(dev):
    x = af.tensor(np.ones(64, np.float32), device=dev)
    await (x + 1.0).to_data()
    with dev.backend.rt.gpu_timer() as timer:
        for _ in range(3):
            assert_close(await (x * 2.0 + 1.0).to_data(), np.full(64, 3.0, np.float32))
            await anyio.sleep(0.01)
            assert dev.backend.batch.spare is None
    if timer.available:  # the timed rounds' passes were timed
        assert await anyio.to_thread.run_sync(timer.total_ns) > 0


async def test_a_round_wakes_its_readers_a_slice_per_loop_iteration(monkeypatch):
    """A finished round sets WAKE_SLICE readers' events at once; the server task wakes
    the rest a slice per loop iteration (so hundreds of woken readers never hold the loop
    in one iteration), every reader once, in order, with no thread-safe call."""
    from asyncfusion.engine.request import Request
    from asyncfusion.runtime.server import WAKE_SLICE, Server

    srv = Server(executor=None)  # type: ignore[arg-type] - waking touches no executor
    reqs = [Request(stream=i) for i in range(2 * WAKE_SLICE + 5)]
    srv._finish(reqs)
    assert sum(r.done.is_set() for r in reqs) == WAKE_SLICE  # the rest wait their turn
    assert [len(batch) for batch in srv.waking] == [WAKE_SLICE + 5]
    seen: list[int] = []  # readers woken whenever the server task gives the loop a turn
    real_sleep = anyio.sleep

    async def turn(delay: float) -> None:
        seen.append(sum(r.done.is_set() for r in reqs))
        await real_sleep(delay)

    monkeypatch.setattr(anyio, "sleep", turn)
    await srv._wake_the_rest()  # a turn of the loop, a slice, ..., a turn, the last slice
    assert seen == list(range(WAKE_SLICE, len(reqs), WAKE_SLICE))
    assert all(r.done.is_set() and r.error is None for r in reqs)
    assert not srv.waking and not srv.wanted  # waking readers asks for no round


async def test_many_readers_of_one_round_all_get_their_results():
    """100 readers served by one round, woken over several loop iterations, each get
    their own values."""
    async with af.open_device("numpy") as dev:
        xs = [np.full(8, i, np.float32) for i in range(100)]
        ts = [af.tensor(x, device=dev) for x in xs]
        await dev.sync()
        out: list[object] = [None] * 100

        async def read(i: int) -> None:
            out[i] = await (ts[i] * 2.0).to_data()

        async with anyio.create_task_group() as tg:
            for i in range(100):
                tg.start_soon(read, i)
    for i in range(100):
        assert_close(out[i], xs[i] * 2)


async def test_generated_kernels_compile_without_nagas_checks_and_a_users_kernel_with_them(
        dev, monkeypatch):
    # asyncfusion's own kernels (element-wise, reductions, matmul) are compiled through
    # wgpu-native's wgpuDeviceCreateShaderModuleTrusted with no runtime checks (no index
    # clamps, no loop counters: native.TrustedModules); a user's af.custom_kernel keeps
    # naga's checks. Rests on wgpu-py internals: if a release drops them, this fails first.
    import wgpu

    from asyncfusion.backends.wgpu.native import TrustedModules

    rt = dev.backend.rt
    assert isinstance(rt._trusted, TrustedModules)
    with pytest.raises(wgpu.GPUValidationError):
        rt._trusted.create("fn main( {")  # a bad text still raises, as it does checked
    trusted: list[str] = []
    checked: list[str] = []
    real_trusted, real_checked = TrustedModules.create, type(rt.device).create_shader_module

    def spy_trusted(self, wgsl):
        trusted.append(wgsl)
        return real_trusted(self, wgsl)

    def spy_checked(self, **kw):
        checked.append(kw["code"])
        return real_checked(self, **kw)

    monkeypatch.setattr(TrustedModules, "create", spy_trusted)
    monkeypatch.setattr(type(rt.device), "create_shader_module", spy_checked)
    rt._pipelines.clear()  # every kernel below is compiled again
    rt._groups.clear()
    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    b = np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)
    x, w = af.tensor(a, device=dev), af.tensor(b, device=dev)
    got = await ((af.exp(x) - 1.0) @ w).sum(axis=0).to_data()
    assert_close(got, ((np.exp(a) - 1.0) @ b).sum(axis=0), rtol=1e-5, atol=1e-5)
    assert trusted and not checked
    y = af.custom_kernel(
        "scale_trusted_test", wgsl=_SCALE, inputs=1,
        outputs=lambda t, *_: (t.shape, t.dtype), workgroups=lambda t, *_: 1,
        numpy=lambda t, n: t * 2)(x.reshape(12), params=(12,))
    assert_close(await y.to_data(), a.reshape(12) * 2)
    assert _SCALE in checked and _SCALE not in trusted


_SCALE = """
struct P { n: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < p.n) { out[g.x] = a[g.x] * 2.0; }
}
"""
