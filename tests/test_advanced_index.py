"""numpy's advanced indexing (lists, integer and boolean numpy arrays, integer tensors,
mixed with ints, slices, None and ...) for ``t[key]`` and ``t[key] = value``: random keys
over small shapes against numpy, on the numpy backend and the wgpu device; launch counts
and call-site errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from tests.test_views_reductions import launches

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5) - 7


def _int_array(n: int):
    """An integer index array for an axis of ``n`` (a list or a numpy array)."""
    if not n:
        return st.just([])
    values = st.integers(-n, n - 1)
    return st.one_of(
        st.lists(values, min_size=0, max_size=3),
        st.lists(values, min_size=1, max_size=3).map(np.array),
        st.lists(st.lists(values, min_size=2, max_size=2), min_size=1, max_size=2).map(
            lambda v: np.array(v, np.int32)),
    )


@st.composite
def keys(draw, with_mask=True):
    """A shape and an index of it with at least one array in it."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
    parts: list = []
    axis = 0
    ellipsis = False
    while axis < len(shape) and draw(st.booleans() if parts else st.just(True)):
        n = shape[axis]
        kind = draw(st.sampled_from(["int", "slice", "array", "array", "mask", "none", "..."]))
        if kind == "int" and n:
            parts.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-n - 1, n + 1)
            parts.append(slice(draw(bound), draw(bound),
                               draw(st.none() | st.integers(-2, 2).filter(bool))))
        elif kind == "mask" and with_mask:
            width = draw(st.integers(1, min(2, len(shape) - axis)))
            covered = shape[axis:axis + width]
            parts.append(np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(covered)),
                                                max_size=int(np.prod(covered))))
                                  ).reshape(covered))
            axis += width
            continue
        elif kind == "none":
            parts.append(None)
            continue
        elif kind == "..." and not ellipsis:
            ellipsis = True
            parts.append(Ellipsis)
            axis = len(shape) - draw(st.integers(0, len(shape) - axis))
            continue
        else:
            parts.append(draw(_int_array(n)))
        axis += 1
    if not any(isinstance(p, (list, np.ndarray)) for p in parts):
        parts.append(draw(_int_array(shape[axis])) if axis < len(shape) else [0, -1][:0])
    key = tuple(parts) if len(parts) > 1 or draw(st.booleans()) else parts[0]
    return shape, key


def _numpy_ok(shape, key):
    try:
        return np.zeros(shape)[key].shape
    except IndexError:
        return None


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.function_scoped_fixture,
                                                      HealthCheck.filter_too_much])


async def _check_read(shape, key, device, as_tensors=False):
    base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    expected = base[key]
    ours = key
    if as_tensors:  # integer arrays as integer tensors on the device
        parts = key if isinstance(key, tuple) else (key,)
        ours = tuple(af.tensor(np.asarray(k, np.int32), device=device)
                     if isinstance(k, (list, np.ndarray)) and np.asarray(k).dtype != bool
                     and np.asarray(k).size else k for k in parts)
    got = await af.tensor(base, device=device)[ours].to_data()
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@settings(max_examples=60, **SETTINGS)
@given(program=keys().filter(lambda p: _numpy_ok(*p) is not None))
async def test_random_reads_match_numpy(program, ref):
    await _check_read(*program, ref)


@settings(max_examples=12, **SETTINGS)
@given(program=keys().filter(lambda p: _numpy_ok(*p) is not None))
async def test_random_reads_on_the_device_match_numpy(program, dev):
    await _check_read(*program, dev)


@settings(max_examples=30, **SETTINGS)
@given(program=keys(with_mask=False).filter(lambda p: _numpy_ok(*p) is not None))
async def test_random_reads_with_integer_tensors_match_numpy(program, ref):
    await _check_read(*program, ref, as_tensors=True)


async def _check_write(shape, key, value_dims, device):
    base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    expected = base.copy()
    if value_dims is None:
        value = -1.5
    else:
        value = (100 + np.arange(int(np.prod(value_dims)))).astype(np.float32).reshape(
            value_dims)
    expected[key] = value
    t = af.tensor(base, device=device)
    t[key] = value if value_dims is None else af.tensor(value, device=device)
    np.testing.assert_array_equal(await t.to_data(), expected)


@st.composite
def writes(draw):
    shape, key = draw(keys().filter(lambda p: _numpy_ok(*p) is not None))
    region = _numpy_ok(shape, key)
    if draw(st.booleans()):
        return shape, key, None
    dims = [draw(st.sampled_from([n, 1])) for n in region]
    return shape, key, tuple(dims[draw(st.integers(0, len(dims))):])


