"""Reductions of very long rows fold in two stages (``reductions._split``): chunks, then
the chunks' results, plus a tail. With the threshold and chunk made small, every
reduction over every axis choice matches numpy, fused, plain and on the numpy backend;
and one real long row (past where one workgroup per row went wrong on lavapipe)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from asyncfusion.api import reductions

OPS = ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all")


@pytest.fixture
def small_split(monkeypatch):
    monkeypatch.setattr(reductions, "_SPLIT_AT", 40)
    monkeypatch.setattr(reductions, "_CHUNK", 16)


def want(op: str, x: np.ndarray, axis) -> np.ndarray:
    if op in ("argmax", "argmin"):
        flat = x.reshape(-1) if axis is None else x
        return getattr(np, op)(flat, axis=axis)
    if op in ("any", "all"):
        return getattr(np, op)(x != 0, axis=axis)
    return getattr(np, op)(x, axis=axis)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.sampled_from([(97,), (3, 50), (2, 5, 9), (64,), (41, 2)]),
       op=st.sampled_from(OPS), dtype=st.sampled_from([np.float32, np.int32]),
       seed=st.integers(0, 999), nan=st.booleans(), axes=st.integers(0, 3))
async def test_split_reductions_match_numpy(dev, plain, ref, small_split, shape, op, dtype,
                                            seed, nan, axes):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, shape).astype(dtype)  # ties across chunks and the tail
    if op == "prod":
        x = np.where(x == 0, 1, np.sign(x)).astype(dtype)
    if nan and dtype is np.float32:
        x.flat[rng.integers(0, x.size)] = np.nan
    axis = None if op.startswith("arg") or axes >= len(shape) else tuple(
        d for d in range(len(shape)) if d != axes)
    for device in (dev, plain, ref):
        t = af.tensor(x, device=device)
        got = getattr(t, op)() if axis is None else getattr(t, op)(axis=axis)
        np.testing.assert_array_equal(await got.to_data(), want(op, x, axis))


async def test_float16_sums_accumulate_in_float32(dev, small_split):
    x = np.full(1000, 0.1, np.float16)
    got = await af.tensor(x, device=dev).sum().to_data()
    assert got.dtype == np.float16
    assert abs(float(got) - float(x.astype(np.float32).sum())) <= 0.25  # one f16 ulp at 100


async def test_a_row_longer_than_one_workgroup_folds(dev):
    n = 16_741_377  # one more than 256 threads x 65,396 loop iterations on lavapipe
    x = af.tensor(np.ones(n, np.float32), device=dev)
    assert float(await x.sum().to_data()) == n
    assert float(await x.mean().to_data()) == 1.0
    assert int(await (x * 0).argmin().to_data()) == 0
