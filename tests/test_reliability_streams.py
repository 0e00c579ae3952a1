"""Streams of tasks and threads that end without reading are reclaimed: their dead work
is dropped without running (no upload, no launch, no host data kept), and the tensors
they made that someone still holds stay computable."""

from __future__ import annotations

import gc
import threading

import anyio
import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.ir import InitOp
from tests.conftest import assert_close


def queued(dev: af.Device) -> tuple[int, int]:
    """(queues, host bytes that queued uploads hold)."""
    with dev.streams.lock:
        qs = list(dev.streams.queues.values())
        return len(qs), sum(op.data.nbytes for q in qs for op in q.ops
                            if isinstance(op, InitOp))


async def _let_server_run(dev: af.Device) -> None:
    for _ in range(20):
        await anyio.sleep(0.005)


async def _abandon(dev: af.Device, data: np.ndarray, groups: int, tasks: int) -> None:
    """``groups`` task groups, one after the other, of ``tasks`` tasks that each upload
    ``data``, compute on it, read nothing and end."""
    async def work() -> None:
        t = af.tensor(data, device=dev)
        (t * 2.0).exp()

    for _ in range(groups):
        async with anyio.create_task_group() as tg:
            for _ in range(tasks):
                tg.start_soon(work)
    gc.collect()


async def test_ended_tasks_that_read_nothing_leave_no_queue_and_no_host_data(dev):
    data = np.ones(25_600, np.float32)  # 100 KB each
    await _abandon(dev, data, 1, 400)
    await _let_server_run(dev)  # many new streams prompt a reclaim, with no read at all
    queues, host = queued(dev)
    assert host <= 64 * data.nbytes, (queues, host)  # at most the streams since the last
    dev.reset_stats()
    await dev.sync()
    assert queued(dev) == (0, 0)
    assert dev.stats().launches == 0  # the dead work never ran
    assert dev.memory_stats().live_buffers == 0


async def test_tasks_ending_after_the_last_round_are_reclaimed_without_a_read(dev):
    """Groups of tasks that each upload, compute, read nothing and end, with no round
    after the last of them. On trio the device hears of each task's exit (an
    instrument) and the next round, which it starts, drops all their work: nothing stays
    queued. On asyncio, crowded rounds reclaim them by the tasks' ``done()``: at most the
    streams made since the last such round stay (as in the test above)."""
    import sniffio

    data = np.ones(25_600, np.float32)
    await _abandon(dev, data, 5, 300)
    await _let_server_run(dev)
    queues, host = queued(dev)
    if sniffio.current_async_library() == "trio":
        assert (queues, host) == (0, 0)
    else:
        assert host <= 64 * data.nbytes, (queues, host)
    dev.reset_stats()
    await dev.sync()
    assert queued(dev) == (0, 0)
    assert dev.stats().launches == 0


async def test_tasks_alive_at_a_reclaim_and_ended_after_it_are_reclaimed_too(dev):
    """300 tasks register work and wait; a read's round meanwhile finds them alive (the
    next crowded reclaim would come only at twice as many streams); then they end
    without reading. The device hears of each end and drops their work with no further
    read, and later reads find nothing of it queued."""
    data = np.ones(25_600, np.float32)
    go = anyio.Event()

    async def work() -> None:
        t = af.tensor(data, device=dev)
        (t * 2.0).exp()
        await go.wait()

    async with anyio.create_task_group() as tg:
        for _ in range(300):
            tg.start_soon(work)
        await anyio.sleep(0.05)
        assert_close(await (af.tensor([1.0, 2.0], device=dev) * 2.0).to_data(), [2.0, 4.0])
        assert queued(dev) == (300, 300 * data.nbytes)  # alive: kept
        go.set()
    gc.collect()
    await _let_server_run(dev)
    assert queued(dev) == (0, 0)
    dev.reset_stats()
    await dev.sync()
    assert dev.stats().launches == 0  # the dead work never ran


async def test_tensors_of_ended_tasks_that_someone_holds_stay_computable(dev):
    kept: dict[int, af.Tensor] = {}
    base = np.arange(64, dtype=np.float32)

    async def work(i: int) -> None:
        t = af.tensor(base + i, device=dev)
        a = t * 2.0              # held: its producers must stay
        dead = (a + 1.0).exp()   # dropped: goes
        del dead
        if i % 3 == 0:
            kept[i] = a
        elif i % 3 == 1:
            kept[i] = (a - t).sum()  # a read of a dropped input, held output

    async with anyio.create_task_group() as tg:
        for i in range(150):
            tg.start_soon(work, i)
    gc.collect()
    await _let_server_run(dev)
    dev.reset_stats()
    for i, t in sorted(kept.items()):
        x = base + i
        want = x * 2 if i % 3 == 0 else np.float32((x * 2 - x).sum())
        assert_close(await t.to_data(), np.asarray(want, np.float32))
    del t
    kept.clear()
    gc.collect()
    await dev.sync()
    await dev.sync()
    assert queued(dev) == (0, 0)
    assert dev.memory_stats().live_buffers == 0


