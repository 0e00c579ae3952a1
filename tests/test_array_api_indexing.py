"""Array API 2024.12 names and integer-array indexing, with array_api_strict as the oracle:
``t[i, j]`` with integer tensors (and ints), a 0-d integer index, ``af.bool``,
``__array_api_version__``, ``linalg.vecdot``/``matrix_transpose``, ``to_device`` and the
DLPack methods (a host copy outside an event loop; inside one they name the await)."""

from __future__ import annotations

import array_api_strict as xp
import numpy as np
import pytest

import asyncfusion as af

A = np.arange(24, dtype=np.float32).reshape(4, 6) - 5

KEYS = [  # integer index arrays (numpy int32 arrays) and ints, as array_api_strict takes them
    (np.int32([2, 0]), np.int32([1, 3])),
    (np.int32([[3], [-1]]), np.int32([0, -6, 5])),  # broadcast together, negatives count back
    (1, np.int32([[0, 2], [4, 4]])),  # an int beside an array
    (np.int32([3, 3, 0]), -2),
    (np.array(2, np.int32),),  # a 0-d index: the row
    (np.array(-1, np.int32), np.array(0, np.int32)),
    (np.int32([[1, 2], [0, 3]]), Ellipsis),
]


def _strict(key):
    return tuple(xp.asarray(k) if isinstance(k, np.ndarray) else k for k in key)


def _ours(key, device):
    return tuple(af.tensor(k, device=device) if isinstance(k, np.ndarray) else k for k in key)


@pytest.mark.parametrize("key", KEYS, ids=[str(k) for k in KEYS])
async def test_integer_array_indexing_matches_array_api_strict(key, dev, plain, ref):
    expected = A[key]
    if key[-1] is not Ellipsis and len(key) == A.ndim:  # the keys array_api_strict takes
        np.testing.assert_array_equal(np.asarray(xp.asarray(A)[_strict(key)]), expected)
    for device in (dev, plain, ref):
        t = af.tensor(A, device=device)
        ours = _ours(key, device)
        got = await t[ours if len(ours) > 1 else ours[0]].to_data()
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [af.int8, af.uint8, af.int16, af.uint32, af.int64,
                                   af.uint16])
async def test_index_dtypes(dtype, ref):
    t = af.tensor(A, device=ref)
    i = af.tensor(np.array([3, 0, 1]), dtype=dtype, device=ref)
    np.testing.assert_array_equal(await t[i, i].to_data(), A[[3, 0, 1], [3, 0, 1]])


async def test_out_of_range_indices_are_clamped_like_take(ref):
    t = af.tensor(A, device=ref)
    i = af.tensor(np.int64([9, -9, 2**40]), dtype=af.int64, device=ref)
    np.testing.assert_array_equal(await t[i, 0].to_data(), A[[3, 0, 3], 0])
    u = af.tensor(np.uint32([2**32 - 1, 2**31, 1]), dtype=af.uint32, device=ref)
    np.testing.assert_array_equal(await t[u, 0].to_data(), A[[3, 3, 1], 0])


def test_a_boolean_tensor_mask_indexes_outside_an_event_loop():
    """Outside a running loop a boolean tensor mask is read (blocking, as nonzero's door)
    and indexes as numpy's mask does, a 0-d one included (a new axis, full or empty)."""
    t = af.tensor(A)
    np.testing.assert_array_equal(t[t > 0].numpy(), A[A > 0])
    np.testing.assert_array_equal(t[af.tensor(A[:, 0] > 0)].numpy(), A[A[:, 0] > 0])
    assert t[af.tensor(np.array(True))].shape == (1,) + A.shape
    assert t[af.tensor(np.array(False))].shape == (0,) + A.shape
    assert t[np.array(False)].shape == A[np.array(False)].shape


async def test_a_boolean_tensor_mask_is_refused_inside_an_event_loop():
    t = af.tensor(A)
    with pytest.raises(af.IndexingError, match=r"boolean tensor mask .*af\.nonzero"):
        t[t > 0]
    with pytest.raises(af.IndexingError, match=r"boolean tensor mask .*af\.nonzero"):
        t[af.tensor(np.array(True))]
    assert af.__array_namespace_info__().capabilities()["boolean indexing"] is False


