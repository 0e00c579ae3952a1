"""A round that fails (a broken trace sink, a bug outside the steps' isolation) loses no
tensor: what it took from the queues still runs, op by op."""

from __future__ import annotations

import io

import numpy as np
import pytest

import asyncfusion as af
from tests.conftest import assert_close


async def test_a_closed_trace_sink_fails_no_round_and_loses_no_tensor(dev):
    x = af.tensor([1.0, 2.0], device=dev)
    sink = io.StringIO()
    sink.close()
    with af.tracing(file=sink):
        y = (x * 2.0).exp()
        assert_close(await (x + 1.0).to_data(), np.array([2.0, 3.0], np.float32))
    assert_close(await (x + 1.0).to_data(), np.array([2.0, 3.0], np.float32))
    assert_close(await y.to_data(), np.exp(np.array([2.0, 4.0], np.float32)))


async def test_a_trace_sink_that_breaks_midway_is_left_alone(dev):
    class Breaks(io.StringIO):
        def write(self, s: str) -> int:
            if self.tell() > 40:
                raise BrokenPipeError("the reader went away")
            return super().write(s)

    sink = Breaks()
    x = af.tensor([3.0], device=dev)
    with af.tracing(file=sink):
        out = await ((x - 1.0) * 4.0).to_data()
    assert_close(out, np.array([8.0], np.float32))
    assert sink.getvalue().startswith("  [registered]")


@pytest.mark.parametrize("fusion", [True, False])
async def test_a_bug_in_the_runner_loses_none_of_the_tensors_it_took(fusion, blockbuster):
    async with af.open_device(fusion=fusion) as dev:
        x = af.tensor([1.0, 2.0, 3.0], device=dev)
        runner = dev._server.executor.runner
        real = runner.lookup
        calls = {"n": 0}

        def buggy(ops):
            calls["n"] += 1
            if calls["n"] <= 2:  # the batching path, then the plain one
                raise KeyError("a bug in planning")
            return real(ops)

        runner.lookup = buggy
        y = (x + 1.0).sqrt()
        assert_close(await y.to_data(), np.sqrt(np.array([2.0, 3.0, 4.0], np.float32)))
        assert calls["n"] >= 1
        assert_close(await (x * 2.0).to_data(), np.array([2.0, 4.0, 6.0], np.float32))
        del x, y
        await dev.sync()
        await dev.sync()
        assert dev.memory_stats().live_buffers == 0
