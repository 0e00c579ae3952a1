"""Nightly-style stress: ``make stress`` (or ``pytest -m stress tests/stress``).

Each test ends with buffers and queued host data back at their baseline. The default
suite keeps a short version of each (tests/test_reliability_*.py).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import os
import subprocess
import sys
import textwrap

import anyio
import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.ir import InitOp
from tests.conftest import assert_close

pytestmark = [pytest.mark.stress, pytest.mark.timeout(900)]


def queued_host_bytes(dev: af.Device) -> int:
    with dev.streams.lock:
        return sum(op.data.nbytes for q in dev.streams.queues.values() for op in q.ops
                   if isinstance(op, InitOp))


async def settle(dev: af.Device) -> None:
    gc.collect()
    await dev.sync()
    await dev.sync()


@pytest.mark.parametrize("fusion", [True, False])
async def test_storm_of_tasks_with_cancelled_reads_matches_numpy(fusion):
    async with af.open_device(fusion=fusion) as dev:
        rng = np.random.default_rng(7)
        xs = [rng.standard_normal(4096).astype(np.float32) for _ in range(8)]
        ts = [af.tensor(x, device=dev) for x in xs]
        await settle(dev)
        base = dev.memory_stats()
        stats = {"wrong": 0, "compared": 0, "cancelled": 0}

        async def worker(i: int) -> None:
            a, b = ts[i % 8], ts[(i * 3 + 1) % 8]
            y = ((a * float(i % 5) + b).tanh() - a * 0.5).abs()
            want = np.abs(np.tanh(xs[i % 8] * np.float32(i % 5) + xs[(i * 3 + 1) % 8])
                          - xs[i % 8] * np.float32(0.5))
            if i % 4 == 0:
                with anyio.move_on_after(0.0005 * (i % 13)) as scope:
                    out = await y.to_data()
                if scope.cancelled_caught:
                    stats["cancelled"] += 1
                    return
            else:
                out = await y.to_data()
            stats["compared"] += out.size
            if not np.allclose(out, want, rtol=1e-5, atol=1e-6):
                stats["wrong"] += 1

        for _ in range(3):
            async with anyio.create_task_group() as tg:
                for i in range(800):
                    tg.start_soon(worker, i)
        await settle(dev)
        after = dev.memory_stats()
        assert stats["wrong"] == 0, stats
        assert stats["compared"] > 1_000_000
        assert (after.live_buffers, after.live_bytes) == (base.live_buffers, base.live_bytes)
        assert queued_host_bytes(dev) == 0


@pytest.mark.asyncio
async def test_native_asyncio_cancellation_over_ten_rounds_leaks_nothing():
    async with af.open_device() as dev:
        x = af.rand((512, 1024), seed=1, device=dev)
        xn = await x.to_data()
        await settle(dev)
        base = dev.memory_stats()
        wrong = 0

        async def one(i: int, scale: float) -> None:
            nonlocal wrong
            try:
                out = await asyncio.wait_for((x * float(i)).to_data(), scale * (i % 20))
            except asyncio.TimeoutError:
                return
            wrong += not np.array_equal(out, xn * np.float32(i))

        for r in range(10):
            await asyncio.gather(*(one(i, (0.002, 0.02, 0.05)[r % 3]) for i in range(100)))
        await settle(dev)
        after = dev.memory_stats()
        assert wrong == 0
        assert (after.live_buffers, after.live_bytes) == (base.live_buffers, base.live_bytes)


async def test_five_thousand_abandoned_streams_hold_nothing_and_run_nothing():
    async with af.open_device() as dev:
        data = np.ones(25_600, np.float32)  # 100 KB

        async def work() -> None:
            t = af.tensor(data, device=dev)
            (t * 2.0).exp()

        for _ in range(10):
            async with anyio.create_task_group() as tg:
                for _ in range(500):
                    tg.start_soon(work)
        gc.collect()
        for _ in range(20):
            await anyio.sleep(0.01)
        assert queued_host_bytes(dev) <= 64 * data.nbytes
        dev.reset_stats()
        await dev.sync()
        assert dev.stats().launches == 0
        assert queued_host_bytes(dev) == 0 and not dev.streams.queues
        assert dev.memory_stats().live_buffers == 0


async def test_two_thousand_distinct_programs_keep_at_most_1024_pipelines():
    async with af.open_device() as dev:
        x = af.rand(16, seed=2, device=dev)
        # Cheap primitives: the point is how many pipelines stay alive, not compile time.
        ops = ["abs", "relu", "square", "sign", "floor", "ceil", "round", "rsqrt"]
        for chain in (itertools.islice(itertools.product(ops, repeat=4), 2000)):
            y = x
            for op in chain:
                y = getattr(y, op)()
            await y.to_data()
        rt = dev.backend.rt
        assert rt.pipelines_created >= 2000
        assert rt.pipelines_alive <= 1024
        del x, y
        await settle(dev)
        assert dev.memory_stats().live_buffers == 0


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.timeout(2400)
async def test_two_thousand_distinct_programs_hold_the_memory_of_their_cached_pipelines_only():
    # Transcendental chains: on lavapipe each pipeline's machine code takes 1-13 MB of
    # this process, so pipelines that outlive their cache entry show in its RSS.
    async with af.open_device() as dev:
        rt = dev.backend.rt
        x = af.rand(16, seed=2, device=dev)
        ops = ["exp", "sin", "cos", "tanh", "sqrt", "abs", "sigmoid", "relu"]
        rss = {}
        for i, chain in enumerate(itertools.islice(itertools.product(ops, repeat=4), 2000)):
            y = x
            for op in chain:
                y = getattr(y, op)()
            await y.to_data()
            if i + 1 in (1000, 2000):
                gc.collect()
                rss[i + 1] = rss_bytes()
            assert rt.pipelines_alive <= rt.max_pipelines
        assert rt.pipelines_created >= 2000
        assert rss[2000] - rss[1000] < 150 << 20, f"RSS grew {(rss[2000] - rss[1000]) >> 20} MB"
        del x, y
        await settle(dev)
        assert dev.memory_stats().live_buffers == 0


async def test_twenty_distinct_limits_leave_at_most_one_idle_wgpu_device():
    from asyncfusion.backends.wgpu import runtime

    threads = len(os.listdir("/proc/self/task"))
    for bindings in range(4, 24):
        async with af.open_device(max_storage_bindings=bindings) as dev:
            await (af.tensor([1.0], device=dev) + 1.0).to_data()
    gc.collect()
    assert len([k for k in runtime._RUNTIMES if k[0] is not None and k[0] >= 4]) <= 1
    assert len(os.listdir("/proc/self/task")) <= threads + 8


def test_forked_children_under_load_fail_fast():
    code = textwrap.dedent("""
        import multiprocessing, asyncfusion as af
        x = af.tensor([1.0, 2.0])
        x.to_data_sync()
        def child(i):
            try:
                (x * i).to_data_sync()
                return "worked"
            except af.DeviceClosedError:
                return "refused"
        with multiprocessing.get_context("fork").Pool(4) as pool:
            print(set(pool.map(child, range(64))))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "{'refused'}"


async def test_event_loop_lateness_stays_bounded_during_a_storm(dev):
    # Not a speed assertion: a stalled loop (a blocking call on it) shows up as a gap
    # of seconds, far past any scheduling noise.
    gaps: list[float] = []

    async def ticker() -> None:
        last = anyio.current_time()
        while True:
            await anyio.sleep(0.001)
            now = anyio.current_time()
            gaps.append(now - last)
            last = now

    x = af.rand(1 << 18, seed=3, device=dev)
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        for _ in range(20):
            async with anyio.create_task_group() as work:
                for i in range(50):
                    work.start_soon(lambda i=i: ((x * float(i)).exp() + 1.0).to_data())
        tg.cancel_scope.cancel()
    assert gaps and max(gaps) < 2.0
    del x
    await settle(dev)
    assert dev.memory_stats().live_buffers == 0