def test_integer_array_index_errors():
    t = af.tensor(A)
    with pytest.raises(af.IndexingError, match="must hold integers"):
        t[af.tensor([0.5])]
    with pytest.raises(af.IndexingError, match="too many indices"):
        t[af.tensor([0]), 0, 0]
    with pytest.raises(af.IndexingError, match="out of range"):
        t[af.tensor([0]), 6]
    with pytest.raises(af.IndexingError, match="do not broadcast together"):
        t[af.tensor([0, 1]), af.tensor([0, 1, 2])]


def test_namespace_names():
    assert af.bool is af.bool_ and repr(af.bool) == "asyncfusion.bool"
    assert af.__array_api_version__ == "2025.12"
    assert af.isdtype(af.bool, "bool")
    assert af.asarray(np.array([True])).dtype == af.bool


def test_linalg_vecdot_and_matrix_transpose_match_array_api_strict():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.float32([1, -2, 0.5, 3])
    np.testing.assert_array_equal(
        af.linalg.vecdot(af.asarray(a), af.asarray(b)).numpy(),
        np.asarray(xp.linalg.vecdot(xp.asarray(a), xp.asarray(b))))
    np.testing.assert_array_equal(af.linalg.matrix_transpose(af.asarray(a)).numpy(),
                                  np.asarray(xp.linalg.matrix_transpose(xp.asarray(a))))
    assert af.matrix_transpose is af.linalg.matrix_transpose
    with pytest.raises(TypeError, match="asyncfusion Tensor"):
        af.linalg.matrix_transpose(a)


async def test_to_device(dev, ref):
    t = af.tensor(A, device=dev)
    assert t.to_device(dev) is t
    assert t.to_device(t.device, stream=None) is t
    moved = t.to_device(ref)  # a lazy copy, as t.to(ref)
    assert moved.device is ref
    np.testing.assert_array_equal(await moved.to_data(), await t.to_data())
    with pytest.raises(ValueError, match="stream"):
        t.to_device(dev, stream=1)
    with pytest.raises(TypeError, match="asyncfusion Device"):
        t.to_device("cpu")


async def test_dlpack_inside_a_loop_reports_the_host_and_names_the_await(dev, ref):
    for d in (dev, ref):
        t = af.tensor(A, device=d)
        assert t.__dlpack_device__() == (1, 0)  # the export is a host copy
        with pytest.raises(af.BlockingCallError, match=r"np.from_dlpack\(await t.to_data\(\)\)"):
            t.__dlpack__()
        with pytest.raises(af.BlockingCallError):
            np.from_dlpack(t)
        np.testing.assert_array_equal(np.from_dlpack(await t.to_data()), A)


def test_dlpack_outside_a_loop_exports_a_host_copy():
    t = af.tensor(A) * 2
    np.testing.assert_array_equal(np.from_dlpack(t), A * 2)
    np.testing.assert_array_equal(np.from_dlpack(t, device="cpu", copy=True), A * 2)
    for version in (None, (0, 0), (1, 0), (2, 0)):
        assert type(t.__dlpack__(max_version=version, dl_device=(1, 0))).__name__ == "PyCapsule"
    np.testing.assert_array_equal(np.from_dlpack(af.tensor([True, False])), [True, False])
    exported = np.from_dlpack(t)
    exported[0] = -1  # a copy of its own: the tensor keeps its values
    np.testing.assert_array_equal(t.numpy(), A * 2)
    np.testing.assert_array_equal(np.from_dlpack(t, copy=False), A * 2)  # the read's own
    with pytest.raises(BufferError, match="only to the host"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="no streams"):
        t.__dlpack__(stream=1)


def test_a_mask_axis_of_size_zero_selects_nothing_as_the_standard_allows():
    x = af.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert x[np.zeros((2, 0), bool)].shape == (0,) and x[np.zeros((0, 3), bool)].shape == (0,)
    assert af.tensor([1.0])[af.tensor(np.zeros(0, bool))].numpy().shape == (0,)
    with pytest.raises(af.IndexingError, match="each size or 0"):
        x[np.zeros((1, 3), bool)]
