"""Accurate float32 math in WGSL: the helpers that the Array API's element-wise math
functions lower to (:mod:`.math_f64` holds their float64 versions).

WGSL's builtins are only loosely specified (``sin``/``cos`` to 2^-11 absolute on
[-pi, pi]; ``atan`` to 4096 ulp; ``asinh`` and friends through ``log(x + sqrt(...))``,
useless near 0), and GPUs implement ``exp`` as ``exp2(x * log2(e))``, whose error grows
with |x|. So the functions here are written out: Cody-Waite reduction and minimax (Cephes
for ``log``) polynomials for ``exp``/``log``; for ``sin``/``cos``/``tan`` a Cody-Waite reduction up to
6433 and a Payne-Hanek one (2/pi to 256 bits, u32 arithmetic only) beyond, so the whole
float32 range is accurate; the inverse and hyperbolic functions built on them. Division
scales a divisor beyond 2^+-64 first: GPUs that divide as ``n * (1 / d)`` give 0 for
``1 / d`` past 2^126. ``tests/test_numerics_ulp.py`` measures each against numpy
(float64, rounded) and asserts its bound; the README lists the bounds.

Each helper is written for scalars; :func:`.types.lanes` adds the ``vec4`` variants, but
for ``exp``, ``sin``, ``cos`` and ``tan``, whose ``vec4`` variants are written out: the fast
path on the four lanes as vectors, one test of the four for the slow path.
Integer special values are handled on bits, so a compiler that flushes denormals or
orders NaN comparisons cannot change them.
"""

from __future__ import annotations

__all__ = ["FAST_DOMAIN_F32", "MATH_F32", "NEEDS_F32", "fma_helpers"]

_NAN = "bitcast<f32>(0x7fc00000u)"
_INF = "bitcast<f32>(0x7f800000u)"


_V4 = "vec4<f32>"
_U4 = "vec4<u32>"


# The domain of each split helper's fast path, over a vec4<f32> ``{x}`` (NaN fails it):
# its vec4 variant takes the slow path for the lanes outside (:func:`_gated4`), and an
# element-wise kernel of several such ops checks the domains once for all of them
# (``render``: one slow tail per kernel).
FAST_DOMAIN_F32: dict[str, str] = {
    "exp": f"abs({{x}}) < {_V4}(87.0)",
    **{name: f"abs({{x}}) <= {_V4}(6433.0)" for name in ("sin", "cos", "tan")},
}


def _gated4(name: str, fast: str) -> str:
    """The ``vec4`` helpers of split helper ``name``: ``af_{name}_f32_4_fast``, whose
    ``fast`` lines compute ``v`` on the four lanes as vectors, right within
    :data:`FAST_DOMAIN_F32`; and ``af_{name}_f32_4``, where the lanes outside that domain
    get the scalar ``af_{name}_slow_f32``, one lane per trip. The common case makes no trip
    (one test for the four lanes, where a lane-wise helper tests each), and the slow path
    is written once, not per lane (a compiler that runs both sides of a branch, as
    lavapipe does under divergence, runs it once per vector, not four times)."""
    gate = FAST_DOMAIN_F32[name].format(x="x")
    return f"""fn af_{name}_f32_4_fast(x: {_V4}) -> {_V4} {{
{fast}  return v;
}}
fn af_{name}_f32_4(x: {_V4}) -> {_V4} {{
  var v = af_{name}_f32_4_fast(x);
  let ok = {gate};
  if (all(ok)) {{ return v; }}
  var bad = !ok;
  loop {{
    if (!any(bad)) {{ break; }}
    let l = select(select(select(3u, 2u, bad.z), 1u, bad.y), 0u, bad.x);
    v[l] = af_{name}_slow_f32(x[l]);
    bad[l] = false;
  }}
  return v;
}}
"""


_REDUCE4 = """  let t = x * 0.63661975 + 12582912.0;
  let j = af_unmagic_4(t);
  let r = (((x - j * 1.5703125) - j * 0.0004837513) - j * 7.5495336e-8) - j * 2.563344e-12;
"""


