"""Special values of ``remainder``, ``floor_divide`` and ``pow`` against array-api-strict
(numpy's ``npy_divmod`` and C's ``pow``), float32 and float64, fused, plain and on the
numpy backend; and the warning that 64-bit numpy data was narrowed."""

from __future__ import annotations

import itertools
import warnings

import array_api_strict as xp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from asyncfusion.api import creation

FLOATS = ["float32", "float64"]


@pytest.fixture
def devices(dev, plain, ref):
    return dev, plain, ref


def specials(dt: str) -> np.ndarray:
    """±0, ±1, ±2.5, ±inf, nan, ±tiny (the smallest normal), ±huge (the largest)."""
    f = np.finfo(dt)
    return np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan, f.tiny,
                     -f.tiny, f.max, -f.max], dt)


def same(got: np.ndarray, want: np.ndarray, a: np.ndarray, b: np.ndarray, what: object) -> None:
    """Equal values, NaN where NaN, and the same sign (of zeros and infinities too)."""
    ok = np.where(np.isnan(want), np.isnan(got), (got == want) & (np.signbit(got) ==
                                                                   np.signbit(want)))
    assert ok.all(), (what, list(zip(a[~ok], b[~ok], got[~ok], want[~ok]))[:8])


async def check(devices, fn: str, a: np.ndarray, b: np.ndarray) -> None:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's divide-by-zero notes
        want = np.asarray(getattr(xp, fn)(xp.asarray(a), xp.asarray(b)))
        if fn == "floor_divide":  # the standard, where numpy's divmod gives NaN or -1
            edge = (np.isinf(a) & np.isfinite(b) & (b != 0)) | (np.isfinite(a) & np.isinf(b))
            want = np.where(edge, a / b, want)
    dt = getattr(af, a.dtype.name)
    for d in devices:
        got = await getattr(af, fn)(af.tensor(a, dt, device=d), af.tensor(b, dt, device=d)
                                    ).to_data()
        assert got.dtype == want.dtype
        same(got, want, a, b, (fn, d))


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("fn", ["remainder", "floor_divide"])
async def test_every_pair_of_special_values(devices, fn, dt):
    a, b = (np.array(v, dt) for v in zip(*itertools.product(specials(dt), repeat=2)))
    await check(devices, fn, a, b)


async def test_floor_divide_floors_the_exact_quotient(devices):
    # -1 / 1e-5 rounds to -100000 in float32; numpy floors (a - fmod(a, b)) / b: -100001
    a = np.array([-1.0, 1.0, -7.0, 1e30, -3.0], np.float32)
    b = np.array([1e-5, -1e-5, 0.1, 3.7, 0.3], np.float32)
    await check(devices, "floor_divide", a, b)
    await check(devices, "remainder", a, b)
    await check(devices, "floor_divide", a.astype(np.float64), b.astype(np.float64) / 3)


def normal_floats(dt: str) -> st.SearchStrategy[float]:
    """Finite floats, zeros and normals only (lavapipe flushes subnormals to zero)."""
    f = np.finfo(dt)
    return st.floats(width=np.dtype(dt).itemsize * 8, allow_nan=False, allow_infinity=False,
                     allow_subnormal=False).filter(lambda v: v == 0 or abs(v) >= f.tiny)


def _operands(dt: str) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    pair = st.tuples(normal_floats(dt), normal_floats(dt))
    return st.lists(pair, min_size=1, max_size=16).map(
        lambda ps: tuple(np.array(v, dt) for v in zip(*ps)))  # type: ignore[return-value]


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operands=st.sampled_from(FLOATS).flatmap(_operands))
async def test_random_operands_match_numpy(dev, operands):
    """Random normal floats, quotients up to 2^2000: fmod is exact on the mantissas."""
    a, b = operands
    dt = getattr(af, a.dtype.name)
    for fn in ("remainder", "floor_divide"):
        with np.errstate(all="ignore"):
            want = getattr(np, fn)(a, b)  # finite operands: numpy's answers are the standard's
        got = await getattr(af, fn)(af.tensor(a, dt, device=dev),
                                    af.tensor(b, dt, device=dev)).to_data()
        flush = np.abs(want) < np.finfo(a.dtype).tiny  # subnormal: the device may flush it
        same(np.where(flush, np.copysign(0, want), got),
             np.where(flush, np.copysign(0, want), want), a, b, fn)


# The documented bound for float32 pow on lavapipe (README): 2^n exp2(f) with y log2(x)
# split exactly into n + f, so no intermediate overflows.
POW_ULPS = 4


async def test_pow_of_large_and_small_values(devices):
    f = np.finfo(np.float32)
    rng = np.random.default_rng(7)
    x = np.concatenate([[f.max, -f.max, f.max / 3, 1e38, 2.0**127, f.tiny, 2e-38, 1e-30],
                        10.0 ** rng.uniform(-37, 38.5, 40)]).astype(np.float32)
    ys = np.float32([1.0, 0.5, 2.0, 0.999, 1.001, 0.25, 3.0, -1.0, 1.5, -0.5])
    a = np.repeat(x, len(ys))
    b = np.tile(ys, len(x))
    with np.errstate(all="ignore"):
        want = np.power(a.astype(np.float64), b.astype(np.float64))  # then rounded
        want32 = want.astype(np.float32)
    for d in devices:
        got = await af.pow(af.tensor(a, device=d), af.tensor(b, device=d)).to_data()
        assert got[0] == f.max and got[len(ys)] == -f.max  # max ** 1.0 (was inf)
        assert (np.isnan(got) == np.isnan(want32)).all()
        fin = np.isfinite(want32) & (np.abs(want32) >= f.tiny)
        assert (np.isinf(got) == np.isinf(want32))[np.abs(want) <= f.max * 0.999].all()
        with np.errstate(over="ignore"):  # the spacing at float32's max is past it
            ulp = np.spacing(np.abs(want32[fin]).astype(np.float64).astype(np.float32))
        err = np.abs(got[fin] - want[fin]) / ulp.astype(np.float64)
        assert err.max() <= POW_ULPS, (d, a[fin][err.argmax()], b[fin][err.argmax()])


async def test_float64_numpy_data_is_narrowed_with_one_warning(dev, monkeypatch):
    monkeypatch.setattr(creation, "_WARNED", set())
    with pytest.warns(af.NarrowingWarning, match=r"float64 data becomes float32.*"
                                                 r"dtype=asyncfusion.float64.*"
                                                 r"dtype=asyncfusion.float32") as rec:
        t = af.tensor(np.array([1e300, 1.5]), device=dev)
        af.tensor(np.array([2.5]), device=dev)  # once per process: no second warning
    assert len(rec) == 1 and issubclass(af.NarrowingWarning, UserWarning)
    assert t.dtype is af.float32
    np.testing.assert_array_equal(await t.to_data(), np.float32([np.inf, 1.5]))
    with pytest.warns(af.NarrowingWarning, match=r"int64 data becomes int32.*"
                                                 r"dtype=asyncfusion.int64"):
        assert af.asarray(np.array([1, 2]), device=dev).dtype is af.int32
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # asked for, or Python data: silent
        monkeypatch.setattr(creation, "_WARNED", set())
        assert af.tensor(np.array([1.5]), af.float32, device=dev).dtype is af.float32
        assert af.tensor(np.array([1.5]), af.float64, device=dev).dtype is af.float64
        assert af.tensor([1.5, 2.0], device=dev).dtype is af.float32
        assert af.tensor(np.array([1], np.uint64), af.uint32, device=dev).dtype is af.uint32
