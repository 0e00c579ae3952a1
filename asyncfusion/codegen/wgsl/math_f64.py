"""Accurate float64 math in WGSL: the float64 versions of :mod:`.math_f32`'s functions.

WGSL's ``exp``, ``log``, ``pow`` and trigonometric builtins take 16/32-bit floats only, so
each function is written out on f64 arithmetic and int64 bits:

* ``exp``: x = k ln2 + r (ln2 in two parts, k ln2_hi exact), exp(r) by its Taylor series
  to r^13 on |r| <= ln2/2, scaled by 2^k from bits in two steps (overflow to inf,
  subnormal results rounded once). ``expm1`` the same with 2^k (expm1(r) + 1) - 1.
* ``log``: x = 2^e m, m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s), s = (m-1)/(m+1),
  in double-double (s's remainder recovered exactly, the s^3/3 term in double-double and
  the series to s^27 in double): about 2^-100 relative, so ``log``/``log2``/``log10`` round
  it once, and ``pow`` computes exp(y log x) with y log x in double-double.
* ``sin``/``cos``/``tan``: Cody-Waite reduction by pi/2 in three parts (33 + 33 + 53 bits)
  for |x| <= 2^20 pi/2 when the remainder keeps >= 2^-39, else Payne-Hanek (2/pi to 1184
  bits, generated below; 32x32-bit products from :mod:`.math_f32`'s ``af_mul32``); the
  remainder as a double-double; Taylor polynomials to r^17/r^18 on |r| <= pi/4.
* The inverse and hyperbolic functions, ``hypot`` and ``logaddexp`` built on them.

Error-free transformations (two-sum, Dekker products with halves split on bits) are
written so that no constant takes part in them: lavapipe folds ``(1 + a) - 1`` to ``a``.
``tests/test_numerics_ulp64.py`` measures each function; the README lists the bounds.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["MATH_F64", "NEEDS_F64"]

_NAN = "bitcast<f64>(0x7ff8000000000000li)"
_INF = "bitcast<f64>(0x7ff0000000000000li)"
_ABS = "0x7fffffffffffffffli"
_INFB = "0x7ff0000000000000li"


def _c(v: float | Fraction) -> str:
    """A float64 literal (shortest round-trip digits)."""
    return f"{float(v)!r}lf"


def _horner(var: str, coefs: list[Fraction]) -> str:
    """c0 + var (c1 + var (c2 + ...)) with each coefficient rounded to float64."""
    text = _c(coefs[-1])
    for c in reversed(coefs[:-1]):
        text = f"({_c(c)} + {var} * {text})"
    return text


def _fact(n: int) -> Fraction:
    return Fraction(1, math.factorial(n))


# Taylor coefficients: (e^r - 1 - r) / r^2; (sin r - r) / r^3 and (cos r - 1 + r^2/2) / r^4
# in z = r^2; (atanh(s)/s - 1 - s^2/3) / s^4 in z = s^2; (atan t - t) / t^3 in z = t^2.
_EXP_Q = _horner("r", [_fact(n + 2) for n in range(12)])
_SIN_S = _horner("z", [(-1) ** n * _fact(2 * n + 1) for n in range(1, 10)])
_COS_C = _horner("z", [(-1) ** n * _fact(2 * n) for n in range(2, 10)])
_LOG_R = _horner("z", [Fraction(1, 2 * n + 1) for n in range(2, 14)])
_ATAN_T = _horner("z", [Fraction((-1) ** n, 2 * n + 1) for n in range(1, 24)])

_LN2HI = _c(0.6931471803691238)  # ln 2 to 32 bits: k * _LN2HI is exact for |k| < 2^21
_LN2LO = _c(1.9082149292705877e-10)
_LN2 = (_c(0.6931471805599453), _c(2.3190468138462996e-17))  # double-double
_IVLN2 = (_c(1.4426950408889634), _c(2.0355273740931033e-17))
_IVLN10 = (_c(0.4342944819032518), _c(1.098319650216765e-17))
_PIO2 = (_c(1.5707963267948966), _c(6.123233995736766e-17))
_PI = (_c(3.141592653589793), _c(1.2246467991473532e-16))
_THIRD = (_c(0.3333333333333333), _c(1.850371707708594e-17))


def _dd(pair: tuple[str, str]) -> str:
    return f"vec2<f64>({pair[0]}, {pair[1]})"


def _two_over_pi_words(n: int) -> list[int]:
    """The first ``n`` 32-bit words of the binary fraction of 2/pi (pi by Machin's formula
    in integers, 64 guard bits)."""
    bits = 32 * n + 64
    one = 1 << bits

    def arctan_inv(k: int) -> int:
        total, term, j, sign = 0, one // k, 1, 1
        while term:
            total += sign * (term // j)
            term //= k * k
            j += 2
            sign = -sign
        return total

    pi = 16 * arctan_inv(5) - 4 * arctan_inv(239)
    frac = (2 * one * one // pi) >> 64  # 2/pi * 2^(32 n), 2/pi < 1
    return [(frac >> (32 * (n - 1 - i))) & 0xffffffff for i in range(n)]


# Two zero words, then 2/pi: a 192-bit window at bit e + 62 serves exponents -53 ... 971.
_TABLE = [0, 0] + _two_over_pi_words(37)
_2OPI = "\n".join(f"    case {i}u: {{ return 0x{w:08x}u; }}" for i, w in enumerate(_TABLE[:-1]))

# name -> WGSL text (scalar f64 functions; 64-bit kernels never run vec4)
MATH_F64: dict[str, str] = {
    # Error-free transformations: a * b and a + b as (rounded, error); halves split on bits.
    # The sum's leading part drops its last bit: an exact (a + b) - a is what lavapipe folds
    # to b (giving an error of 0); a truncated sum is opaque to that algebra. ``af_cut`` also
    # keeps a small correction term from being reassociated into a big + small sum
    # (lavapipe adds x + (p + c) as (x + c) + p, losing c).
    "af_dd": f"""fn af_hi27_f64(a: f64) -> f64 {{ return bitcast<f64>(bitcast<i64>(a) & -134217728li); }}