@settings(max_examples=60, **SETTINGS)
@given(program=writes())
async def test_random_assignments_match_numpy(program, ref):
    await _check_write(*program, ref)


@settings(max_examples=12, **SETTINGS)
@given(program=writes())
async def test_random_assignments_on_the_device_match_numpy(program, dev):
    await _check_write(*program, dev)


CASES = [  # keys a new user writes
    [0, 2, 1],
    ([0, 2, -1],),
    (0, slice(None), [1, 2]),  # an int and an array apart: the array's axes come first
    (slice(None), [0, 3], [1, 2]),  # side by side: in place
    (np.array([[0], [2]]), slice(1, 3), np.array([1, 4])),
    (Ellipsis, np.array([0, -1])),
    A[:, :, 0] > 0,
    (slice(None), A[0] > 3),
    (None, [1], None, slice(None, None, -1)),
]


@pytest.mark.parametrize("key", CASES, ids=[str(k) for k in range(len(CASES))])
async def test_user_keys_match_numpy(key, dev, ref):
    for device in (dev, ref):
        got = await af.tensor(A, device=device)[key].to_data()
        assert got.shape == A[key].shape
        np.testing.assert_array_equal(got, A[key])


async def test_integer_tensor_keys_gather_on_the_device(dev):
    t = af.tensor(A, device=dev)
    i = af.tensor([2, 0, -1], device=dev)
    np.testing.assert_array_equal(await t[i, :, 1:3].to_data(), A[[2, 0, -1], :, 1:3])
    j = af.tensor(np.int32([[0], [3]]), device=dev)
    np.testing.assert_array_equal(await t[:, j, [1, 4]].to_data(),
                                  A[:, np.array([[0], [3]]), [1, 4]])


async def test_a_host_index_is_one_gather_fused_with_its_surroundings(dev):
    t = af.tensor(A, device=dev)
    await t.to_data()
    assert await launches(dev, lambda: (t[[0, 2], 1:, [4, 0]] * 2.0).exp()) == 1


async def test_a_boolean_tensor_mask_goes_through_nonzero(dev, ref):
    for device in (dev, ref):
        t = af.tensor(A, device=device)
        mask = t > 10.0
        with pytest.raises(af.IndexingError, match=r"await af\.nonzero\(mask\)"):
            t[mask]
        idx = await af.nonzero(mask)
        np.testing.assert_array_equal(await t[idx].to_data(), A[A > 10])


async def test_assignments_of_user_keys(dev, ref):
    for device in (dev, ref):
        t = af.tensor(A, device=device)
        t[[0, 2]] = 1.0
        t[A > 40] = af.tensor(np.float32(-2), device=device)
        t[:, [1, 1, 3], 0] = af.tensor(np.float32([5, 6, 7]), device=device)  # last wins
        expected = A.copy()
        expected[[0, 2]] = 1.0
        expected[A > 40] = -2
        expected[:, [1, 1, 3], 0] = [5, 6, 7]
        np.testing.assert_array_equal(await t.to_data(), expected)


def test_errors_at_the_call_site():
    t = af.tensor(A)
    before = t.id
    with pytest.raises(af.IndexingError, match="index 3 is out of range for axis 0 with size 3"):
        t[[0, 3]]
    with pytest.raises(af.IndexingError, match="out of range for axis 2"):
        t[0, 1, np.array([-6])]
    with pytest.raises(af.IndexingError, match="must hold integers or booleans"):
        t[[0.5]]
    with pytest.raises(af.IndexingError, match="must match the axes it covers"):
        t[np.ones(4, bool)]
    with pytest.raises(af.IndexingError, match="do not broadcast together"):
        t[[0, 1], [0, 1, 2]]
    with pytest.raises(af.IndexingError, match="do not broadcast together"):
        t[af.tensor([0, 1]), af.tensor([0, 1, 2])]
    with pytest.raises(af.IndexingError, match="too many indices"):
        t[[0], 0, 0, 0]
    with pytest.raises(af.IndexingError, match="must hold integers"):
        t[af.tensor([0.5])]
    with pytest.raises(af.IndexingError, match="integer tensors in an assignment"):
        t[af.tensor([0, 1])] = 1.0
    with pytest.raises(af.ShapeError, match="does not broadcast"):
        t[[0, 1]] = af.tensor(np.zeros((3, 4, 5), np.float32))
    with pytest.raises(af.IndexingError, match="out of range"):
        t[[5]] = 1.0
    assert t.id == before
    np.testing.assert_array_equal(t.numpy(), A)
