"""Many tasks, threads and event loops on one device: sharing, drops, batching, a live
loop, cancellation and no deadlock. Every test runs on asyncio and on trio."""

from __future__ import annotations

import gc
import random
import subprocess
import sys
import threading
import time

import anyio
import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.backends.wgpu import runtime as wgpu_runtime
from tests.conftest import assert_close
from examples.seed_chain import chain as chain8
from examples.seed_chain import chain_np as chain8_np




async def test_tensor_made_in_one_task_is_read_in_another(dev):
    shared: dict[str, af.Tensor] = {}
    made = anyio.Event()
    results = {}

    async def producer():
        x = af.tensor(np.arange(6, dtype=np.float32), device=dev)
        shared["y"] = (x * 3.0).exp()  # pending in the producer's stream
        made.set()
        await anyio.sleep(0.05)
        results["producer"] = await (shared["y"] + 1.0).to_data()

    async def consumer():
        await made.wait()
        results["consumer"] = await (shared["y"] * 2.0).to_data()

    async with anyio.create_task_group() as tg:
        tg.start_soon(producer)
        tg.start_soon(consumer)
    y = np.exp(np.arange(6, dtype=np.float32) * 3)
    assert_close(results["consumer"], y * 2, rtol=1e-5)
    assert_close(results["producer"], y + 1, rtol=1e-5)


async def test_foreign_drop_does_not_cut_the_home_segment(dev):
    x = af.rand(256, seed=1, device=dev)
    await dev.sync()
    holder = {"t": x + 1.0}  # pending in this task's stream
    y = (x * 2.0).exp()
    t = threading.Thread(target=holder.clear)  # the last reference dies on another thread
    t.start()
    t.join()
    dev.reset_stats()
    out = await y.to_data()
    assert dev.stats().launches == 1  # x+1 (now dead), x*2 and exp: one block, one kernel
    assert_close(out, np.exp((await x.to_data()) * 2), rtol=1e-5)


async def test_drop_never_frees_a_buffer_another_stream_still_reads(dev):
    x = af.tensor(np.arange(1024, dtype=np.float32), device=dev)
    await dev.sync()
    ready = anyio.Event()
    box = {"x": x}
    del x
    out = {}

    async def reader():
        y = box["x"] * 3.0  # queued in this task, not yet run
        ready.set()
        await anyio.sleep(0.02)
        out["y"] = await y.to_data()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        await ready.wait()
        box.clear()  # last reference dropped from the home task while the read is pending
        await dev.sync()  # runs and frees whatever is freeable
    assert_close(out["y"], np.arange(1024, dtype=np.float32) * 3)


async def test_ready_work_of_many_tasks_goes_in_few_submissions(dev):
    xs = [af.tensor(np.full(64, i, np.float32), device=dev) for i in range(20)]
    await dev.sync()
    dev.reset_stats()
    results = {}

    async def one(i):
        results[i] = await chain8(xs[i]).to_data()

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(one, i)
    assert dev.stats().submissions <= 3  # 20 reads, batched into rounds
    for i in range(20):
        assert_close(results[i], chain8_np(np.full(64, i, np.float32)), rtol=2e-5)


async def test_event_loop_stays_live_during_heavy_gpu_work(plain, monkeypatch):
    """Submissions and maps (which block while the GPU works) run on the executor
    thread, never the loop's, so another task keeps running between the rounds. The
    blockbuster fixture fails the test if anything blocks on the loop thread."""
    blocking_threads: set[int] = set()
    for name in ("submit", "read_staging"):
        original = getattr(wgpu_runtime.Runtime, name)

        def recorded(*a, _original=original, **k):
            blocking_threads.add(threading.get_ident())
            return _original(*a, **k)

        monkeypatch.setattr(wgpu_runtime.Runtime, name, recorded)
    ticks = [0]
    done = anyio.Event()

    async def ticker():
        while not done.is_set():
            await anyio.sleep(0)
            ticks[0] += 1

    x = af.rand(1 << 18, seed=2, device=plain)
    between = 0
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        for _ in range(5):
            before = ticks[0]
            await chain8(x).to_data()
            between += ticks[0] > before
        done.set()
    assert blocking_threads and threading.get_ident() not in blocking_threads
    assert between == 5  # the ticker ran while every read was in flight


@pytest.mark.parametrize("how", ["move_on_after", "fail_after", "cancel_scope"])
async def test_cancelled_reads_leak_nothing_and_wedge_nothing(dev, how):
    x = af.rand(4096, seed=3, device=dev)
    x_np = await x.to_data()
    baseline = dev.memory_stats().live_buffers
    rng = random.Random(7)
    for i in range(40):
        y = chain8(x)
        delay = rng.choice([0, 0, 0.0005, 0.002, 0.01])
        if how == "move_on_after":
            with anyio.move_on_after(delay):
                await y.to_data()
        elif how == "fail_after":
            with pytest.raises(TimeoutError) if delay == 0 else _maybe_timeout():
                with anyio.fail_after(delay):
                    await y.to_data()
        else:
            await _read_in_child_then_cancel(y, delay)
        del y
    out = await chain8(x).to_data()  # the device still works
    assert_close(out, chain8_np(x_np), rtol=2e-5)
    if how == "cancel_scope":
        gc.collect()  # a cancelled child *task* keeps its frames in a reference cycle
    await dev.sync()
    await dev.sync()  # otherwise no gc.collect(): a cancelled read frees without the cycle GC
    assert dev.memory_stats().live_buffers == baseline
    assert not dev._server.inbox


