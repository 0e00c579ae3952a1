"""int8, uint8, int16, uint16 and uint64 end to end, against numpy and array-api-strict:
fused (``dev``), plain (``plain``) and on the numpy backend (``ref``).

int8, uint8, int16 and uint16 are held in 32-bit lanes (WGSL has no 8- or 16-bit
integers) and wrap to their width after every op, so they match numpy's arithmetic
exactly; uint64 needs ``shader-int64`` and is exact. Sums and products of the 8- and
16-bit integers are int32/uint32.
"""

from __future__ import annotations

import itertools

import array_api_strict as xp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import asyncfusion as af
from tests.test_custom_kernels import sum_diff

RNG = np.random.default_rng(1616)
NARROW = [af.int8, af.uint8, af.int16, af.uint16]
NEW = NARROW + [af.uint64]
INTS = [af.int8, af.int16, af.int32, af.int64, af.uint8, af.uint16, af.uint32, af.uint64]


@pytest.fixture
def devices(dev, plain, ref):
    return dev, plain, ref


def ints(dt: af.DType, shape: tuple[int, ...], lo: int | None = None,
         hi: int | None = None) -> np.ndarray:
    """Random values of ``dt`` over its whole range (or ``lo..hi``), extremes first."""
    info = np.iinfo(dt.np)
    lo = int(info.min) if lo is None else lo
    hi = int(info.max) if hi is None else hi
    x = RNG.integers(lo, hi, shape, dtype=dt.np, endpoint=True)
    x.flat[:2] = (lo, hi)[:x.size]
    return x


def equal(got: np.ndarray, want: np.ndarray, what: object = "") -> None:
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want, err_msg=str(what))


async def read(*tensors: af.Tensor) -> tuple[np.ndarray, ...]:
    return await af.to_data(*tensors)


@pytest.mark.parametrize("dt", NEW, ids=str)
async def test_round_trip_keeps_extremes_and_views(devices, dt):
    x = ints(dt, (5, 7))
    for d in devices:
        if dt is not af.uint64:  # numpy 8/16-bit data keeps its dtype (uint64 needs dtype=)
            assert af.tensor(x, device=d).dtype is dt
        t = af.tensor(x, dt, device=d)
        got = await read(t, t[1:, 3:], t.T, t[::2, ::-3], af.full((3,), x.flat[1], dt, device=d))
        for g, w in zip(got, (x, x[1:, 3:], x.T, x[::2, ::-3], np.full(3, x.flat[1]))):
            equal(g, w.astype(dt.np), dt)
        one = (await t[0, 1].to_data()).item()
        assert one == int(x[0, 1]) and isinstance(one, int)
    with pytest.raises(af.DataError, match=f"do not fit in {dt.label}"):
        af.tensor([int(np.iinfo(dt.np).min) - 1], dt, device=devices[0])


@pytest.mark.parametrize("dt", NEW, ids=str)
@pytest.mark.parametrize("shape", [(6, 5), (4, 8)])  # (4, 8): vec4 kernels
async def test_arithmetic_wraps_as_numpy_does(devices, dt, shape):
    x, y = ints(dt, shape), ints(dt, shape)
    y_nz = np.where(y == 0, dt.np.type(3), y)
    s = RNG.integers(0, dt.bits, shape).astype(dt.np)
    small = ints(dt, shape, 0, 9)
    with np.errstate(all="ignore"):
        want = [x + y, x - y, x * y, x // y_nz, x % y_nz, x << s, x >> s, x & y, x | y,
                x ^ y, ~x, -x, np.abs(x), x + dt.np.type(7), dt.np.type(3) * x, x >> 3,
                small ** dt.np.type(3), np.maximum(x, y), np.minimum(x, y), x * x]
    for d in devices:
        t, u, un, sh, sm = (af.tensor(a, dt, device=d) for a in (x, y, y_nz, s, small))
        got = await read(t + u, t - u, t * u, t // un, t % un, t << sh, t >> sh, t & u, t | u,
                         t ^ u, ~t, -t, af.abs(t), t + 7, 3 * t, t >> 3, sm ** 3,
                         af.maximum(t, u), af.minimum(t, u), t ** 2)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            equal(g, w, (d, dt, i))


