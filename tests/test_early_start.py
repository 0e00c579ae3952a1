"""early_start: a task that begins large work apart from the work it queued has that work
run before its read (the executor thread starts it while the task records on), in the
same kernels the read would have run. The threshold is lowered here so that small
tensors count as large; results are checked against numpy, launches against a device
that starts nothing early."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.fusers import base as fuser_base
from asyncfusion.runtime import device as device_module

LARGE = 1024  # elements that count as large work in these tests
RNG = np.random.default_rng(11)


@pytest.fixture
def small_large(monkeypatch):
    monkeypatch.setattr(fuser_base, "APART_AT", LARGE)
    monkeypatch.setattr(device_module, "APART_AT", LARGE)
    monkeypatch.setattr(device_module, "_LARGE", device_module._Large())


def _softmax_np(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


async def _run(program, **options):
    """``program(device)`` (a list of tensors, recorded without an await), read at once:
    (results, launches, early starts)."""
    async with af.open_device(**options) as dev:
        await dev.sync()
        dev.reset_stats()
        outs = program(dev)
        got = [await t.to_data() for t in outs]
        stats = dev.stats()
        return got, stats.launches, stats.early_starts


@pytest.mark.usefixtures("small_large")
async def test_independent_softmaxes_start_early_in_the_same_kernels():
    xs = [RNG.standard_normal((16, 256)).astype(np.float32) for _ in range(4)]

    def program(dev):
        return [af.softmax(af.tensor(x, device=dev)) for x in xs]

    got, launches, early = await _run(program)
    base, base_launches, base_early = await _run(program, early_start=False)
    # the 2nd, 3rd and 4th softmax begin apart; a start runs every softmax queued by then
    assert 1 <= early <= 3 and base_early == 0
    assert launches == base_launches == 4  # each still one kernel
    for g, b, x in zip(got, base, xs, strict=True):
        np.testing.assert_allclose(g, _softmax_np(x), rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(g, b)


@pytest.mark.usefixtures("small_large")
async def test_work_that_shares_a_tensor_or_is_small_waits_for_the_read():
    x = RNG.standard_normal(4096).astype(np.float32)

    def dependent(dev):
        t = af.tensor(x, device=dev)
        a = t * 2.0
        return [a, (a + 1.0).exp(), t.sum()]  # every op reads what came before

    def small(dev):
        return [af.tensor(x[:100], device=dev) * 2.0, af.tensor(x[:10], device=dev) + 1.0]

    for program in (dependent, small):
        assert (await _run(program))[2] == 0
    got = (await _run(dependent))[0]
    np.testing.assert_allclose(got[1], np.exp(x * 2 + 1), rtol=1e-5)


@pytest.mark.usefixtures("small_large")
async def test_a_later_op_reading_work_started_early_gets_its_result():
    x, y = (RNG.standard_normal(2048).astype(np.float32) for _ in range(2))

    def program(dev):
        a = af.tensor(x, device=dev) * 2.0
        b = af.tensor(y, device=dev) * 3.0  # apart from a: a starts now
        return [a + b, (a * b).sum()]

    got, launches, early = await _run(program)
    base, base_launches, _ = await _run(program, early_start=False)
    assert early >= 1 and launches == base_launches
    np.testing.assert_allclose(got[0], x * 2 + y * 3, rtol=1e-6)
    np.testing.assert_allclose(got[1], np.sum((x * 2) * (y * 3)), rtol=1e-4)
    np.testing.assert_array_equal(got[0], base[0])


@pytest.mark.usefixtures("small_large")
async def test_a_failing_kernel_started_early_poisons_its_result_only():
    x = RNG.standard_normal(4096).astype(np.float32)
    async with af.open_device() as dev:
        first = af.tensor(x, device=dev)
        with dev.inject_fault("launch", op="exp"):
            bad = first.exp()
            good = af.tensor(x, device=dev) * 2.0  # apart: bad's kernel runs now, and fails
            await dev.sync()
        with pytest.raises(af.ExecutionError, match="could not be computed"):
            await bad.to_data()
        np.testing.assert_array_equal(await good.to_data(), x * 2)
        np.testing.assert_array_equal(await (first + 1.0).to_data(), x + 1)
        assert dev.stats().early_starts >= 1
