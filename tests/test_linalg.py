"""The linalg extension's factorizations and solves against numpy, float32 and float64:
on the wgpu device (its WGSL kernels, one launch for a batch), on the numpy device, and
on the host path of the wgpu device (matrices past 64 a side). Vectors are compared as
numpy-equivalent: the factors give A back, are orthonormal, and match numpy's up to the
sign of each vector."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from asyncfusion.api.linalg import host
from tests.conftest import assert_close
from tests.test_views_reductions import launches

L = af.linalg
TOL = {np.float32: 2e-4, np.float64: 1e-10}


def _t(x, device):
    return af.tensor(x, dtype=x.dtype.name, device=device)


def _orthonormal(q, axis, tol):
    g = np.swapaxes(q, -1, -2) @ q if axis == "cols" else q @ np.swapaxes(q, -1, -2)
    assert_close(g, np.broadcast_to(np.eye(g.shape[-1]), g.shape), atol=tol)


def _spd(rng, batch, n, dtype):
    a = rng.standard_normal(batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


async def check_all(device, batch, m, n, dtype, seed):
    """Every factorization of a random batch, checked against numpy."""
    rng = np.random.default_rng(seed)
    tol = TOL[dtype]
    a = rng.standard_normal(batch + (m, n)).astype(dtype)
    ta = _t(a, device)
    k = min(m, n)
    scale = max(1.0, float(np.abs(np.linalg.svd(a, compute_uv=False)).max()))
    for mode in ("reduced", "complete"):
        q, r = [await f.to_data() for f in L.qr(ta, mode=mode)]
        qn, rn = np.linalg.qr(a, mode=mode)
        assert q.shape == qn.shape and r.shape == rn.shape
        assert_close(q @ r, a, atol=tol * scale)
        _orthonormal(q, "cols", tol)
        np.testing.assert_array_equal(r, np.triu(r))
        assert_close(np.abs(r), np.abs(rn), atol=tol * scale)
    for full in (True, False):
        u, s, vh = [await f.to_data() for f in L.svd(ta, full_matrices=full)]
        un, sn, vhn = np.linalg.svd(a, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (un.shape, sn.shape, vhn.shape)
        assert_close(s, sn, atol=tol * scale)
        assert_close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=tol * scale)
        _orthonormal(u, "cols", tol)
        _orthonormal(vh, "rows", tol)
    assert_close(await L.svdvals(ta).to_data(), np.linalg.svd(a, compute_uv=False),
                 atol=tol * scale)
    rtol = max(m, n) * np.finfo(dtype).eps
    np.testing.assert_array_equal(await L.matrix_rank(ta).to_data(),
                                  np.linalg.matrix_rank(a, rtol=rtol))
    assert_close(await L.pinv(ta).to_data(), np.linalg.pinv(a, rtol=rtol),
                 rtol=50 * tol, atol=50 * tol)
    if m != n:
        return
    spd = _spd(rng, batch, n, dtype)
    sym = (a + np.swapaxes(a, -1, -2)) / 2
    for upper in (False, True):
        assert_close(await L.cholesky(_t(spd, device), upper=upper).to_data(),
                     np.linalg.cholesky(spd, upper=upper), rtol=tol, atol=tol * n)
    w, v = [await f.to_data() for f in L.eigh(_t(np.tril(sym), device))]  # reads the lower
    wn = np.linalg.eigvalsh(sym)
    assert_close(w, wn, atol=tol * scale)
    assert_close(await L.eigvalsh(_t(sym, device)).to_data(), wn, atol=tol * scale)
    _orthonormal(v, "cols", tol)
    assert_close((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), sym, atol=tol * scale)
    cond = float(np.linalg.cond(a).max())
    assert_close(await L.inv(ta).to_data() @ a, np.broadcast_to(np.eye(n), a.shape),
                 atol=tol * cond * 10)
    b = rng.standard_normal((1,) * len(batch) + (n, 2)).astype(dtype)  # its batch broadcasts
    x = await L.solve(ta, _t(b, device)).to_data()
    assert x.shape == np.linalg.solve(a, b).shape
    assert_close(a @ x, np.broadcast_to(b, x.shape), atol=tol * cond * 10)
    b1 = rng.standard_normal(n).astype(dtype)
    x1 = await L.solve(ta, _t(b1, device)).to_data()
    assert_close(x1, np.linalg.solve(a, b1), atol=tol * cond * 10)
    assert_close(await L.det(ta).to_data(), np.linalg.det(a),
                 rtol=tol * cond * 10, atol=tol)
    sign, logabs = [await f.to_data() for f in L.slogdet(ta)]
    sn, ln = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign, sn)
    assert_close(logabs, ln, atol=tol * cond * 10)


@st.composite
def batches(draw):
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    m = draw(st.integers(1, 7))
    n = m if draw(st.booleans()) else draw(st.integers(1, 7))
    return batch, m, n, draw(st.sampled_from([np.float32, np.float64])), draw(
        st.integers(0, 2**16))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=batches())
async def test_factorizations_match_numpy_on_the_device(dev, case):
    await check_all(dev, *case)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
async def test_factorizations_match_numpy_on_the_numpy_device(ref, dtype):
    await check_all(ref, (2, 3), 4, 4, dtype, 1)
    await check_all(ref, (2,), 5, 3, dtype, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
async def test_the_largest_device_matrices_and_rank_deficient_ones(dev, dtype):
    rng = np.random.default_rng(3)
    tol = TOL[dtype]
    a = rng.standard_normal((1, 64, 64)).astype(dtype)
    sym = a + a.transpose(0, 2, 1)
    w, v = [await f.to_data() for f in L.eigh(_t(sym, dev))]
    assert_close(w, np.linalg.eigvalsh(sym), atol=tol * 50)
    _orthonormal(v, "cols", tol * 100)
    u, s, vh = [await f.to_data() for f in L.svd(_t(a, dev))]
    assert_close(s, np.linalg.svd(a, compute_uv=False), atol=tol * 50)
    _orthonormal(u, "cols", tol * 100)
    low = (rng.standard_normal((2, 6, 2)) @ rng.standard_normal((2, 2, 5))).astype(dtype)
    for x in (low, np.zeros((1, 4, 3), dtype)):
        u, s, vh = [await f.to_data() for f in L.svd(_t(x, dev))]
        _orthonormal(u, "cols", tol)  # the null space's vectors are completed
        _orthonormal(vh, "rows", tol)
        assert_close((u[..., :s.shape[-1]] * s[..., None, :]) @ vh[..., :s.shape[-1], :], x,
                     atol=tol * 10)
    np.testing.assert_array_equal(await L.matrix_rank(_t(low, dev)).to_data(), [2, 2])


async def test_one_launch_for_a_batch(dev):
    rng = np.random.default_rng(4)
    a = _t(rng.standard_normal((5, 4, 4)).astype(np.float32), dev)
    w = _t(rng.standard_normal((5, 6, 4)).astype(np.float32), dev)
    b = _t(rng.standard_normal((5, 4, 2)).astype(np.float32), dev)
    spd = _t(_spd(rng, (5,), 4, np.float32), dev)
    for make in (lambda: L.cholesky(spd), lambda: L.qr(w)[0], lambda: L.eigh(spd)[1],
                 lambda: L.eigvalsh(spd), lambda: L.svd(w)[0], lambda: L.svdvals(w),
                 lambda: L.inv(a), lambda: L.solve(a, b)):
        assert await launches(dev, make) == 1
    assert await launches(dev, lambda: L.det(a)) == 2  # LU, then U's diagonal folded
    assert await launches(dev, lambda: L.matrix_rank(w)) == 2


async def test_larger_matrices_run_numpy_in_the_devices_worker(dev, monkeypatch):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((2, 65, 65)).astype(np.float32)
    sym = a + a.transpose(0, 2, 1)
    threads = set()
    real = host.HostWork.run

    def run(self, backend, loads, op):
        threads.add(threading.current_thread().name)
        return real(self, backend, loads, op)

    monkeypatch.setattr(host.HostWork, "run", run)
    ta, ts = _t(a, dev), _t(sym, dev)
    assert await launches(dev, lambda: L.eigvalsh(ts)) == 0
    assert threads == {"asyncfusion-executor"}
    assert_close(await L.eigvalsh(ts).to_data(), np.linalg.eigvalsh(sym), atol=1e-3)
    assert_close(await L.svdvals(ta).to_data(), np.linalg.svd(a, compute_uv=False), atol=1e-3)
    assert_close(await L.inv(ta[0]).to_data(), np.linalg.inv(a[0]), atol=1e-2)
    u, s, vh = L.svd(ta[:, :, :3] * 2.0)  # a lazy input: the host reads it after its kernel
    assert_close(await s.to_data(), np.linalg.svd(a[:, :, :3] * 2, compute_uv=False), atol=1e-3)


@pytest.mark.parametrize("n", [3, 70])
async def test_singular_and_indefinite_matrices_on_both_paths(dev, n):
    zero = _t(np.zeros((2, n, n), np.float32), dev)
    np.testing.assert_array_equal(await L.det(zero).to_data(), [0.0, 0.0])
    sign, logabs = L.slogdet(zero)
    np.testing.assert_array_equal(await sign.to_data(), [0.0, 0.0])
    np.testing.assert_array_equal(await logabs.to_data(), [-np.inf, -np.inf])
    assert not np.isfinite(await L.inv(zero).to_data()).any()
    ok = np.eye(n, dtype=np.float32)
    mixed = _t(np.stack([ok, -ok]), dev)  # the second is not positive-definite
    got = await L.cholesky(mixed).to_data()
    np.testing.assert_array_equal(got[0], ok)
    assert np.isnan(got[1]).any()


def test_bad_inputs_raise_at_the_call_site():
    i = af.tensor(np.ones((3, 3), np.int32))
    f = af.tensor(np.ones((2, 3, 3), np.float32))
    for fn in (L.cholesky, L.inv, L.det, L.eigh, L.svd, L.qr, L.pinv, L.matrix_rank):
        with pytest.raises(af.DTypeError, match="floating-point"):
            fn(i)
    for fn in (L.cholesky, L.inv, L.det, L.slogdet, L.eigh, L.eigvalsh):
        with pytest.raises(af.ShapeError, match="square"):
            fn(f[..., :2])
    with pytest.raises(af.ShapeError, match="stack of matrices"):
        L.svd(f[0, 0])
    with pytest.raises(af.ShapeError, match="batch"):
        L.solve(f, af.tensor(np.ones((4, 3, 1), np.float32)))
    with pytest.raises(af.ShapeError, match="does not fit"):
        L.solve(f, af.tensor(np.ones(4, np.float32)))
    with pytest.raises(ValueError, match="mode"):
        L.qr(f, mode="r")
    with pytest.raises(af.ShapeError, match="rtol"):
        L.pinv(f, rtol=af.tensor(np.ones(3, np.float32)))
