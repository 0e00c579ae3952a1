"""What the Array API 2025.12 asks where asyncfusion answered wrong: default dtypes with an
explicit ``dtype=None``, tuples from ``meshgrid``/``broadcast_arrays``/``info.devices``,
``vecdot``'s dtype, ``clip`` without bounds, ``expand_dims`` with a tuple of positions,
the standard's dtypes only in ``info.dtypes()``, and ``complex(t)``.
"""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af


def test_the_version_is_2025_12():
    assert af.__array_api_version__ == "2025.12"
    assert af.ones(1).__array_namespace__(api_version="2025.12") is af


@pytest.mark.parametrize("make", [af.zeros, af.ones, af.empty])
async def test_creation_with_dtype_none_gives_the_default_float(dev, make):
    for t in (make((2, 3), dtype=None, device=dev), make((2, 3), None, device=dev),
              make((), device=dev)):
        assert t.dtype is af.float32
    assert make(3, dtype=af.int32, device=dev).dtype is af.int32
    want = 1.0 if make is af.ones else 0.0
    np.testing.assert_array_equal(await make((2,), dtype=None, device=dev).to_data(),
                                  np.full(2, want, np.float32))


async def test_meshgrid_and_broadcast_arrays_return_tuples(dev):
    x = af.arange(3, device=dev)
    y = af.arange(2, device=dev)
    grids = af.meshgrid(x, y)
    assert type(grids) is tuple and len(grids) == 2
    want = np.meshgrid(np.arange(3), np.arange(2))
    for g, w in zip(grids, want):
        np.testing.assert_array_equal(await g.to_data(), w)
    both = af.broadcast_arrays(x.reshape((3, 1)), y)
    assert type(both) is tuple and [b.shape for b in both] == [(3, 2), (3, 2)]
    assert af.meshgrid() == () and af.broadcast_arrays() == ()


async def test_vecdot_keeps_the_promoted_dtype_and_wraps_as_numpy(dev):
    a = np.array([[300, 400, 65535], [1, 2, 3]], dtype=np.uint16)
    b = np.array([500, 600, 2], dtype=np.uint16)
    got = af.vecdot(af.tensor(a, device=dev), af.tensor(b, device=dev))
    assert got.dtype is af.uint16
    np.testing.assert_array_equal(await got.to_data(), (a * b).sum(-1, dtype=np.uint16))
    i16 = af.vecdot(af.tensor(a.astype(np.int16), device=dev),
                    af.tensor(b.astype(np.int16), device=dev))
    assert i16.dtype is af.int16
    np.testing.assert_array_equal(
        await i16.to_data(),
        (a.astype(np.int16) * b.astype(np.int16)).sum(-1, dtype=np.int16))
    assert af.vecdot(af.ones(3, device=dev), af.ones(3, device=dev)).dtype is af.float32


async def test_clip_without_bounds_is_a_copy(dev):
    x = np.array([-1.5, np.nan, 2.0, np.inf], np.float32)
    t = af.tensor(x, device=dev)
    out = af.clip(t)
    assert out is not t and out.dtype is af.float32
    np.testing.assert_array_equal(await out.to_data(), x)
    np.testing.assert_array_equal(await af.clip(t, max=1.0).to_data(), np.clip(x, None, 1.0))


async def test_expand_dims_takes_a_tuple_of_positions(dev):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = af.tensor(x, device=dev)
    for axis in [(0,), (0, 1), (-1, 0), (1, 3), (0, -1, 2)]:
        got = af.expand_dims(t, axis=axis)
        want = np.expand_dims(x, axis)
        assert got.shape == want.shape, axis
        np.testing.assert_array_equal(await got.to_data(), want)
    assert af.expand_dims(t, 1).shape == (2, 1, 3)
    with pytest.raises(af.AxisError, match="twice"):
        af.expand_dims(t, axis=(0, -4))
    with pytest.raises(af.AxisError):
        af.expand_dims(t, axis=(0, 4))


async def test_info_lists_devices_as_a_tuple_and_only_the_standards_dtypes(dev):
    info = af.__array_namespace_info__()
    assert info.devices() == (info.default_device(),)
    names = set(info.dtypes(device=dev))
    assert "float16" not in names and {"float32", "int32", "bool"} <= names
    assert set(info.dtypes(device=dev, kind="real floating")) <= {"float32", "float64"}
    assert names <= {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                     "uint64", "float32", "float64", "complex64", "complex128"}


def test_complex_of_a_one_element_tensor():
    assert complex(af.tensor(2.5)) == complex(2.5) and type(complex(af.tensor(1))) is complex
    with pytest.raises(af.ShapeError, match="exactly one element"):
        complex(af.ones(2))


