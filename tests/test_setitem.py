"""``t[key] = value``: numpy (and array_api_strict for the dtype rule) is the oracle, on the
fused and plain wgpu devices and the numpy backend; the Tensor is rebound to one fused
``where`` and the old value's memory is freed."""

from __future__ import annotations

import io

import array_api_strict as xp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af

BASE = np.arange(24, dtype=np.float32).reshape(4, 6)

CASES = [  # (key, value as numpy; None: a scalar)
    ((1, 2), -1.0),
    ((slice(None), slice(1, None, 2)), 7.0),
    (1, np.arange(6, dtype=np.float32) * 10),
    ((Ellipsis, -1), 3.5),
    ((slice(None, None, -1), 0), np.float32([1, 2, 3, 4])),
    ((None, 2), 0.5),
    ((slice(3, 0, -2), slice(5, None, -3)), np.float32([[1, 2], [3, 4]])),
    ((slice(1, 3),), np.float32([9, 8, 7, 6, 5, 4])),  # broadcast over the rows
    ((slice(None), slice(2, 4)), np.float32([[1], [2], [3], [4]])),  # over the columns
    ((Ellipsis,), np.float32([[[5]]])),  # leading 1s beyond the region's rank
    (slice(2, 2), np.float32([1, 2, 3, 4, 5, 6])[:0].reshape(0, 6)),  # nothing selected
]


@pytest.mark.parametrize("key,value", CASES, ids=[str(k) for k, _ in CASES])
async def test_assignment_matches_numpy(key, value, dev, plain, ref):
    expected = BASE.copy()
    expected[key] = value
    for device in (dev, plain, ref):
        t = af.tensor(BASE, device=device)
        t[key] = value if isinstance(value, float) else af.tensor(value, device=device)
        np.testing.assert_array_equal(await t.to_data(), expected)


def _item(size: int):
    ints = st.integers(-size, size - 1) if size else st.nothing()
    bound = st.none() | st.integers(-size - 2, size + 2)
    slices = st.builds(slice, bound, bound, st.none() | st.integers(-3, 3).filter(bool))
    return ints | slices


@st.composite
def programs(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    key = tuple(draw(_item(n)) for n in shape[:draw(st.integers(0, len(shape)))])
    region = np.zeros(shape)[key].shape
    dims = [draw(st.sampled_from([n, 1])) for n in region]
    scalar = draw(st.booleans())
    return shape, key, None if scalar else tuple(dims[draw(st.integers(0, len(dims))):])


async def _check_program(program, dtype, device):
    shape, key, vshape = program
    base = np.arange(np.prod(shape), dtype=dtype.np).reshape(shape)
    value = -7 if vshape is None else (100 + np.arange(np.prod(vshape))).astype(
        dtype.np).reshape(vshape)
    expected = base.copy()
    expected[key] = value
    t = af.tensor(base, device=device)
    t[key] = value if vshape is None else af.tensor(value, device=device)
    np.testing.assert_array_equal(await t.to_data(), expected)


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.function_scoped_fixture])
DTYPES = st.sampled_from([af.float32, af.int32])


@settings(max_examples=25, **SETTINGS)
@given(program=programs(), dtype=DTYPES)
async def test_random_assignments_match_numpy(program, dtype, ref):
    await _check_program(program, dtype, ref)


@settings(max_examples=10, **SETTINGS)
@given(program=programs(), dtype=DTYPES)
async def test_random_assignments_fused_match_numpy(program, dtype, dev):
    await _check_program(program, dtype, dev)


async def test_scalar_assignments_fuse_into_one_launch(dev):
    t = af.tensor(np.zeros((3, 3), np.float32), device=dev)
    await dev.sync()
    dev.reset_stats()
    buf = io.StringIO()
    with af.tracing(buf):
        for i in range(3):
            t[i, i] = float(i + 1)
        got = await t.to_data()
    np.testing.assert_array_equal(got, np.diag(np.float32([1, 2, 3])))
    assert dev.stats().launches == 1
    assert "[block] 1 op(s): Init" not in buf.getvalue()  # positions are aranges: no upload


async def test_a_tensor_value_is_an_index_kernel_and_a_gather(dev):
    t = af.tensor(np.zeros((4, 5), np.float32), device=dev)
    v = af.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=dev)
    await dev.sync()
    dev.reset_stats()
    t[1:3, ::2] = v
    expected = np.zeros((4, 5), np.float32)
    expected[1:3, ::2] = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(await t.to_data(), expected)
    assert dev.stats().launches == 2


