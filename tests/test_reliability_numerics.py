"""IEEE special values survive the shader compiler; tanh near 0 and pow's special cases
follow numpy. Fused and plain kernels agree with the numpy reference."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import asyncfusion as af
from tests.conftest import assert_close

SPECIAL = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.5, -2.0, 3.4e38],
                   dtype=np.float32)


def expect(fn, *xs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*xs).astype(np.float32)


@pytest.fixture(params=["fused", "plain", "numpy"])
async def any_dev(request, blockbuster):
    kind = request.param
    async with af.open_device("numpy" if kind == "numpy" else "wgpu",
                              fusion=kind != "plain") as d:
        yield d


async def test_x_minus_x_keeps_inf_and_nan(any_dev):
    x = af.tensor(SPECIAL, device=any_dev)
    assert_close(await (x - x).to_data(), expect(np.subtract, SPECIAL, SPECIAL))
    assert_close(await (x + (-x)).to_data(), expect(lambda v: v + (-v), SPECIAL))
    assert_close(await (x * x - x * x).to_data(), expect(lambda v: v * v - v * v, SPECIAL))
    y = af.tensor(SPECIAL[::-1].copy(), device=any_dev)
    assert_close(await (x - y).to_data(), expect(np.subtract, SPECIAL, SPECIAL[::-1]))
    assert_close(await (x + y).to_data(), expect(np.add, SPECIAL, SPECIAL[::-1]))


async def test_x_minus_x_is_zero_for_finite_values(any_dev):
    v = np.linspace(-3, 3, 16, dtype=np.float32)
    x = af.tensor(v, device=any_dev)
    assert_close(await (x - x).to_data(), np.zeros(16, np.float32))
    i = af.tensor(np.arange(8, dtype=np.int32), device=any_dev)
    assert_close(await (i - i).to_data(), np.zeros(8, np.int32))


async def test_tanh_is_accurate_near_zero(any_dev):
    v = np.array([1e-10, -1e-10, 1e-6, -3e-4, 0.01, 0.0999, 0.1001, 0.5, -5.0, 30.0,
                  np.nan, np.inf, -np.inf, 0.0], dtype=np.float32)
    out = await af.tensor(v, device=any_dev).tanh().to_data()
    assert_close(out, np.tanh(v), rtol=2e-6, atol=0.0)


async def test_pow_special_cases_follow_numpy(any_dev):
    a = np.array([0.0, -0.0, -0.0, -1.0, -1.0, -np.inf, -np.inf, -np.inf, np.inf, 0.0,
                  np.nan, 1.0, -2.0, -2.0, -0.5, 2.0, -0.0, -3.0, 0.0],
                 dtype=np.float32)
    b = np.array([np.nan, -1.0, -2.0, np.inf, -np.inf, 0.5, 3.0, -3.0, -1.0, 2.0,
                  0.0, np.nan, np.inf, 3.0, np.inf, -np.inf, 3.0, 2.5, -0.5],
                 dtype=np.float32)
    out = await (af.tensor(a, device=any_dev) ** af.tensor(b, device=any_dev)).to_data()
    want = expect(np.power, a, b)
    assert_close(out, want, rtol=1e-6, atol=0.0)
    real = ~np.isnan(want)
    assert (np.signbit(out[real]) == np.signbit(want[real])).all(), (out, want)