XP_BINARY = ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum", "minimum",
             "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
             "bitwise_right_shift", "equal", "not_equal", "less", "greater_equal"]
XP_UNARY = ["negative", "abs", "sign", "positive", "bitwise_invert", "square", "floor",
            "round", "isnan", "isfinite"]


@pytest.mark.parametrize("dt", NEW, ids=str)
async def test_functions_match_array_api_strict(dev, ref, dt):
    x, y = ints(dt, (4, 6)), ints(dt, (4, 6))
    y_safe = np.where(y == 0, dt.np.type(5), y)  # no // 0, whose result the standard leaves
    shifts = y_safe % dt.np.type(dt.bits)  # the standard leaves shifts past the width
    xa = xp.asarray(x)
    wants = []
    for name in XP_BINARY:
        other = shifts if "shift" in name else y_safe
        wants.append(np.asarray(getattr(xp, name)(xa, xp.asarray(other))))
    wants += [np.asarray(getattr(xp, name)(xa)) for name in XP_UNARY]
    for d in (dev, ref):
        t, u = af.tensor(x, dt, device=d), af.tensor(y_safe, dt, device=d)
        sh = af.tensor(shifts, dt, device=d)
        outs = [getattr(af, n)(t, sh if "shift" in n else u) for n in XP_BINARY]
        outs += [getattr(af, n)(t) for n in XP_UNARY]
        got = await read(*outs, af.signbit(t))
        for name, g, w in zip(XP_BINARY + XP_UNARY, got[:-1], wants, strict=True):
            equal(g, w, (d, dt, name))
        equal(got[-1], x < 0, (d, "signbit"))  # the standard defines it for floats only


@pytest.mark.parametrize("dt", NEW, ids=str)
async def test_comparisons(devices, dt):
    x, y = ints(dt, (4, 9)), ints(dt, (4, 9))
    y[0] = x[0]
    mid = int(np.iinfo(dt.np).max) // 2
    want = [x < y, x <= y, x == y, x != y, x > y, x >= y, x > mid, x == x.flat[0]]
    for d in devices:
        t, u = af.tensor(x, dt, device=d), af.tensor(y, dt, device=d)
        got = await read(t < u, t <= u, t == u, t != u, t > u, t >= u, t > mid,
                         t == int(x.flat[0]))
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            equal(g, w, (dt, i))


def _held(d) -> list[af.DType]:
    """The real dtypes ``d`` holds (complex casts: ``tests/test_complex.py``)."""
    return [dt for dt in af.DType if dt in d.backend.dtypes and not dt.is_complex]


def _source(src: af.DType, dst: af.DType) -> np.ndarray:
    """Values of ``src`` whose cast to ``dst`` numpy defines (floats: within int32, and
    not negative for uint32/uint64; past an 8- or 16-bit range they wrap, as numpy's)."""
    if src is af.bool_:
        return np.array([True, False, True, True, False])
    if src.is_int:
        return ints(src, (7,))
    lo = 0.0 if dst.is_unsigned and dst.lane is dst else -30000.0
    x = RNG.uniform(lo, 30000.0, 7)
    x[:2] = (lo, 0.75)
    return x.astype(src.np)


