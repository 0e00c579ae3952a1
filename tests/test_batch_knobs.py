"""The dynamic batcher's knobs, ``open_device(max_batch=..., max_wait_ms=...)``: a round
waits (on the event loop) for reads of up to ``max_batch`` tasks, so requests that arrive
a little apart share one launch; a batched launch takes ``max_batch`` instances at most.
Every test runs on asyncio and on trio (wgpu: the numpy backend does not fuse).
"""

from __future__ import annotations

import math
from typing import Any

import anyio
import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.pytest_plugin import device_for_test
from examples.seed_chain import chain as chain8
from examples.seed_chain import chain_np as chain8_np
from tests.conftest import assert_close
from tests.test_batching import CASES, inputs_of, run_tasks

TWO_STEPS = next(c for c in CASES if c[0] == "two axes")


async def arriving_apart(dev: Any, inputs: list[af.Tensor]) -> list[Any]:
    """One task per input, each started a millisecond after the one before: each runs
    ``chain8`` on its input and reads the result."""
    results: list[Any] = [None] * len(inputs)

    async def task(i: int) -> None:
        results[i] = await chain8(inputs[i]).to_data()

    async with anyio.create_task_group() as tg:
        for i in range(len(inputs)):
            tg.start_soon(task, i)
            await anyio.sleep(0.001)
    return results


async def launches_for(request: Any, n: int, **options: Any) -> int:
    async with device_for_test(request, **options) as dev:
        xs, ts = inputs_of(dev, n, (1000,), seed=n)
        await dev.sync()
        dev.reset_stats()
        results = await arriving_apart(dev, ts)
        launches = dev.stats().launches
        for x, r in zip(xs, results, strict=True):
            assert_close(r, chain8_np(x), rtol=1e-5, atol=1e-6)
        del ts
    return launches


async def test_a_waiting_round_batches_requests_that_arrive_apart(request):
    at_once = await launches_for(request, 6)
    waited = await launches_for(request, 6, max_batch=6, max_wait_ms=60_000)
    assert at_once > 1  # the first request's round started before the second arrived
    assert waited == 1  # the round waited for all six: one launch over six instances


async def test_a_lone_request_starts_once_its_wait_is_over(request):
    async with device_for_test(request, max_wait_ms=20) as dev:
        x = np.arange(12, dtype=np.float32)
        got = await (af.tensor(x, device=dev) * 2.0 + 1.0).to_data()
        assert_close(got, x * 2 + 1)


@pytest.mark.parametrize("n", [10, 5])
async def test_max_batch_splits_a_group_into_launches(request, n):
    async with device_for_test(request, max_batch=4) as dev:
        xs, ts = inputs_of(dev, n, (4096,), seed=n)
        await dev.sync()
        results, stats = await run_tasks(dev, ts, chain8)
        assert stats.launches == math.ceil(n / 4)
        assert stats.batched_instances == n - n % 4 + (n % 4 if n % 4 > 1 else 0)
        for x, r in zip(xs, results, strict=True):
            assert_close(r, chain8_np(x), rtol=1e-5, atol=1e-6)
        del ts


async def test_max_batch_caps_every_step(request):
    _, shape, work, expect, steps = TWO_STEPS
    async with device_for_test(request, max_batch=4) as dev:
        xs, ts = inputs_of(dev, 10, shape, seed=3)
        await dev.sync()
        results, stats = await run_tasks(dev, ts, work)
        assert steps == 2 and stats.launches == 2 * 3
        for x, r in zip(xs, results, strict=True):
            assert_close(r, expect(x), rtol=2e-5, atol=1e-5)
        del ts


async def wait_until(check: Any) -> None:
    with anyio.fail_after(60):
        while not check():
            await anyio.sleep(0.001)


async def test_a_read_cancelled_while_its_round_waits_is_withdrawn(request):
    async with device_for_test(request, max_batch=2, max_wait_ms=60_000) as dev:
        xs, ts = inputs_of(dev, 3, (2048,), seed=7)
        await dev.sync()
        dev.reset_stats()
        results: list[Any] = [None] * 3

        async def task(i: int) -> None:
            results[i] = await chain8(ts[i]).to_data()

        async with anyio.create_task_group() as tg:
            tg.start_soon(task, 0)
            await wait_until(lambda: dev.metrics().queued_requests == 1)
            tg.cancel_scope.cancel()  # task 0 is cancelled while its round waits
        assert results[0] is None and dev.stats().launches == 0
        async with anyio.create_task_group() as tg:
            tg.start_soon(task, 1)
            tg.start_soon(task, 2)
        stats = dev.stats()  # the round waited for two live reads; task 0's work is gone
        assert stats.launches == 1 and stats.batched_instances == 2
        for i in (1, 2):
            assert_close(results[i], chain8_np(xs[i]), rtol=1e-5, atol=1e-6)
        del ts


async def test_syncs_do_not_wait(request):
    async with device_for_test(request, max_batch=8, max_wait_ms=60_000) as dev:
        x = af.tensor(np.ones(5, dtype=np.float32), device=dev) + 1.0
        with anyio.fail_after(30):  # a sync that waited would wait the full minute
            await dev.sync()
        assert dev.stats().launches == 1  # the sync ran x's kernel
        del x


@pytest.mark.parametrize("opts", [{"max_batch": 0}, {"max_batch": 2.5}, {"max_batch": True},
                                  {"max_wait_ms": -1}, {"max_wait_ms": float("nan")},
                                  {"max_wait_ms": float("inf")}, {"max_wait_ms": "5"}])
async def test_bad_batching_options_are_refused(opts):
    name = next(iter(opts))
    with pytest.raises((ValueError, TypeError), match=name):
        async with af.open_device("numpy", **opts):
            pass
