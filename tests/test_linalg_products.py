"""The linalg extension's namespace, and its functions shaped like products and
reductions: values against numpy on the fused wgpu device and the numpy device, one
launch each where they fuse, and errors at the call site."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from tests.conftest import assert_close
from tests.test_views_reductions import launches

L = af.linalg
RNG = np.random.default_rng(5)
NAMES = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
         "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
         "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
         "vector_norm"]


def test_the_namespace_holds_the_whole_extension():
    t = af.tensor([1.0])
    assert t.__array_namespace__().linalg is af.linalg
    for name in NAMES:
        assert callable(getattr(L, name)), name
    for name in ("matmul", "matrix_transpose", "tensordot", "vecdot"):
        assert getattr(af, name) is getattr(L, name)


def _data(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
async def test_products_match_numpy_on_both_devices(dev, ref, dtype):
    a, b = _data((2, 4, 5), dtype), _data((2, 5, 3), dtype)
    v, w = _data((3, 3), dtype), _data((2, 1, 3), dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for device in (dev, ref):
        ta, tb, tv, tw = (af.tensor(x, dtype=np.dtype(dtype).name, device=device)
                          for x in (a, b, v, w))
        assert_close(await (ta @ tb).to_data(), a @ b, rtol=tol, atol=tol)
        for k in (-5, -2, 0, 1, 4, 9):
            assert_close(await L.diagonal(ta, offset=k).to_data(),
                         np.diagonal(a, offset=k, axis1=-2, axis2=-1))
            assert_close(await L.trace(ta, offset=k).to_data(),
                         np.trace(a, offset=k, axis1=-2, axis2=-1), rtol=tol, atol=tol)
        assert_close(await L.outer(tv[0], tv[1]).to_data(), np.outer(v[0], v[1]), rtol=tol)
        assert_close(await L.cross(tv, tw).to_data(), np.cross(v, w), rtol=tol, atol=tol)
        for axis in (-2, 0):
            assert_close(await L.cross(tv.mT, tv, axis=axis).to_data(),
                         np.cross(v.T, v, axis=axis), rtol=tol, atol=tol)
        assert_close(await L.tensordot(ta, tb, axes=([0, 2], [0, 1])).to_data(),
                     np.tensordot(a, b, axes=([0, 2], [0, 1])), rtol=tol, atol=tol)
        sq = ta[..., :4]
        for n in (0, 1, 2, 5):
            assert_close(await L.matrix_power(sq, n).to_data(),
                         np.linalg.matrix_power(a[..., :4], n), rtol=1e-4, atol=1e-4)
        assert_close(await L.matrix_power(sq, -2).to_data(),
                     np.linalg.matrix_power(a[..., :4], -2), rtol=1e-3, atol=1e-3)


async def test_int_products_are_exact(dev):
    a = RNG.integers(-9, 9, (3, 3)).astype(np.int32)
    ta = af.tensor(a, device=dev)
    np.testing.assert_array_equal(await L.matrix_power(ta, 3).to_data(),
                                  np.linalg.matrix_power(a, 3))
    np.testing.assert_array_equal(await L.trace(ta).to_data(), np.trace(a))
    np.testing.assert_array_equal(await L.cross(ta, ta[::-1]).to_data(), np.cross(a, a[::-1]))
    a64 = a.astype(np.int64)
    t64 = af.tensor(a64, dtype=af.int64, device=dev)
    np.testing.assert_array_equal(await (t64 @ t64).to_data(), a64 @ a64)


async def test_products_and_norms_fuse(dev):
    a = af.tensor(_data((3, 4, 4)), device=dev)
    v = af.tensor(_data((3, 4)), device=dev)
    d = af.tensor(_data((3, 4, 4), np.float64), dtype=af.float64, device=dev)
    assert await launches(dev, lambda: L.diagonal(a, offset=1) * 2) == 1
    assert await launches(dev, lambda: L.trace(a, offset=-1) + 1) == 1
    assert await launches(dev, lambda: L.outer(v[0], v[1]).relu()) == 1
    assert await launches(dev, lambda: L.cross(v[:, :3], v[:, 1:])) == 1
    assert await launches(dev, lambda: d @ d) == 1  # float64: one fused product-sum
    assert await launches(dev, lambda: L.vector_norm(a, axis=(-2, -1))) == 1
    assert await launches(dev, lambda: L.vector_norm(a, ord=3)) == 1
    assert await launches(dev, lambda: L.matrix_norm(a)) == 1
    assert await launches(dev, lambda: L.matrix_power(a, 5)) == 3  # a^2, a^4, a^4 a


ORDS_V = [2, 1, 0, math.inf, -math.inf, 3, -1, 0.5]


@st.composite
def norm_cases(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                          st.just(tuple(range(len(shape))))))
    return (shape, axis, draw(st.sampled_from(ORDS_V)), draw(st.booleans()),
            draw(st.integers(0, 2**16)))


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=norm_cases())
async def test_vector_norm_matches_numpy(dev, case):
    shape, axis, ord, keepdims, seed = case
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    x[x > 1.5] = 0.0  # some zeros for ord=0
    got = await L.vector_norm(af.tensor(x, device=dev), axis=axis, keepdims=keepdims,
                              ord=ord).to_data()
    with np.errstate(divide="ignore"):  # zeros to a negative power: inf, as ours
        want = np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    assert got.shape == want.shape
    assert_close(got, want.astype(np.float32), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
async def test_matrix_norm_matches_numpy(dev, ref, ord):
    x = _data((2, 3, 5))
    for device in (dev, ref):
        for keepdims in (False, True):
            got = await L.matrix_norm(af.tensor(x, device=device), ord=ord,
                                      keepdims=keepdims).to_data()
            want = np.linalg.matrix_norm(x, ord=ord, keepdims=keepdims)
            assert got.shape == want.shape
            assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_bad_calls_raise_at_the_call_site():
    m = af.tensor(np.ones((2, 3, 3), np.float32))
    i = af.tensor(np.ones((3, 3), np.int32))
    with pytest.raises(af.ShapeError, match="size 3"):
        L.cross(m[..., :2], m[..., :2])
    with pytest.raises(af.ShapeError, match="1-D"):
        L.outer(m, m)
    with pytest.raises(af.ShapeError, match="square"):
        L.matrix_power(m[..., :2], 2)
    with pytest.raises(af.DTypeError, match="floating"):
        L.matrix_power(i, -1)
    with pytest.raises(af.DTypeError, match="floating"):
        L.vector_norm(i)
    with pytest.raises(af.DTypeError, match="floating"):
        L.matrix_norm(i)
    with pytest.raises(ValueError, match="ord"):
        L.matrix_norm(m, ord=3)
    with pytest.raises(af.ShapeError, match="at least 2"):
        L.diagonal(m[0, 0])
    with pytest.raises(af.DTypeError, match="bool"):
        L.trace(m > 0)
