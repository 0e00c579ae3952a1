"""Cross-stream (horizontal) batching: in one round, equal segments of many tasks run each
kernel step as one launch over all of them; results, poison and cancellation stay per
task. Every test runs on asyncio and on trio.

Tasks register their work and wait; one ``dev.sync()`` then runs every stream in one round,
so launch counts are exact whatever order the event loop runs the tasks in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import asyncfusion as af
from asyncfusion.backends.faults import InjectedFault
from examples.seed_chain import chain as chain8
from examples.seed_chain import chain_np as chain8_np
from tests.conftest import assert_close
from tests.test_fusion_properties import build, programs


@pytest.fixture(params=["wgpu", "numpy"])
async def bdev(request, blockbuster):
    async with af.open_device(request.param) as d:
        yield d


async def run_tasks(dev: Any, inputs: list[af.Tensor], work: Callable[[af.Tensor], af.Tensor],
                    cancel: int | None = None) -> tuple[list[Any], Any]:
    """Each task queues ``work`` on its input and waits; one sync runs all of them (its
    counters are returned), then each task reads its result (task ``cancel`` is cancelled
    while it reads). Results: arrays, or the exception a read raised."""
    n = len(inputs)
    results: list[Any] = [None] * n
    queued = [0]
    all_queued, go = anyio.Event(), anyio.Event()
    scopes: list[anyio.CancelScope] = []

    async def task(i: int) -> None:
        y = work(inputs[i])
        queued[0] += 1
        if queued[0] == n:
            all_queued.set()
        await go.wait()
        with anyio.CancelScope() as scope:
            if i == cancel:
                scopes.append(scope)
                scope.cancel()
            try:
                results[i] = await y.to_data()
            except af.ExecutionError as exc:
                results[i] = exc

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(task, i)
        await all_queued.wait()
        dev.reset_stats()
        await dev.sync()
        stats = dev.stats()
        go.set()
    assert all(s.cancelled_caught for s in scopes)
    return results, stats


def inputs_of(dev: Any, n: int, shape: tuple[int, ...], seed: int = 0
              ) -> tuple[list[np.ndarray], list[af.Tensor]]:
    rng = np.random.default_rng(seed)
    xs = [rng.random(shape, dtype=np.float32) for _ in range(n)]
    return xs, [af.tensor(x, device=dev) for x in xs]


async def test_100_tasks_with_one_plan_give_one_launch(bdev):
    xs, ts = inputs_of(bdev, 100, (4096,))
    await bdev.sync()
    before = bdev.memory_stats().allocations
    results, stats = await run_tasks(bdev, ts, chain8)
    assert stats.batched_instances == 100
    if bdev.backend.name == "wgpu":
        assert stats.launches == 1
        assert stats.kernels == {"elementwise[mul add sin exp mul add cos abs]": 1}
        # the packed inputs, the results' slab, and one staging buffer for all the reads
        # of a round (not one per read)
        reads_rounds = bdev.stats().rounds - 1
        assert bdev.memory_stats().allocations - before <= 2 + reads_rounds < 20
    for x, r in zip(xs, results, strict=True):
        assert_close(r, chain8_np(x), rtol=1e-5, atol=1e-6)


async def test_reads_without_a_sync_launch_once_per_round(dev):
    xs, ts = inputs_of(dev, 100, (4096,))
    await dev.sync()
    results: list[Any] = [None] * 100

    async def task(i: int) -> None:
        results[i] = await chain8(ts[i]).to_data()

    dev.reset_stats()
    async with anyio.create_task_group() as tg:
        for i in range(100):
            tg.start_soon(task, i)
    stats = dev.stats()
    assert stats.launches == stats.submissions < 100  # every round: one launch for all
    for x, r in zip(xs, results, strict=True):
        assert_close(r, chain8_np(x), rtol=1e-5, atol=1e-6)


# (name, input shape, work, numpy, kernel steps)
W = np.float32(0.5) + np.arange(7, dtype=np.float32)
CASES: list[tuple[str, tuple[int, ...], Callable[..., Any], Callable[..., Any], int]] = [
    ("padded rows", (1001,), lambda x: (x * 3.0).sqrt(), lambda x: np.sqrt(x * 3), 1),
    ("strided view", (6, 8), lambda x: x[::2, 1::3] + 1.0, lambda x: x[::2, 1::3] + 1, 1),
    ("broadcast", (5, 7), lambda x: x * x[:, :1], lambda x: x * x[:, :1], 1),
    ("reduction", (12, 16), lambda x: (x * 2.0).sum(axis=1), lambda x: (x * 2).sum(1), 1),
    ("softmax", (4, 32), lambda x: af.softmax(x, axis=-1),
     lambda x: np.exp(x - x.max(-1, keepdims=True)) /
     np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True), 1),
    ("two axes", (8, 16), lambda x: (x - x.mean(axis=0)).sum(axis=1),
     lambda x: (x - x.mean(0)).sum(1), 2),
    ("two steps", (8, 64), lambda x: ((x + 1.0).exp().sum(axis=0) + 2.0).sqrt(),
     lambda x: np.sqrt(np.exp(x + 1).sum(0) + 2), 1),
    ("matmul", (8, 16), lambda x: (x @ x.mT + 1.0).relu(),
     lambda x: np.maximum(x @ x.T + 1, 0), 1),
    ("gather", (9,), lambda x: af.take(x, af.tensor([8, 0, 3, -1], dtype=af.int32,
                                                      device=x.device)),
     lambda x: x[[8, 0, 3, -1]], 1),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
async def test_batched_results_equal_numpy(bdev, case):
    _, shape, work, expect, steps = case
    xs, ts = inputs_of(bdev, 24, shape, seed=len(shape))
    await bdev.sync()
    results, stats = await run_tasks(bdev, ts, work)
    assert stats.batched_instances == 24 * steps
    if bdev.backend.name == "wgpu":
        assert stats.launches == steps
    for x, r in zip(xs, results, strict=True):
        assert_close(r, expect(x), rtol=2e-5, atol=1e-5)


async def test_a_shared_input_is_bound_once_and_results_stay_apart(bdev):
    w = af.tensor(W, device=bdev)
    xs, ts = inputs_of(bdev, 30, (7,))
    await bdev.sync()
    results, stats = await run_tasks(bdev, ts, lambda x: (x * w + w).exp())
    assert stats.batched_instances == 30
    for x, r in zip(xs, results, strict=True):
        assert_close(r, np.exp(x * W + W), rtol=1e-5)


async def test_one_model_on_many_requests_is_one_batched_matmul(bdev):
    rng = np.random.default_rng(5)
    w_np, b_np = rng.random((16, 8), dtype=np.float32), rng.random(8, dtype=np.float32)
    w, b = af.tensor(w_np, device=bdev), af.tensor(b_np, device=bdev)
    xs, ts = inputs_of(bdev, 30, (4, 16))
    await bdev.sync()
    results, stats = await run_tasks(bdev, ts, lambda x: (x @ w + b).relu().sum(axis=-1))
    assert stats.batched_instances == 30 * 2  # the matmul (and its epilogue), the sum
    assert bdev.metrics().batched_instances >= stats.batched_instances  # since it opened
    if bdev.backend.name == "wgpu":
        assert stats.launches == 2
    for x, r in zip(xs, results, strict=True):
        assert_close(r, np.maximum(x @ w_np + b_np, 0).sum(-1), rtol=1e-5)


async def test_tasks_with_other_scalars_or_sizes_batch_apart(bdev):
    xs, ts = inputs_of(bdev, 20, (64,))
    ys, us = inputs_of(bdev, 20, (96,), seed=1)
    await bdev.sync()
    results, stats = await run_tasks(  # one plan, two sets of launch arguments
        bdev, ts + us, lambda x: (x * (2.0 if x.shape[0] == 96 else 1.0)).exp())
    assert stats.batched_instances == 40
    if bdev.backend.name == "wgpu":
        assert stats.launches == 2
    for x, r in zip(xs, results[:20], strict=True):
        assert_close(r, np.exp(x), rtol=1e-5)
    for x, r in zip(ys, results[20:], strict=True):
        assert_close(r, np.exp(x * 2), rtol=1e-5)


async def test_a_poisoned_instance_poisons_only_itself(bdev):
    xs, ts = inputs_of(bdev, 50, (256,))
    with bdev.inject_fault("launch", op="log"):
        ts[7] = ts[7].log()  # fails: the chain on it reads poison
        await bdev.sync()
    results, stats = await run_tasks(bdev, ts, chain8)
    assert stats.batched_instances == 49
    if bdev.backend.name == "wgpu":
        assert stats.launches == 1
    assert isinstance(results[7], af.ExecutionError)
    assert isinstance(results[7].__cause__, InjectedFault)
    for i, (x, r) in enumerate(zip(xs, results, strict=True)):
        if i != 7:
            assert_close(r, chain8_np(x), rtol=1e-5, atol=1e-6)


async def test_a_failed_batched_launch_reruns_each_instance_alone(bdev):
    xs, ts = inputs_of(bdev, 20, (128,))
    await bdev.sync()
    with bdev.inject_fault("launch", op="sin", count=1):  # the batched launch fails
        results, stats = await run_tasks(bdev, ts, chain8)
    assert stats.batched_instances == 0
    if bdev.backend.name == "wgpu":
        assert stats.launches == 20
    for x, r in zip(xs, results, strict=True):
        assert_close(r, chain8_np(x), rtol=1e-5, atol=1e-6)


async def test_cancelling_one_task_of_a_batch_affects_no_other(bdev):
    xs, ts = inputs_of(bdev, 40, (512,))
    await bdev.sync()
    before = bdev.memory_stats()
    results, stats = await run_tasks(bdev, ts, chain8, cancel=13)
    assert stats.batched_instances == 40
    assert results[13] is None
    for i, (x, r) in enumerate(zip(xs, results, strict=True)):
        if i != 13:
            assert_close(r, chain8_np(x), rtol=1e-5, atol=1e-6)
    await bdev.sync()  # the results' slab goes back once every instance is dropped
    assert bdev.memory_stats().live_buffers == before.live_buffers


async def test_a_plain_device_never_batches(plain):
    xs, ts = inputs_of(plain, 10, (64,))
    await plain.sync()
    results, stats = await run_tasks(plain, ts, lambda x: (x * 2.0).exp())
    assert stats.batched_instances == 0 and stats.launches == 20
    for x, r in zip(xs, results, strict=True):
        assert_close(r, np.exp(x * 2), rtol=1e-5)


async def test_a_bug_in_a_batched_group_loses_none_of_its_tensors(bdev, monkeypatch):
    import asyncfusion.engine.batch as batch

    def buggy(*args):
        raise KeyError("a bug in batching")

    monkeypatch.setattr(batch, "_run_batched", buggy)
    xs, ts = inputs_of(bdev, 10, (64,))
    await bdev.sync()
    results, stats = await run_tasks(bdev, ts, chain8)
    assert stats.batched_instances == 0  # every member re-ran op by op
    for x, r in zip(xs, results, strict=True):
        assert_close(r, chain8_np(x), rtol=1e-5, atol=1e-6)


async def test_results_of_a_batch_feed_later_work_batched_or_alone(bdev):
    xs, ts = inputs_of(bdev, 10, (1001,))  # rows padded to the storage alignment
    await bdev.sync()
    kept: dict[int, af.Tensor] = {}  # id of the input: its result, kept on the device

    def keep(x: af.Tensor) -> af.Tensor:
        kept[id(x)] = x * 2.0
        return kept[id(x)]

    _, stats = await run_tasks(bdev, ts, keep)
    assert stats.batched_instances == 10  # the kept results share one slab
    ys_dev = [kept[id(t)] for t in ts]
    # a batched step reading the slab's instances through a strided view (in place where
    # the tasks come in the slab's order, as on asyncio; else through a packed copy)
    zs, stats = await run_tasks(bdev, ys_dev, lambda y: y[::3] + 1.0)
    assert stats.batched_instances == 10
    for x, z in zip(xs, zs, strict=True):
        assert_close(z, x[::3] * 2 + 1, rtol=1e-6)
    # unbatched kernels reading instances of the slab (bound at their offsets)
    w = await (ys_dev[3] * ys_dev[5]).to_data()
    assert_close(w, (xs[3] * 2) * (xs[5] * 2), rtol=1e-6)
    assert_close(await ys_dev[9].to_data(), xs[9] * 2)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(program=programs())
async def test_random_programs_batched_equal_numpy(dev, ref, program):
    leaves, steps, reads = program
    tasks = 5
    per_task = [([(kind, shape, seed + i) for kind, shape, seed in leaves], steps, reads)
                for i in range(tasks)]  # one program, other data in each task
    picks: list[Any] = [None] * tasks
    queued = [0]
    all_queued, go = anyio.Event(), anyio.Event()
    results: list[Any] = [None] * tasks

    async def task(i: int) -> None:
        picks[i] = build(dev, per_task[i])
        queued[0] += 1
        if queued[0] == tasks:
            all_queued.set()
        await go.wait()
        results[i] = [await t.to_data() for t in picks[i]]

    async with anyio.create_task_group() as tg:
        for i in range(tasks):
            tg.start_soon(task, i)
        await all_queued.wait()
        dev.reset_stats()
        await dev.sync()
        assert dev.stats().batched_instances >= tasks
        go.set()
    for i in range(tasks):
        expected = [await t.to_data() for t in build(ref, per_task[i])]
        for got, want in zip(results[i], expected, strict=True):
            assert_close(got, want, rtol=1e-4, atol=1e-4)


async def test_a_failed_staging_buffer_fails_only_the_reads_of_its_round(dev):
    x = af.tensor(np.arange(8, dtype=np.float32), device=dev)
    await dev.sync()
    y = x * 2.0
    await dev.sync()  # computed: the round below only stages the read
    with dev.inject_fault("alloc", count=1):
        with pytest.raises(af.ExecutionError, match="reading t"):
            await y.to_data()
    assert_close(await y.to_data(), np.arange(8, dtype=np.float32) * 2)
