"""numpy and Python interop through the sync door, ``repr``, and ``af.asarray``.

Plain (sync) tests run with no event loop, on the default device; async tests check that
every blocking conversion refuses inside a running loop and names the ``await`` to use.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion._core.errors import BlockingCallError, DataError, DeviceMismatchError, ShapeError


def test_numpy_tolist_and_asarray_read_the_values():
    t = af.tensor([[1.0, 2.0], [3.0, 4.0]]) * 2.0
    out = t.numpy()
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_array_equal(out, [[2.0, 4.0], [6.0, 8.0]])
    assert t.tolist() == [[2.0, 4.0], [6.0, 8.0]]
    arr = np.asarray(t)
    assert arr.dtype == np.float32 and arr.shape == (2, 2) and arr[1, 1] == 8.0
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.array(t, copy=True).tolist() == t.tolist()


def test_asarray_refuses_copy_false_instead_of_pretending_to_share():
    with pytest.raises(ValueError, match="always copies"):
        np.asarray(af.tensor([1.0]), copy=False)


def test_scalar_conversions():
    s = af.tensor([1.5, 2.0, 0.5]).sum()
    assert float(s) == 4.0 and type(float(s)) is float
    assert int(s) == 4 and s.item() == 4.0 and type(s.item()) is float
    assert bool(s) is True and bool(af.zeros(()) * 1.0) is False
    i = af.tensor(2, dtype=af.int32)
    assert operator.index(i) == 2 and ["a", "b", "c"][i] == "c"
    assert type(i.item()) is int and af.tensor([True]).item() is True


@pytest.mark.parametrize("call, message", [
    (lambda t: t.item(), "exactly one element"),
    (float, "exactly one element"),
    (int, "exactly one element"),
    (bool, "ambiguous"),
])
def test_scalar_conversions_of_many_elements_say_so_before_reading(call, message):
    t = af.ones((2, 2))
    with pytest.raises(ShapeError, match=message):
        call(t)


@pytest.mark.parametrize("make", [lambda: af.ones(()), lambda: af.ones((1,), dtype=af.int32)])
def test_index_needs_a_0d_integer_tensor(make):
    with pytest.raises(TypeError, match="0-d integer"):
        operator.index(make())


def test_repr_shows_status_and_values_only_once_on_the_host():
    t = af.tensor([1.0, 2.0, 3.0]) + 1.0
    before = repr(t)
    assert "shape=(3,)" in before and "dtype=float32" in before and "wgpu#" in before
    assert "status=queued" in before and "values" not in before
    t.numpy()
    after = repr(t)
    assert "status=on device" in after and "values=[2., 3., 4.]" in after
    big = af.zeros((40, 50)) + 1.0
    big.numpy()
    assert "values" not in repr(big) and "status=on device" in repr(big)


def test_repr_of_a_2d_result_aligns_its_rows():
    t = af.tensor([[1.0, 0.0], [0.0, 1.0]])
    t.numpy()
    lines = repr(t).splitlines()
    assert lines[1].strip().startswith("values=[[1., 0.],")
    assert lines[2].index("[0., 1.]") == lines[1].index("[[1., 0.]") + 1


async def test_repr_never_reads_and_shows_failure(dev):
    x = af.tensor([1.0, 2.0], device=dev)
    y = x.exp()
    assert "status=queued" in repr(y)
    with dev.inject_fault("launch", op="exp"):
        with pytest.raises(af.ExecutionError):
            await y.to_data()
    assert "status=failed" in repr(y)
    assert "status=on device" in repr(x) and dev.stats().launches == 0
    z = x * 3.0
    out = await z.to_data()
    assert "values=[3., 6.]" in repr(z)
    out[0] = 99.0  # the caller's array is theirs; the kept copy does not change
    assert "values=[3., 6.]" in repr(z)


@pytest.mark.parametrize("call, door, instead", [
    (lambda t: t.numpy(), "t.numpy()", "await t.to_data()"),
    (lambda t: t.tolist(), "t.tolist()", "(await t.to_data()).tolist()"),
    (lambda t: t.item(), "t.item()", "(await t.to_data()).item()"),
    (np.asarray, "np.asarray(t)", "np.asarray(await t.to_numpy())"),
    (float, "float(t)", "(await t.to_data()).item()"),
    (int, "int(t)", "(await t.to_data()).item()"),
    (bool, "bool(t)", "(await t.to_data()).item()"),
    (operator.index, "operator.index(t)", "(await t.to_data()).item()"),
    (lambda t: t.to_data_sync(), "t.to_data_sync()", "await t.to_data()"),
])
async def test_every_sync_door_refuses_inside_an_event_loop(dev, call, door, instead):
    t = af.tensor(1, dtype=af.int32, device=dev) + 1
    with pytest.raises(BlockingCallError) as info:
        call(t)
    message = str(info.value)
    assert door in message and f"'{instead}'" in message and "Jupyter" in message
    assert (await t.to_data()).item() == 2  # nothing was lost


def test_asarray_takes_lists_arrays_and_array_likes():
    class ArrayLike:
        def __array__(self, dtype=None, copy=None):
            return np.array([[1, 2], [3, 4]], dtype=np.int64)

    a = af.asarray(ArrayLike())
    assert (a.shape, a.dtype) == ((2, 2), af.int32) and a.tolist() == [[1, 2], [3, 4]]
    assert af.asarray([1.0, 2.0], dtype=af.int32).tolist() == [1, 2]
    assert af.asarray(np.float64(2.5)).item() == 2.5


def test_asarray_takes_host_dlpack_objects():
    class DLPackOnly:  # what a torch CPU tensor offers, without __array__
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, **kwargs):
            return self.arr.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    t = af.asarray(DLPackOnly(np.arange(6, dtype=np.float32).reshape(2, 3)))
    assert t.shape == (2, 3) and t.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_asarray_refuses_device_memory_of_another_library():
    class OnCuda:
        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be imported")

        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(DataError, match="CUDA device.*host first"):
        af.asarray(OnCuda())


def test_asarray_of_a_tensor_keeps_it_or_casts_it():
    t = af.tensor([1.5, 2.5])
    assert af.asarray(t) is t
    assert af.asarray(t, copy=True) is not t
    cast = af.asarray(t, dtype=af.int32)
    assert cast.dtype is af.int32 and cast.tolist() == [1, 2]
    with pytest.raises(ValueError, match="copy=False"):
        af.asarray([1.0], copy=False)


async def test_asarray_moves_a_tensor_between_devices_unless_copy_is_false(dev, ref):
    t = af.tensor([1.0], device=dev)
    moved = af.asarray(t, device=ref)
    assert moved.device is ref and (await moved.to_data()).tolist() == [1.0]
    with pytest.raises(DeviceMismatchError, match=r"copy=False.*t.to\(device\)"):
        af.asarray(t, device=ref, copy=False)


def test_a_list_of_tensors_is_read_in_a_plain_script():
    a = af.tensor([1.0, 2.0])
    assert af.tensor([a, a * 2.0]).tolist() == [[1.0, 2.0], [2.0, 4.0]]
