// kernel 0
struct Params { w: array<vec4<u32>, 3> }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out0: array<vec4<f32>>;
fn af_cos_f32(x: f32) -> f32 {
  if (af_trig_ok(x)) {
    let q = af_trig_fast(x);
    return af_sincos(q.x, bitcast<u32>(q.y) + 1u);
  }
  return af_cos_slow_f32(x);
}
fn af_cos_slow_f32(x: f32) -> f32 {
  if (!af_trig_finite(x)) { return bitcast<f32>(0x7fc00000u); }
  let q = af_trig_reduce(abs(x));
  return af_sincos(q.x, u32(q.y) + 1u);
}
fn af_cos_f32_4_fast(x: vec4<f32>) -> vec4<f32> {
  let t = x * 0.63661975 + 12582912.0;
  let j = af_unmagic_4(t);
  let r = (((x - j * 1.5703125) - j * 0.0004837513) - j * 7.5495336e-8) - j * 2.563344e-12;
  let v = af_sincos_4(r, bitcast<vec4<u32>>(t) + vec4<u32>(1u));
  return v;
}
fn af_cos_f32_4(x: vec4<f32>) -> vec4<f32> {
  var v = af_cos_f32_4_fast(x);
  let ok = abs(x) <= vec4<f32>(6433.0);
  if (all(ok)) { return v; }
  var bad = !ok;
  loop {
    if (!any(bad)) { break; }
    let l = select(select(select(3u, 2u, bad.z), 1u, bad.y), 0u, bad.x);
    v[l] = af_cos_slow_f32(x[l]);
    bad[l] = false;
  }
  return v;
}
fn af_exp_f32(x: f32) -> f32 {
  if (abs(x) < 87.0) {
    let t = x * 1.442695 + 12582912.0;
    let k = af_unmagic(t);
    return af_exp_poly((x - k * 0.693359375) - k * -2.12194440e-4)
      * bitcast<f32>((bitcast<u32>(t) << 23u) + 0x3f800000u);
  }
  return af_exp_slow_f32(x);
}
fn af_exp_slow_f32(x: f32) -> f32 {
  if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) { return x; }
  if (x > 88.72284) { return bitcast<f32>(0x7f800000u); }
  if (x < -103.97208) { return 0.0; }
  let k = round(x * 1.442695);
  let p = af_exp_poly((x - k * 0.693359375) - k * -2.12194440e-4);
  let k1 = i32(k) / 2;
  let k2 = i32(k) - k1;
  return p * bitcast<f32>(u32(k1 + 127) << 23u) * bitcast<f32>(u32(k2 + 127) << 23u);
}
fn af_exp_poly(r: f32) -> f32 {
  return (((((1.3814538e-3 * r + 8.3687454e-3) * r + 4.1668389e-2) * r + 1.6666521e-1) * r
    + 4.9999994e-1) * (r * r) + r) + 1.0;
}
fn af_exp_f32_4_fast(x: vec4<f32>) -> vec4<f32> {
  let t = x * 1.442695 + 12582912.0;
  let k = af_unmagic_4(t);
  let r = (x - k * 0.693359375) - k * -2.12194440e-4;
  let v = ((((((1.3814538e-3 * r + 8.3687454e-3) * r + 4.1668389e-2) * r + 1.6666521e-1) * r
    + 4.9999994e-1) * (r * r) + r) + 1.0)
    * bitcast<vec4<f32>>((bitcast<vec4<u32>>(t) << vec4<u32>(23u)) + vec4<u32>(0x3f800000u));
  return v;
}
fn af_exp_f32_4(x: vec4<f32>) -> vec4<f32> {
  var v = af_exp_f32_4_fast(x);
  let ok = abs(x) < vec4<f32>(87.0);
  if (all(ok)) { return v; }
  var bad = !ok;
  loop {
    if (!any(bad)) { break; }
    let l = select(select(select(3u, 2u, bad.z), 1u, bad.y), 0u, bad.x);
    v[l] = af_exp_slow_f32(x[l]);
    bad[l] = false;
  }
  return v;
}
fn af_unmagic(t: f32) -> f32 {
  return bitcast<f32>(bitcast<u32>(t) | 0x4b000000u) - 12582912.0;
}
fn af_unmagic_4(t: vec4<f32>) -> vec4<f32> {
  return bitcast<vec4<f32>>(bitcast<vec4<u32>>(t) | vec4<u32>(0x4b000000u)) - 12582912.0;
}
fn af_sin_f32(x: f32) -> f32 {
  if (af_trig_ok(x)) {
    let q = af_trig_fast(x);
    return af_sincos(q.x, bitcast<u32>(q.y));
  }
  return af_sin_slow_f32(x);
}
fn af_sin_slow_f32(x: f32) -> f32 {
  if (!af_trig_finite(x)) { return bitcast<f32>(0x7fc00000u); }
  let q = af_trig_reduce(abs(x));
  let v = af_sincos(q.x, u32(q.y));
  return select(v, -v, (bitcast<u32>(x) >> 31u) == 1u);
}
fn af_sin_f32_4_fast(x: vec4<f32>) -> vec4<f32> {
  let t = x * 0.63661975 + 12582912.0;
  let j = af_unmagic_4(t);
  let r = (((x - j * 1.5703125) - j * 0.0004837513) - j * 7.5495336e-8) - j * 2.563344e-12;
  let v = af_sincos_4(r, bitcast<vec4<u32>>(t));
  return v;
}
fn af_sin_f32_4(x: vec4<f32>) -> vec4<f32> {
  var v = af_sin_f32_4_fast(x);
  let ok = abs(x) <= vec4<f32>(6433.0);
  if (all(ok)) { return v; }
  var bad = !ok;
  loop {
    if (!any(bad)) { break; }
    let l = select(select(select(3u, 2u, bad.z), 1u, bad.y), 0u, bad.x);
    v[l] = af_sin_slow_f32(x[l]);
    bad[l] = false;
  }
  return v;
}
fn af_mul32(a: u32, b: u32) -> vec2<u32> {
  let al = a & 0xffffu;
  let ah = a >> 16u;
  let bl = b & 0xffffu;
  let bh = b >> 16u;
  let ll = al * bl;
  let mid = al * bh + (ll >> 16u);
  let mid2 = ah * bl + (mid & 0xffffu);
  return vec2<u32>(ah * bh + (mid >> 16u) + (mid2 >> 16u), (mid2 << 16u) | (ll & 0xffffu));
}
fn af_2opi_words(k: u32) -> array<u32, 5> {
  let k1 = k >= 1u;
  let k2 = k >= 2u;
  let k3 = k >= 3u;
  let k4 = k >= 4u;
  return array<u32, 5>(
    select(select(select(select(0x0u, 0xa2f9836eu, k1), 0x4e441529u, k2), 0xfc2757d1u, k3), 0xf534ddc0u, k4),
    select(select(select(select(0xa2f9836eu, 0x4e441529u, k1), 0xfc2757d1u, k2), 0xf534ddc0u, k3), 0xdb629599u, k4),
    select(select(select(select(0x4e441529u, 0xfc2757d1u, k1), 0xf534ddc0u, k2), 0xdb629599u, k3), 0x3c439041u, k4),
    select(select(select(select(0xfc2757d1u, 0xf534ddc0u, k1), 0xdb629599u, k2), 0x3c439041u, k3), 0xfe5163abu, k4),
    select(select(select(select(0xf534ddc0u, 0xdb629599u, k1), 0x3c439041u, k2), 0xfe5163abu, k3), 0xdebbc561u, k4));
}
fn af_2opi_window(hi: u32, lo: u32, sh: u32) -> u32 {
  return select((hi << sh) | (lo >> (32u - sh)), hi, sh == 0u);
}
fn af_trig_reduce(x: f32) -> vec2<f32> {
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
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= params.w[0][0]) { return; }
  let a0 = in0[i];
  let v0 = (a0 * vec4<f32>(bitcast<f32>(params.w[1][1])));
  let v1 = (v0 + vec4<f32>(bitcast<f32>(params.w[1][2])));
  let v2 = af_sin_f32_4_fast(v1);
  let v3 = af_exp_f32_4_fast(v2);
  let v4 = (v3 * vec4<f32>(bitcast<f32>(params.w[1][3])));
  let v5 = (v4 + vec4<f32>(bitcast<f32>(params.w[2][0])));
  let v6 = af_cos_f32_4_fast(v5);
  let v7 = abs(v6);
  out0[i] = v7;
  let ok = (abs(v1) <= vec4<f32>(6433.0)) & (abs(v2) < vec4<f32>(87.0)) & (abs(v5) <= vec4<f32>(6433.0));
  if (!all(ok)) {
    var bad = !ok;
    loop {
      if (!any(bad)) { break; }
      let l = select(select(select(3u, 2u, bad.z), 1u, bad.y), 0u, bad.x);
      let a0_l = a0[l];
      let v0_l = (a0_l * bitcast<f32>(params.w[1][1]));
      let v1_l = (v0_l + bitcast<f32>(params.w[1][2]));
      let v2_l = af_sin_f32(v1_l);
      let v3_l = af_exp_f32(v2_l);
      let v4_l = (v3_l * bitcast<f32>(params.w[1][3]));
      let v5_l = (v4_l + bitcast<f32>(params.w[2][0]));
      let v6_l = af_cos_f32(v5_l);
      let v7_l = abs(v6_l);
      out0[i][l] = v7_l;
      bad[l] = false;
    }
  }
}