@pytest.mark.parametrize("dtype", ["float64", "int64", "uint64"])
async def test_matmul_of_64_bit_dtypes_matches_numpy(dev, dtype):
    dt = getattr(af, dtype)
    if dt not in dev.backend.dtypes:
        pytest.skip(f"this adapter holds no {dtype}")
    rng = np.random.default_rng(7)
    if dtype == "float64":
        a, b = rng.standard_normal((2, 3, 5)), rng.standard_normal((5, 4))
    else:
        a, b = (rng.integers(0, 2**40, s).astype(dtype) for s in ((2, 3, 5), (5, 4)))
    ta, tb = af.tensor(a, dt, device=dev), af.tensor(b, dt, device=dev)
    for got, want in [(ta @ tb, a @ b), (ta @ tb[:, 0], a @ b[:, 0]),
                      (ta[0, 0] @ tb, a[0, 0] @ b), (af.matmul(tb.mT, ta.mT), b.T @ a.mT)]:
        assert got.dtype is dt and got.shape == want.shape
        out = await got.to_data()
        if dtype == "float64":
            np.testing.assert_allclose(out, want, rtol=1e-13)
        else:
            np.testing.assert_array_equal(out, want)  # wrapping, as numpy


def test_repeat_reads_a_tensor_of_counts_outside_an_event_loop():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = af.repeat(af.tensor(x), af.tensor([2, 0, 1], dtype=af.int16), axis=1)
    np.testing.assert_array_equal(got.numpy(), np.repeat(x, [2, 0, 1], axis=1))
    np.testing.assert_array_equal(af.repeat(af.tensor(x), af.tensor(2)).numpy(),
                                  np.repeat(x, 2))
    # one count in a 1-d tensor or list broadcasts to the axis, an empty one included
    for one in (af.tensor([3], dtype=af.int16), [3]):
        np.testing.assert_array_equal(af.repeat(af.tensor(x), one, axis=0).numpy(),
                                      np.repeat(x, [3], axis=0))
    assert af.repeat(af.zeros((0,), dtype=af.bool), af.tensor([2], dtype=af.int16)).shape == (0,)
    for bad in ([1, 2], [[1, 1, 1]], -1):
        with pytest.raises(af.ShapeError, match="non-negative int, one or 3 of them"):
            af.repeat(af.tensor(x), bad, axis=1)


async def test_repeat_with_a_tensor_of_counts_inside_a_loop_names_the_await(dev):
    counts = af.tensor([1, 2], device=dev)
    with pytest.raises(af.BlockingCallError, match=r"await repeats.to_data\(\)"):
        af.repeat(af.ones(2, device=dev), counts)
    got = af.repeat(af.ones(2, device=dev), (await counts.to_data()).tolist())
    np.testing.assert_array_equal(await got.to_data(), np.ones(3, np.float32))


async def test_isin_takes_a_python_int_on_either_side(dev):
    x = np.array([[3, 0, 7], [7, 1, 3]], dtype=np.uint16)
    t = af.tensor(x, device=dev)
    for got, want in [(af.isin(t, 7), np.isin(x, 7)), (af.isin(t, 2), np.isin(x, 2)),
                      (af.isin(t, 3, invert=True), np.isin(x, 3, invert=True)),
                      (af.isin(1, t), np.isin(1, x)), (af.isin(5, t), np.isin(5, x))]:
        assert got.dtype is af.bool and got.shape == want.shape
        np.testing.assert_array_equal(await got.to_data(), want)
    with pytest.raises(TypeError, match="at least one of x1 and x2"):
        af.isin(1, 2)
    with pytest.raises(TypeError, match="a tensor or a Python int"):
        af.isin(t, 1.5)


def test_slice_bounds_take_0d_integer_tensors_and_other_index_objects():
    x = np.arange(10, dtype=np.float32)
    t = af.tensor(x)
    start, stop, step = (af.tensor(v, dtype=af.int32) for v in (2, 9, 3))
    np.testing.assert_array_equal(t[start:stop:step].numpy(), x[2:9:3])
    np.testing.assert_array_equal(t[np.int64(-3):].numpy(), x[-3:])
    ends = af.cumulative_sum(af.tensor([1, 2, 3], dtype=af.int32))  # repeat's test: a
    np.testing.assert_array_equal(t[ends[0]:ends[1]].numpy(), x[1:3])  # running count
    with pytest.raises(af.IndexingError, match="__index__"):
        t[True:3]
    with pytest.raises(af.IndexingError, match="__index__"):
        t["a":3]
    with pytest.raises(TypeError, match="0-d integer tensors"):
        t[af.tensor(1.5):]


async def test_a_tensor_slice_bound_inside_a_loop_names_the_await(dev):
    t = af.arange(10, device=dev)
    with pytest.raises(af.BlockingCallError, match="operator.index"):
        t[af.tensor(2, dtype=af.int32, device=dev):]
