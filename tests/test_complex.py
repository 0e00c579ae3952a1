"""Complex tensors: a pair of real tensors, complex math recorded as real ops on them,
checked against numpy (the oracle) on the fused device and the numpy reference."""

from __future__ import annotations

import cmath

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from conftest import assert_close

Z = np.array([[1 + 2j, -3 + 0.5j, 0.25 - 4j], [-0.5 - 0.75j, 2.5 + 0.1j, -1.5 + 3j]],
             np.complex64)
W = np.array([[0.5 - 1j, 2 + 2j, -1 + 0.25j], [3 - 0.5j, -0.2 + 1.5j, 1 + 1j]], np.complex64)

UNARY = ["exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan",
         "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
         "negative", "positive", "square", "reciprocal", "sign", "conj", "round"]
_NUMPY = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
          "acosh": np.arccosh, "atanh": np.arctanh,
          "sign": lambda z: np.where(z == 0, 0, z / np.abs(z))}


def _np(name: str):
    return _NUMPY.get(name) or getattr(np, name)


@pytest.mark.parametrize("name", UNARY)
async def test_unary_functions_match_numpy(dev, name):
    z = af.tensor(Z, device=dev)
    out = getattr(af, name)(z)
    assert out.dtype is af.complex64 and isinstance(out, af.ComplexTensor)
    assert_close(await out.to_data(), _np(name)(Z.astype(np.complex128)), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name,fn", [("add", np.add), ("subtract", np.subtract),
                                     ("multiply", np.multiply), ("divide", np.divide),
                                     ("pow", np.power)])
async def test_binary_functions_match_numpy_with_tensors_and_scalars(dev, name, fn):
    z, w = af.tensor(Z, device=dev), af.tensor(W, device=dev)
    f = getattr(af, name)
    ref = Z.astype(np.complex128)
    assert_close(await f(z, w).to_data(), fn(ref, W), rtol=2e-5, atol=2e-5)
    assert_close(await f(z, 1.5 - 2j).to_data(), fn(ref, 1.5 - 2j), rtol=2e-5, atol=2e-5)
    assert_close(await f(2.0, z).to_data(), fn(2.0, ref), rtol=2e-5, atol=2e-5)
    real = af.tensor(Z.real.copy(), device=dev)
    assert_close(await f(real, w).to_data(), fn(Z.real, W), rtol=2e-5, atol=2e-5)


async def test_operators_take_the_complex_path_either_way(dev):
    z = af.tensor(Z, device=dev)
    x = af.tensor(Z.real.copy(), device=dev)
    got = await af.to_data(*(e.real for e in (z * 1j, 1j * x, -z, z ** 2, 1 / z)))
    ref = [Z * 1j, 1j * Z.real, -Z, Z ** 2, 1 / Z]
    for g, r in zip(got, ref, strict=True):
        assert_close(g, r.real, rtol=2e-5, atol=2e-5)


async def test_abs_and_predicates_give_real_and_bool_tensors(dev):
    data = np.array([3 + 4j, np.inf + 1j, 1 + np.nan * 1j, 0j], np.complex64)
    z = af.tensor(data, device=dev)
    a, nan, inf, fin, eq = await af.to_data(af.abs(z), af.isnan(z), af.isinf(z),
                                            af.isfinite(z), z == data[0])
    assert a.dtype == np.float32 and a[0] == 5 and a[3] == 0
    assert nan.tolist() == [False, False, True, False]
    assert inf.tolist() == [False, True, False, False]
    assert fin.tolist() == [True, False, False, True]
    assert eq.tolist() == [True, False, False, False]


async def test_parts_and_promotion(dev):
    z = af.tensor(Z, device=dev)
    re, im = await af.to_data(af.real(z), af.imag(z))
    assert re.dtype == np.float32 and (re == Z.real).all() and (im == Z.imag).all()
    assert (af.real(z).dtype, af.conj(af.tensor([1.0], device=dev)).dtype) == (
        af.float32, af.float32)
    assert (z + af.tensor([1.0, 2.0, 3.0], device=dev)).dtype is af.complex64
    assert af.result_type(af.float64, af.complex64) is af.complex128
    assert af.result_type(af.float32, 1j) is af.complex64
    assert af.can_cast(af.float32, af.complex64) and not af.can_cast(af.complex64, af.float32)
    assert af.isdtype(af.complex64, "complex floating") and af.isdtype(af.complex128, "numeric")
    assert af.finfo(af.complex64) == af.finfo(af.float32)


