"""The executor's work per op does not grow with the number of streams: a round of N tasks,
each reading a 10-op chain, signs each op once, lowers each distinct block once, builds
each batched kernel once, and scans queues for dead work a bounded number of times per op,
from 10 to 10,000 streams."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

import asyncfusion as af
import asyncfusion.fusers.base as fuser_base
from asyncfusion.engine.batch import over_instances
from tests.conftest import assert_close

OPS_PER_TASK = 11  # the upload and ten element-wise ops


def chain10(x: af.Tensor) -> af.Tensor:
    y = x * 0.5 + 1.0
    y = (y * y - 0.25).abs()
    y = y.sqrt() * 3.0 + 2.0
    return af.maximum(y - 1.0, 0.5) * 2.0


def chain10_np(x: np.ndarray) -> np.ndarray:
    y = x * np.float32(0.5) + np.float32(1.0)
    y = np.abs(y * y - np.float32(0.25))
    y = np.sqrt(y) * np.float32(3.0) + np.float32(2.0)
    return np.maximum(y - np.float32(1.0), np.float32(0.5)) * np.float32(2.0)


async def _work(n: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    lowerings = [0]
    real_lower = fuser_base.lower

    def counting_lower(*args, **kwargs):  # type: ignore[no-untyped-def]
        lowerings[0] += 1
        return real_lower(*args, **kwargs)

    monkeypatch.setattr(fuser_base, "lower", counting_lower)
    over_instances.cache_clear()
    results: dict[int, np.ndarray] = {}
    async with af.open_device("numpy") as dev:
        async def task(i: int) -> None:
            x = af.tensor(np.full(8, float(i % 97), np.float32), device=dev)
            results[i] = await chain10(x).to_data()

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(task, i)
        stats = dev.stats()
    for i in (0, n // 2, n - 1):
        assert_close(results[i], chain10_np(np.full(8, float(i % 97), np.float32)))
    ops = n * OPS_PER_TASK
    return {"signed": stats.signed_ops / ops, "scanned": stats.queues_scanned / ops,
            "lowerings": lowerings[0], "batched_kernels": over_instances.cache_info().misses,
            "launches_per_round": stats.launches / stats.rounds}


async def test_work_per_op_is_flat_from_10_to_10000_streams(monkeypatch):
    work = {n: await _work(n, monkeypatch) for n in (10, 100, 1000, 10_000)}
    for n, w in work.items():
        assert w["signed"] <= 1.2, (n, w)  # each op (and drop) signed once, in its lookup
        assert w["scanned"] <= 0.5, (n, w)  # reclaiming looks at queues amortized O(1)/op
        assert w["lowerings"] <= 2, (n, w)  # one block, lowered once (a partial round: 2)
        assert w["batched_kernels"] <= 2, (n, w)  # the batched kernel, made once or twice
        assert w["launches_per_round"] <= 2, (n, w)
    flat = work[10_000]["signed"] + work[10_000]["scanned"]
    assert flat <= 1.3 * (work[10]["signed"] + work[10]["scanned"]) + 0.05, work