async def test_an_ended_task_feeding_a_live_stream_keeps_what_that_stream_reads(dev):
    box: dict[str, af.Tensor] = {}

    async def producer() -> None:
        t = af.tensor([1.0, 2.0, 3.0], device=dev)
        u = t + 10.0
        box["u"] = u
        box["sum"] = (u * 2.0).sum()  # read by nobody yet; held
        del t, u

    async with anyio.create_task_group() as tg:
        tg.start_soon(producer)
    u = box.pop("u")
    v = u * 3.0  # this stream now reads u, produced by an ended stream
    del u
    gc.collect()
    await _let_server_run(dev)
    await dev.sync()
    assert_close(await v.to_data(), np.array([33.0, 36.0, 39.0], np.float32))
    assert_close(await box.pop("sum").to_data(), np.float32(72.0).reshape(()))


async def test_an_ended_thread_is_reclaimed_too(dev):
    held: list[af.Tensor] = []

    def thread_work() -> None:
        for i in range(5):
            t = af.tensor(np.full(1000, float(i), np.float32), device=dev)
            (t * 2.0).sqrt()
        held.append(af.tensor([4.0], device=dev) * 2.0)

    th = threading.Thread(target=thread_work)
    th.start()
    await anyio.to_thread.run_sync(th.join)  # joining on the loop would block it
    gc.collect()
    dev.reset_stats()
    await dev.sync()
    assert queued(dev) == (0, 0)
    assert dev.stats().launches == 1  # only the held tensor's work: upload, then one kernel
    assert_close(await held.pop().to_data(), np.array([8.0], np.float32))


@pytest.mark.parametrize("seed", range(2))
async def test_random_programs_over_ended_tasks_match_numpy(dev, seed):
    rng = np.random.default_rng(seed)
    kept: list[tuple[af.Tensor, np.ndarray]] = []

    async def work(i: int) -> None:
        local = np.random.default_rng(seed * 1000 + i)
        xs = [local.standard_normal(16).astype(np.float32) for _ in range(3)]
        ts = [af.tensor(x, device=dev) for x in xs]
        for _ in range(6):  # a random chain; some values kept, most dropped
            a, b = local.integers(0, len(ts), 2)
            k = local.integers(0, 3)
            t, x = [(ts[a] + ts[b], xs[a] + xs[b]), (ts[a] * 0.5, xs[a] * np.float32(0.5)),
                    (ts[a].tanh(), np.tanh(xs[a]))][k]
            ts.append(t)
            xs.append(x)
            if local.random() < 0.2:
                kept.append((t, x))

    async with anyio.create_task_group() as tg:
        for i in range(int(rng.integers(40, 80))):
            tg.start_soon(work, i)
    gc.collect()
    await _let_server_run(dev)
    for t, x in kept:
        assert_close(await t.to_data(), x, rtol=1e-5, atol=1e-6)
    del t
    kept.clear()
    gc.collect()
    await dev.sync()
    await dev.sync()
    assert queued(dev) == (0, 0)
    assert dev.memory_stats().live_buffers == 0


def test_a_drop_whose_latest_readers_queue_was_taken_frees_after_its_other_reader():
    # t1 is read in streams a and b, b last; b is taken whole (its queue object gone, its
    # counts kept), then t1 is dropped: its one untaken read is a's, so taking a must free
    # it, not mark a last use in b's already taken ops (a buffer lost for good).
    import threading

    from asyncfusion._core.dtype import DType
    from asyncfusion.engine.streams import Streams
    from asyncfusion.ir import ElementwiseOp, TensorIr, TensorStatus

    def neg(src: int, out: int) -> tuple[ElementwiseOp, TensorIr]:
        t = TensorIr(src, (4,), DType.float32, TensorStatus.READ_ONLY)
        o = TensorIr(out, (4,), DType.float32, TensorStatus.NOT_INIT)
        return ElementwiseOp("neg", (t,), (), o, DType.float32), o

    streams, owner = Streams(), threading.current_thread()
    for key, out in (("a", 2), ("b", 3)):
        op, o = neg(1, out)
        streams.register(key, op, (1,), o, owner)
    taken_b = streams.take_segment("b")
    assert taken_b.frees == [] and taken_b.ops[0].inputs()[0].status is TensorStatus.READ_ONLY
    streams.drops.append(1)
    taken_a = streams.take_segment("a")
    assert taken_a.frees == [1]
    assert not streams.deferred and not streams.pending_uses and not streams._queues
