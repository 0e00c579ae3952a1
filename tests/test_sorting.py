"""The sorting network (``asyncfusion.api.sorting``): ``argsort``/``sort`` of rows longer
than the rank sort takes, every 32-bit dtype, both directions, stable with NaN last, and
``topk`` of more than a workgroup keeps — against numpy, on the device and on the numpy
twins; launch counts. (``topk`` up to 1024: tests/test_topk.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from asyncfusion.api import selection, sorting
from tests.test_views_reductions import launches

RNG = np.random.default_rng(11)
DTYPES = (np.float32, np.int32, np.uint32, np.float16, np.bool_, np.int16, np.uint16, np.int8,
          np.uint8)


def data(shape: tuple[int, ...], dtype, rng=RNG) -> np.ndarray:
    """Few distinct values (many ties), and for floats NaN, -0.0, +0.0 and infinities."""
    if dtype is np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    x = rng.integers(-6, 7, shape)
    if np.issubdtype(dtype, np.unsignedinteger):
        x = x + 2 ** (np.dtype(dtype).itemsize * 8 - 1)  # across the signed type's sign bit
    x = x.astype(dtype)
    if np.issubdtype(dtype, np.floating):
        flat = x.reshape(-1)
        picks = rng.choice(flat.size, size=min(flat.size, 8), replace=False)
        flat[picks] = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan, 1e-3, -2.5],
                               dtype)[:picks.size]
    return x


def stable_descending(x: np.ndarray, axis: int) -> np.ndarray:
    """numpy's order for a stable descending sort with NaN last."""
    if x.dtype == np.bool_ or np.issubdtype(x.dtype, np.integer):
        return np.argsort(-(x.astype(np.int64)), axis, kind="stable")
    return np.argsort(-x, axis, kind="stable")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", [((3000,), 0), ((3, 700), 1), ((130, 2), 0),
                                        ((2, 300, 3), 1)])
async def test_argsort_and_sort_match_numpys_stable_sort(dev, ref, dtype, shape, axis):
    x = data(shape, dtype)
    for device in (dev, ref):
        t = af.tensor(x, device=device)
        np.testing.assert_array_equal(await af.argsort(t, axis).to_data(),
                                      np.argsort(x, axis, kind="stable"))
        got = await af.sort(t, axis).to_data()
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, np.sort(x, axis))
        np.testing.assert_array_equal(await af.argsort(t, axis, descending=True).to_data(),
                                      stable_descending(x, axis))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(65, 5000), rows=st.integers(1, 3), seed=st.integers(0, 2**16),
       descending=st.booleans())
async def test_random_rows_sort_like_numpy(dev, n, rows, seed, descending):
    x = data((rows, n), np.float32, np.random.default_rng(seed))
    got = await af.argsort(af.tensor(x, device=dev), 1, descending=descending).to_data()
    want = stable_descending(x, 1) if descending else np.argsort(x, 1, kind="stable")
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [65, 2048, 2049, 5000])
async def test_launches_follow_the_network(dev, n):
    t = af.tensor(RNG.standard_normal(n).astype(np.float32), device=dev)
    assert await launches(dev, lambda: af.argsort(t)) == sorting.launches(n)
    assert sorting.launches(2048) == 1 and sorting.launches(4096) == 3


async def test_64_bit_rows_keep_the_rank_sort_and_its_limit(dev):
    x = RNG.integers(-5, 5, 300).astype(np.int64)
    t = af.tensor(x, dtype=af.int64, device=dev)
    np.testing.assert_array_equal(await af.argsort(t).to_data(), np.argsort(x, kind="stable"))
    with pytest.raises(af.LimitError, match="topk"):
        af.sort(af.zeros((9000,), dtype=af.int64, device=dev))


@pytest.mark.parametrize("n,k", [(2049, 2049), (5000, 3000)])
async def test_topk_of_more_than_a_workgroup_keeps_sorts_the_rows(dev, n, k):
    x = data((n,), np.float32)
    t = af.tensor(x, device=dev)
    used = await launches(dev, lambda: af.topk(t, k)[1])
    assert k > selection.K_MAX and used == sorting.launches(n) + 1  # the sort, a gather
    nan = np.isnan(x)
    want = np.lexsort((np.arange(n), -np.where(nan, 0, x), ~nan))[:k]
    v, i = af.topk(t, k)
    np.testing.assert_array_equal(await i.to_data(), want)
    np.testing.assert_array_equal(await v.to_data(), x[want])
    _, i = af.topk(t, k, largest=False)
    np.testing.assert_array_equal(await i.to_data(), np.argsort(x, kind="stable")[:k])


async def test_the_64_bit_limit_counts_the_rows(dev):
    most = min(8192, int(np.sqrt(dev.max_binding // (4 * 3))))  # n * n flags, bound
    with pytest.raises(af.LimitError, match=f"in 3 row.*at most {most} each"):
        af.sort(af.zeros((3, most + 1), dtype=af.int64, device=dev))