fn af_prod_f64(a: f64, b: f64) -> vec2<f64> {{
  let p = a * b;
  let ah = af_hi27_f64(a);
  let al = a - ah;
  let bh = af_hi27_f64(b);
  let bl = b - bh;
  return vec2<f64>(p, (((ah * bh - p) + ah * bl) + al * bh) + al * bl);
}}
fn af_cut_f64(a: f64) -> f64 {{ return bitcast<f64>(bitcast<i64>(a) & -2li); }}
fn af_fast_f64(a: f64, b: f64) -> vec2<f64> {{
  let s = af_cut_f64(a + b);
  return vec2<f64>(s, (a - s) + b);
}}
fn af_sum_f64(a: f64, b: f64) -> vec2<f64> {{
  let big = abs(a) >= abs(b);
  return af_fast_f64(select(b, a, big), select(a, b, big));
}}
fn af_ddmul_f64(a: vec2<f64>, b: vec2<f64>) -> vec2<f64> {{
  let p = af_prod_f64(a.x, b.x);
  return af_fast_f64(p.x, p.y + (a.x * b.y + a.y * b.x));
}}
fn af_ddadd_f64(a: vec2<f64>, b: vec2<f64>) -> vec2<f64> {{
  let s = af_sum_f64(a.x, b.x);
  return af_fast_f64(s.x, s.y + (a.y + b.y));
}}
fn af_pow2_f64(k: i32) -> f64 {{ return bitcast<f64>(i64(k + 1023) << 52u); }}
fn af_isnan_f64(x: f64) -> bool {{ return (bitcast<i64>(x) & {_ABS}) > {_INFB}; }}
fn af_neg_f64(x: f64) -> bool {{ return bitcast<i64>(x) < 0li; }}
""",
    # exp(x + xl), |xl| <= ulp(x): the reduction takes xl in, so pow can pass y log x's tail.
    "af_exp_dd": f"""fn af_exp_dd_f64(x: f64, xl: f64) -> f64 {{
  if (af_isnan_f64(x)) {{ return x; }}
  if (x > 709.782712893384lf) {{ return {_INF}; }}
  if (x < -745.1332191019412lf) {{ return 0.0lf; }}
  let k = round(x * {_IVLN2[0]});
  let hi = x - k * {_LN2HI};
  let lo = k * {_LN2LO} - xl;
  let rr = af_sum_f64(hi, -lo);
  let r = rr.x;
  let one = af_fast_f64(1.0lf, r);
  let p = one.x + af_cut_f64(one.y + (rr.y + r * r * {_EXP_Q}));
  let ki = i32(k);
  let k1 = ki / 2;
  return p * af_pow2_f64(k1) * af_pow2_f64(ki - k1);
}}
""",
    "af_exp": f"""fn af_exp_f64(x: f64) -> f64 {{ return af_exp_dd_f64(x, 0.0lf); }}