async def _read_in_child_then_cancel(y: af.Tensor, delay: float) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(y.to_data)
        await anyio.sleep(delay)
        tg.cancel_scope.cancel()


class _maybe_timeout:
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return exc_type is TimeoutError


async def test_cancelled_sync_leaves_the_device_working(dev):
    x = af.rand(1 << 16, seed=4, device=dev)
    for _ in range(10):
        y = chain8(x)
        with anyio.move_on_after(0):
            await dev.sync()
        del y
    assert_close(await (x * 0.0 + 1.0).to_data(), np.ones(1 << 16, np.float32))


async def test_plain_threads_use_the_blocking_door_beside_async_tasks(dev):
    x = af.tensor(np.arange(32, dtype=np.float32), device=dev)
    out: dict[str, np.ndarray] = {}

    def worker(name: str, k: float) -> None:
        out[name] = (x * k + 1.0).to_data_sync()

    threads = [threading.Thread(target=worker, args=(f"t{i}", float(i))) for i in range(4)]
    for t in threads:
        t.start()
    for i in range(4):
        out[f"a{i}"] = await (x * float(i) - 1.0).to_data()
    await anyio.to_thread.run_sync(worker, "anyio-worker", 9.0)
    for t in threads:
        await anyio.to_thread.run_sync(t.join)
    base = np.arange(32, dtype=np.float32)
    for i in range(4):
        assert_close(out[f"t{i}"], base * i + 1)
        assert_close(out[f"a{i}"], base * i - 1)
    assert_close(out["anyio-worker"], base * 9 + 1)


async def test_many_tasks_reading_syncing_and_dropping_shared_tensors_finish(dev):
    shared = [af.rand(512, seed=i, device=dev) for i in range(8)]
    expected = [chain8_np(await t.to_data()) for t in shared]

    async def worker(i: int) -> None:
        rng = random.Random(i)
        for _ in range(15):
            j = rng.randrange(len(shared))
            action = rng.random()
            if action < 0.6:
                assert_close(await chain8(shared[j]).to_data(), expected[j], rtol=2e-5)
            elif action < 0.8:
                await dev.sync()
            else:
                shared[j] * 1.0  # created and dropped at once

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for i in range(24):
                tg.start_soon(worker, i)


async def test_debug_mode_catches_an_await_under_the_server_lock(monkeypatch):
    from asyncfusion import _debug

    monkeypatch.setattr(_debug, "DEBUG", True)
    async with af.open_device("numpy") as d:
        x = af.tensor([1.0], device=d)
        with d.streams.lock:
            with pytest.raises(af.DeviceClosedError, match="holding its lock"):
                await x.to_data()


async def test_default_device_serves_tasks_of_any_loop():
    x = af.tensor([1.0, 2.0])  # the lazily created default device, on its own thread
    out = await (x * 4.0).to_data()
    assert_close(out, np.array([4.0, 8.0], np.float32))


def test_interpreter_exit_with_pending_work_and_live_tensors_is_clean():
    script = (
        "import asyncfusion as af, anyio\n"
        "keep = []\n"
        "async def main():\n"
        "    async with af.open_device() as dev:\n"
        "        x = af.rand(100, seed=1, device=dev)\n"
        "        keep.append((x * 2).exp())\n"
        "        await (x + 1).to_data()\n"
        "        keep.append(x * 3)\n"
        "anyio.run(main)\n"
        "y = af.tensor([1.0]) * 2\n"
        "print(y.to_data_sync())\n"
        "z = af.tensor([3.0]) + 1\n"
    )
    proc = subprocess.run([sys.executable, "-X", "dev", "-c", script], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "[2.]" in proc.stdout
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


async def test_a_cancellation_its_reader_keeps_keeps_no_tensor(dev):
    # What asyncio does for a cancelled task (it keeps the exception, and so the frames
    # of the read in its traceback), done by hand on both backends.
    await dev.sync()
    base = dev.memory_stats()
    kept: list[BaseException] = []

    async def reader(i: int) -> None:
        try:
            await (af.rand(1 << 16, seed=i, device=dev) * 2.0).to_data()
        except anyio.get_cancelled_exc_class() as exc:
            kept.append(exc)
            raise

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(reader, i)
        await anyio.sleep(0)
        tg.cancel_scope.cancel()
    assert len(kept) == 8
    gc.collect()
    await dev.sync()
    await dev.sync()
    after = dev.memory_stats()
    assert (after.live_buffers, after.live_bytes) == (base.live_buffers, base.live_bytes)
