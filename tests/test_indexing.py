"""Gather/take, index_select, stack, one_hot, topk and sort/argsort against numpy, on the
device (fused and plain) and the numpy interpreter; launch counts; call-site errors."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.api import selection
from tests.test_views_reductions import launches

RNG = np.random.default_rng(5)
X = RNG.standard_normal((5, 7)).astype(np.float32)
IDX = np.array([[0, 6, -1], [2, 2, 3], [1, 0, 5], [4, 4, 4], [6, 5, 0]], np.int32)


async def test_gathers_match_numpy(dev, plain, ref):
    for device in (dev, plain, ref):
        x = af.tensor(X, device=device)
        got = await af.take_along_axis(x, af.tensor(IDX, device=device), 1).to_data()
        np.testing.assert_array_equal(got, np.take_along_axis(X, IDX % 7, 1))
        got = await af.gather(x.T, af.tensor(IDX[:, :2].T.copy(), device=device), 0).to_data()
        np.testing.assert_array_equal(got, np.take_along_axis(X.T, IDX[:, :2].T % 7, 0))
        np.testing.assert_array_equal(await af.take(x, [3, 1, 0], axis=0).to_data(),
                                      np.take(X, [3, 1, 0], axis=0))
        two_d = np.array([[1, 2], [3, 4]], np.int32)
        np.testing.assert_array_equal(
            await af.take(x, af.tensor(two_d, device=device), axis=1).to_data(),
            np.take(X, two_d, axis=1))
        np.testing.assert_array_equal(await af.take(x, [34, 0]).to_data(), np.take(X, [34, 0]))
        np.testing.assert_array_equal(await af.index_select(x[:, ::-2], 1, [3, 0]).to_data(),
                                      X[:, ::-2][:, [3, 0]])


async def test_out_of_range_indices_are_clamped(ref, dev):
    for device in (ref, dev):
        got = await af.take(af.tensor(X, device=device), [9, -9], axis=1).to_data()
        np.testing.assert_array_equal(got, X[:, [6, 0]])


async def test_a_gather_fuses_with_the_work_around_it(dev):
    x = af.tensor(X, device=dev)
    i = af.tensor(IDX, device=dev)
    assert await launches(dev, lambda: (af.take_along_axis(x, i, 1) * 2.0).exp()) == 1


async def test_stack_and_one_hot(dev, ref):
    for device in (dev, ref):
        x = af.tensor(X, device=device)
        np.testing.assert_array_equal(await af.stack([x, x * 2.0], axis=1).to_data(),
                                      np.stack([X, X * 2], 1))
        labels = np.array([[0, 2], [3, 7]], np.int32)
        got = await af.one_hot(af.tensor(labels, device=device), 4).to_data()
        expected = (labels[..., None] == np.arange(4)).astype(np.float32)
        np.testing.assert_array_equal(got, expected)  # 7 is out of range: a row of zeros


@pytest.mark.parametrize("axis,largest", [(1, True), (0, False), (-1, False)])
async def test_topk_matches_a_stable_sort(dev, ref, axis, largest):
    x = RNG.integers(-4, 4, (6, 9)).astype(np.float32)  # many ties
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    k = 3
    want_i = np.take(order, range(k), axis=axis)
    for device in (dev, ref):
        v, i = af.topk(af.tensor(x, device=device), k, axis=axis, largest=largest)
        np.testing.assert_array_equal(await i.to_data(), want_i)
        np.testing.assert_array_equal(await v.to_data(), np.take_along_axis(x, want_i, axis))


async def test_topk_of_a_long_64_bit_vector_selects_in_two_launches(dev):
    x = RNG.standard_normal(60_003)
    t = af.tensor(x, dtype=af.float64, device=dev)
    # the best of each segment, then of their candidates (tests/test_topk.py)
    assert await launches(dev, lambda: af.topk(t, 5)[1]) == selection.launches(60_003, 5) == 2
    _, i = af.topk(t, 5)
    np.testing.assert_array_equal(await i.to_data(), np.argsort(-x)[:5])


@pytest.mark.parametrize("shape,axis,largest,dtype", [
    ((5000,), 0, True, np.float64), ((4100, 3), 0, False, np.int64),
    ((2, 4097), 1, True, np.int64)])
async def test_topk_of_a_long_64_bit_axis_matches_a_stable_sort(dev, shape, axis, largest,
                                                                 dtype):
    x = RNG.integers(-3, 3, shape).astype(dtype)  # ties across segments and within them
    x.flat[[7, 4099]] = 5 if largest else -5  # the best two: in the first and last segment
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    want = np.take(order, range(6), axis=axis)
    v, i = af.topk(af.tensor(x, dtype=x.dtype, device=dev), 6, axis=axis, largest=largest)
    np.testing.assert_array_equal(await i.to_data(), want)
    np.testing.assert_array_equal(await v.to_data(), np.take_along_axis(x, want, axis))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
async def test_sort_and_argsort_are_stable_with_nan_last(dev, ref, dtype):
    x = RNG.integers(-3, 3, (4, 11)).astype(dtype)
    if dtype == np.float32:
        x[1, 2] = x[2, 5] = np.nan
    for device in (dev, ref):
        t = af.tensor(x, device=device)
        for axis in (0, 1):
            np.testing.assert_array_equal(await af.argsort(t, axis).to_data(),
                                          np.argsort(x, axis, kind="stable"))
            np.testing.assert_array_equal(await af.sort(t, axis).to_data(), np.sort(x, axis))
            np.testing.assert_array_equal(await af.argsort(t, axis, descending=True).to_data(),
                                          np.argsort(-x, axis, kind="stable"))


async def test_indexing_errors_at_the_call_site(dev):
    x = af.tensor(X, device=dev)
    with pytest.raises(af.DTypeError, match="int32"):
        af.take_along_axis(x, x, 1)
    with pytest.raises(af.ShapeError, match="rank"):
        af.take_along_axis(x, af.tensor([0], device=dev), 1)
    with pytest.raises(af.ShapeError, match="1-D"):
        af.index_select(x, 0, [[0]])
    with pytest.raises(af.ShapeError, match="between 1 and the axis size 7"):
        af.topk(x, 8)
    with pytest.raises(af.ShapeError, match="one shape"):
        af.stack([x, x.T])


async def test_64_bit_indices_are_taken_and_clamped(dev, ref):
    for device in (dev, ref):
        x = af.tensor(X, device=device)
        for dtype in (af.int64, af.uint64):
            idx = af.tensor([[3, 2**40]] * 5, dtype=dtype, device=device)
            got = await af.take_along_axis(x, idx, 1).to_data()
            np.testing.assert_array_equal(got, X[:, [3, 6]])  # past the end: the last
