"""Accuracy over the whole float32 range: each math function's largest error, in ulps,
against numpy computed in float64 and rounded, must stay within its bound (the README's
table). Inputs: random bit patterns (every finite normal float32 is equally likely), plus
uniform samples of [-10, 10] and [-1, 1], plus log-uniform ones near 0 and the function's
own domain. Subnormal inputs are left out (devices may flush them; results below the
smallest normal count as exact when both are).

The functions built on exp, sin, cos and tan run in both of their texts (``mode``):
the plain one and the one for adapters whose fma is fused (``Runtime.fused_fma``), through
a float64 emulation of a fused fma where the adapter's is not (see ``tests.ulps``)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.codegen.wgsl.lowering import LOWERINGS
from asyncfusion.codegen.wgsl.math_f32 import fma_helpers
from asyncfusion.lazy.record import elementwise
from tests.ulps import TINY, reference, ulp_errors, use_math_mode

# function -> (numpy reference, max ulp error, extra input range (low, high) or None)
UNARY = {
    "sin": (np.sin, 2, None), "cos": (np.cos, 2, None), "tan": (np.tan, 4, None),
    "asin": (np.arcsin, 2, (-1, 1)), "acos": (np.arccos, 2, (-1, 1)),
    "atan": (np.arctan, 3, None), "sinh": (np.sinh, 3, (-90, 90)),
    "cosh": (np.cosh, 2, (-90, 90)), "tanh": (np.tanh, 3, None),
    "asinh": (np.arcsinh, 3, None), "acosh": (np.arccosh, 3, (1, 3)),
    "atanh": (np.arctanh, 3, (-1, 1)), "exp": (np.exp, 2, (-104, 89)),
    "expm1": (np.expm1, 2, (-18, 89)), "log": (np.log, 2, (0, 3)),
    "log1p": (np.log1p, 3, (-1, 3)), "log2": (np.log2, 2, (0, 3)),
    "log10": (np.log10, 3, (0, 3)), "sqrt": (np.sqrt, 1, (0, 3)),
}
BINARY = {"atan2": (np.arctan2, 4), "hypot": (np.hypot, 2), "logaddexp": (np.logaddexp, 3)}
# logaddexp(x, y) = max + log1p(exp(-|x - y|)) cancels when the result is near 0 (x, y < 0):
# float32 arithmetic (numpy's float32 logaddexp included) is then accurate to ulps of the
# operands, not of the result, so its error is measured in ulps of max(|x|, |y|, |result|).
IN_ULPS_OF_OPERANDS = {"logaddexp"}
N = 100_000
MODES = ["plain", "fma"]


def modes(names) -> list:
    """(name, mode) for each function, in both modes where it calls a helper that has an
    fma text (exp, sin, cos, tan and the functions built on them)."""
    fma = fma_helpers().keys()
    return [pytest.param(n, m, id=f"{n}-{m}") for n in sorted(names)
            for m in (MODES if fma & set(LOWERINGS[n].helpers) else ["plain"])]


@pytest.fixture(params=MODES)
def mode(request):
    """"plain" or "fma" (a test's parameters may give it)."""
    return request.param


@pytest.fixture
def math_dev(af_device, mode, monkeypatch):
    """This test's device (fresh: it renders its kernels anew, unlike the process-wide
    default device), rendering the float32 math helpers' ``mode`` text whatever this
    adapter's probe said; afterwards, every kernel it rendered that holds exp or the trig
    functions was in that text."""
    use_math_mode(af_device, mode == "fma", monkeypatch)
    yield af_device
    texts = [t for t in af_device.backend._kernels.values()
             if "fn af_exp_f32" in t or "fn af_trig_fast" in t]
    assert all(("fma(" in t or "fma_emul(" in t) is (mode == "fma") for t in texts), mode


def samples(seed: int, span: tuple[float, float] | None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, 4 * N, dtype=np.uint64).astype(np.uint32)
    whole = bits.view(np.float32)
    whole = whole[np.isfinite(whole) & (np.abs(whole) >= TINY)][:2 * N]
    near0 = rng.choice([-1, 1], N) * 10.0 ** rng.uniform(-12, -0.5, N)
    parts = [whole, rng.uniform(-10, 10, N), rng.uniform(-1, 1, N), near0]
    if span is not None:
        parts.append(rng.uniform(*span, N))
    return np.concatenate(parts).astype(np.float32)


def measure(dev, name: str, fn, *xs: np.ndarray) -> float:
    want = reference(fn, *xs)
    got = elementwise(name, *(af.tensor(x, device=dev) for x in xs)).numpy()
    err = ulp_errors(got, want)
    if name in IN_ULPS_OF_OPERANDS:
        scale = np.maximum.reduce([np.abs(v) for v in (want, *xs)])
        with np.errstate(invalid="ignore"):
            err = err * np.spacing(np.abs(want)) / np.spacing(scale)
    worst = int(np.argmax(err))
    assert np.isfinite(err[worst]), (name, [x[worst] for x in xs], got[worst], want[worst])
    return float(err[worst])


@pytest.mark.parametrize("name, mode", modes(UNARY))
def test_unary_max_ulp_error_over_the_whole_range(math_dev, name):
    fn, bound, span = UNARY[name]
    worst = measure(math_dev, name, fn, samples(len(name), span))
    assert worst <= bound, f"{name}: {worst} ulp, bound {bound}"


@pytest.mark.parametrize("name, mode", modes(BINARY))
def test_binary_max_ulp_error_over_the_whole_range(math_dev, name):
    fn, bound = BINARY[name]
    x, y = samples(1, None), samples(2, None)
    rng = np.random.default_rng(3)
    y = rng.permutation(y)[:x.size]
    worst = measure(math_dev, name, fn, x[:y.size], y)
    assert worst <= bound, f"{name}: {worst} ulp, bound {bound}"


def test_sin_cos_past_where_the_builtins_break(math_dev):
    """The issue's case: bare WGSL cos(616717888) gave 1.0; and the hardest reductions
    (arguments closest to multiples of pi/2) keep their digits."""
    x = np.array([616717888, 1.6e7, 6.4e7, 1e10, 3.4e38, 16367173 * 2.0**72,
                  8.8e36, 105414350], dtype=np.float32)
    for name, fn in (("sin", np.sin), ("cos", np.cos)):
        got = elementwise(name, af.tensor(x, device=math_dev)).numpy()
        assert ulp_errors(got, reference(fn, x)).max() <= 2, (name, got)


def test_trig_near_multiples_of_half_pi(math_dev):
    """The floats nearest to k pi/2 (and their neighbours), for k up to 2^13: where the
    fast reduction cancels most and must hand over to the exact one."""
    near = (np.arange(1, 2**13) * (np.pi / 2)).astype(np.float32)
    x = np.concatenate([near, np.nextafter(near, np.float32(0)), np.nextafter(near, np.inf)])
    for name, (fn, bound, _) in (("sin", UNARY["sin"]), ("cos", UNARY["cos"]),
                                 ("tan", UNARY["tan"])):
        got = elementwise(name, af.tensor(x, device=math_dev)).numpy()
        err = ulp_errors(got, reference(fn, x))
        assert err.max() <= bound, (name, x[err.argmax()], err.max())


def _around(*centers: float, steps: int = 8) -> np.ndarray:
    """Each center and its ``steps`` float32 neighbours on either side, with both signs."""
    out = []
    for c in centers:
        x = np.float32(c)
        lo = [x := np.nextafter(x, np.float32(-np.inf)) for _ in range(steps)]
        x = np.float32(c)
        hi = [x := np.nextafter(x, np.float32(np.inf)) for _ in range(steps)]
        out += [np.float32(c), *lo, *hi]
    pos = np.array(out, np.float32)
    return np.concatenate([pos, -pos])


SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trig_on_both_sides_of_the_fast_path_bound(math_dev, name):
    """The fast reduction ends at |x| = 6433, where the exact one takes over: arguments just
    inside and just outside it, the floats nearest the multiples of pi/2 there, pi/4 (the
    polynomials' edge) and the specials keep the bound; sin and tan keep -0."""
    fn, bound, _ = UNARY[name]
    k = np.arange(4090, 4106)
    x = np.concatenate([_around(6433.0, 6433.0 * 2 / np.pi, np.pi / 4, 3 * np.pi / 4),
                        _around(*(k * (np.pi / 2)), steps=2), SPECIALS])
    got = elementwise(name, af.tensor(x, device=math_dev)).numpy()
    err = ulp_errors(got, reference(fn, x))
    assert err.max() <= bound, (name, x[err.argmax()], err.max())
    zeros = x == 0
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(reference(fn, x)[zeros])), got[zeros]


def test_exp_on_both_sides_of_the_fast_path_bound(math_dev):
    """The fast exp ends at |x| = 87 (2^k scaled in one step); past it, up to overflow at
    88.72 and down through the subnormal results to 0 at -103.97, and on the specials, the
    exact path keeps its results."""
    x = np.concatenate([_around(87.0, 86.5, 88.72283, 87.33654, 103.97207, steps=6),
                        SPECIALS, np.float32([88.8, -104.0, 1e30, -1e30])])
    got = elementwise("exp", af.tensor(x, device=math_dev)).numpy()
    err = ulp_errors(got, reference(np.exp, x))
    assert err.max() <= UNARY["exp"][1], (x[err.argmax()], err.max())
    assert got[x == np.inf].tolist() == [np.inf] and got[x == -np.inf].tolist() == [0.0]
    assert np.isnan(got[np.isnan(x)]).all() and (got[x == 0] == 1.0).all()
