"""The set functions (``af.unique_*``: awaited in an event loop, blocking outside one), ``searchsorted`` and ``tensordot`` against
array-api-strict, element by element: fused, plain and on the numpy reference backend."""

from __future__ import annotations

import inspect
import math
import warnings

import array_api_strict as xp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
# few distinct values, so that duplicates are common; NaN and both zeros among them
FLOAT_POOL = [np.nan, -0.0, 0.0, 1.0, -1.5, 2.0, np.inf, -np.inf, 3e38]
INT_POOL = [0, 1, 7, -3, 2**31 - 1, -(2**31)]
DTYPES = ["float32", "int32", "uint32", "float16", "float64", "int64", "bool"]


def _data(draw, dtype: str, size: int) -> np.ndarray:
    if dtype == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)), bool)
    pool = FLOAT_POOL[:-1] if dtype == "float16" else FLOAT_POOL
    if dtype.startswith(("int", "uint")):
        pool = INT_POOL
    got = draw(st.lists(st.sampled_from(pool), min_size=size, max_size=size))
    if dtype == "uint32":
        return np.array(got, np.int64).astype(np.uint32)
    return np.array(got, dtype=dtype)


@st.composite
def arrays(draw):
    """A tensor's data of 0 to 3 dimensions (empty, 0-d and 1-element ones included)."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    return _data(draw, dtype, int(np.prod(shape))).reshape(shape)


def held(devices, x: np.ndarray) -> list:
    dt = af.bool_ if x.dtype == bool else getattr(af, x.dtype.name)
    return [d for d in devices if dt in d.backend.dtypes]


def on(device, x: np.ndarray) -> af.Tensor:
    return af.tensor(x, dtype=af.bool_ if x.dtype == bool else x.dtype.name, device=device)


def strict_of(x: np.ndarray):
    """array-api-strict's array (it holds no float16: float32 sorts those values alike)."""
    return xp.asarray(x.astype(np.float32) if x.dtype == np.float16 else x)


def same(got: np.ndarray, want, what: str, dtype=np.int32) -> None:
    """Equal shapes and elements (NaN where NaN; -0.0 equals 0.0), and ``got`` of
    ``dtype``: indices and counts are int32 here, int64 in array-api-strict."""
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == dtype, (what, got.dtype, got.shape,
                                                            want.shape)
    np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=what)