def _trig(name: str, kernel: str, turn: str, odd: bool, reduce4: str = _REDUCE4) -> str:
    """``name`` of float32 as ``kernel(r, quadrant)``, with ``turn`` added to the quadrant
    (cos is sin a quarter turn on): (r, j + 1.5 2^23) from the fast reduction, whose low
    bits are j mod 4; else (``af_{name}_slow_f32``) on |x| from Payne-Hanek, the sign put
    back for an ``odd`` function. (r + r z p(z) is +0 for r = -0: the kernels keep r where
    z is 0.) The ``vec4`` variant runs the fast path on the four lanes as vectors and the
    slow one only for the lanes that need it (:func:`_gated4`)."""
    far = f"{kernel}(q.x, u32(q.y){turn})"
    tail = (f"  let v = {far};\n  return select(v, -v, (bitcast<u32>(x) >> 31u) == 1u);\n"
            if odd else f"  return {far};\n")
    turn4 = f" + {_U4}(1u)" if turn else ""
    return f"""fn af_{name}_f32(x: f32) -> f32 {{
  if (af_trig_ok(x)) {{
    let q = af_trig_fast(x);
    return {kernel}(q.x, bitcast<u32>(q.y){turn});
  }}
  return af_{name}_slow_f32(x);
}}
fn af_{name}_slow_f32(x: f32) -> f32 {{
  if (!af_trig_finite(x)) {{ return {_NAN}; }}
  let q = af_trig_reduce(abs(x));
{tail}}}
""" + _gated4(name, f"{reduce4}  let v = {kernel}_4(r, bitcast<{_U4}>(t){turn4});\n")


# 2/pi in 32-bit words (a zero word first): Payne-Hanek takes the 5 words from k = 0..4
# (x's exponent, 6433 < |x| < 2^128) on; a chain of selects on k, no switch (which a
# compiler running both sides of a branch, as lavapipe does, runs for each of its cases).
_TWO_OPI = (0x0, 0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599, 0x3c439041,
            0xfe5163ab, 0xdebbc561)


def _two_opi_words() -> str:
    def word(m: int) -> str:
        e = f"{_TWO_OPI[m]:#x}u"
        for j in range(1, 5):
            e = f"select({e}, {_TWO_OPI[m + j]:#x}u, k{j})"
        return e
    ks = "\n".join(f"  let k{j} = k >= {j}u;" for j in range(1, 5))
    words = ",\n    ".join(word(m) for m in range(5))
    return f"""fn af_2opi_words(k: u32) -> array<u32, 5> {{
{ks}
  return array<u32, 5>(
    {words});
}}
fn af_2opi_window(hi: u32, lo: u32, sh: u32) -> u32 {{
  return select((hi << sh) | (lo >> (32u - sh)), hi, sh == 0u);
}}
"""


_TWO_OPI_WORDS = _two_opi_words()

# exp's slow path opens alike in both texts: NaN, overflow, underflow, then k = round(x/ln2).
_EXP_SLOW_HEAD = f"""  if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) {{ return x; }}
  if (x > 88.72284) {{ return {_INF}; }}
  if (x < -103.97208) {{ return 0.0; }}
  let k = round(x * 1.442695);
"""