async def test_views_indexing_joining_and_reductions_act_on_both_parts(dev):
    z = af.tensor(Z, device=dev)
    x = af.tensor(Z.real.copy(), device=dev)
    outs = [z[1], z[:, ::-1], z.T, af.reshape(z, (3, 2)), af.flip(z, axis=1),
            af.concat([z, x], axis=0), af.stack([z, z]),
            af.sum(z, axis=1), af.mean(z), af.broadcast_to(z[0], (4, 3)), z @ z.mT,
            af.vecdot(z, z), af.expand_dims(z, axis=0), af.roll(z, 1, axis=1)]
    got = await af.to_data(*(o.real for o in outs))
    got_im = await af.to_data(*(o.imag for o in outs))
    ref = [Z[1], Z[:, ::-1], Z.T, Z.reshape(3, 2), Z[:, ::-1],
           np.concatenate([Z, Z.real.astype(np.complex64)]), np.stack([Z, Z]), Z.sum(axis=1),
           Z.mean(), np.broadcast_to(Z[0], (4, 3)), Z @ Z.T,
           (np.conj(Z) * Z).sum(axis=-1), Z[None], np.roll(Z, 1, axis=1)]
    for g, gi, r in zip(got, got_im, ref, strict=True):
        assert_close(g, np.real(r), rtol=1e-5, atol=1e-5)
        assert_close(gi, np.imag(r), rtol=1e-5, atol=1e-5)


async def test_creation_and_assignment(dev):
    z = af.zeros((2, 2), dtype=af.complex64, device=dev)
    z[0, 1] = 1 + 2j
    z[1] = af.tensor([3.0, 4.0], device=dev)
    f = af.full((2,), 1 - 1j, device=dev)
    e = af.eye(2, dtype=af.complex64, device=dev)
    cast = af.astype(af.tensor([1, 2], device=dev), af.complex64)
    got = await af.to_data(z.real, z.imag, f.real, f.imag, e.real, cast.imag)
    assert got[0].tolist() == [[0, 1], [3, 4]] and got[1].tolist() == [[0, 2], [0, 0]]
    assert got[2].tolist() == [1, 1] and got[3].tolist() == [-1, -1]
    assert got[4].tolist() == [[1, 0], [0, 1]] and got[5].tolist() == [0, 0]
    assert (await z.to_data()).dtype == np.complex64


async def test_complex128_keeps_64_bit_parts(dev):
    if af.float64 not in af.__array_namespace_info__().dtypes(device=dev).values():
        pytest.skip("this adapter has no float64 (shader-f64)")
    data = np.array([1 + 1e-12j, 2 - 3j], np.complex128)
    z = af.tensor(data, dtype=af.complex128, device=dev)
    assert z.dtype is af.complex128 and z.real.dtype is af.float64
    assert_close(await (z * z).to_data(), data * data, rtol=1e-12, atol=1e-20)


async def test_what_complex_tensors_refuse_says_what_to_do_and_harms_nothing(dev):
    z = af.tensor(Z, device=dev)
    x = af.tensor([1.0, 2.0], device=dev)
    with pytest.raises(af.DTypeError, match="no order"):
        _ = z < z
    with pytest.raises(af.DTypeError, match="no order"):
        af.floor(z)
    with pytest.raises(af.DTypeError, match="imaginary part"):
        z.astype(af.float32)
    with pytest.raises(af.DTypeError, match="takes real tensors"):
        af.argmax(z)
    with pytest.raises(af.DTypeError, match="takes real tensors"):
        af.prod(z)
    with pytest.raises(af.DTypeError, match="af.real"):
        af.clip(z, 0, 1)
    with pytest.raises(af.DTypeError, match="takes real tensors"):
        af.cumulative_prod(z, axis=1)
    with pytest.raises(af.ShapeError, match="sizes 2 and 1"):
        af.vecdot(z, z[:1], axis=0)  # broadcasts, but not along the reduced axis
    with pytest.raises(af.DataError, match="complex64"):
        af.tensor(Z, dtype=af.float32, device=dev)
    with pytest.raises(TypeError, match="float"):
        float(z[0, 0])
    assert (await (x + 1).to_data()).tolist() == [2, 3]
    assert complex(await (z[0, 0] * 2).to_data()) == 2 + 4j


def test_blocking_reads_outside_an_event_loop():
    z = af.tensor(Z)
    assert complex(z[0, 1]) == complex(Z[0, 1])
    assert z[1, 2].item() == complex(Z[1, 2])
    assert np.asarray(z).dtype == np.complex64
    assert (np.asarray(af.conj(z)) == np.conj(Z)).all()
    assert bool(z[0, 0]) and not bool(af.tensor(0j))


