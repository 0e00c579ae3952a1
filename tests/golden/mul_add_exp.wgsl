// kernel 0
struct Params { w: array<vec4<u32>, 2> }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> in1: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out0: array<vec4<f32>>;
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
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= params.w[0][0]) { return; }
  let a0 = in0[i];
  let a1 = in1[i];
  let v0 = (a0 * a1);
  let v1 = (v0 + vec4<f32>(bitcast<f32>(params.w[1][1])));
  let v2 = af_exp_f32_4(v1);
  out0[i] = v2;
}
