"""float64 accuracy over the whole range: each math function's largest error, in ulps,
must stay within its bound (the README's table). The reference is numpy computed in long
double (64-bit mantissa on x86) and rounded to float64, so an error of 1 means the result
is one of the two doubles around the exact value (on platforms whose long double is
double the reference is numpy's float64, itself within ~1 ulp). Inputs: random bit
patterns (every finite float64, subnormals included, equally likely), uniform samples of
[-10, 10], log-uniform ones near 0, the function's own domain, and special values (±0,
±inf, NaN, the largest and smallest values). Subnormal results count where the device
keeps them (lavapipe does)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.lazy.record import elementwise
from tests.ulps import reference, ulp_errors

F64 = np.float64
# function -> (numpy reference, max ulp error, extra input range (low, high) or None)
UNARY = {
    "exp": (np.exp, 1, (-746, 710)), "expm1": (np.expm1, 1, (-40, 710)),
    "log": (np.log, 1, (0, 3)), "log1p": (np.log1p, 1, (-1, 3)),
    "log2": (np.log2, 1, (0, 3)), "log10": (np.log10, 1, (0, 3)),
    "sin": (np.sin, 1, (-2e6, 2e6)), "cos": (np.cos, 1, (-2e6, 2e6)),
    "tan": (np.tan, 1, (-2e6, 2e6)), "atan": (np.arctan, 1, None),
    "asin": (np.arcsin, 2, (-1, 1)), "acos": (np.arccos, 2, (-1, 1)),
    "sinh": (np.sinh, 2, (-711, 711)), "cosh": (np.cosh, 1, (-711, 711)),
    "tanh": (np.tanh, 3, (-1, 1)), "asinh": (np.arcsinh, 2, None),
    "acosh": (np.arccosh, 2, (1, 3)), "atanh": (np.arctanh, 2, (-1, 1)),
}
BINARY = {"pow": (np.power, 1), "atan2": (np.arctan2, 2), "hypot": (np.hypot, 1),
          "logaddexp": (np.logaddexp, 2)}
# as in the float32 table: logaddexp near a result of 0 cancels, so it is measured in ulps
# of max(|x|, |y|, |result|)
IN_ULPS_OF_OPERANDS = {"logaddexp"}
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
                    1.7976931348623157e308, -1.7976931348623157e308, 1.0, -1.0, 0.5, -0.5,
                    2.0, 3.0, -3.0, 1e-300, 1e300, 709.78, -745.1, 1e22, np.pi / 2])
N = 10_000


def samples(seed: int, span: tuple[float, float] | None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    whole = rng.integers(-2**63, 2**63 - 1, 2 * N, dtype=np.int64).view(F64)
    near0 = rng.choice([-1, 1], N) * 10.0 ** rng.uniform(-300, 0, N)
    parts = [whole[np.isfinite(whole)], rng.uniform(-10, 10, N), near0, SPECIAL]
    if span is not None:
        parts.append(rng.uniform(*span, N))
    return np.concatenate(parts).astype(F64)


@pytest.fixture
def keeps_subnormals(af_device) -> bool:
    half = af.tensor([2.2250738585072014e-308], af.float64, device=af_device) * 0.5
    return bool(half.numpy()[0] != 0)


def measure(name: str, fn, xs: list[np.ndarray], flush: bool) -> float:
    want = reference(fn, *xs, dtype=F64)
    got = elementwise(name, *(af.tensor(x, af.float64) for x in xs)).numpy()
    assert got.dtype == F64
    err = ulp_errors(got, want, F64, flush)
    if name in IN_ULPS_OF_OPERANDS:
        scale = np.maximum.reduce([np.where(np.isfinite(v), np.abs(v), 0) for v in (want, *xs)])
        with np.errstate(all="ignore"):
            err = np.where(err == 0, 0, err * np.spacing(np.abs(want)) / np.spacing(scale))
    worst = int(np.argmax(err))
    assert np.isfinite(err[worst]), (name, [x[worst] for x in xs], got[worst], want[worst])
    # zeros keep numpy's sign (exp(-inf) is +0, sin(-0.0) is -0.0)
    zero = (want == 0) & (got == 0)
    assert (np.signbit(got[zero]) == np.signbit(want[zero])).all(), name
    return float(err[worst])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_max_ulp_error_over_the_whole_range(af_device, keeps_subnormals, name):
    fn, bound, span = UNARY[name]
    worst = measure(name, fn, [samples(len(name), span)], not keeps_subnormals)
    assert worst <= bound, f"{name}: {worst} ulp, bound {bound}"


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_max_ulp_error_over_the_whole_range(af_device, keeps_subnormals, name):
    fn, bound = BINARY[name]
    rng = np.random.default_rng(len(name))
    x, y = samples(1, None), samples(2, None)
    n = min(x.size, y.size)
    x, y = x[:n], rng.permutation(y[:n])
    if name == "pow":  # most random (x, y) overflow or give 1: aim y log|x| at [-745, 709]
        x = np.concatenate([x, 10.0 ** rng.uniform(-300, 300, N), rng.uniform(0, 3, N)])
        y = np.concatenate([y, rng.uniform(-745, 709, 2 * N) / np.log(np.abs(x[n:]))])
    sx, sy = (g.ravel() for g in np.meshgrid(SPECIAL, SPECIAL))  # every pair of specials
    worst = measure(name, fn, [np.concatenate([x, sx]), np.concatenate([y, sy])],
                    not keeps_subnormals)
    assert worst <= bound, f"{name}: {worst} ulp, bound {bound}"


def test_trig_near_multiples_of_half_pi_and_huge(af_device):
    """The doubles nearest to k pi/2 (and their neighbours) for k up to 2^12, where the
    Cody-Waite reduction cancels most and hands over to Payne-Hanek; and huge arguments,
    among them 6381956970095103 * 2^797, the double closest to a multiple of pi/2."""
    near = np.arange(1, 2**12) * (np.pi / 2)
    x = np.concatenate([near, np.nextafter(near, 0), np.nextafter(near, np.inf),
                        [6381956970095103 * 2.0**797, 1e22, 2.0**1023, 1e300, 5e15]])
    for name, fn in (("sin", np.sin), ("cos", np.cos), ("tan", np.tan)):
        got = elementwise(name, af.tensor(x, af.float64)).numpy()
        err = ulp_errors(got, reference(fn, x, dtype=F64), F64)
        assert err.max() <= UNARY[name][1], (name, x[err.argmax()], err.max())


def test_pow_special_cases_follow_numpy(af_device):
    """C99's (numpy's) special cases: 0 ** negative, (-0) ** odd, (-1) ** inf,
    1 ** nan, x ** 0 for NaN x, negative ** non-integer, (-inf) ** odd ..."""
    x = np.array([0.0, -0.0, -0.0, 0.0, -1.0, 1.0, np.nan, -2.0, -np.inf, -np.inf, -8.0,
                  0.5, 2.0, -0.5, -2.0, 5e-324, -1.0, 3.0])
    y = np.array([-1.0, -3.0, 3.0, np.nan, np.inf, np.nan, 0.0, 0.5, 3.0, -3.0, 3.0,
                  -np.inf, -np.inf, np.inf, 1e300, 0.5, 2.0**60 + 1, -1074.0])
    got = (af.tensor(x, af.float64) ** af.tensor(y, af.float64)).numpy()
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    np.testing.assert_array_equal(got, want)
    signed = ~np.isnan(want)
    assert (np.signbit(got[signed]) == np.signbit(want[signed])).all(), (got, want)


async def test_float64_chain_fused_and_plain_agree(dev, plain):
    """A chain of float64 math fused into one kernel gives what it gives op by op, and
    stays within a few ulps of numpy."""
    x = np.random.default_rng(5).uniform(-4, 4, 1000)

    def chain(t):
        u = t.exp() * 0.25 + (t.abs() + 1.0).log()
        return (u.sin() * u.cos() + u.tanh()) ** 2.0 + af.atan(u)

    results = [await chain(af.tensor(x, af.float64, device=d)).to_data() for d in (dev, plain)]
    np.testing.assert_array_equal(results[0], results[1])
    want = (lambda u: (np.sin(u) * np.cos(u) + np.tanh(u)) ** 2 + np.arctan(u))(
        np.exp(x) * 0.25 + np.log(np.abs(x) + 1.0))
    assert results[0].dtype == F64
    np.testing.assert_allclose(results[0], want, rtol=1e-14, atol=1e-15)


async def test_float64_copysign_and_nextafter_are_bit_exact(dev):
    tiny = np.finfo(np.float64).smallest_subnormal
    vals = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan, tiny, -tiny,
                     np.finfo(np.float64).max, -np.finfo(np.float64).max, 1e-300], np.float64)
    x, y = (a.reshape(-1) for a in np.meshgrid(vals, vals))
    tx, ty = (af.tensor(a, dtype=af.float64, device=dev) for a in (x, y))
    for name in ("copysign", "nextafter"):
        got = await getattr(af, name)(tx, ty).to_data()
        with np.errstate(over="ignore"):  # nextafter(max, inf) is inf
            want = getattr(np, name)(x, y)
        same = (got.view(np.int64) == want.view(np.int64)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), (name, x[~same], y[~same], got[~same], want[~same])
