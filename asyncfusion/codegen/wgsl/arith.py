"""WGSL helpers for ``pow``, ``floor_divide``, ``remainder`` and ``erf``: in 32 bits
(f32, i32, u32; ``vec4`` variants are added lane by lane), in 64-bit integers, and
numpy's float divmod for f32 and f64.

Each is written for scalars. Integer division by zero gives 0; integer powers wrap, and
a negative exponent gives 0 (or +-1 for a base of +-1).
"""

from __future__ import annotations

__all__ = ["ARITH_32", "DIVMOD_F32", "ARITH_I64", "ARITH_F64"]


def _pow_unsigned(u: str, s: str) -> str:
    """``a ** b`` of unsigned type ``u`` (literal suffix ``s``) by squaring; it wraps."""
    return f"""fn af_pow_{u}(a: {u}, b: {u}) -> {u} {{
  var r = 1{s};
  var x = a;
  var e = b;
  loop {{
    if (e == 0{s}) {{ break; }}
    if ((e & 1{s}) == 1{s}) {{ r = r * x; }}
    x = x * x;
    e = e >> 1u;
  }}
  return r;
}}
"""


def _pow_signed(i: str, s: str, u: str, to_u: str) -> str:
    """``a ** b`` of signed type ``i`` (literal suffix ``s``) through ``af_pow_{u}`` (``b``
    converted by ``to_u``): a negative exponent gives 0, or +-1 for a base of +-1."""
    return f"""fn af_pow_{i}(a: {i}, b: {i}) -> {i} {{
  if (b < 0{s}) {{
    if (a == 1{s}) {{ return 1{s}; }}
    if (a == -1{s}) {{ return select(-1{s}, 1{s}, (b & 1{s}) == 0{s}); }}
    return 0{s};
  }}
  return bitcast<{i}>(af_pow_{u}(bitcast<{u}>(a), {to_u}(b)));
}}
"""

# name -> (text of the scalar helpers, the types it is written for, arity)
ARITH_32: dict[str, tuple[str, tuple[str, ...], int]] = {
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
""" + _pow_unsigned("u32", "u") + _pow_signed("i32", "", "u32", "u32"),
               ("f32", "i32", "u32"), 2),
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


DIVMOD_F32 = _divmod("f32", "u32", "u", 23, 7, "firstLeadingBit(r)")
# 64-bit integer versions (scalar: 64-bit kernels never run vec4), emitted only into
# kernels that compute in them.
ARITH_I64: dict[str, str] = {
    "af_pow": (_pow_signed("i64", "li", "u64", "bitcast<u64>")
               + _pow_unsigned("u64", "lu")),
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


# float64 versions, emitted only into kernels that compute in float64: an int64 kernel
# must not name f64, which an adapter may lack.
ARITH_F64: dict[str, str] = {"af_divmod": _divmod(
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
