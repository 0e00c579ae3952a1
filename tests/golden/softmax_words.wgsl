struct Params { w: array<vec4<u32>, 3> }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out0: array<vec4<f32>>;
fn af_div_f32(n: f32, d: f32) -> f32 {
  let s = select(select(1.0, 1.8446744e19, abs(d) < 5.421011e-20), 5.421011e-20,
                 abs(d) > 1.8446744e19);
  return (n * s) / (d * s);
}
fn af_half(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) - 0x00800000u); }
fn af_div_f32_4(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> { return vec4<f32>(af_div_f32(a.x, b.x), af_div_f32(a.y, b.y), af_div_f32(a.z, b.z), af_div_f32(a.w, b.w)); }
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
var<workgroup> red_v: array<f32, 256>;
var<workgroup> red_v1: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(subgroup_size) sgs: u32) {
  let n_out = params.w[0][0];
  let n_red = params.w[0][1];
  const tpr = 256u;
  let slot = lid / tpr;
  let lane = lid % tpr;
  let row = (wid.x + wid.y * nwg.x) * 1u + slot;
  let valid = row < n_out;
  let n_w = n_red / 4u;
  var h_a0: array<vec4<f32>, 4>;
  var h_v1: array<vec4<f32>, 4>;
  var acc: f32 = bitcast<f32>(0xff800000u);
  if (valid) {
    var q_row = row;
    let c0 = q_row;
    let b0 = bitcast<i32>(params.w[1][2]) + i32(c0) * bitcast<i32>(params.w[1][3]);
    var l_a0: array<vec4<f32>, 4>;
    if (lane + 0u < n_w) {
      let j = 0u;
      let w = lane + 0u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0])) / 4u];
      l_a0[j] = a0;
    }
    if (lane + 256u < n_w) {
      let j = 1u;
      let w = lane + 256u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0])) / 4u];
      l_a0[j] = a0;
    }
    if (lane + 512u < n_w) {
      let j = 2u;
      let w = lane + 512u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0])) / 4u];
      l_a0[j] = a0;
    }
    if (lane + 768u < n_w) {
      let j = 3u;
      let w = lane + 768u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0])) / 4u];
      l_a0[j] = a0;
    }
    if (lane + 0u < n_w) {
      let j = 0u;
      let w = lane + 0u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = l_a0[j];
      h_a0[j] = a0;
      let x = a0;
      acc = select(max(acc, x.x), acc + x.x, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.x) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.y), acc + x.y, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.y) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.z), acc + x.z, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.z) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.w), acc + x.w, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.w) & 0x7fffffffu) > 0x7f800000u));
    }
    if (lane + 256u < n_w) {
      let j = 1u;
      let w = lane + 256u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = l_a0[j];
      h_a0[j] = a0;
      let x = a0;
      acc = select(max(acc, x.x), acc + x.x, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.x) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.y), acc + x.y, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.y) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.z), acc + x.z, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.z) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.w), acc + x.w, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.w) & 0x7fffffffu) > 0x7f800000u));
    }
    if (lane + 512u < n_w) {
      let j = 2u;
      let w = lane + 512u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = l_a0[j];
      h_a0[j] = a0;
      let x = a0;
      acc = select(max(acc, x.x), acc + x.x, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.x) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.y), acc + x.y, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.y) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.z), acc + x.z, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.z) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.w), acc + x.w, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.w) & 0x7fffffffu) > 0x7f800000u));
    }
    if (lane + 768u < n_w) {
      let j = 3u;
      let w = lane + 768u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = l_a0[j];
      h_a0[j] = a0;
      let x = a0;
      acc = select(max(acc, x.x), acc + x.x, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.x) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.y), acc + x.y, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.y) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.z), acc + x.z, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.z) & 0x7fffffffu) > 0x7f800000u));
      acc = select(max(acc, x.w), acc + x.w, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x.w) & 0x7fffffffu) > 0x7f800000u));
    }
  }
  if (128u < sgs) {
    let o = subgroupShuffleXor(acc, 128u);
    acc = select(max(acc, o), acc + o, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(o) & 0x7fffffffu) > 0x7f800000u));
  }
  if (64u < sgs) {
    let o = subgroupShuffleXor(acc, 64u);
    acc = select(max(acc, o), acc + o, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(o) & 0x7fffffffu) > 0x7f800000u));
  }
  if (32u < sgs) {
    let o = subgroupShuffleXor(acc, 32u);
    acc = select(max(acc, o), acc + o, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(o) & 0x7fffffffu) > 0x7f800000u));
  }
  if (16u < sgs) {
    let o = subgroupShuffleXor(acc, 16u);
    acc = select(max(acc, o), acc + o, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(o) & 0x7fffffffu) > 0x7f800000u));
  }
  if (8u < sgs) {
    let o = subgroupShuffleXor(acc, 8u);
    acc = select(max(acc, o), acc + o, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(o) & 0x7fffffffu) > 0x7f800000u));
  }
  if (4u < sgs) {
    let o = subgroupShuffleXor(acc, 4u);
    acc = select(max(acc, o), acc + o, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(o) & 0x7fffffffu) > 0x7f800000u));
  }
  {
    let o = subgroupShuffleXor(acc, 2u);
    acc = select(max(acc, o), acc + o, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(o) & 0x7fffffffu) > 0x7f800000u));
  }
  {
    let o = subgroupShuffleXor(acc, 1u);
    acc = select(max(acc, o), acc + o, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(o) & 0x7fffffffu) > 0x7f800000u));
  }
  if (tpr > sgs) {
    let parts = tpr / sgs;
    if (lid % sgs == 0u) {
      red_v[lid / sgs] = acc;
    }
    workgroupBarrier();
    acc = red_v[slot * parts];
    for (var m = 1u; m < parts; m = m + 1u) {
      acc = select(max(acc, red_v[slot * parts + m]), acc + red_v[slot * parts + m], ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(red_v[slot * parts + m]) & 0x7fffffffu) > 0x7f800000u));
    }
  }
  let row_v = acc;
  var acc1: f32 = f32(0);
  if (valid) {
    var q_row = row;
    let c0 = q_row;
    let res = row_v;
    if (lane + 0u < n_w) {
      let j = 0u;
      let w = lane + 0u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = h_a0[j];
      let v0 = select((a0 - vec4<f32>(res)), vec4<f32>(bitcast<f32>(0x7fc00000u)), ((bitcast<vec4<u32>>(a0) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u)) | ((bitcast<vec4<u32>>(vec4<f32>(res)) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u)) | (((bitcast<vec4<u32>>(a0) & vec4<u32>(0x7fffffffu)) == vec4<u32>(0x7f800000u)) & (bitcast<vec4<u32>>(a0) == (bitcast<vec4<u32>>(vec4<f32>(res)) ^ vec4<u32>(0u)))));
      let v1 = af_exp_f32_4(v0);
      h_v1[j] = v1;
      let x = v1;
      acc1 = (acc1 + x.x);
      acc1 = (acc1 + x.y);
      acc1 = (acc1 + x.z);
      acc1 = (acc1 + x.w);
    }
    if (lane + 256u < n_w) {
      let j = 1u;
      let w = lane + 256u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = h_a0[j];
      let v0 = select((a0 - vec4<f32>(res)), vec4<f32>(bitcast<f32>(0x7fc00000u)), ((bitcast<vec4<u32>>(a0) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u)) | ((bitcast<vec4<u32>>(vec4<f32>(res)) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u)) | (((bitcast<vec4<u32>>(a0) & vec4<u32>(0x7fffffffu)) == vec4<u32>(0x7f800000u)) & (bitcast<vec4<u32>>(a0) == (bitcast<vec4<u32>>(vec4<f32>(res)) ^ vec4<u32>(0u)))));
      let v1 = af_exp_f32_4(v0);
      h_v1[j] = v1;
      let x = v1;
      acc1 = (acc1 + x.x);
      acc1 = (acc1 + x.y);
      acc1 = (acc1 + x.z);
      acc1 = (acc1 + x.w);
    }
    if (lane + 512u < n_w) {
      let j = 2u;
      let w = lane + 512u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = h_a0[j];
      let v0 = select((a0 - vec4<f32>(res)), vec4<f32>(bitcast<f32>(0x7fc00000u)), ((bitcast<vec4<u32>>(a0) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u)) | ((bitcast<vec4<u32>>(vec4<f32>(res)) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u)) | (((bitcast<vec4<u32>>(a0) & vec4<u32>(0x7fffffffu)) == vec4<u32>(0x7f800000u)) & (bitcast<vec4<u32>>(a0) == (bitcast<vec4<u32>>(vec4<f32>(res)) ^ vec4<u32>(0u)))));
      let v1 = af_exp_f32_4(v0);
      h_v1[j] = v1;
      let x = v1;
      acc1 = (acc1 + x.x);
      acc1 = (acc1 + x.y);
      acc1 = (acc1 + x.z);
      acc1 = (acc1 + x.w);
    }
    if (lane + 768u < n_w) {
      let j = 3u;
      let w = lane + 768u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let a0 = h_a0[j];
      let v0 = select((a0 - vec4<f32>(res)), vec4<f32>(bitcast<f32>(0x7fc00000u)), ((bitcast<vec4<u32>>(a0) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u)) | ((bitcast<vec4<u32>>(vec4<f32>(res)) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u)) | (((bitcast<vec4<u32>>(a0) & vec4<u32>(0x7fffffffu)) == vec4<u32>(0x7f800000u)) & (bitcast<vec4<u32>>(a0) == (bitcast<vec4<u32>>(vec4<f32>(res)) ^ vec4<u32>(0u)))));
      let v1 = af_exp_f32_4(v0);
      h_v1[j] = v1;
      let x = v1;
      acc1 = (acc1 + x.x);
      acc1 = (acc1 + x.y);
      acc1 = (acc1 + x.z);
      acc1 = (acc1 + x.w);
    }
  }
  if (128u < sgs) {
    let o = subgroupShuffleXor(acc1, 128u);
    acc1 = (acc1 + o);
  }
  if (64u < sgs) {
    let o = subgroupShuffleXor(acc1, 64u);
    acc1 = (acc1 + o);
  }
  if (32u < sgs) {
    let o = subgroupShuffleXor(acc1, 32u);
    acc1 = (acc1 + o);
  }
  if (16u < sgs) {
    let o = subgroupShuffleXor(acc1, 16u);
    acc1 = (acc1 + o);
  }
  if (8u < sgs) {
    let o = subgroupShuffleXor(acc1, 8u);
    acc1 = (acc1 + o);
  }
  if (4u < sgs) {
    let o = subgroupShuffleXor(acc1, 4u);
    acc1 = (acc1 + o);
  }
  {
    let o = subgroupShuffleXor(acc1, 2u);
    acc1 = (acc1 + o);
  }
  {
    let o = subgroupShuffleXor(acc1, 1u);
    acc1 = (acc1 + o);
  }
  if (tpr > sgs) {
    let parts = tpr / sgs;
    if (lid % sgs == 0u) {
      red_v1[lid / sgs] = acc1;
    }
    workgroupBarrier();
    acc1 = red_v1[slot * parts];
    for (var m = 1u; m < parts; m = m + 1u) {
      acc1 = (acc1 + red_v1[slot * parts + m]);
    }
  }
  let row_v1 = acc1;
  if (valid) {
    var q_row = row;
    let c0 = q_row;
    let res1 = row_v1;
    if (lane + 0u < n_w) {
      let j = 0u;
      let w = lane + 0u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let v1 = h_v1[j];
      let v2 = af_div_f32_4(v1, vec4<f32>(res1));
      out0[u32(bitcast<i32>(params.w[2][1]) + i32(c0) * bitcast<i32>(params.w[2][2]) + i32(c1) * bitcast<i32>(params.w[2][3])) / 4u] = v2;
    }
    if (lane + 256u < n_w) {
      let j = 1u;
      let w = lane + 256u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let v1 = h_v1[j];
      let v2 = af_div_f32_4(v1, vec4<f32>(res1));
      out0[u32(bitcast<i32>(params.w[2][1]) + i32(c0) * bitcast<i32>(params.w[2][2]) + i32(c1) * bitcast<i32>(params.w[2][3])) / 4u] = v2;
    }
    if (lane + 512u < n_w) {
      let j = 2u;
      let w = lane + 512u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let v1 = h_v1[j];
      let v2 = af_div_f32_4(v1, vec4<f32>(res1));
      out0[u32(bitcast<i32>(params.w[2][1]) + i32(c0) * bitcast<i32>(params.w[2][2]) + i32(c1) * bitcast<i32>(params.w[2][3])) / 4u] = v2;
    }
    if (lane + 768u < n_w) {
      let j = 3u;
      let w = lane + 768u;
      let r = w * 4u;
      var q_r = r;
      let c1 = q_r;
      let v1 = h_v1[j];
      let v2 = af_div_f32_4(v1, vec4<f32>(res1));
      out0[u32(bitcast<i32>(params.w[2][1]) + i32(c0) * bitcast<i32>(params.w[2][2]) + i32(c1) * bitcast<i32>(params.w[2][3])) / 4u] = v2;
    }
  }
}