_parts = st.floats(-30, 30, allow_nan=False, width=32)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_parts, _parts), min_size=1, max_size=6),
       st.sampled_from(["exp", "log", "sqrt", "sin", "tanh", "asinh", "atanh", "acos"]))
def test_random_arguments_match_cmath(values, name):
    data = np.array([complex(a, b) for a, b in values], np.complex64)
    got = np.asarray(getattr(af, name)(af.tensor(data)))
    fn = getattr(cmath, name)
    for z, g in zip(data, got, strict=True):
        try:
            want = fn(complex(z))
        except (ValueError, OverflowError):
            continue
        if abs(want) > 1e30:
            continue
        assert abs(g - want) <= 1e-4 * max(1.0, abs(want)), (name, z, g, want)


async def test_meshgrid_and_broadcast_arrays_keep_each_operand_complex_or_real(dev):
    z = af.tensor(Z[0], device=dev)
    x = af.tensor([1.0, 2.0], device=dev)
    a, b = af.meshgrid(z, x)
    c, d = af.broadcast_arrays(z[:, None], x)
    assert (a.dtype, b.dtype, c.dtype, d.dtype) == (af.complex64, af.float32, af.complex64,
                                                    af.float32)
    ga, gc = await af.to_data(a.imag, c.real)
    wa, _ = np.meshgrid(Z[0], [1.0, 2.0])
    assert (ga == wa.imag).all() and (gc == np.broadcast_to(Z[0][:, None].real, (3, 2))).all()


@pytest.mark.parametrize("complex_input", [False, True])
async def test_eig_and_eigvals_match_numpy(dev, complex_input):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4, 4)).astype(np.float32)
    data = (a + 1j * rng.standard_normal((3, 4, 4))).astype(np.complex64) if complex_input \
        else a
    x = af.tensor(data, device=dev)
    w, v = af.linalg.eig(x)
    vals = af.linalg.eigvals(x)
    assert w.dtype is v.dtype is vals.dtype is af.complex64
    assert (w.shape, v.shape, vals.shape) == ((3, 4), (3, 4, 4), (3, 4))
    gw, gv, gvals = (await w.to_data(), await v.to_data(), await vals.to_data())
    assert_close(np.sort_complex(gvals), np.sort_complex(np.linalg.eigvals(data)),
                 rtol=1e-4, atol=1e-4)
    assert np.abs(data.astype(np.complex128) @ gv - gv * gw[:, None, :]).max() < 1e-4
    assert_close(np.linalg.norm(gv, axis=-2), np.ones((3, 4)), rtol=1e-5, atol=1e-5)


async def test_linalg_views_norms_and_scans_of_complex_tensors(dev):
    z = af.tensor(W, device=dev)
    outs = [af.linalg.diagonal(z), af.linalg.trace(z[:, :2]), af.cumulative_sum(z, axis=1)]
    norms = [af.linalg.vector_norm(z), af.linalg.vector_norm(z, axis=1, ord=1),
             af.linalg.matrix_norm(z), af.linalg.matrix_norm(z, ord=float("inf"))]
    got = await af.to_data(*(o.real for o in outs), *(o.imag for o in outs), *norms)
    ref = [np.diagonal(W), np.trace(W[:, :2]), np.cumsum(W, axis=1)]
    for g, r in zip(got, [np.real(r) for r in ref] + [np.imag(r) for r in ref], strict=False):
        assert_close(g, r, rtol=1e-5, atol=1e-5)
    want = [np.linalg.norm(W.ravel()), np.linalg.norm(W, 1, axis=1), np.linalg.norm(W),
            np.linalg.norm(W, np.inf)]
    for g, r in zip(got[6:], want, strict=True):
        assert_close(g, np.float32(r), rtol=1e-5, atol=1e-5)
    with pytest.raises(af.DTypeError, match="singular values"):
        af.linalg.matrix_norm(z, ord="nuc")


async def test_to_data_reads_complex_and_real_tensors_in_one_round(dev):
    z = af.tensor(Z, device=dev)
    x = af.tensor([1.0, 2.0], device=dev)
    await dev.sync()
    dev.reset_stats()
    a, b, c = await af.to_data(z * 2, x + 1, af.conj(z))
    assert dev.stats().rounds == 1
    assert_close(a, Z * 2)
    assert_close(b, np.array([2.0, 3.0], np.float32))
    assert_close(c, np.conj(Z))
