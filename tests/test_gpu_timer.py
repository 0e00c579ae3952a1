"""The wgpu runtime's opt-in GPU timer: timestamp queries around the compute passes
begun while it is active, summed once the work has finished."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.backends.wgpu.timing import PASSES_PER_SUBMIT, GpuTimer
from examples.seed_chain import chain, chain_np


def _needs_timestamps(dev: af.Device) -> None:
    if "timestamp-query" not in dev.backend.rt.features:
        pytest.skip("this adapter offers no timestamp-query (the timer reports None)")


async def test_passes_inside_the_timer_are_timed_and_outside_are_not(dev):
    _needs_timestamps(dev)
    host = np.linspace(0, 1, 1 << 16, dtype=np.float32)
    x = af.tensor(host, device=dev)
    await dev.sync()
    rt = dev.backend.rt
    with rt.gpu_timer() as timer:
        y = chain(x)
        await dev.sync()
    ns = await anyio.to_thread.run_sync(timer.total_ns)
    assert ns is not None and ns > 0
    assert timer.passes >= 1 and timer.untimed == 0
    passes = timer.passes
    outside = chain(x) + 1.0
    await dev.sync()
    assert await anyio.to_thread.run_sync(timer.total_ns) == ns  # nothing new was timed
    assert timer.passes == passes
    np.testing.assert_allclose(await y.to_data(), chain_np(host), rtol=1e-5, atol=1e-6)
    del outside


async def test_a_submission_times_at_most_its_slot_of_passes(dev):
    _needs_timestamps(dev)
    rt = dev.backend.rt
    timer = GpuTimer(rt.device, rt.timestamp_period, True)
    slot = None
    for i in range(PASSES_PER_SUBMIT):
        slot, writes = timer.pass_writes(slot)
        assert writes["timestamp_writes"]["beginning_of_pass_write_index"] == 2 * i
        assert writes["timestamp_writes"]["end_of_pass_write_index"] == 2 * i + 1
    slot, writes = timer.pass_writes(slot)
    assert writes == {} and timer.untimed == 1


def test_without_timestamp_queries_the_timer_reports_none():
    timer = GpuTimer(None, 1.0, False)
    assert timer.total_ns() is None and timer.passes == 0