# name -> (WGSL text of the scalar helper(s), arity of the lane-wise f32 helper named name;
# 0: no lane-wise variant, or one written in the text)
MATH_F32: dict[str, tuple[str, int]] = {
    # round(y) for |y| < 2^22 as t - 1.5 2^23, t = y + 1.5 2^23 (rounded: no float-to-int
    # conversion), whose low bits hold it; the 'or' (a no-op on t's bits) keeps compilers
    # (lavapipe) from folding (y + 1.5 2^23) - 1.5 2^23 into y.
    "af_magic": ("""fn af_unmagic(t: f32) -> f32 {
  return bitcast<f32>(bitcast<u32>(t) | 0x4b000000u) - 12582912.0;
}
fn af_unmagic_4(t: vec4<f32>) -> vec4<f32> {
  return bitcast<vec4<f32>>(bitcast<vec4<u32>>(t) | vec4<u32>(0x4b000000u)) - 12582912.0;
}
""", 0),
    # Where the result is a normal float (|x| < 87), k = round(x / ln2) is read off the bits
    # of x / ln2 + 1.5 * 2^23 (no float-to-int conversion), which also give 2^k by a shift;
    # beyond that and for NaN, 2^k in two factors (so 2^-149..2^128 come out right).
    # (The fast paths' gates are float compares, one instruction: a NaN let in by a compiler
    # that orders NaN comparisons still comes out NaN.) exp(r) = 1 + r + r^2 p(r), p of
    # degree 4, minimax in relative error on |r| <= ln2/2 (2^-28.3: Cephes' degree 5, 2^-34,
    # is more than float32 needs; both are within 1 ulp over the range).
    "af_exp": (f"""fn af_exp_f32(x: f32) -> f32 {{
  if (abs(x) < 87.0) {{
    let t = x * 1.442695 + 12582912.0;
    let k = af_unmagic(t);
    return af_exp_poly((x - k * 0.693359375) - k * -2.12194440e-4)
      * bitcast<f32>((bitcast<u32>(t) << 23u) + 0x3f800000u);
  }}
  return af_exp_slow_f32(x);
}}
fn af_exp_slow_f32(x: f32) -> f32 {{
{_EXP_SLOW_HEAD}  let p = af_exp_poly((x - k * 0.693359375) - k * -2.12194440e-4);
  let k1 = i32(k) / 2;
  let k2 = i32(k) - k1;
  return p * bitcast<f32>(u32(k1 + 127) << 23u) * bitcast<f32>(u32(k2 + 127) << 23u);
}}
fn af_exp_poly(r: f32) -> f32 {{
  return (((((1.3814538e-3 * r + 8.3687454e-3) * r + 4.1668389e-2) * r + 1.6666521e-1) * r
    + 4.9999994e-1) * (r * r) + r) + 1.0;
}}
""" + _gated4("exp", f"""  let t = x * 1.442695 + 12582912.0;
  let k = af_unmagic_4(t);
  let r = (x - k * 0.693359375) - k * -2.12194440e-4;
  let v = ((((((1.3814538e-3 * r + 8.3687454e-3) * r + 4.1668389e-2) * r + 1.6666521e-1) * r
    + 4.9999994e-1) * (r * r) + r) + 1.0)
    * bitcast<{_V4}>((bitcast<{_U4}>(t) << {_U4}(23u)) + {_U4}(0x3f800000u));
"""), 0),
    # log(x) = e*ln2 + log1p(m), m in [sqrt(1/2) - 1, sqrt(2) - 1]; (e, log1p(m)) for finite
    # x > 0 (subnormals normalized on bits); af_log_edge gives 0, inf, negatives and NaN.
    "af_log": (f"""fn af_log_parts(x: f32) -> vec2<f32> {{
  let b = bitcast<u32>(x);
  var e = i32(b >> 23u) - 126;
  var mb = b & 0x7fffffu;
  if ((b >> 23u) == 0u) {{
    let s = countLeadingZeros(b) - 8u;
    mb = (b << s) & 0x7fffffu;
    e = -125 - i32(s);
  }}
  var m = bitcast<f32>(mb | 0x3f000000u);
  if (m < 0.70710677) {{ e = e - 1; m = m + m - 1.0; }} else {{ m = m - 1.0; }}
  return vec2<f32>(f32(e), af_log1p_poly(m));
}}
fn af_log1p_poly(m: f32) -> f32 {{
  let z = m * m;
  let y = ((((((((7.0376836292e-2 * m - 1.1514610310e-1) * m + 1.1676998740e-1) * m
    - 1.2420140846e-1) * m + 1.4249322787e-1) * m - 1.6668057665e-1) * m + 2.0000714765e-1)
    * m - 2.4999993993e-1) * m + 3.3333331174e-1) * m * z;
  return m + (y - 0.5 * z);
}}
fn af_log_ok(x: f32) -> bool {{
  let b = bitcast<u32>(x);
  return b != 0u && b < 0x7f800000u;
}}
fn af_log_edge(x: f32) -> f32 {{
  let b = bitcast<u32>(x);
  if ((b & 0x7fffffffu) == 0u) {{ return -{_INF}; }}
  return select({_NAN}, x, b == 0x7f800000u);
}}
fn af_log_f32(x: f32) -> f32 {{
  if (!af_log_ok(x)) {{ return af_log_edge(x); }}
  let p = af_log_parts(x);
  return (p.y + p.x * -2.12194440e-4) + p.x * 0.693359375;
}}
""", 1),
    "af_log2": ("""fn af_log2_f32(x: f32) -> f32 {
  if (!af_log_ok(x)) { return af_log_edge(x); }
  let p = af_log_parts(x);
  return p.x + p.y * 1.442695;
}
""", 1),
    "af_log10": ("""fn af_log10_f32(x: f32) -> f32 {
  if (!af_log_ok(x)) { return af_log_edge(x); }
  let p = af_log_parts(x);
  return p.x * 0.30103 + (p.y * 0.4342945 + p.x * -1.4320989e-8);
}
""", 1),
    # On [sqrt(1/2) - 1, sqrt(2) - 1] log's own polynomial, with no 1 + x rounded (nor a
    # (1 + x) - 1 for a compiler to fold to x); log(1 + x) beyond.
    "af_log1p": ("""fn af_log1p_f32(x: f32) -> f32 {
  if (x == 0.0) { return x; }
  if (x >= -0.29289323 && x <= 0.41421357) { return af_log1p_poly(x); }
  return af_log_f32(1.0 + x);
}
""", 1),
    # expm1(x) = 2^k (expm1(r) + 1) - 1 with x = k ln2 + r; Taylor to r^8 on |r| <= ln2/2.
    "af_expm1": ("""fn af_expm1_f32(x: f32) -> f32 {
  if (x == 0.0) { return x; }
  if (!(x <= 88.0)) { return af_exp_f32(x); }
  if (x < -17.0) { return -1.0; }
  let k = round(x * 1.442695);
  let r = select((x - k * 0.693359375) - k * -2.12194440e-4, x, k == 0.0);
  let em = r + r * r * (0.5 + r * (0.16666667 + r * (0.041666668 + r * (0.008333334
    + r * (0.0013888889 + r * (1.984127e-4 + r * 2.4801588e-5))))));
  if (k == 0.0) { return em; }
  let s = bitcast<f32>(u32(i32(k) + 127) << 23u);
  return s * em + (s - 1.0);
}
""", 1),
    "af_tanh": ("""fn af_tanh_f32(x: f32) -> f32 {
  let a = abs(x);
  var t = 1.0;
  if (!(a > 9.1)) {
    let e = af_expm1_f32(a + a);
    t = e / (e + 2.0);
  }
  return select(t, -t, (bitcast<u32>(x) >> 31u) == 1u);
}
""", 1),
    "af_sinh": ("""fn af_sinh_f32(x: f32) -> f32 {
  let a = abs(x);
  var s: f32;
  if (a < 88.0) {
    let e = af_expm1_f32(a);
    s = 0.5 * (e + e / (e + 1.0));
  } else {
    let e = af_exp_f32(0.5 * a);
    s = af_half(e) * e;
  }
  return select(s, -s, (bitcast<u32>(x) >> 31u) == 1u);
}
""", 1),
    "af_cosh": ("""fn af_cosh_f32(x: f32) -> f32 {
  let a = abs(x);
  if (a < 88.0) {
    let e = af_exp_f32(a);
    return 0.5 * e + 0.5 / e;
  }
  let e = af_exp_f32(0.5 * a);
  return af_half(e) * e;
}
""", 1),
    "af_asinh": ("""fn af_asinh_f32(x: f32) -> f32 {
  let a = abs(x);
  var s: f32;
  if (a > 1e18) { s = af_log_f32(a) + 0.6931472; } else {
    s = af_log1p_f32(a + a * a / (1.0 + sqrt(1.0 + a * a)));
  }
  return select(s, -s, (bitcast<u32>(x) >> 31u) == 1u);
}
""", 1),
    "af_acosh": (f"""fn af_acosh_f32(x: f32) -> f32 {{
  if (x < 1.0) {{ return {_NAN}; }}
  if (x > 1e18) {{ return af_log_f32(x) + 0.6931472; }}
  let t = x - 1.0;
  return af_log1p_f32(t + sqrt(2.0 * t + t * t));
}}
""", 1),
    "af_atanh": (f"""fn af_atanh_f32(x: f32) -> f32 {{
  let a = abs(x);
  if (a > 1.0) {{ return {_NAN}; }}
  let s = 0.5 * af_log1p_f32((a + a) / (1.0 - a));
  return select(s, -s, (bitcast<u32>(x) >> 31u) == 1u);
}}
""", 1),
    "af_atan": ("""fn af_atan_f32(x: f32) -> f32 {
  var a = abs(x);
  var y = 0.0;
  if (a > 2.4142137) { y = 1.5707964; a = -1.0 / a; }
  else if (a > 0.41421357) { y = 0.7853982; a = (a - 1.0) / (a + 1.0); }
  let z = a * a;
  y = y + ((((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z
    - 3.33329491539e-1) * z * a + a);
  return select(y, -y, (bitcast<u32>(x) >> 31u) == 1u);
}
""", 1),
    "af_atan2": (f"""fn af_atan2_f32(y: f32, x: f32) -> f32 {{
  let ay = bitcast<u32>(y) & 0x7fffffffu;
  let ax = bitcast<u32>(x) & 0x7fffffffu;
  let xneg = (bitcast<u32>(x) >> 31u) == 1u;
  if (ay > 0x7f800000u || ax > 0x7f800000u) {{ return {_NAN}; }}
  var t: f32;
  if (ay == 0x7f800000u && ax == 0x7f800000u) {{ t = select(0.7853982, 2.3561945, xneg); }}
  else if (ax == 0x7f800000u || ay == 0u) {{ t = select(0.0, 3.1415927, xneg); }}
  else if (ay == 0x7f800000u || ax == 0u) {{ t = 1.5707964; }}
  else {{
    t = af_atan_f32(af_div_f32(abs(y), abs(x)));
    if (xneg) {{ t = (3.1415927 - t) + -8.742278e-8; }}
  }}
  return select(t, -t, (bitcast<u32>(y) >> 31u) == 1u);
}}
""", 2),
    "af_asin": (f"""fn af_asin_f32(x: f32) -> f32 {{
  let a = abs(x);
  if (a > 1.0) {{ return {_NAN}; }}
  let big = a > 0.5;
  let z = select(a * a, 0.5 * (1.0 - a), big);
  let s = select(a, sqrt(z), big);
  var p = ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z
    + 7.4953002686e-2) * z + 1.6666752422e-1) * z * s + s;
  if (big) {{ p = (1.5707964 - (p + p)) + -4.371139e-8; }}
  return select(p, -p, (bitcast<u32>(x) >> 31u) == 1u);
}}
""", 1),
    "af_acos": (f"""fn af_acos_f32(x: f32) -> f32 {{
  if (abs(x) > 1.0) {{ return {_NAN}; }}
  if (x < -0.5) {{ return (3.1415927 - 2.0 * af_asin_f32(sqrt(0.5 * (1.0 + x)))) + -8.742278e-8; }}
  if (x > 0.5) {{ return 2.0 * af_asin_f32(sqrt(0.5 * (1.0 - x))); }}
  return (1.5707964 - af_asin_f32(x)) + -4.371139e-8;
}}
""", 1),
    # Some GPUs divide as n * (1 / d), and 1 / d flushes to 0 for |d| > 2^126 (NVIDIA):
    # bring d's exponent into range first. And an exact halving that no compiler can
    # reassociate into an overflowing (e * e) / 2.
    "af_div": ("""fn af_div_f32(n: f32, d: f32) -> f32 {
  let s = select(select(1.0, 1.8446744e19, abs(d) < 5.421011e-20), 5.421011e-20,
                 abs(d) > 1.8446744e19);
  return (n * s) / (d * s);
}
fn af_half(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) - 0x00800000u); }
""", 2),
    # x = j pi/2 + r, |r| <= pi/4 (a rounding more where j is a near tie). For |x| <= 6433
    # (|j| < 2^12) Cody-Waite: j read off the bits of x 2/pi + 1.5 2^23 (no conversions),
    # pi/2 in three 12-bit floats and a fourth (each j * piece exact, no fma needed: WGSL's
    # fma may be unfused); the floats nearest to multiples of pi/2 up to there come within
    # 2^-27.8 of them and r keeps a relative error below 2^-23.9. Beyond, and for inf and
    # NaN, Payne-Hanek on |x|: |x| * 2/pi with 128 bits of 2/pi aligned to x's exponent,
    # whose bits 126..127 are the quadrant and the 64 below the fraction (normalized, then
    # * pi/2 in two parts).
    "af_trig": ("""fn af_mul32(a: u32, b: u32) -> vec2<u32> {
  let al = a & 0xffffu;
  let ah = a >> 16u;
  let bl = b & 0xffffu;
  let bh = b >> 16u;
  let ll = al * bl;
  let mid = al * bh + (ll >> 16u);
  let mid2 = ah * bl + (mid & 0xffffu);
  return vec2<u32>(ah * bh + (mid >> 16u) + (mid2 >> 16u), (mid2 << 16u) | (ll & 0xffffu));
}
""" + _TWO_OPI_WORDS + """fn af_trig_reduce(x: f32) -> vec2<f32> {
  let bits = bitcast<u32>(x) & 0x7fffffffu;
  let m = (bits & 0x7fffffu) | 0x800000u;
  let t = (bits >> 23u) - 120u;
  let k = t >> 5u;
  let sh = t & 31u;
  let w = af_2opi_words(k);
  let q0 = af_mul32(m, af_2opi_window(w[0], w[1], sh));
  let q1 = af_mul32(m, af_2opi_window(w[1], w[2], sh));
  let q2 = af_mul32(m, af_2opi_window(w[2], w[3], sh));
  let q3 = af_mul32(m, af_2opi_window(w[3], w[4], sh));
  let s1 = q2.y + q3.x;
  let c1 = select(0u, 1u, s1 < q2.y);
  let s2a = q1.y + q2.x;
  let s2 = s2a + c1;
  let c2 = select(0u, 1u, s2a < q1.y) + select(0u, 1u, s2 < s2a);
  let s3 = q0.y + q1.x + c2;
  var n = s3 >> 30u;
  var fhi = (s3 << 2u) | (s2 >> 30u);
  var flo = (s2 << 2u) | (s1 >> 30u);
  let neg = (fhi >> 31u) == 1u;
  if (neg) {
    flo = ~flo + 1u;
    fhi = ~fhi + select(0u, 1u, flo == 0u);
    n = n + 1u;
  }
  var e = 0u;
  if (fhi == 0u) { fhi = flo; flo = 0u; e = 32u; }
  let lz = countLeadingZeros(fhi);
  let top = select((fhi << lz) | (flo >> (32u - lz)), fhi, lz == 0u);
  let scale = bitcast<f32>((103u - lz - e) << 23u);
  let u = f32(top >> 8u) * scale;
  let v = f32(top & 0xffu) * scale * 0.00390625;
  let r = u * 1.5707964 + (u * -4.371139e-8 + v * 1.5707964);
  return vec2<f32>(select(r, -r, neg), f32(n & 3u));
}
fn af_trig_fast(x: f32) -> vec2<f32> {
  let t = x * 0.63661975 + 12582912.0;
  let j = af_unmagic(t);
  let r = (((x - j * 1.5703125) - j * 0.0004837513) - j * 7.5495336e-8) - j * 2.563344e-12;
  return vec2<f32>(r, t);
}
fn af_trig_ok(x: f32) -> bool { return abs(x) <= 6433.0; }
fn af_trig_finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) < 0x7f800000u; }
fn af_sincos(r: f32, n: u32) -> f32 {
  // one polynomial, its coefficients picked by the quadrant (both used to be evaluated):
  // sin = ((k z) r - 0) + r, cos = ((k z) z - 0.5 z) + 1, the operations of Cephes' two;
  // the sign of quadrants 2 and 3 flipped on bits.
  let z = r * r;
  let odd = (n & 1u) == 1u;
  let k = (select(-1.9515295891e-4, 2.443315711809948e-5, odd) * z
    + select(8.3321608736e-3, -1.388731625493765e-3, odd)) * z
    + select(-1.6666654611e-1, 4.166664568298827e-2, odd);
  let b = select(r, 1.0, odd);
  let v = select((k * z * select(r, z, odd) - z * select(0.0, 0.5, odd)) + b, b, z == 0.0);
  return bitcast<f32>(bitcast<u32>(v) ^ ((n << 30u) & 0x80000000u));
}
fn af_sincos_4(r: vec4<f32>, n: vec4<u32>) -> vec4<f32> {
  let z = r * r;
  let odd = (n & vec4<u32>(1u)) == vec4<u32>(1u);
  let k = (select(vec4<f32>(-1.9515295891e-4), vec4<f32>(2.443315711809948e-5), odd) * z
    + select(vec4<f32>(8.3321608736e-3), vec4<f32>(-1.388731625493765e-3), odd)) * z
    + select(vec4<f32>(-1.6666654611e-1), vec4<f32>(4.166664568298827e-2), odd);
  let b = select(r, vec4<f32>(1.0), odd);
  let v = select((k * z * select(r, z, odd) - z * select(vec4<f32>(0.0), vec4<f32>(0.5), odd))
    + b, b, z == vec4<f32>(0.0));
  return bitcast<vec4<f32>>(bitcast<vec4<u32>>(v) ^ ((n << vec4<u32>(30u)) & vec4<u32>(0x80000000u)));
}
fn af_tan_reduced(r: f32, n: u32) -> f32 {
  let z = r * r;
  let t = (((((9.38540185543e-3 * z + 3.11992232697e-3) * z + 2.44301354525e-2) * z
    + 5.34112807005e-2) * z + 1.33387994085e-1) * z + 3.33331568548e-1) * z * r + r;
  let u = select(t, r, z == 0.0);
  return select(u, -1.0 / u, (n & 1u) == 1u);
}
fn af_tan_reduced_4(r: vec4<f32>, n: vec4<u32>) -> vec4<f32> {
  let z = r * r;
  let t = (((((9.38540185543e-3 * z + 3.11992232697e-3) * z + 2.44301354525e-2) * z
    + 5.34112807005e-2) * z + 1.33387994085e-1) * z + 3.33331568548e-1) * z * r + r;
  let u = select(t, r, z == vec4<f32>(0.0));
  return select(u, -1.0 / u, (n & vec4<u32>(1u)) == vec4<u32>(1u));
}
""", 0),
    "af_sin": (_trig("sin", "af_sincos", "", odd=True), 0),
    "af_cos": (_trig("cos", "af_sincos", " + 1u", odd=False), 0),
    "af_tan": (_trig("tan", "af_tan_reduced", "", odd=True), 0),
    "af_hypot": (f"""fn af_hypot_f32(x: f32, y: f32) -> f32 {{
  let bx = bitcast<u32>(x) & 0x7fffffffu;
  let by = bitcast<u32>(y) & 0x7fffffffu;
  if (bx == 0x7f800000u || by == 0x7f800000u) {{ return {_INF}; }}
  if (bx > 0x7f800000u || by > 0x7f800000u) {{ return {_NAN}; }}
  let a = bitcast<f32>(max(bx, by));
  let b = bitcast<f32>(min(bx, by));
  if (a == 0.0) {{ return 0.0; }}
  let r = af_div_f32(b, a);
  return a * sqrt(1.0 + r * r);
}}
""", 2),
    "af_logaddexp": (f"""fn af_logaddexp_f32(x: f32, y: f32) -> f32 {{
  if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) {{ return x; }}
  if ((bitcast<u32>(y) & 0x7fffffffu) > 0x7f800000u) {{ return y; }}
  if (x == y) {{ return x + 0.6931472; }}
  return max(x, y) + af_log1p_f32(af_exp_f32(-abs(x - y)));
}}
""", 2),
    "af_copysign": ("""fn af_copysign_f32(x: f32, y: f32) -> f32 {
  return bitcast<f32>((bitcast<u32>(x) & 0x7fffffffu) | (bitcast<u32>(y) & 0x80000000u));
}
""", 2),
    # nextafter on bits, ordering by sign and magnitude (no float compare: denormals count)
    "af_nextafter": (f"""fn af_nextafter_f32(x: f32, y: f32) -> f32 {{
  let bx = bitcast<u32>(x);
  let by = bitcast<u32>(y);
  if ((bx & 0x7fffffffu) > 0x7f800000u || (by & 0x7fffffffu) > 0x7f800000u) {{ return {_NAN}; }}
  if (bx == by || ((bx | by) & 0x7fffffffu) == 0u) {{ return y; }}
  if ((bx & 0x7fffffffu) == 0u) {{ return bitcast<f32>((by & 0x80000000u) | 1u); }}
  let kx = select(i32(bx), -i32(bx & 0x7fffffffu), (bx >> 31u) == 1u);
  let ky = select(i32(by), -i32(by & 0x7fffffffu), (by >> 31u) == 1u);
  return bitcast<f32>(select(bx - 1u, bx + 1u, (ky > kx) == ((bx >> 31u) == 0u)));
}}
""", 2),
}