async def test_other_tensors_keep_their_values(dev):
    base = af.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=dev)
    row = base[0]           # a view of base, taken before
    doubled = base * 2      # computed from base before
    alias = base            # the same object: sees the new value
    base[0, 0] = -1.0
    np.testing.assert_array_equal(await row.to_data(), [0, 1, 2])
    np.testing.assert_array_equal(await doubled.to_data(), [[0, 2, 4], [6, 8, 10]])
    np.testing.assert_array_equal(await alias.to_data(), [[-1, 1, 2], [3, 4, 5]])
    view = base[1:]          # assigning into a view leaves its base as it was
    view[0, 1] = 40.0
    np.testing.assert_array_equal(await view.to_data(), [[3, 40, 5]])
    np.testing.assert_array_equal(await base.to_data(), [[-1, 1, 2], [3, 4, 5]])
    assert "values=" in repr(base)
    base[1, 2] = 9.0
    assert "values=" not in repr(base)  # the values kept for repr were the old ones


async def test_memory_returns_to_baseline(dev):
    t = af.tensor(np.zeros((64, 64), np.float32), device=dev)
    v = af.tensor(np.ones((64,), np.float32), device=dev)
    await t.to_data()
    await dev.sync()
    baseline = dev.memory_stats().live_buffers
    for i in range(20):
        t[i] = v * i
        t[:, i] = float(i)
        if i % 5 == 4:
            await t.to_data()
    got = await t.to_data()
    await dev.sync()
    await dev.sync()
    assert dev.memory_stats().live_buffers == baseline  # each old value was freed
    expected = np.zeros((64, 64), np.float32)
    for i in range(20):
        expected[i] = i
        expected[:, i] = i
    np.testing.assert_array_equal(got, expected)


async def test_a_boolean_mask_takes_one_value(dev, ref):
    for device in (dev, ref):
        t = af.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=device)
        t[t > 2] = 0.0
        np.testing.assert_array_equal(await t.to_data(), [[0, 1, 2], [0, 0, 0]])
        t[af.tensor([True, False], device=device)] = af.tensor(np.float32(5), device=device)
        np.testing.assert_array_equal(await t.to_data(), [[5, 5, 5], [0, 0, 0]])
        with pytest.raises(af.IndexingError, match="one element"):
            t[t > 2] = af.tensor(np.ones(6, np.float32), device=device)


DTYPE_CASES = [("float32", 2), ("float32", True), ("int32", 2.5), ("int32", 3), ("int32", True),
               ("bool", 1), ("bool", False), ("float64", 1.5), ("int16", 7), ("int8", -128),
               ("uint8", 255), ("int8", 2.5), ("uint8", True)]


@pytest.mark.parametrize("dtype,value", DTYPE_CASES)
def test_scalar_dtype_rule_is_array_api_strict(dtype, value):
    strict = xp.zeros(3, dtype=getattr(xp, dtype))
    t = af.zeros(3, dtype=af.bool if dtype == "bool" else getattr(af, dtype))
    try:
        strict[0] = value
    except TypeError:
        with pytest.raises(af.DTypeError, match="cannot be assigned"):
            t[0] = value
        return
    t[0] = value
    np.testing.assert_array_equal(t.numpy(), np.asarray(strict))


@pytest.mark.parametrize("dst,src", [("float32", "float64"), ("float32", "int32"),
                                     ("int32", "int16"), ("int16", "int32"),
                                     ("int16", "int8"), ("int8", "int16"),
                                     ("int16", "uint8"), ("uint8", "int8"),
                                     ("float64", "float32"), ("int32", "bool")])
def test_tensor_dtype_rule_is_array_api_strict(dst, src):
    ok = xp.result_type(getattr(xp, dst), getattr(xp, src)) == getattr(xp, dst) \
        if (dst, src) not in {("float32", "int32"), ("int32", "bool")} else False
    t = af.zeros(3, dtype=getattr(af, dst))
    value = af.ones(3, dtype=getattr(af, src))
    if not ok:
        with pytest.raises(af.DTypeError, match="astype"):
            t[:] = value
        return
    t[:] = value
    assert t.dtype is getattr(af, dst)
    np.testing.assert_array_equal(t.numpy(), np.ones(3))


def test_errors_are_raised_at_the_call_and_leave_the_tensor_as_it_was():
    t = af.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    before = t.id
    with pytest.raises(af.IndexingError, match="out of range"):
        t[2, 0] = 1.0
    with pytest.raises(af.IndexingError, match="out of range"):
        t[0, -4] = 1.0
    with pytest.raises(af.ShapeError, match=r"\(2,\) does not broadcast .*\(3,\)"):
        t[0] = af.ones(2)
    with pytest.raises(af.ShapeError):
        t[:, :2] = af.ones((2, 3))
    with pytest.raises(af.IndexingError, match="integer tensors"):
        t[af.tensor([0, 1])] = 1.0
    with pytest.raises(af.IndexingError, match="slice step"):
        t[::0] = 1.0
    assert t.id == before
    np.testing.assert_array_equal(t.numpy(), np.arange(6).reshape(2, 3))


def test_setitem_in_a_script():
    t = af.zeros((2, 3))
    t[0, 1] = 5.0
    t[1, np.int64(2)] = np.float32(2.5)  # numpy scalars count as Python ones
    assert t.numpy().tolist() == [[0, 5, 0], [0, 0, 2.5]]
    with pytest.raises(af.DTypeError, match="a str value"):
        t[0, 0] = "1"