fn af_exp_half_f64(a: f64) -> f64 {{
  let s = af_sum_f64(a, -{_LN2[0]});
  return af_exp_dd_f64(s.x, s.y - {_LN2[1]});
}}
""",
    "af_expm1": f"""fn af_expm1_f64(x: f64) -> f64 {{
  if (x == 0.0lf) {{ return x; }}
  if (!(x <= 709.0lf)) {{ return af_exp_f64(x); }}
  if (x < -38.0lf) {{ return -1.0lf; }}
  let k = round(x * {_IVLN2[0]});
  let hi = x - k * {_LN2HI};
  let lo = k * {_LN2LO};
  let rr = af_fast_f64(hi, -lo);
  let r = rr.x;
  let tail = r * r * {_EXP_Q} + rr.y * (1.0lf + r);
  if (k == 0.0lf) {{ return r + tail; }}
  let s = af_pow2_f64(i32(k));
  let a = af_sum_f64(s - 1.0lf, s * r);
  return a.x + af_cut_f64(a.y + s * tail);
}}
""",
    # log(1 + f) as a double-double for f in [sqrt(1/2) - 1, sqrt(2) - 1] (exact): 2 atanh(s)
    # with s = f / (2 + f) = sh + sl, sl from the exact residual f - 2 sh - sh f.
    "af_log_dd": f"""fn af_log1p_dd_f64(f: f64) -> vec2<f64> {{
  let d = 2.0lf + f;
  let sh = f / d;
  let p = af_prod_f64(sh, f);
  let sl = (((f - 2.0lf * sh) - p.x) - p.y) / d;
  let s2 = vec2<f64>(2.0lf * sh, 2.0lf * sl);
  let q = af_prod_f64(sh, sh);
  let zz = af_fast_f64(q.x, q.y + 2.0lf * sh * sl);
  let z = zz.x;
  let w = af_ddadd_f64(af_ddmul_f64(zz, {_dd(_THIRD)}), vec2<f64>(z * z * {_LOG_R}, 0.0lf));
  return af_ddadd_f64(s2, af_ddmul_f64(s2, w));
}}
fn af_log_dd_f64(x: f64) -> vec2<f64> {{
  var b = bitcast<i64>(x);
  var e = 0;
  if (b < 0x0010000000000000li) {{ b = bitcast<i64>(x * 18014398509481984.0lf); e = -54; }}
  e = e + i32(b >> 52u) - 1023;
  var m = bitcast<f64>((b & 0x000fffffffffffffli) | 0x3ff0000000000000li);
  if (m > 1.4142135623730951lf) {{ m = m * 0.5lf; e = e + 1; }}
  let fe = f64(e);
  return af_ddadd_f64(vec2<f64>(fe * {_LN2HI}, fe * {_LN2LO}), af_log1p_dd_f64(m - 1.0lf));
}}
fn af_log_ok_f64(x: f64) -> bool {{
  let b = bitcast<i64>(x);
  return b > 0li && b < {_INFB};
}}
fn af_log_edge_f64(x: f64) -> f64 {{
  let b = bitcast<i64>(x);
  if ((b & {_ABS}) == 0li) {{ return -{_INF}; }}
  return select({_NAN}, x, b == {_INFB});
}}
""",
    "af_log": """fn af_log_f64(x: f64) -> f64 {
  if (!af_log_ok_f64(x)) { return af_log_edge_f64(x); }
  let l = af_log_dd_f64(x);
  return l.x + l.y;
}
""",
    "af_log2": f"""fn af_log2_f64(x: f64) -> f64 {{
  if (!af_log_ok_f64(x)) {{ return af_log_edge_f64(x); }}
  let l = af_ddmul_f64(af_log_dd_f64(x), {_dd(_IVLN2)});
  return l.x + l.y;
}}
""",
    "af_log10": f"""fn af_log10_f64(x: f64) -> f64 {{
  if (!af_log_ok_f64(x)) {{ return af_log_edge_f64(x); }}
  let l = af_ddmul_f64(af_log_dd_f64(x), {_dd(_IVLN10)});
  return l.x + l.y;
}}
""",
    # Beyond log's own interval: 1 + x = 2^e (1 + f), f = (2^-e - 1) + x 2^-e as an exact
    # double-double (both terms exact; no constant in the two-sum).
    "af_log1p": f"""fn af_log1p_f64(x: f64) -> f64 {{
  if (x == 0.0lf) {{ return x; }}
  if (x >= -0.2928932188134524lf && x <= 0.41421356237309503lf) {{
    let l = af_log1p_dd_f64(x);
    return l.x + l.y;
  }}
  if (!(x > -1.0lf)) {{ return select({_NAN}, -{_INF}, x == -1.0lf); }}
  if (x > 9007199254740992.0lf) {{ return af_log_f64(x); }}
  let ub = bitcast<i64>(1.0lf + x);
  var e = i32(ub >> 52u) - 1023;
  if (bitcast<f64>((ub & 0x000fffffffffffffli) | 0x3ff0000000000000li) > 1.4142135623730951lf) {{
    e = e + 1;
  }}
  let sc = af_pow2_f64(-e);
  let f = af_sum_f64(sc - 1.0lf, x * sc);
  let l = af_log1p_dd_f64(f.x);
  let fe = f64(e);
  let t = af_ddadd_f64(vec2<f64>(fe * {_LN2HI}, fe * {_LN2LO}),
                       vec2<f64>(l.x, l.y + f.y / (1.0lf + f.x)));
  return t.x + t.y;
}}
""",
    # (r, rl, n mod 4) with |x| = r + rl + n pi/2, |r| <= pi/4 (about).
    "af_trig": f"""fn af_2opi64(i: u32) -> u32 {{
  switch i {{
{_2OPI}
    default: {{ return 0x{_TABLE[-1]:08x}u; }}
  }}
}}
fn af_2opi64_window(k: u32, sh: u32) -> u32 {{
  let hi = af_2opi64(k);
  return select((hi << sh) | (af_2opi64(k + 1u) >> (32u - sh)), hi, sh == 0u);
}}
fn af_w64(x: u32) -> i64 {{ return i64(x) & 0xffffffffli; }}
fn af_trig_reduce_f64(a: f64) -> vec3<f64> {{
  let b = bitcast<i64>(a);
  let mh = (u32(b >> 32u) & 0xfffffu) | 0x100000u;
  let ml = u32(b & 0xffffffffli);
  let q = u32(b >> 52u) - 1013u;
  let k = q >> 5u;
  let sh = q & 31u;
  var col: array<i64, 8>;
  for (var i = 0u; i < 6u; i = i + 1u) {{
    let g = af_2opi64_window(k + i, sh);
    let lo = af_mul32(ml, g);
    let hi = af_mul32(mh, g);
    col[5u - i] += af_w64(lo.y);
    col[6u - i] += af_w64(lo.x) + af_w64(hi.y);
    col[7u - i] += af_w64(hi.x);
  }}
  for (var i = 0u; i < 7u; i = i + 1u) {{
    col[i + 1u] += col[i] >> 32u;
    col[i] = col[i] & 0xffffffffli;
  }}
  var n = (col[5] >> 30u) & 3li;
  let m42 = 0x3ffffffffffli;
  var c2 = ((col[5] & 0x3fffffffli) << 12u) | (col[4] >> 20u);
  var c1 = ((col[4] & 0xfffffli) << 22u) | (col[3] >> 10u);
  var c0 = ((col[3] & 0x3ffli) << 32u) | col[2];
  let neg = (c2 >> 41u) == 1li;
  if (neg) {{
    let b0 = select(1li, 0li, c0 == 0li);
    let b1 = select(1li, 0li, c1 + b0 == 0li);
    c0 = (-c0) & m42;
    c1 = (-c1 - b0) & m42;
    c2 = (-c2 - b1) & m42;
    n = n + 1li;
  }}
  let s = af_fast_f64(f64(c2) * 2.2737367544323206e-13lf, f64(c1) * 5.169878828456423e-26lf);
  var r = af_ddmul_f64(vec2<f64>(s.x, s.y + f64(c0) * 1.1754943508222875e-38lf), {_dd(_PIO2)});
  if (neg) {{ r = -r; }}
  return vec3<f64>(r.x, r.y, f64(n & 3li));
}}
fn af_trig_arg_f64(x: f64) -> vec3<f64> {{
  let a = abs(x);
  if (a <= 0.7853981633974483lf) {{ return vec3<f64>(a, 0.0lf, 0.0lf); }}
  if (a <= 1647099.3291652855lf) {{
    let n = round(a * 0.6366197723675814lf);
    let u = af_sum_f64(a - n * 1.5707963267341256lf, -(n * 6.077100506303966e-11lf));
    let v = af_sum_f64(u.x, -(n * 2.0222662487959506e-21lf));
    let r = af_fast_f64(v.x, v.y + u.y);
    if (abs(r.x) >= 1.8189894035458565e-12lf) {{ return vec3<f64>(r.x, r.y, f64(i32(n) & 3)); }}
  }}
  return af_trig_reduce_f64(a);
}}
// sin and cos of r.x + r.y as (leading part, small correction)
fn af_sin_dd_f64(r: vec2<f64>) -> vec2<f64> {{
  let x = r.x;
  let z = x * x;
  return vec2<f64>(x, x * z * {_SIN_S} + r.y * (1.0lf - 0.5lf * z));
}}
fn af_cos_dd_f64(r: vec2<f64>) -> vec2<f64> {{
  let x = r.x;
  let z = x * x;
  if (z < 1.4901161193847656e-8lf) {{ return vec2<f64>(1.0lf, -(0.5lf * z + x * r.y)); }}
  let xh = af_hi27_f64(x);
  let xl = x - xh;
  let hz = 0.5lf * (xh * xh);
  let a = af_hi27_f64(hz);
  return vec2<f64>(1.0lf - a,
                   ((a - hz) - 0.5lf * xl * (x + xh)) + (z * z * {_COS_C} - x * r.y));
}}
fn af_round_dd_f64(a: vec2<f64>) -> f64 {{ return a.x + af_cut_f64(a.y); }}
fn af_sin_poly_f64(r: vec2<f64>) -> f64 {{ return af_round_dd_f64(af_sin_dd_f64(r)); }}
fn af_cos_poly_f64(r: vec2<f64>) -> f64 {{ return af_round_dd_f64(af_cos_dd_f64(r)); }}
// (n.x + n.y) / (d.x + d.y): the quotient corrected by its residual (exact product)
fn af_dddiv_f64(n: vec2<f64>, d: vec2<f64>) -> f64 {{
  let q = af_round_dd_f64(n) / af_round_dd_f64(d);
  let p = af_prod_f64(q, d.x);
  return q + af_cut_f64((((n.x - p.x) - p.y) + (n.y - q * d.y)) / d.x);
}}
""",
    "af_sin": f"""fn af_sin_f64(x: f64) -> f64 {{
  if ((bitcast<i64>(x) & {_ABS}) >= {_INFB}) {{ return {_NAN}; }}
  let q = af_trig_arg_f64(x);
  let n = i32(q.z);
  var s = select(af_sin_poly_f64(q.xy), af_cos_poly_f64(q.xy), (n & 1) == 1);
  s = select(s, -s, (n & 2) != 0);
  return select(s, -s, af_neg_f64(x));
}}
""",
    "af_cos": f"""fn af_cos_f64(x: f64) -> f64 {{
  if ((bitcast<i64>(x) & {_ABS}) >= {_INFB}) {{ return {_NAN}; }}
  let q = af_trig_arg_f64(x);
  let n = i32(q.z);
  let c = select(af_cos_poly_f64(q.xy), af_sin_poly_f64(q.xy), (n & 1) == 1);
  return select(c, -c, ((n + 1) & 2) != 0);
}}
""",
    "af_tan": f"""fn af_tan_f64(x: f64) -> f64 {{
  if ((bitcast<i64>(x) & {_ABS}) >= {_INFB}) {{ return {_NAN}; }}
  let q = af_trig_arg_f64(x);
  let s = af_sin_dd_f64(q.xy);
  let c = af_cos_dd_f64(q.xy);
  let t = select(af_dddiv_f64(s, c), -af_dddiv_f64(c, s), (i32(q.z) & 1) == 1);
  return select(t, -t, af_neg_f64(x));
}}
""",
    # Past 22, sinh = cosh = e^a / 2 = exp(a - ln 2), a - ln 2 as a double-double.
    "af_sinh": f"""fn af_sinh_f64(x: f64) -> f64 {{
  let a = abs(x);
  var s = af_exp_half_f64(a);
  if (!(a > 22.0lf)) {{
    let e = af_expm1_f64(a);
    s = 0.5lf * (e + e / (e + 1.0lf));
  }}
  return select(s, -s, af_neg_f64(x));
}}
""",
    "af_cosh": """fn af_cosh_f64(x: f64) -> f64 {
  let a = abs(x);
  if (!(a > 22.0lf)) {
    let e = af_exp_f64(a);
    return 0.5lf * e + 0.5lf / e;
  }
  return af_exp_half_f64(a);
}
""",
    "af_tanh": """fn af_tanh_f64(x: f64) -> f64 {
  let a = abs(x);
  var t = 1.0lf;
  if (!(a > 22.0lf)) {
    let e = af_expm1_f64(a + a);
    t = e / (e + 2.0lf);
  }
  return select(t, -t, af_neg_f64(x));
}
""",
    "af_asinh": f"""fn af_asinh_f64(x: f64) -> f64 {{
  let a = abs(x);
  var s: f64;
  if (a > 268435456.0lf) {{ s = af_log_f64(a) + {_LN2[0]}; }} else {{
    s = af_log1p_f64(a + a * a / (1.0lf + sqrt(1.0lf + a * a)));
  }}
  return select(s, -s, af_neg_f64(x));
}}
""",
    "af_acosh": f"""fn af_acosh_f64(x: f64) -> f64 {{
  if (x < 1.0lf) {{ return {_NAN}; }}
  if (x > 268435456.0lf) {{ return af_log_f64(x) + {_LN2[0]}; }}
  let t = x - 1.0lf;
  return af_log1p_f64(t + sqrt(2.0lf * t + t * t));
}}
""",
    "af_atanh": f"""fn af_atanh_f64(x: f64) -> f64 {{
  let a = abs(x);
  if (a > 1.0lf) {{ return {_NAN}; }}
  let s = 0.5lf * af_log1p_f64((a + a) / (1.0lf - a));
  return select(s, -s, af_neg_f64(x));
}}
""",
    # atan: |x| reduced to |t| <= 7/16 around 0, 1/2, 1, 3/2 or infinity (atan of each as a
    # double-double), then its Taylor series to t^47. (A key of its own: float32's asin and
    # acos do not call atan.)
    "af_atan_core": f"""fn af_atan_f64(x: f64) -> f64 {{
  if (af_isnan_f64(x)) {{ return x; }}
  let a = abs(x);
  var base = vec2<f64>(0.0lf, 0.0lf);
  var t = a;
  if (a > 2.4375lf) {{ base = {_dd(_PIO2)}; t = -1.0lf / a; }}
  else if (a > 1.1875lf) {{
    base = vec2<f64>(0.982793723247329lf, 1.3903311031230998e-17lf);
    t = (a - 1.5lf) / (1.0lf + 1.5lf * a);
  }} else if (a > 0.6875lf) {{
    base = vec2<f64>(0.7853981633974483lf, 3.061616997868383e-17lf);
    t = (a - 1.0lf) / (a + 1.0lf);
  }} else if (a > 0.4375lf) {{
    base = vec2<f64>(0.4636476090008061lf, 2.2698777452961687e-17lf);
    t = (a + a - 1.0lf) / (2.0lf + a);
  }}
  let z = t * t;
  let s = af_sum_f64(base.x, t);
  let r = s.x + af_cut_f64(s.y + (t * z * {_ATAN_T} + base.y));
  return select(r, -r, af_neg_f64(x));
}}
""",
    "af_atan2": f"""fn af_atan2_f64(y: f64, x: f64) -> f64 {{
  let ay = bitcast<i64>(y) & {_ABS};
  let ax = bitcast<i64>(x) & {_ABS};
  let xneg = af_neg_f64(x);
  if (ay > {_INFB} || ax > {_INFB}) {{ return {_NAN}; }}
  var t: f64;
  if (ay == {_INFB} && ax == {_INFB}) {{ t = select({_c(math.pi / 4)}, {_c(3 * math.pi / 4)}, xneg); }}
  else if (ax == {_INFB} || ay == 0li) {{ t = select(0.0lf, {_PI[0]}, xneg); }}
  else if (ay == {_INFB} || ax == 0li) {{ t = {_PIO2[0]}; }}
  else {{
    t = af_atan_f64(abs(y) / abs(x));
    if (xneg) {{ t = ({_PI[0]} - t) + {_PI[1]}; }}
  }}
  return select(t, -t, af_neg_f64(y));
}}
""",
    "af_asin": f"""fn af_asin_f64(x: f64) -> f64 {{
  let a = abs(x);
  if (a > 1.0lf) {{ return {_NAN}; }}
  var d: f64;
  if (a > 0.5lf) {{ d = (1.0lf - a) * (1.0lf + a); }} else {{
    let p = af_prod_f64(a, a);
    d = (1.0lf - p.x) - p.y;
  }}
  let r = af_atan_f64(a / sqrt(d));
  return select(r, -r, af_neg_f64(x));
}}
""",
    "af_acos": f"""fn af_acos_f64(x: f64) -> f64 {{
  if (abs(x) > 1.0lf) {{ return {_NAN}; }}
  return 2.0lf * af_atan_f64(sqrt((1.0lf - x) / (1.0lf + x)));
}}
""",
    # sqrt(a^2 + b^2) with the squares exact (double-double), a scaled near 1 (b with it),
    # and the root corrected by its residual.
    "af_hypot": f"""fn af_hypot_f64(x: f64, y: f64) -> f64 {{
  let bx = bitcast<i64>(x) & {_ABS};
  let by = bitcast<i64>(y) & {_ABS};
  if (bx == {_INFB} || by == {_INFB}) {{ return {_INF}; }}
  if (bx > {_INFB} || by > {_INFB}) {{ return {_NAN}; }}
  var a = bitcast<f64>(max(bx, by));
  var b = bitcast<f64>(min(bx, by));
  if (a == 0.0lf) {{ return 0.0lf; }}
  let k = clamp(i32(max(bx, by) >> 52u) - 1023, -1000, 1000);
  a = a * af_pow2_f64(-k);
  b = b * af_pow2_f64(-k);
  let h = af_ddadd_f64(af_prod_f64(a, a), af_prod_f64(b, b));
  let s = sqrt(h.x);
  let p = af_prod_f64(s, s);
  let r = s + af_cut_f64((((h.x - p.x) - p.y) + h.y) / (s + s));
  return r * af_pow2_f64(k);
}}
""",
    "af_logaddexp": f"""fn af_logaddexp_f64(x: f64, y: f64) -> f64 {{
  if (af_isnan_f64(x)) {{ return x; }}
  if (af_isnan_f64(y)) {{ return y; }}
  if (x == y) {{ return x + {_LN2[0]}; }}
  return max(x, y) + af_log1p_f64(af_exp_f64(-abs(x - y)));
}}
""",
    "af_copysign": f"""fn af_copysign_f64(x: f64, y: f64) -> f64 {{
  return bitcast<f64>((bitcast<i64>(x) & {_ABS}) | (bitcast<i64>(y) & ~{_ABS}));
}}
""",
    # on bits, as the float32 one: a step of one unit in the last place towards y
    "af_nextafter": f"""fn af_nextafter_f64(x: f64, y: f64) -> f64 {{
  let bx = bitcast<i64>(x);
  let by = bitcast<i64>(y);
  let ax = bx & {_ABS};
  let ay = by & {_ABS};
  if (ax > {_INFB} || ay > {_INFB}) {{ return {_NAN}; }}
  if (bx == by || (ax | ay) == 0li) {{ return y; }}
  if (ax == 0li) {{ return bitcast<f64>((by & ~{_ABS}) | 1li); }}
  let kx = select(bx, -ax, bx < 0li);
  let ky = select(by, -ay, by < 0li);
  return bitcast<f64>(select(bx - 1li, bx + 1li, (ky > kx) == (bx >= 0li)));
}}
""",
    # numpy's special cases first (C99's pow), then exp(y log|x|) with y log|x| in
    # double-double; odd integer powers of negative x negated.
    "af_pow": f"""fn af_pow_f64(a: f64, b: f64) -> f64 {{
  let ab = bitcast<i64>(a) & {_ABS};
  let bb = bitcast<i64>(b) & {_ABS};
  if (bb == 0li || bitcast<i64>(a) == 0x3ff0000000000000li) {{ return 1.0lf; }}
  if (ab > {_INFB} || bb > {_INFB}) {{ return {_NAN}; }}
  let neg = af_neg_f64(a);
  let big = bb >= 0x4340000000000000li;
  let integral = big || b == floor(b);
  let odd = !big && integral && floor(b * 0.5lf) * 2.0lf != b;
  if (ab == 0li || ab == {_INFB}) {{
    let mag = select(0.0lf, {_INF}, (ab == 0li) == (b < 0.0lf));
    return select(mag, -mag, neg && odd);
  }}
  if (bb == {_INFB}) {{
    if (ab == 0x3ff0000000000000li) {{ return 1.0lf; }}
    return select(0.0lf, {_INF}, (ab > 0x3ff0000000000000li) == (b > 0.0lf));
  }}
  if (neg && !integral) {{ return {_NAN}; }}
  let l = af_log_dd_f64(abs(a));
  let p = af_prod_f64(b, l.x);
  let r = af_exp_dd_f64(p.x, p.y + b * l.y);
  return select(r, -r, neg && odd);
}}
""",
}

# Which helpers each float64 function calls (besides its own); the ones named here and
# not in :mod:`.math_f32`'s table exist in float64 only.
NEEDS_F64: dict[str, tuple[str, ...]] = {
    "af_pow": ("af_exp_dd", "af_log_dd"),
    "af_exp_dd": ("af_dd",), "af_log_dd": ("af_dd",), "af_exp": ("af_exp_dd",),
    "af_expm1": ("af_exp",), "af_log": ("af_log_dd",), "af_log2": ("af_log_dd",),
    "af_log10": ("af_log_dd",), "af_log1p": ("af_log",), "af_trig": ("af_dd",),
    "af_sin": ("af_trig",), "af_cos": ("af_trig",), "af_tan": ("af_trig",),
    "af_sinh": ("af_expm1",), "af_cosh": ("af_exp",),
    "af_tanh": ("af_expm1",), "af_asinh": ("af_log1p",), "af_acosh": ("af_log1p",),
    "af_atanh": ("af_log1p",), "af_atan2": ("af_atan_core",), "af_asin": ("af_atan_core",),
    "af_acos": ("af_atan_core",), "af_hypot": ("af_dd",), "af_logaddexp": ("af_log1p", "af_exp"),
    "af_atan": ("af_atan_core",), "af_atan_core": ("af_dd",),
}