def _k(t: str, lit: str) -> str:
    """A constant of type ``t``: the literal for a scalar, a splat for a vector."""
    return lit if t in ("f32", "u32") else f"{t}({lit})"


def fma_helpers(f: str = "fma", f4: str = "fma") -> dict[str, str]:
    """The texts of ``af_exp``, ``af_trig`` and ``af_sin``/``af_cos``/``af_tan`` for an
    adapter whose ``fma`` rounds once (the runtime's probe, ``Runtime.fused_fma``; NVIDIA
    GPUs do), in place of :data:`MATH_F32`'s, which are right whether ``fma`` is fused or
    not. ``f``/``f4``: the name of the scalar / vec4 fused multiply-add (``fma``; tests pass
    an emulation to run this text on an adapter whose ``fma`` is not fused).

    exp: r = x - k ln2 as two fmas on the same two pieces (the first exact, as before:
    k 0.693359375 has 16 bits and x - k 0.693359375 cancels; the second rounds once, not
    twice), the polynomial by Horner with fmas, and 2^k (1 + q) as one fma, 2^k q + 2^k.
    sin/cos/tan: r = x - j pi/2 as three fmas on pi/2 in three full floats, where the
    unfused reduction needs four 12-bit pieces: x - j hi is exact (|j| <= 2^12, j hi a
    multiple of 2^-23 and |x - j hi| < 1, or |x| < 1 and j hi a multiple of 2^-24), so is
    the next one where the result is below 2^-23 (a multiple of 2^-47), the floats nearest
    to multiples of pi/2 included, and pi/2 - (hi + mid + lo) is -2^-73. hi is pi/2
    rounded down and mid too, so that every piece is positive: x - j piece keeps x = -0
    as -0 (j = +0). sin = r + r (z k), cos = 1 + z (z k - 0.5) as fmas, their
    polynomials by Horner with fmas."""
    exp = f"""fn af_exp_f32(x: f32) -> f32 {{
  if (abs(x) < 87.0) {{
    let t = {f}(x, 1.442695, 12582912.0);
    let k = af_unmagic(t);
    let s = bitcast<f32>((bitcast<u32>(t) << 23u) + 0x3f800000u);
    return {f}(s, af_exp_q({f}(k, 2.12194440e-4, {f}(k, -0.693359375, x))), s);
  }}
  return af_exp_slow_f32(x);
}}
fn af_exp_slow_f32(x: f32) -> f32 {{
{_EXP_SLOW_HEAD}  let p = af_exp_q({f}(k, 2.12194440e-4, {f}(k, -0.693359375, x))) + 1.0;
  let k1 = i32(k) / 2;
  let k2 = i32(k) - k1;
  return p * bitcast<f32>(u32(k1 + 127) << 23u) * bitcast<f32>(u32(k2 + 127) << 23u);
}}
fn af_exp_q(r: f32) -> f32 {{
  let p = {f}({f}({f}({f}(1.3814538e-3, r, 8.3687454e-3), r, 4.1668389e-2), r, 1.6666521e-1), r,
    4.9999994e-1);
  return {f}(p, r * r, r);
}}
""" + _gated4("exp", f"""  let t = {f4}(x, {_V4}(1.442695), {_V4}(12582912.0));
  let k = af_unmagic_4(t);
  let r = {f4}(k, {_V4}(2.12194440e-4), {f4}(k, {_V4}(-0.693359375), x));
  let p = {f4}({f4}({f4}({f4}({_V4}(1.3814538e-3), r, {_V4}(8.3687454e-3)), r,
    {_V4}(4.1668389e-2)), r, {_V4}(1.6666521e-1)), r, {_V4}(4.9999994e-1));
  let s = bitcast<{_V4}>((bitcast<{_U4}>(t) << {_U4}(23u)) + {_U4}(0x3f800000u));
  let v = {f4}(s, {f4}(p, r * r, r), s);
""")
    reduce4 = f"""  let t = {f4}(x, {_V4}(0.63661975), {_V4}(12582912.0));
  let j = af_unmagic_4(t);
  let r = {f4}(j, {_V4}(-5.390303e-15), {f4}(j, {_V4}(-7.5497894e-8),
    {f4}(j, {_V4}(-1.5707963), x)));
"""

    def sincos(v: str, u: str, fv: str) -> str:
        sfx = "_4" if v == _V4 else ""
        return f"""fn af_sincos{sfx}(r: {v}, n: {u}) -> {v} {{
  let z = r * r;
  let odd = (n & {_k(u, "1u")}) == {_k(u, "1u")};
  let k = {fv}({fv}(select({_k(v, "-1.9515295891e-4")}, {_k(v, "2.443315711809948e-5")}, odd), z,
    select({_k(v, "8.3321608736e-3")}, {_k(v, "-1.388731625493765e-3")}, odd)), z,
    select({_k(v, "-1.6666654611e-1")}, {_k(v, "4.166664568298827e-2")}, odd));
  let b = select(r, {_k(v, "1.0")}, odd);
  let h = select({_k(v, "0.0")}, {_k(v, "-0.5")}, odd);
  let v = select({fv}(select(r, z, odd), {fv}(z, k, h), b), b, z == {_k(v, "0.0")});
  return bitcast<{v}>(bitcast<{u}>(v) ^ ((n << {_k(u, "30u")}) & {_k(u, "0x80000000u")}));
}}
"""

    def tan(v: str, u: str, fv: str) -> str:
        sfx = "_4" if v == _V4 else ""
        return f"""fn af_tan_reduced{sfx}(r: {v}, n: {u}) -> {v} {{
  let z = r * r;
  let p = {fv}({fv}({fv}({fv}({fv}({_k(v, "9.38540185543e-3")}, z,
    {_k(v, "3.11992232697e-3")}), z, {_k(v, "2.44301354525e-2")}), z,
    {_k(v, "5.34112807005e-2")}), z, {_k(v, "1.33387994085e-1")}), z,
    {_k(v, "3.33331568548e-1")});
  let u = select({fv}(p, z * r, r), r, z == {_k(v, "0.0")});
  return select(u, -1.0 / u, (n & {_k(u, "1u")}) == {_k(u, "1u")});
}}
"""
    # af_trig as in MATH_F32 (Payne-Hanek and the gates), the fast reduction and kernels
    # replaced
    plain = MATH_F32["af_trig"][0]
    head = plain[:plain.index("fn af_trig_fast(")]
    tail = plain[plain.index("fn af_trig_ok("):plain.index("fn af_sincos(")]
    trig = (head + f"""fn af_trig_fast(x: f32) -> vec2<f32> {{
  let t = {f}(x, 0.63661975, 12582912.0);
  let j = af_unmagic(t);
  return vec2<f32>({f}(j, -5.390303e-15, {f}(j, -7.5497894e-8, {f}(j, -1.5707963, x))), t);
}}
""" + tail + sincos("f32", "u32", f) + sincos(_V4, _U4, f4) + tan("f32", "u32", f)
        + tan(_V4, _U4, f4))
    return {"af_exp": exp, "af_trig": trig,
            "af_sin": _trig("sin", "af_sincos", "", True, reduce4),
            "af_cos": _trig("cos", "af_sincos", " + 1u", False, reduce4),
            "af_tan": _trig("tan", "af_tan_reduced", "", True, reduce4)}


# Which helpers each one calls (emitted together: WGSL declarations are order-free).
NEEDS_F32: dict[str, tuple[str, ...]] = {
    "af_log2": ("af_log",), "af_log10": ("af_log",), "af_log1p": ("af_log",),
    "af_exp": ("af_magic",), "af_trig": ("af_magic",),
    "af_expm1": ("af_exp",), "af_tanh": ("af_expm1", "af_exp"),
    "af_sinh": ("af_expm1", "af_exp", "af_div"), "af_cosh": ("af_exp", "af_div"),
    "af_asinh": ("af_log1p", "af_log"), "af_acosh": ("af_log1p", "af_log"),
    "af_atanh": ("af_log1p", "af_log"), "af_atan2": ("af_atan", "af_div"), "af_hypot": ("af_div",), "af_acos": ("af_asin",),
    "af_sin": ("af_trig",), "af_cos": ("af_trig",), "af_tan": ("af_trig",),
    "af_logaddexp": ("af_log1p", "af_log", "af_exp"),
}