@SETTINGS
@given(x=arrays())
async def test_unique_functions_match_array_api_strict(dev, plain, ref, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = xp.unique_all(strict_of(x))
    for d in held([dev, plain, ref], x):
        t = on(d, x)
        got = await af.unique_all(t)
        assert isinstance(got, af.UniqueAllResult)
        values = await got.values.to_data()
        same(values, want.values, "values", x.dtype)
        for field in ("indices", "inverse_indices", "counts"):
            same(await getattr(got, field).to_data(), getattr(want, field), field)
        # each value is x's element at its first occurrence, bit for bit (the zero's sign)
        at = x.reshape(-1)[await got.indices.to_data()]
        if x.dtype.kind == "f":
            assert (np.signbit(values) == np.signbit(at)).all()
        counts = await af.unique_counts(t)
        same(await counts.counts.to_data(), want.counts, "unique_counts")
        inverse = await af.unique_inverse(t)
        same(await inverse.inverse_indices.to_data(), want.inverse_indices, "unique_inverse")
        same(await (await af.unique_values(t)).to_data(), want.values, "unique_values",
             x.dtype)


async def test_each_nan_is_its_own_value_and_the_zeros_are_one(dev):
    x = af.tensor(np.float32([np.nan, 0.0, np.nan, -0.0, 1.0, 0.0]), device=dev) * 1.0
    u = await af.unique_all(x)
    values = await u.values.to_data()
    assert np.isnan(values[2:]).all() and values[:2].tolist() == [0.0, 1.0]
    assert not np.signbit(values[0])  # 0.0 occurs first
    assert (await u.indices.to_data()).tolist() == [1, 4, 0, 2]
    assert (await u.counts.to_data()).tolist() == [3, 1, 1, 1]
    assert (await u.inverse_indices.to_data()).tolist() == [2, 0, 3, 0, 1, 0]


async def test_unique_is_awaitable_and_inverse_keeps_the_shape(dev):
    x = af.tensor(np.int32([[5, 3], [5, 1]]), device=dev) + 0
    u = await af.unique_all(x)
    assert u.values.shape == (3,) and u.inverse_indices.shape == (2, 2)
    assert (await u.inverse_indices.to_data()).tolist() == [[2, 1], [2, 0]]
    for name in ("unique_all", "unique_counts", "unique_inverse", "unique_values"):
        pending = getattr(af, name)(x)  # inside a loop: an awaitable, never a blocking read
        assert inspect.isawaitable(pending), name
        await pending
    # inside a loop the sizes are awaited, not blocked for: not the standard's functions
    assert af.__array_namespace_info__().capabilities()["data-dependent shapes"] is False


def test_outside_a_loop_the_set_functions_return_the_standard_results():
    x = np.float32([[2.0, np.nan, -1.0], [2.0, 0.0, -0.0]])
    t = af.tensor(x) * 1.0
    want = xp.unique_all(xp.asarray(x))
    got = af.unique_all(t)
    assert isinstance(got, af.UniqueAllResult)
    same(got.values.numpy(), want.values, "values", np.float32)
    for field in ("indices", "inverse_indices", "counts"):
        same(getattr(got, field).numpy(), getattr(want, field), field)
    counts = af.unique_counts(t)
    inverse = af.unique_inverse(t)
    values = af.unique_values(t)
    assert isinstance(counts, af.UniqueCountsResult)
    assert isinstance(inverse, af.UniqueInverseResult)
    assert isinstance(values, af.Tensor)
    same(counts.counts.numpy(), want.counts, "unique_counts")
    same(inverse.inverse_indices.numpy(), want.inverse_indices, "unique_inverse")
    same(values.numpy(), want.values, "unique_values", np.float32)
    empty = af.unique_all(af.zeros((0, 3)))
    assert isinstance(empty, af.UniqueAllResult) and empty.values.shape == (0,)
    assert empty.inverse_indices.shape == (0, 3)
    # outside a loop the sizes are read as the standard's functions need
    assert af.__array_namespace_info__().capabilities()["data-dependent shapes"] is True


async def test_unique_errors_say_what_to_do(dev):
    with pytest.raises(TypeError, match="asyncfusion Tensor"):
        await af.unique_values([1, 2])
    most = min(8192, math.isqrt(dev.max_binding // 4))  # n * n 4-byte flags, bound
    with pytest.raises(af.LimitError, match=f"take at most {most} on"):
        await af.unique_values(af.zeros((most + 1,), dtype=af.int64, device=dev))


async def test_unique_of_a_long_32_bit_tensor_sorts_through_the_network(dev):
    x = np.random.default_rng(3).integers(-50, 50, 20_000).astype(np.int32)
    x[::97] = 7
    got = await af.unique_counts(af.tensor(x, device=dev))
    values, counts = np.unique(x, return_counts=True)
    np.testing.assert_array_equal(await got.values.to_data(), values)
    np.testing.assert_array_equal(await got.counts.to_data(), counts)


# -- searchsorted ----------------------------------------------------------------------
@st.composite
def searches(draw):
    dtype = draw(st.sampled_from([d for d in DTYPES if d != "bool"]))
    x1 = np.sort(_data(draw, dtype, draw(st.integers(0, 9))))
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=2)))
    return x1, _data(draw, dtype, int(np.prod(shape))).reshape(shape)


@SETTINGS
@given(case=searches(), side=st.sampled_from(["left", "right"]), by_sorter=st.booleans())
async def test_searchsorted_matches_array_api_strict(dev, plain, ref, case, side, by_sorter):
    x1, x2 = case
    want = xp.searchsorted(strict_of(x1), strict_of(x2), side=side)
    # the same x1 given unsorted with the order that sorts it
    order = np.random.default_rng(len(x1)).permutation(len(x1)).astype(np.int32)
    for d in held([dev, plain, ref], x1):
        if by_sorter:
            sorter = af.tensor(np.argsort(order, kind="stable").astype(np.int32), device=d)
            got = af.searchsorted(on(d, x1[order]), on(d, x2), side=side, sorter=sorter)
        else:
            got = af.searchsorted(on(d, x1), on(d, x2), side=side)
        same(await got.to_data(), want, f"searchsorted {side} on {d!r}")


