"""The primitive registry: one entry per element-wise primitive and per reduction.

An entry holds everything every stage needs about it — arity and dtype rule (front end),
its numpy function (the numpy interpreter, the oracle) and its WGSL rule (the renderer) —
so adding a primitive, built-in or custom, is adding one entry. WGSL rules map argument
expressions and a :class:`Ty` (the register type, scalar or ``vec4``) to an expression.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .dtype import DType

__all__ = ["Ty", "Primitive", "PRIMITIVES", "Reduction", "REDUCTIONS", "register",
           "WGSL_TYPE", "STORAGE_TYPE", "isnan", "convert", "HELPERS", "HELPERS_WIDE", "HELPERS_F64",
           "WIDE"]

# int16/uint16 live in i32/u32 lanes (WGSL has no 16-bit integers): sign- or
# zero-extended in storage and registers, wrapped to 16 bits after every op (convert)
WGSL_TYPE = {DType.float16: "f16", DType.float32: "f32", DType.float64: "f64",
             DType.int64: "i64", DType.int32: "i32", DType.int16: "i32",
             DType.uint64: "u64", DType.uint32: "u32", DType.uint16: "u32",
             DType.bool: "bool"}
STORAGE_TYPE = WGSL_TYPE | {DType.bool: "u32"}  # WGSL cannot store bool: a u32 per element


@dataclass(frozen=True, slots=True)
class Ty:
    """A register type: ``dtype`` as a scalar or as a 4-lane vector. ``folds``: the
    adapter's compiler folds ``x - x`` to 0 even for inf and NaN (lavapipe does), so
    float add/sub keep IEEE special values by bits it cannot fold."""

    dtype: DType
    vec4: bool
    folds: bool = True

    @property
    def t(self) -> str:
        w = WGSL_TYPE[self.dtype]
        return f"vec4<{w}>" if self.vec4 else w

    def const(self, literal: str) -> str:
        return f"{self.t}({literal})"

    def of(self, dtype: DType) -> Ty:
        return Ty(dtype, self.vec4, self.folds)


Rule = Callable[[list[str], Ty], str]


@dataclass(frozen=True, slots=True)
class Primitive:
    """An element-wise primitive.

    ``rule`` is the dtype rule: ``numeric`` (any non-bool dtype, result in the common
    dtype), ``float`` (computed in float32), ``compare`` (common dtype in, bool out),
    ``logical`` (bool in, bool out), ``predicate`` (any non-bool in, bool out), ``where``
    (bool condition, common dtype of the rest), ``cast`` (dtype given by the op),
    ``integer`` (int32/uint32 only) and ``bitwise`` (integers or bool), both in the
    common dtype.
    ``helpers`` names WGSL functions (in :data:`HELPERS`) the rule calls.
    """

    name: str
    arity: int
    rule: str
    title: str
    numpy: Callable[..., np.ndarray]
    wgsl: Rule
    symbol: str | None = None
    helpers: tuple[str, ...] = ()

    @property
    def what(self) -> str:
        """How error messages name it: ``add (+)``."""
        return f"{self.name} ({self.symbol})" if self.symbol else self.name


PRIMITIVES: dict[str, Primitive] = {}
# The primitives that run in float64 and int64: those written with WGSL operators, the
# builtins that take 64-bit types, and the math functions ``mathlib64`` writes out in
# float64 (WGSL's exp, log, pow and trigonometric builtins take 16/32-bit floats only).
WIDE = frozenset((
    "add", "sub", "mul", "div", "reciprocal", "sqrt", "rsqrt", "minimum", "maximum", "neg",
    "abs", "square", "relu", "sign", "floor", "ceil", "round", "trunc", "positive",
    "signbit", "isnan", "isinf", "isfinite", "eq", "ne", "lt", "le", "gt", "ge", "where",
    "cast", "copy", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert",
    "bitwise_left_shift", "bitwise_right_shift", "floor_divide", "remainder", "pow",
    "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
    "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "hypot", "logaddexp",
    "copysign", "nextafter"))


def register(p: Primitive) -> Primitive:
    if p.name in PRIMITIVES or p.name in REDUCTIONS:
        raise ValueError(f"a primitive named {p.name!r} exists already; pick another name")
    PRIMITIVES[p.name] = p
    return p


# -- WGSL building blocks --------------------------------------------------------------
def convert(expr: str, src: DType, ty: Ty) -> str:
    """``expr`` (of ``src``) as ``ty``. A 32-bit (or 16-bit) integer becomes a 64-bit one
    by an explicit sign or zero extension: naga (wgpu 0.32) sign-extends ``i64(u32)``,
    and on lavapipe a plain ``i64(x)`` of a negative i32 compares as non-negative.
    int16/uint16 results wrap: the low 16 bits of the 32-bit lane, sign- or
    zero-extended."""
    dst = ty.dtype
    if dst.itemsize == 8 and dst.is_int and src.lane in (DType.int32, DType.uint32):
        wide = (f"((i64({expr}) << 32u) >> 32u)" if src.lane is DType.int32
                else f"(i64({expr}) & 0xffffffffli)")
        return wide if dst is DType.int64 else f"bitcast<u64>({wide})"
    lane = expr if WGSL_TYPE[src] == WGSL_TYPE[dst] else f"{ty.t}({expr})"
    if dst is DType.int16:
        sixteen = ty.of(DType.uint32).const("16u") if ty.vec4 else "16u"
        return f"(({lane} << {sixteen}) >> {sixteen})"
    if dst is DType.uint16:
        return f"({lane} & {ty.const('0xffffu')})"
    return lane


_ABS64 = "0x7fffffffffffffffli"
_INF64 = "0x7ff0000000000000li"


def isnan(expr: str, vec4: bool, dtype: DType = DType.float32) -> str:
    """NaN test by bits: lavapipe compiles float ``!=`` as an ordered compare. float64
    (never in ``vec4`` kernels) is tested through its int64 bits."""
    if dtype is DType.float64:
        return f"((bitcast<i64>({expr}) & {_ABS64}) > {_INF64})"
    if vec4:
        return (f"((bitcast<vec4<u32>>({expr}) & vec4<u32>(0x7fffffffu)) > "
                f"vec4<u32>(0x7f800000u))")
    return f"((bitcast<u32>({expr}) & 0x7fffffffu) > 0x7f800000u)"


def _isinf(expr: str, vec4: bool, dtype: DType) -> str:
    if dtype is DType.float64:
        return f"((bitcast<i64>({expr}) & {_ABS64}) == {_INF64})"
    if vec4:
        return (f"((bitcast<vec4<u32>>({expr}) & vec4<u32>(0x7fffffffu)) == "
                f"vec4<u32>(0x7f800000u))")
    return f"((bitcast<u32>({expr}) & 0x7fffffffu) == 0x7f800000u)"


def _by_kind(fl: Rule, it: Rule, ut: Rule | None = None) -> Rule:
    def rule(a: list[str], ty: Ty) -> str:
        if ty.dtype.is_float:
            return fl(a, ty)
        if ty.dtype.is_unsigned and ut is not None:
            return ut(a, ty)
        return it(a, ty)
    return rule


def _fn(name: str) -> Rule:
    """A helper function per dtype and width: ``name_f32``, ``name_i32_4`` ..."""
    def rule(a: list[str], ty: Ty) -> str:
        suffix = WGSL_TYPE[ty.dtype] + ("_4" if ty.vec4 else "")
        return f"{name}_{suffix}({', '.join(a)})"
    return rule


def _nan_select(fn: str) -> Rule:
    # WGSL leaves min/max of NaN unspecified; numpy propagates NaN.
    return _by_kind(
        lambda a, ty: f"select({fn}({a[0]}, {a[1]}), {a[0]} + {a[1]}, "
                      f"{isnan(a[0], ty.vec4, ty.dtype)} | {isnan(a[1], ty.vec4, ty.dtype)})",
        lambda a, ty: f"{fn}({a[0]}, {a[1]})")


def _cmp(sym: str) -> Rule:
    def rule(a: list[str], ty: Ty) -> str:
        if ty.dtype is DType.bool and sym not in ("==", "!="):  # WGSL orders no bools
            u = ty.of(DType.uint32).t
            return f"({u}({a[0]}) {sym} {u}({a[1]}))"
        if ty.dtype.is_float and sym == "!=":  # unordered: true when either is NaN
            return f"(!({a[0]} == {a[1]}))"
        return f"({a[0]} {sym} {a[1]})"
    return rule


def _ieee(op: str, flip: str) -> Rule:
    """Float add/sub that keep IEEE special values: lavapipe folds ``x - x`` (and, fused,
    ``x + (-x)``) to 0 even for inf and NaN. The result is NaN, by bits the compiler
    cannot fold, when an operand is NaN or both are infinities that cancel."""
    def rule(a: list[str], ty: Ty) -> str:
        expr = f"({a[0]} {op} {a[1]})"
        if not ty.folds:  # this compiler keeps inf - inf and NaN - NaN as NaN
            return expr
        if ty.dtype is DType.float64:
            return _ieee64(expr, a, flip)
        if ty.dtype is not DType.float32:
            return expr
        u = "vec4<u32>" if ty.vec4 else "u32"
        bits = [f"bitcast<{u}>({x})" for x in a]
        inf = f"(({bits[0]} & {u}(0x7fffffffu)) == {u}(0x7f800000u))"
        cancel = f"({inf} & ({bits[0]} == ({bits[1]} ^ {u}({flip}))))"
        nan = f"{ty.t}(bitcast<f32>(0x7fc00000u))"
        return (f"select({expr}, {nan}, {isnan(a[0], ty.vec4)} | {isnan(a[1], ty.vec4)} | "
                f"{cancel})")
    return rule


def _ieee64(expr: str, a: list[str], flip: str) -> str:
    """:func:`_ieee` for float64, on int64 bits."""
    bits = [f"bitcast<i64>({x})" for x in a]
    sign = "(-9223372036854775807li - 1li)" if flip != "0u" else "0li"
    cancel = (f"((({bits[0]} & {_ABS64}) == {_INF64}) & "
              f"({bits[0]} == ({bits[1]} ^ {sign})))")
    nan = "bitcast<f64>(0x7ff8000000000000li)"
    return (f"select({expr}, {nan}, {isnan(a[0], False, DType.float64)} | "
            f"{isnan(a[1], False, DType.float64)} | {cancel})")


def _same(fl: Rule) -> Rule:
    """A float function that leaves integers as they are (floor, ceil, round)."""
    return _by_kind(fl, lambda a, ty: a[0])


def _unary(fn: str) -> Rule:
    return lambda a, ty: f"{fn}({a[0]})"


# Helper functions, emitted once per kernel that uses them. Each is written for scalars;
# ``_4`` variants apply it lane by lane.
_SCALAR_HELPERS = {
    "af_pow": ("""fn af_pow_f32(a: f32, b: f32) -> f32 {
  if (b == 0.0 || a == 1.0) { return 1.0; }
  if (b == 1.0) { return a; }  // exact, as C's pow
  let inf = bitcast<f32>(0x7f800000u);
  let abits = bitcast<u32>(a) & 0x7fffffffu;
  let bbits = bitcast<u32>(b) & 0x7fffffffu;
  if (abits > 0x7f800000u || bbits > 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
  let neg = (bitcast<u32>(a) & 0x80000000u) != 0u;
  let odd = bbits < 0x4b800000u && b == floor(b) && fract(b * 0.5) == 0.5;
  if (abits == 0u || abits == 0x7f800000u) {
    let mag = select(0.0, inf, (abits == 0u) == (b < 0.0));
    return select(mag, -mag, neg && odd);
  }
  if (bbits == 0x7f800000u) {
    if (abits == 0x3f800000u) { return 1.0; }
    return select(0.0, inf, (abits > 0x3f800000u) == (b > 0.0));
  }
  let r = af_powabs_f32(abs(a), b);
  if (!neg) { return r; }
  if (b != floor(b)) { return bitcast<f32>(0x7fc00000u); }
  return select(r, -r, odd);
}
fn af_pow2i_f32(k: i32) -> f32 { return bitcast<f32>(u32(k + 127) << 23u); }
// x^y for finite x > 0, as 2^n exp2(f) with n + f = y log2 x: x = m 2^e (m near 1), y e
// split exactly (y's top 12 bits times e's 8), so no intermediate overflows (pow's
// builtin exp2(y log2 x) gives inf for max**1: log2 rounds to 128).
fn af_powabs_f32(x: f32, y: f32) -> f32 {
  var bits = bitcast<u32>(x);
  var e = i32(bits >> 23u) - 127;
  if (e == -127) { bits = bitcast<u32>(x * 8388608.0); e = i32(bits >> 23u) - 150; }
  var m = bitcast<f32>((bits & 0x7fffffu) | 0x3f800000u);
  if (m > 1.4142135) { m = m * 0.5; e = e + 1; }
  let yh = bitcast<f32>(bitcast<u32>(y) & 0xfffff000u);
  let th = yh * f32(e);  // |y log2 m| <= |y| / 2: past 1024, y e decides the result
  if (abs(th) > 1024.0) { return select(0.0, bitcast<f32>(0x7f800000u), th > 0.0); }
  let n = round(th);
  // log2 m = 2 atanh(s) / ln 2, s = (m - 1) / (m + 1) in [-0.172, 0.172] (the builtin
  // log2 is off by up to 2^-22 absolute near 1, a large relative error there)
  let s = (m - 1.0) / (m + 1.0);
  let s2 = s * s;
  let l = s * (2.8853900 + s2 * (0.96179669 + s2 * (0.57707801 + s2 * (0.41219858
    + s2 * (0.32059890 + s2 * 0.26230819)))));
  let f = (th - n) + (y - yh) * f32(e) + y * l;
  let k = clamp(n + round(f), -300.0, 300.0);
  let h = i32(k * 0.5);
  let r = exp2(f - round(f)) * af_pow2i_f32(clamp(h, -126, 127));
  return r * af_pow2i_f32(clamp(i32(k) - h, -126, 127));
}
fn af_pow_u32(a: u32, b: u32) -> u32 {
  var r = 1u;
  var x = a;
  var e = b;
  loop {
    if (e == 0u) { break; }
    if ((e & 1u) == 1u) { r = r * x; }
    x = x * x;
    e = e >> 1u;
  }
  return r;
}
fn af_pow_i32(a: i32, b: i32) -> i32 {
  if (b < 0) {
    if (a == 1) { return 1; }
    if (a == -1) { return select(-1, 1, (b & 1) == 0); }
    return 0;
  }
  return bitcast<i32>(af_pow_u32(bitcast<u32>(a), u32(b)));
}
""", ("f32", "i32", "u32"), 2),
    "af_floordiv": ("""fn af_floordiv_f32(a: f32, b: f32) -> f32 {
  let xa = bitcast<u32>(a) & 0x7fffffffu;
  let xb = bitcast<u32>(b) & 0x7fffffffu;
  if ((xa == 0x7f800000u && xb < 0x7f800000u && xb != 0u) || (xa < 0x7f800000u && xb == 0x7f800000u)) {
    return a / b;  // the standard's infinite cases: +-inf, or a zero of the quotient's sign
  }
  return af_divmod_f32(a, b).x;
}
fn af_floordiv_i32(a: i32, b: i32) -> i32 {
  if (b == 0) { return 0; }
  let q = a / b;
  let r = a - q * b;  // not %: NVIDIA's driver gave wrong signs for % by negatives
  return select(q, q - 1, r != 0 && ((r < 0) != (b < 0)));
}
fn af_floordiv_u32(a: u32, b: u32) -> u32 { return select(a / b, 0u, b == 0u); }
""", ("f32", "i32", "u32"), 2),
    "af_rem": ("""fn af_rem_f32(a: f32, b: f32) -> f32 { return af_divmod_f32(a, b).y; }
fn af_rem_i32(a: i32, b: i32) -> i32 {
  if (b == 0) { return 0; }
  let r = a - (a / b) * b;
  return select(r, r + b, r != 0 && ((r < 0) != (b < 0)));
}
fn af_rem_u32(a: u32, b: u32) -> u32 { return select(a % b, 0u, b == 0u); }
""", ("f32", "i32", "u32"), 2),
    "af_erf": ("""fn af_erf_f32(x: f32) -> f32 {
  let z = abs(x);
  let t = 1.0 / (1.0 + 0.5 * z);
  let p = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
    + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
    + t * (-0.82215223 + t * 0.17087277))))))));
  let r = 1.0 - t * exp(p);
  return select(r, -r, x < 0.0);
}
""", ("f32",), 1),
}


def _lanes(name: str, t: str, arity: int) -> str:
    params = ", ".join(f"{p}: vec4<{t}>" for p in "ab"[:arity])
    lanes = ", ".join(f"{name}_{t}({', '.join(f'{p}.{c}' for p in 'ab'[:arity])})"
                      for c in "xyzw")
    return f"fn {name}_{t}_4({params}) -> vec4<{t}> {{ return vec4<{t}>({lanes}); }}\n"


HELPERS: dict[str, str] = {
    name: text + "".join(_lanes(name, t, arity) for t in types)
    for name, (text, types, arity) in _SCALAR_HELPERS.items()
}


def _divmod(t: str, u: str, s: str, mbits: int, step: int, lead: str) -> str:
    """numpy's float floor_divide and remainder (``npy_divmod``) for float type ``t``
    (its bits ``u``, their literal suffix ``s``; ``mbits`` mantissa bits): an exact
    ``fmod`` on the integer mantissas (``step`` bits shifted in at a time, each step one
    integer ``%``), then the quotient ``(a - fmod) / b`` snapped to an integer and the
    remainder given the divisor's sign, as numpy's C code does."""
    one, sign = 1 << mbits, 1 << (mbits + 11 if t == "f64" else mbits + 8)
    inf = (sign - 1) ^ (one - 1)
    return f"""fn af_fmod_{t}(a: {t}, b: {t}) -> {t} {{
  let ua = bitcast<{u}>(a);
  let sa = ua & {sign:#x}{s};
  let xa = ua & {sign - 1:#x}{s};
  let xb = bitcast<{u}>(b) & {sign - 1:#x}{s};
  if (xa >= {inf:#x}{s} || xb > {inf:#x}{s} || xb == 0{s}) {{ return bitcast<{t}>({inf | one >> 1:#x}{s}); }}
  if (xa < xb) {{ return a; }}
  var ea = xa >> {mbits}u;
  var eb = xb >> {mbits}u;
  var ma = xa & {one - 1:#x}{s};
  var mb = xb & {one - 1:#x}{s};
  if (ea == 0{s}) {{ ea = 1{s}; }} else {{ ma = ma | {one:#x}{s}; }}
  if (eb == 0{s}) {{ eb = 1{s}; }} else {{ mb = mb | {one:#x}{s}; }}
  var r = ma % mb;
  var k = ea - eb;
  loop {{
    if (k == 0{s} || r == 0{s}) {{ break; }}
    let n = min(k, {step}{s});
    r = (r << u32(n)) % mb;
    k = k - n;
  }}
  if (r == 0{s}) {{ return bitcast<{t}>(sa); }}
  let lead = {lead};
  if (eb + {u}(lead) > {mbits}{s}) {{
    let e = eb + {u}(lead) - {mbits}{s};
    return bitcast<{t}>(sa | (e << {mbits}u) | ((r << ({mbits}u - lead)) & {one - 1:#x}{s}));
  }}
  return bitcast<{t}>(sa | (r << u32(eb - 1{s})));
}}
fn af_copysign0_{t}(v: {t}) -> {t} {{ return bitcast<{t}>(bitcast<{u}>(v) & {sign:#x}{s}); }}
fn af_divmod_{t}(a: {t}, b: {t}) -> vec2<{t}> {{
  var m = af_fmod_{t}(a, b);
  if (b == {t}(0.0)) {{ return vec2<{t}>(a / b, m); }}
  var d = (a - m) / b;
  if (m == {t}(0.0)) {{  // not !=: lavapipe compiles float != as an ordered compare
    m = af_copysign0_{t}(b);
  }} else if ((b < {t}(0.0)) != (m < {t}(0.0))) {{
    m = m + b;
    d = d - {t}(1.0);
  }}
  if (d == {t}(0.0)) {{ return vec2<{t}>(af_copysign0_{t}(a / b), m); }}
  var q = floor(d);
  if (d - q > {t}(0.5)) {{ q = q + {t}(1.0); }}
  return vec2<{t}>(q, m);
}}
"""


HELPERS["af_divmod"] = _divmod("f32", "u32", "u", 23, 7, "firstLeadingBit(r)")
# float64/int64 versions (scalar: 64-bit kernels never run vec4), emitted only into
# kernels that compute in them: a shader that names f64 needs the adapter's feature.
HELPERS_WIDE: dict[str, str] = {
    "af_pow": """fn af_pow_i64(a: i64, b: i64) -> i64 {
  if (b < 0li) {
    if (a == 1li) { return 1li; }
    if (a == -1li) { return select(-1li, 1li, (b & 1li) == 0li); }
    return 0li;
  }
  return bitcast<i64>(af_pow_u64(bitcast<u64>(a), bitcast<u64>(b)));
}
fn af_pow_u64(a: u64, b: u64) -> u64 {
  var r = 1lu;
  var x = a;
  var e = b;
  loop {
    if (e == 0lu) { break; }
    if ((e & 1lu) == 1lu) { r = r * x; }
    x = x * x;
    e = e >> 1u;
  }
  return r;
}
""",
    "af_floordiv": """fn af_floordiv_i64(a: i64, b: i64) -> i64 {
  if (b == 0li) { return 0li; }
  let q = a / b;
  let r = a - q * b;
  return select(q, q - 1li, r != 0li && ((r < 0li) != (b < 0li)));
}
fn af_floordiv_u64(a: u64, b: u64) -> u64 { return select(a / b, 0lu, b == 0lu); }
""",
    "af_rem": """fn af_rem_i64(a: i64, b: i64) -> i64 {
  if (b == 0li) { return 0li; }
  let r = a - (a / b) * b;
  return select(r, r + b, r != 0li && ((r < 0li) != (b < 0li)));
}
fn af_rem_u64(a: u64, b: u64) -> u64 { return select(a % b, 0lu, b == 0lu); }
""",
}


# float64-only helpers (``mathlib64``'s math), emitted only into kernels that compute in
# float64: an int64 kernel must not name f64, which an adapter may lack.
HELPERS_F64: dict[str, str] = {"af_divmod": _divmod(
    "f64", "u64", "lu", 52, 10,
    "select(firstLeadingBit(u32(r)), 32u + firstLeadingBit(u32(r >> 32u)), (r >> 32u) != 0lu)"
) + """fn af_floordiv_f64(a: f64, b: f64) -> f64 {
  let xa = bitcast<u64>(a) & 0x7ffffffffffffffflu;
  let xb = bitcast<u64>(b) & 0x7ffffffffffffffflu;
  let inf = 0x7ff0000000000000lu;
  if ((xa == inf && xb < inf && xb != 0lu) || (xa < inf && xb == inf)) { return a / b; }
  return af_divmod_f64(a, b).x;
}
fn af_rem_f64(a: f64, b: f64) -> f64 { return af_divmod_f64(a, b).y; }
"""}


def _np_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's power for floats; for integers exact wrapping powers by squaring, with a
    negative exponent giving 0 (or +-1 for a base of +-1), as the WGSL kernels do."""
    if a.dtype.kind == "f":
        return np.asarray(np.power(a, b))
    a, b = (np.array(v) for v in np.broadcast_arrays(a, b))
    r = np.ones_like(a)
    x = a.copy()
    e = np.where(b < 0, 0, b).astype(np.int64)
    while (e > 0).any():
        r = np.where(e & 1, r * x, r)
        x = x * x
        e >>= 1
    if a.dtype.kind == "i":
        neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        r = np.where(b < 0, neg, r)
    return r.astype(a.dtype)


def _np_int_zero(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Integer division by zero gives 0 (as the kernels do; numpy warns and gives 0)."""
    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind == "f":
            return fn(a, b)
        safe = np.where(b == 0, 1, b).astype(a.dtype)
        return np.where(b == 0, 0, fn(a, safe)).astype(a.dtype)
    return run


def _np_floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's floor_divide, but the standard's answers where one operand is infinite and
    the other finite (a non-zero divisor): ``inf // 2`` is inf and ``1 // -inf`` is -0
    (numpy's divmod gives NaN and -1), the quotient ``a / b`` itself."""
    q = _np_int_zero(np.floor_divide)(a, b)
    if a.dtype.kind != "f":
        return q
    with np.errstate(all="ignore"):
        edge = (np.isinf(a) & np.isfinite(b) & (b != 0)) | (np.isfinite(a) & np.isinf(b))
        return np.asarray(np.where(edge, a / b, q))


def _np_keep_int(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda a: fn(a) if a.dtype.kind == "f" else a


def _np_pred(fn: Callable[..., np.ndarray], default: bool) -> Callable[..., np.ndarray]:
    return lambda a: fn(a) if a.dtype.kind == "f" else np.full(a.shape, default)


_np_erf = np.vectorize(math.erf, otypes=[np.float64])

_Z = "0"  # literal zero, typed by Ty.const

for _p in [
    Primitive("add", 2, "numeric", "Add", np.add, _ieee("+", "0x80000000u"), "+"),
    Primitive("sub", 2, "numeric", "Sub", np.subtract, _ieee("-", "0u"), "-"),
    Primitive("mul", 2, "numeric", "Mul", np.multiply, lambda a, ty: f"({a[0]} * {a[1]})", "*"),
    # float64 pow calls mathlib64's exp and log cores (helpers that exist in float64 only)
    Primitive("pow", 2, "numeric", "Powf", _np_pow, _fn("af_pow"), "**",
              ("af_pow", "af_exp_dd", "af_log_dd", "af_dd")),
    Primitive("floor_divide", 2, "numeric", "FloorDiv", _np_floor_divide,
              _fn("af_floordiv"), "//", ("af_floordiv", "af_divmod")),
    Primitive("remainder", 2, "numeric", "Remainder", _np_int_zero(np.remainder),
              _fn("af_rem"), "%", ("af_rem", "af_divmod")),
    Primitive("minimum", 2, "numeric", "Min", np.minimum, _nan_select("min")),
    Primitive("maximum", 2, "numeric", "Max", np.maximum, _nan_select("max")),
    Primitive("neg", 1, "numeric", "Neg",
              lambda a: np.negative(a) if a.dtype.kind != "u" else (a.dtype.type(0) - a),
              _by_kind(lambda a, ty: f"(-{a[0]})", lambda a, ty: f"(-{a[0]})",
                       lambda a, ty: f"({ty.const('0u')} - {a[0]})"), "-x"),
    Primitive("abs", 1, "numeric", "Abs", lambda a: a if a.dtype.kind == "u" else np.abs(a),
              _by_kind(_unary("abs"), _unary("abs"), lambda a, ty: a[0])),
    Primitive("square", 1, "numeric", "Square", np.square,
              lambda a, ty: f"({a[0]} * {a[0]})"),
    Primitive("relu", 1, "numeric", "Relu", lambda a: np.maximum(a, a.dtype.type(0)),
              lambda a, ty: f"select({a[0]}, {ty.const(_Z)}, {a[0]} < {ty.const(_Z)})"),
    Primitive("sign", 1, "numeric", "Sign", np.sign,
              _by_kind(lambda a, ty: f"select(sign({a[0]}), {a[0]}, "
                                     f"{isnan(a[0], ty.vec4, ty.dtype)})",
                       _unary("sign"),
                       lambda a, ty: f"select({ty.const('0u')}, {ty.const('1u')}, "
                                     f"{a[0]} > {ty.const('0u')})")),
    Primitive("floor", 1, "numeric", "Floor", _np_keep_int(np.floor), _same(_unary("floor"))),
    Primitive("ceil", 1, "numeric", "Ceil", _np_keep_int(np.ceil), _same(_unary("ceil"))),
    Primitive("round", 1, "numeric", "Round", _np_keep_int(np.round), _same(_unary("round"))),
    Primitive("sqrt", 1, "float", "Sqrt", np.sqrt, _unary("sqrt")),
    Primitive("rsqrt", 1, "float", "Rsqrt", lambda a: np.float32(1) / np.sqrt(a),
              lambda a, ty: f"({ty.const('1.0')} / sqrt({a[0]}))"),
    Primitive("sigmoid", 1, "float", "Sigmoid",
              lambda a: np.float32(1) / (np.float32(1) + np.exp(-a)),
              lambda a, ty: f"({ty.const('1.0')} / ({ty.const('1.0')} + exp(-{a[0]})))"),
    Primitive("erf", 1, "float", "Erf", lambda a: _np_erf(a).astype(a.dtype), _fn("af_erf"),
              None, ("af_erf",)),
    Primitive("isnan", 1, "predicate", "IsNan", _np_pred(np.isnan, False),
              _by_kind(lambda a, ty: isnan(a[0], ty.vec4, ty.dtype),
                       lambda a, ty: f"vec4<bool>(false)" if ty.vec4 else "false")),
    Primitive("isinf", 1, "predicate", "IsInf", _np_pred(np.isinf, False),
              _by_kind(lambda a, ty: _isinf(a[0], ty.vec4, ty.dtype),
                       lambda a, ty: f"vec4<bool>(false)" if ty.vec4 else "false")),
    Primitive("isfinite", 1, "predicate", "IsFinite", _np_pred(np.isfinite, True),
              _by_kind(lambda a, ty: f"(!({isnan(a[0], ty.vec4, ty.dtype)} | "
                                     f"{_isinf(a[0], ty.vec4, ty.dtype)}))",
                       lambda a, ty: f"vec4<bool>(true)" if ty.vec4 else "true")),
    Primitive("eq", 2, "compare", "Equal", np.equal, _cmp("=="), "=="),
    Primitive("ne", 2, "compare", "NotEqual", np.not_equal, _cmp("!="), "!="),
    Primitive("lt", 2, "compare", "Lower", np.less, _cmp("<"), "<"),
    Primitive("le", 2, "compare", "LowerEqual", np.less_equal, _cmp("<="), "<="),
    Primitive("gt", 2, "compare", "Greater", np.greater, _cmp(">"), ">"),
    Primitive("ge", 2, "compare", "GreaterEqual", np.greater_equal, _cmp(">="), ">="),
    Primitive("logical_and", 2, "logical", "And", np.logical_and,
              lambda a, ty: f"({a[0]} & {a[1]})", "&"),
    Primitive("logical_or", 2, "logical", "Or", np.logical_or,
              lambda a, ty: f"({a[0]} | {a[1]})", "|"),
    Primitive("logical_not", 1, "logical", "Not", np.logical_not,
              lambda a, ty: f"(!{a[0]})", "~"),
    Primitive("where", 3, "where", "Where", lambda c, a, b: np.asarray(np.where(c, a, b)),
              lambda a, ty: f"select({a[2]}, {a[1]}, {a[0]})"),
    Primitive("cast", 1, "cast", "Cast", lambda a: a, lambda a, ty: f"{ty.t}({a[0]})"),
    Primitive("copy", 1, "same", "Copy", lambda a: a, lambda a, ty: a[0]),
]:
    PRIMITIVES[_p.name] = _p


@dataclass(frozen=True, slots=True)
class Reduction:
    """A reduction: how to fold (WGSL ``combine`` of two accumulators), from what
    ``identity`` (per accumulator dtype), and its numpy twin over a tuple of axes with
    keepdims. ``arg`` reductions fold (value, index) pairs and give the index."""

    name: str
    title: str
    numpy: Callable[[np.ndarray, tuple[int, ...]], np.ndarray]
    combine: Callable[[str, str, DType], str] | None
    identity: Callable[[DType], str] | None
    arg: bool = False

    def acc_dtype(self, src: DType) -> DType:
        """bool folds as uint32 words, float16 in float32 (rounded once at the end),
        int16/uint16 in their 32-bit lanes."""
        if src is DType.float16:
            return DType.float32
        return DType.uint32 if src is DType.bool else src.lane

    def out_dtype(self, src: DType) -> DType:
        """Indices are int32; sums and products of int16/uint16 are int32/uint32 (the
        Array API's default integer widths here), other results keep ``src``."""
        if self.arg:
            return DType.int32
        return src.lane if self.name in ("sum", "prod") else src


def _lowest(dt: DType) -> str:
    return {DType.float32: "bitcast<f32>(0xff800000u)", DType.int32: "i32(-2147483647 - 1)",
            DType.uint32: "0u", DType.float64: "bitcast<f64>(-4503599627370496li)",
            DType.int64: "(-9223372036854775807li - 1li)", DType.uint64: "0lu"}[dt]


def _highest(dt: DType) -> str:
    return {DType.float32: "bitcast<f32>(0x7f800000u)", DType.int32: "2147483647",
            DType.uint32: "0xffffffffu", DType.float64: f"bitcast<f64>({_INF64})",
            DType.int64: "9223372036854775807li", DType.uint64: "0xfffffffffffffffflu"}[dt]


def _fold_minmax(fn: str) -> Callable[[str, str, DType], str]:
    def combine(a: str, b: str, dt: DType) -> str:
        if dt.is_float:
            return (f"select({fn}({a}, {b}), {a} + {b}, {isnan(a, False, dt)} | "
                    f"{isnan(b, False, dt)})")
        return f"{fn}({a}, {b})"
    return combine


def _np_arg(fn: Callable[..., np.ndarray]) -> Callable[[np.ndarray, tuple[int, ...]],
                                                        np.ndarray]:
    """argmax/argmin over several axes: the flat index within the reduced axes."""
    def run(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        keep = [d for d in range(x.ndim) if d not in axes]
        moved = np.transpose(x, keep + list(axes))
        flat = moved.reshape(moved.shape[:len(keep)] + (-1,))
        r = fn(flat, axis=-1).astype(np.int32)
        shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
        return r.reshape(shape)
    return run


REDUCTIONS: dict[str, Reduction] = {r.name: r for r in [
    Reduction("sum", "Sum", lambda x, ax: np.sum(x, axis=ax, keepdims=True, dtype=x.dtype),
              lambda a, b, dt: f"({a} + {b})", lambda dt: f"{WGSL_TYPE[dt]}(0)"),
    Reduction("prod", "Prod", lambda x, ax: np.prod(x, axis=ax, keepdims=True, dtype=x.dtype),
              lambda a, b, dt: f"({a} * {b})", lambda dt: f"{WGSL_TYPE[dt]}(1)"),
    Reduction("max", "Max", lambda x, ax: np.max(x, axis=ax, keepdims=True),
              _fold_minmax("max"), _lowest),
    Reduction("min", "Min", lambda x, ax: np.min(x, axis=ax, keepdims=True),
              _fold_minmax("min"), _highest),
    Reduction("any", "Any", lambda x, ax: np.any(x, axis=ax, keepdims=True),
              lambda a, b, dt: f"max({a}, {b})", lambda dt: "0u"),
    Reduction("all", "All", lambda x, ax: np.all(x, axis=ax, keepdims=True),
              lambda a, b, dt: f"min({a}, {b})", lambda dt: "1u"),
    Reduction("argmax", "ArgMax", _np_arg(np.argmax), None, _lowest, arg=True),
    Reduction("argmin", "ArgMin", _np_arg(np.argmin), None, _highest, arg=True),
]}


from . import mathlib as _mathlib  # noqa: E402,F401 - registers the accurate math functions