@pytest.mark.parametrize("dt", NEW, ids=str)
async def test_casts_to_and_from_every_dtype(devices, dt):
    for d in devices:
        held = _held(d)
        x = ints(dt, (7,))
        outs, wants = [], []
        for other in held:
            outs.append(af.tensor(x, dt, device=d).astype(other))
            with np.errstate(over="ignore"):  # uint16 65535 is inf in float16
                wants.append(x.astype(other.np))
            src = _source(other, dt)
            outs.append(af.tensor(src, other, device=d).astype(dt))
            with np.errstate(invalid="ignore"):  # float past int8's range: wraps
                wants.append(src.astype(dt.np))
        got = await read(*outs)
        for i, (g, w) in enumerate(zip(got, wants, strict=True)):
            equal(g, w, (d, dt, held[i // 2], "to" if i % 2 == 0 else "from"))


@pytest.mark.parametrize("dt", NEW, ids=str)
@pytest.mark.parametrize("shape", [(5, 7), (3, 1100)])
async def test_reductions(devices, dt, shape):
    x = ints(dt, shape)
    acc = dt.lane.np  # int16 sums and products are int32, uint16 ones uint32
    small = ints(dt, shape, 0, 3)
    with np.errstate(over="ignore"):
        want = [x.sum(axis=-1, dtype=acc), x.sum(dtype=acc), small.prod(axis=0, dtype=acc),
                x.max(axis=0), x.min(axis=-1), x.max(), x.argmax(axis=-1).astype(np.int32),
                x.argmin(axis=0).astype(np.int32), np.cumsum(x, axis=1, dtype=acc)]
    for d in devices:
        t, sm = af.tensor(x, dt, device=d), af.tensor(small, dt, device=d)
        got = await read(t.sum(axis=-1), t.sum(), sm.prod(axis=0), t.max(axis=0),
                         t.min(axis=-1), t.max(), t.argmax(axis=-1), t.argmin(axis=0),
                         af.cumulative_sum(t, axis=1), t[0, 0].sum())
        for i, (g, w) in enumerate(zip(got, want + [x[0, 0].astype(acc)], strict=True)):
            equal(g, w, (d, dt, i))


async def test_promotion_follows_array_api_strict(devices):
    """Every pair of integer dtypes promotes as the standard says (int32 or int16 with
    uint32 gives int64), except uint64 with a signed integer, refused."""
    for a, b in itertools.product(INTS, INTS):
        try:
            want = xp.result_type(getattr(xp, a.label), getattr(xp, b.label))
        except TypeError:  # uint64 with a signed integer
            want = None
        if want is None:
            with pytest.raises(af.DTypeError, match=f"{a.label} and {b.label}"):
                af.result_type(a, b)
        else:
            assert af.result_type(a, b).label == str(want).split(".")[-1], (a, b)
    standard = [d for d in af.DType if d is not af.float16]  # the standard has no float16
    for a, b in itertools.product(standard, standard):
        assert af.can_cast(a, b) == xp.can_cast(getattr(xp, a.label), getattr(xp, b.label)), \
            (a, b)
    x, y = ints(af.int16, (5,)), ints(af.uint16, (5,))
    z = ints(af.int32, (5,), -100000, 100000)
    for d in devices:
        t, u, v = (af.tensor(a, device=d) for a in (x, y, z))
        w = af.tensor(y.astype(np.uint64), af.uint64, device=d)
        big = af.tensor(y.astype(np.uint32) * 65537, af.uint32, device=d)
        results = (t + u, t * v, u - v, t + 0.5, w + u, w.astype(af.float32) * 2, v - big,
                   t * big)
        assert [r.dtype for r in results] == [af.int32, af.int32, af.int32, af.float32,
                                              af.uint64, af.float32, af.int64, af.int64]
        got = await read(*results)
        with np.errstate(over="ignore"):
            wants = (x.astype(np.int32) + y, x * z, y.astype(np.int32) - z,
                     (x + 0.5).astype(np.float32), y.astype(np.uint64) * 2,
                     y.astype(np.float32) * 2, z - y.astype(np.uint32) * 65537,
                     x * (y.astype(np.uint32) * 65537))
        for i, (g, want) in enumerate(zip(got, wants, strict=True)):
            equal(g, want, (d, i))


def _numpy_promotion(a: af.DType, b: af.DType) -> af.DType | None:
    """numpy's ``result_type`` under the rules asyncfusion follows (the Array API's, and
    torch's for mixed kinds): bool only with bool, an integer with a float gives the
    float, uint64 with a signed integer has no common type (None: refused), a complex
    dtype with a number gives the complex dtype of the promoted parts."""
    if a.is_complex or b.is_complex:  # the parts promote; the result is their complex
        part = _numpy_promotion(a.part, b.part)
        return None if part is None else part.complex
    if (a is af.bool_) != (b is af.bool_):
        return None
    if a.is_float != b.is_float:
        return a if a.is_float else b
    if af.uint64 in (a, b) and any(d.is_int and not d.is_unsigned for d in (a, b)):
        return None
    return {d.np: d for d in af.DType}[np.result_type(a.np, b.np)]


def test_promotion_table_matches_numpy():
    for a, b in itertools.product(af.DType, af.DType):
        want = _numpy_promotion(a, b)
        if want is None:
            with pytest.raises(af.DTypeError, match=rf"\b{a.label}\b.*\b{b.label}\b"):
                af.result_type(a, b)
        else:
            assert af.result_type(a, b) is want, (a, b)
    assert af.result_type(af.int8, af.uint8) is af.int16  # spot checks of the table
    assert af.result_type(af.uint8, af.int16) is af.int16
    assert af.result_type(af.int8, af.uint16) is af.int32
    assert af.result_type(af.uint8, af.uint32, af.int8) is af.int64


MIXED_8 = [(af.int8, af.uint8), (af.uint8, af.int16), (af.int8, af.uint16), (af.int8, af.int32),
           (af.uint8, af.uint16), (af.uint8, af.int8), (af.int8, af.float16),
           (af.uint8, af.float32), (af.int8, af.uint32), (af.uint8, af.uint64)]


@pytest.mark.parametrize("a,b", MIXED_8, ids=str)
async def test_8_bit_mixed_with_other_dtypes_computes_as_numpy(devices, a, b):
    x = ints(a, (3, 8))
    y = ints(b, (3, 8)) if b.is_int else RNG.uniform(-50, 50, (3, 8)).astype(b.np)
    with np.errstate(all="ignore"):  # numpy's dtypes are the ones wanted here
        wants = [x + y, x - y, x * y, np.maximum(x, y), x < y, x == y, np.where(x > 0, x, y)]
    for d in devices:
        t, u = af.tensor(x, device=d), af.tensor(y, b, device=d)
        got = await read(t + u, t - u, t * u, af.maximum(t, u), t < u, t == u,
                         af.where(t > 0, t, u))
        for i, (g, w) in enumerate(zip(got, wants, strict=True)):
            equal(g, w, (d, a, b, i))


async def test_scalars_must_fit_the_narrow_dtype(dev):
    t = af.tensor(np.array([1, 2], np.uint16), device=dev)
    equal((await read(t + 5))[0], np.array([6, 7], np.uint16))  # cached rule: checks stay
    with pytest.raises(af.DTypeError, match="70000 does not fit in uint16"):
        t + 70000
    with pytest.raises(af.DTypeError, match="-1 does not fit in uint16"):
        af.where(t > 1, t, -1)
    w = af.tensor([2**63], af.uint64, device=dev)
    equal((await read(w + (2**63 - 1)))[0], np.array([2**64 - 1], np.uint64))
    i8 = af.tensor(np.array([-128, 127], np.int8), device=dev)
    u8 = af.tensor(np.array([0, 255], np.uint8), device=dev)
    got = await read(i8 + 1, i8 * -128, u8 - 255, af.where(u8 > 0, u8, 255), i8 > -128)
    for g, want in zip(got, (np.array([-127, -128], np.int8), np.array([0, -128], np.int8),
                             np.array([1, 0], np.uint8), np.array([255, 255], np.uint8),
                             np.array([False, True]))):
        equal(g, want)
    for bad, make in (("128 does not fit in int8", lambda: i8 + 128),
                      (r"-129 does not fit in int8 \(range -128..127\)", lambda: -129 * i8),
                      ("256 does not fit in uint8", lambda: u8 + 256),
                      ("-1 does not fit in uint8", lambda: af.where(u8 > 1, -1, u8)),
                      ("300 does not fit in int8", lambda: af.maximum(i8, 300)),
                      (r"200 does not fit in int8.*cast", lambda: i8.__setitem__(0, 200))):
        with pytest.raises(af.DTypeError, match=bad):
            make()


async def test_indexing_selection_and_matmul(devices):
    x = RNG.permutation(np.arange(-32768, 32768, 1365, dtype=np.int16))[:48].reshape(6, 8)
    w = ints(af.uint64, (6, 8))
    at = np.array([7, 0, 3], np.int16)
    a, b = ints(af.int16, (4, 5), -300, 300), ints(af.int16, (5, 3), -300, 300)
    for d in devices:
        t, k = af.tensor(x, device=d), af.tensor(w, af.uint64, device=d)
        idx = af.tensor(at, device=d)  # int16 indices are taken as int32
        vals, pos = af.topk(t, 3, axis=1)
        kv, kp = af.topk(k, 2, axis=1, largest=False)
        got = await read(af.take(t, idx, axis=1), vals, pos, kv, kp, af.sort(t, axis=1),
                         af.argsort(k, axis=1), af.cat([t, t[::-1]], 0),
                         af.where(t > 0, t, -7), af.tensor(a, device=d) @ af.tensor(b, device=d))
        wants = (x[:, at], -np.sort(-x.astype(np.int32), 1)[:, :3].astype(np.int16),
                 np.argsort(-x.astype(np.int32), 1, kind="stable")[:, :3].astype(np.int32),
                 np.sort(w, 1)[:, :2], np.argsort(w, 1, kind="stable")[:, :2].astype(np.int32),
                 np.sort(x, 1), np.argsort(w, 1, kind="stable").astype(np.int32),
                 np.concatenate([x, x[::-1]]), np.where(x > 0, x, np.int16(-7)), a @ b)
        for i, (g, want) in enumerate(zip(got, wants, strict=True)):
            equal(g, want, (d, i))


@pytest.mark.parametrize("dt", [af.int8, af.uint8], ids=str)
async def test_8_bit_sorting_selection_joining_and_setitem(devices, dt):
    x = ints(dt, (6, 40))
    other = ints(af.int16 if dt is af.int8 else af.int8, (2, 40))
    at = np.array([39, 0, 7, 7], dt.np)
    a, b = ints(dt, (4, 5)), ints(dt, (5, 3))
    down = np.argsort(-x.astype(np.int64), 1, kind="stable")
    up = np.argsort(x, 1, kind="stable")
    put = x.copy()
    put[0] = 5
    put[1:3, ::2] = x[4:6, ::2]
    put[put > 100] = 9
    with np.errstate(over="ignore"):
        wants = (np.sort(x, 1), up.astype(np.int32), down.astype(np.int32),
                 np.take_along_axis(x, down[:, :5], 1), down[:, :5].astype(np.int32),
                 np.take_along_axis(x, up[:, :3], 1), up[:, :3].astype(np.int32), np.unique(x),
                 np.concatenate([x, x[::-1]]), np.stack([x, x], 1), np.concatenate([x[:2], other]),
                 np.where(x > 3, x, dt.np.type(1)), x[:, at], a @ b, put)
    for d in devices:
        t = af.tensor(x, device=d)
        vals, pos = af.topk(t, 5)
        low, where_low = af.topk(t, 3, largest=False)
        s = af.tensor(x, device=d)
        s[0] = 5
        s[1:3, ::2] = t[4:6, ::2]
        s[s > 100] = 9
        got = await read(af.sort(t, axis=1), af.argsort(t, axis=1),
                         af.argsort(t, axis=1, descending=True), vals, pos, low, where_low,
                         await af.unique_values(t), af.concat([t, t[::-1]]), af.stack([t, t], 1),
                         af.concat([t[:2], af.tensor(other, device=d)]), af.where(t > 3, t, 1),
                         af.take(t, af.tensor(at, device=d), axis=1),
                         af.tensor(a, device=d) @ af.tensor(b, device=d), s)
        for i, (g, want) in enumerate(zip(got, wants, strict=True)):
            equal(g, want, (d, dt, i))


async def test_refusals_name_what_to_use(dev, monkeypatch):
    w = af.tensor([1, 2], af.uint64, device=dev)
    i16, u32 = af.tensor(np.array([1, 2], np.int16), device=dev), af.tensor([1, 2], af.uint32,
                                                                            device=dev)
    assert (w @ w).dtype is af.uint64 and int((await (w @ w).to_data())) == 5
    with pytest.raises(af.DTypeError, match=r"uint64 and int16 have no common integer type"):
        w + i16
    # int16 * uint32 is int64 where the adapter holds it, else refused naming casts
    monkeypatch.setattr(dev.backend, "dtypes",
                        dev.backend.dtypes - {af.int64, af.uint64, af.float64})
    with pytest.raises(af.DTypeError, match=r"mul.*gives int64.*lacks shader-int64.*"
                                            r"astype\(asyncfusion.int32\)"):
        i16 * u32
    monkeypatch.undo()
    prod = i16 * u32
    assert prod.dtype is af.int64
    equal((await read(prod))[0], np.array([1, 4], np.int64))


async def test_custom_kernels_see_int16_in_32_bit_lanes(dev, ref):
    x = ints(af.int16, (40,), -1000, 1000)
    y = ints(af.int16, (40,), -1000, 1000)
    for d in (dev, ref):  # the WGSL reads array<i32>; the numpy twin gets int16 arrays
        s, diff = sum_diff(af.tensor(x, device=d), af.tensor(y, device=d), params=(40,))
        assert s.dtype is af.int16
        got = await read(s, diff)
        equal(got[0], x + y, d)
        equal(got[1], x - y, d)


async def test_namespace_info_and_iinfo(dev, ref):
    info = af.__array_namespace_info__()
    for d in (dev, ref):
        held = d.backend.dtypes
        assert set(info.dtypes(device=d)) == {dt.label for dt in held} - {"float16"}
        assert set(NARROW) <= held  # no adapter feature needed
        assert info.dtypes(device=d, kind="unsigned integer") == {
            dt.label: dt for dt in (af.uint8, af.uint16, af.uint32, af.uint64) if dt in held}
        assert info.dtypes(device=d, kind="signed integer") == {
            dt.label: dt for dt in (af.int8, af.int16, af.int32, af.int64) if dt in held}
    for dt in NEW:
        i, n = af.iinfo(dt), np.iinfo(dt.np)
        assert (i.bits, i.min, i.max, i.dtype) == (n.bits, int(n.min), int(n.max), dt)
        assert af.iinfo(af.zeros((1,), dt, device=ref)).max == int(n.max)
    defaults = info.default_dtypes(device=dev)
    assert defaults["indexing"] is defaults["integral"] is af.int32
    t = af.tensor(np.array([3, -1, 9], np.int16), device=dev)
    (hits,) = await af.nonzero(t)
    results = [t.argmax(), af.argsort(t), af.topk(t, 2)[1], hits]
    assert {r.dtype for r in results} == {defaults["indexing"]}


async def test_device_memory_counts_32_bit_lanes(ref):
    base = ref.memory_stats().live_bytes
    t16 = af.tensor(np.arange(1000, dtype=np.int16), device=ref)
    t8 = af.tensor(np.arange(1000, dtype=np.uint8), device=ref)  # wraps past 255, as numpy
    t64 = af.tensor(np.arange(1000, dtype=np.uint64), af.uint64, device=ref)
    await ref.sync()
    assert ref.memory_stats().live_bytes - base == 1000 * (4 + 4 + 8)
    assert t16.dtype.itemsize == 4 and t16.dtype.bits == 16 and t64.dtype.itemsize == 8
    assert t8.dtype.itemsize == 4 and t8.dtype.bits == 8
    equal((await read(t8))[0], np.arange(1000, dtype=np.uint8))
    del t16, t8, t64


async def test_adapter_without_shader_int64_refuses_uint64(dev, monkeypatch):
    monkeypatch.setattr(dev.backend, "dtypes",
                        frozenset(af.DType) - {af.float64, af.int64, af.uint64})
    with pytest.raises(af.DTypeError, match="shader-int64.*asyncfusion.uint32"):
        af.tensor([1], af.uint64, device=dev)
    with pytest.raises(af.DTypeError, match="shader-int64.*asyncfusion.uint32"):
        af.tensor(np.array([1, 2], np.uint16), device=dev).astype(af.uint64)
    with pytest.raises(af.DTypeError, match="shader-int64"):
        af.zeros((2,), af.uint64, device=dev)
    held = af.__array_namespace_info__().dtypes(device=dev)
    assert "uint64" not in held and {dt.label for dt in NARROW} <= set(held)
    t = af.tensor(np.array([-32768, 32767], np.int16), device=dev)  # 16-bit: no feature
    equal((await read(t + 1))[0], np.array([-32767, -32768], np.int16))
    t8 = af.tensor(np.array([0, 255], np.uint8), device=dev)  # nor 8-bit
    equal((await read(t8 + 1))[0], np.array([1, 0], np.uint8))


_UNARY = {"neg": (lambda a: -a, lambda a: -a), "inv": (lambda a: ~a, lambda a: ~a),
          "sq": (lambda a: a * a, lambda a: a * a), "shl": (lambda a: a << 5, lambda a: a << 5)}
_BINARY = {"add": (lambda a, b: a + b,) * 2, "sub": (lambda a, b: a - b,) * 2,
           "mul": (lambda a, b: a * b,) * 2, "xor": (lambda a, b: a ^ b,) * 2,
           "max": (af.maximum, np.maximum),
           "where": (lambda a, b: af.where(a > b, a - b, b), lambda a, b: np.where(a > b, a - b, b))}


def _operands(dt: af.DType) -> st.SearchStrategy[tuple[af.DType, np.ndarray, np.ndarray]]:
    return hnp.array_shapes(max_dims=2, max_side=9).flatmap(
        lambda shape: st.tuples(st.just(dt), hnp.arrays(dt.np, shape), hnp.arrays(dt.np, shape)))


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operands=st.sampled_from(NEW).flatmap(_operands),
       program=st.lists(st.sampled_from(sorted(_UNARY) + sorted(_BINARY)), min_size=1,
                        max_size=5))
async def test_fused_and_plain_programs_match_numpy(dev, plain, operands, program):
    dt, x, y = operands
    want = x
    for name in program:
        want = _UNARY[name][1](want) if name in _UNARY else _BINARY[name][1](want, y)
    for d in (dev, plain):
        t, u = af.tensor(x, dt, device=d), af.tensor(y, dt, device=d)
        for name in program:
            t = _UNARY[name][0](t) if name in _UNARY else _BINARY[name][0](t, u)
        equal((await read(t))[0], np.asarray(want, dtype=dt.np), (d, program))


async def test_python_ints_past_int32_give_int64_where_the_adapter_holds_it(devices):
    for d in devices:
        if af.int64 not in d.backend.dtypes:
            continue
        big = af.tensor([1, 2**40, -(2**35)], device=d)
        assert big.dtype is af.int64 and af.asarray(2**31, device=d).dtype is af.int64
        assert af.tensor([1, 2**31 - 1], device=d).dtype is af.int32
        assert (await read(big // 2**31))[0].tolist() == [0, 512, -16]


async def test_python_ints_past_int64_keep_every_bit_as_uint64(devices):
    big = 2**63 + 1  # numpy makes float64 of [big, 0]: no common integer type
    for d in devices:
        if af.uint64 not in d.backend.dtypes:
            continue
        x = af.tensor([[big, 0], [2**64 - 1, 7]], dtype=af.uint64, device=d)
        assert (await read(x))[0].tolist() == [[big, 0], [2**64 - 1, 7]]
        with pytest.raises(af.DataError, match="uint64"):
            af.tensor([big, -1], dtype=af.uint64, device=d)