async def test_searchsorted_takes_scalars_and_promotes(dev, ref):
    for d in (dev, ref):
        x1 = af.tensor(np.float32([-1.0, 0.0, 2.5, np.nan]), device=d)
        assert (await af.searchsorted(x1, 2).to_data()).tolist() == 2
        assert (await af.searchsorted(x1, -0.0, side="right").to_data()).tolist() == 2
        ints = af.tensor(np.int32([4, 1, 3]), device=d)
        got = af.searchsorted(x1, ints)  # int32 values beside float32: float32
        assert (await got.to_data()).tolist() == [3, 2, 3]


async def test_searchsorted_errors_say_what_to_do(dev):
    x1 = af.tensor([1.0, 2.0], device=dev)
    with pytest.raises(af.ShapeError, match="x1 must be 1-D") as err:
        af.searchsorted(af.zeros((2, 2), device=dev), x1)
    assert isinstance(err.value, af.InputError)
    with pytest.raises(af.DTypeError, match="not bool") as err2:
        af.searchsorted(af.tensor([False, True], device=dev), af.tensor([True], device=dev))
    assert isinstance(err2.value, af.InputError)
    with pytest.raises(af.DTypeError, match="int32 and uint64"):
        af.searchsorted(af.tensor([1, 2], device=dev), af.tensor([1], af.uint64, device=dev))
    with pytest.raises(ValueError, match="'left' or 'right'"):
        af.searchsorted(x1, x1, side="middle")
    with pytest.raises(af.ShapeError, match="sorter must be"):
        af.searchsorted(x1, x1, sorter=af.tensor([0], device=dev))
    with pytest.raises(TypeError, match="x2 must be"):
        af.searchsorted(x1, [1.0])


# -- tensordot -------------------------------------------------------------------------
TENSORDOT = [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 2), 1), ((3,), (3,), 1), ((), (), 0),
             ((2,), (3,), 0), ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])),
             ((2, 3, 4), (5, 4, 2), ([-1, 0], [1, -1])), ((2, 0), (0, 3), 1),
             ((0, 3), (3, 2), 1), ((4, 3), (3,), ([1], [0])), ((2, 3), (2, 3), 0)]


@pytest.mark.parametrize("s1,s2,axes", TENSORDOT)
async def test_tensordot_matches_array_api_strict(dev, plain, ref, s1, s2, axes):
    rng = np.random.default_rng(len(s1) + 3 * len(s2))
    a = rng.integers(-9, 9, s1).astype(np.float32)
    b = rng.integers(-9, 9, s2).astype(np.float32)
    want = np.asarray(xp.tensordot(xp.asarray(a), xp.asarray(b), axes=axes))
    for d in (dev, plain, ref):
        got = await af.tensordot(af.tensor(a, device=d), af.tensor(b, device=d),
                                 axes=axes).to_data()
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)  # small integers: exact in float32


async def test_tensordot_is_one_matmul_over_views(dev):
    a = af.tensor(np.arange(24, dtype=np.int32).reshape(2, 3, 4), device=dev)
    b = af.tensor(np.arange(60, dtype=np.int32).reshape(3, 4, 5), device=dev)
    await dev.sync()
    dev.reset_stats()
    got = await af.tensordot(a, b).to_data()
    assert dev.stats().launches == 1
    np.testing.assert_array_equal(got, np.tensordot(np.arange(24).reshape(2, 3, 4),
                                                    np.arange(60).reshape(3, 4, 5)))


async def test_tensordot_errors_say_what_to_do(dev):
    a, b = af.zeros((2, 3), device=dev), af.zeros((4, 2), device=dev)
    with pytest.raises(af.ShapeError, match="contracted sizes must be equal"):
        af.tensordot(a, b, axes=1)
    with pytest.raises(af.AxisError, match="between 0 and the smaller rank"):
        af.tensordot(a, b, axes=3)
    with pytest.raises(af.AxisError, match="distinct axes"):
        af.tensordot(a, b, axes=([0, 0], [1, 1]))
    with pytest.raises(TypeError, match="pair of sequences"):
        af.tensordot(a, b, axes="rows")
    with pytest.raises(af.DTypeError, match="bool"):
        af.tensordot(a != 0, b != 0, axes=([0], [1]))
