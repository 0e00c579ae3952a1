struct Params { w: array<vec4<u32>, 6> }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read> in1: array<f32>;
@group(0) @binding(3) var<storage, read> in2: array<f32>;
@group(0) @binding(4) var<storage, read_write> out0: array<f32>;
fn af_div_f32(n: f32, d: f32) -> f32 {
  let s = select(select(1.0, 1.8446744e19, abs(d) < 5.421011e-20), 5.421011e-20,
                 abs(d) > 1.8446744e19);
  return (n * s) / (d * s);
}
fn af_half(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) - 0x00800000u); }
fn af_div_f32_4(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> { return vec4<f32>(af_div_f32(a.x, b.x), af_div_f32(a.y, b.y), af_div_f32(a.z, b.z), af_div_f32(a.w, b.w)); }
var<workgroup> red_v: array<f32, 256>;
var<workgroup> red_v1: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let n_out = params.w[0][0];
  let n_red = params.w[0][1];
  const tpr = 32u;
  let slot = lid / tpr;
  let lane = lid % tpr;
  let row = (wid.x + wid.y * nwg.x) * 8u + slot;
  let valid = row < n_out;
  var h_a0: array<f32, 2>;
  var h_v1: array<f32, 2>;
  var acc: f32 = f32(0);
  if (valid) {
    var q_row = row;
    let c0 = q_row;
    let b0 = bitcast<i32>(params.w[1][2]) + i32(c0) * bitcast<i32>(params.w[1][3]);
    var l_a0: array<f32, 2>;
    if (lane + 0u < n_red) {
      let j = 0u;
      let r = lane + 0u;
      var q_r = r;
      let c1 = q_r;
      let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
      l_a0[j] = a0;
    }
    if (lane + 32u < n_red) {
      let j = 1u;
      let r = lane + 32u;
      var q_r = r;
      let c1 = q_r;
      let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
      l_a0[j] = a0;
    }
    if (lane + 0u < n_red) {
      let j = 0u;
      let r = lane + 0u;
      var q_r = r;
      let c1 = q_r;
      let a0 = l_a0[j];
      h_a0[j] = a0;
      let x = a0;
      acc = (acc + x);
    }
    if (lane + 32u < n_red) {
      let j = 1u;
      let r = lane + 32u;
      var q_r = r;
      let c1 = q_r;
      let a0 = l_a0[j];
      h_a0[j] = a0;
      let x = a0;
      acc = (acc + x);
    }
  }
  red_v[lid] = acc;
  workgroupBarrier();
  for (var s = tpr / 2u; s > 0u; s = s / 2u) {
    if (lane < s) {
      red_v[lid] = (red_v[lid] + red_v[lid + s]);
    }
    workgroupBarrier();
  }
  acc = red_v[lid - lane];
  let row_v = acc;
  var acc1: f32 = f32(0);
  if (valid) {
    var q_row = row;
    let c0 = q_row;
    let res = row_v;
    let v0 = af_div_f32(res, bitcast<f32>(params.w[4][2]));
    if (lane + 0u < n_red) {
      let j = 0u;
      let r = lane + 0u;
      var q_r = r;
      let c1 = q_r;
      let a0 = h_a0[j];
      let v1 = select((a0 - v0), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(v0) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(v0) ^ u32(0u)))));
      let v2 = (v1 * v1);
      h_v1[j] = v1;
      let x = v2;
      acc1 = (acc1 + x);
    }
    if (lane + 32u < n_red) {
      let j = 1u;
      let r = lane + 32u;
      var q_r = r;
      let c1 = q_r;
      let a0 = h_a0[j];
      let v1 = select((a0 - v0), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(v0) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(v0) ^ u32(0u)))));
      let v2 = (v1 * v1);
      h_v1[j] = v1;
      let x = v2;
      acc1 = (acc1 + x);
    }
  }
  red_v1[lid] = acc1;
  workgroupBarrier();
  for (var s = tpr / 2u; s > 0u; s = s / 2u) {
    if (lane < s) {
      red_v1[lid] = (red_v1[lid] + red_v1[lid + s]);
    }
    workgroupBarrier();
  }
  acc1 = red_v1[lid - lane];
  let row_v1 = acc1;
  if (valid) {
    var q_row = row;
    let c0 = q_row;
    let b1 = bitcast<i32>(params.w[2][1]) + i32(c0) * bitcast<i32>(params.w[2][2]);
    let b2 = bitcast<i32>(params.w[3][0]) + i32(c0) * bitcast<i32>(params.w[3][1]);
    let res1 = row_v1;
    let v3 = af_div_f32(res1, bitcast<f32>(params.w[4][3]));
    let v4 = select((v3 + bitcast<f32>(params.w[5][0])), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(v3) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(bitcast<f32>(params.w[5][0])) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(v3) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(v3) == (bitcast<u32>(bitcast<f32>(params.w[5][0])) ^ u32(0x80000000u)))));
    let v5 = (f32(1.0) / sqrt(v4));
    var l_a1: array<f32, 2>;
    var l_a2: array<f32, 2>;
    if (lane + 0u < n_red) {
      let j = 0u;
      let r = lane + 0u;
      var q_r = r;
      let c1 = q_r;
      let a1 = in1[u32(b1 + i32(c1) * bitcast<i32>(params.w[2][3]))];
      l_a1[j] = a1;
      let a2 = in2[u32(b2 + i32(c1) * bitcast<i32>(params.w[3][2]))];
      l_a2[j] = a2;
    }
    if (lane + 32u < n_red) {
      let j = 1u;
      let r = lane + 32u;
      var q_r = r;
      let c1 = q_r;
      let a1 = in1[u32(b1 + i32(c1) * bitcast<i32>(params.w[2][3]))];
      l_a1[j] = a1;
      let a2 = in2[u32(b2 + i32(c1) * bitcast<i32>(params.w[3][2]))];
      l_a2[j] = a2;
    }
    if (lane + 0u < n_red) {
      let j = 0u;
      let r = lane + 0u;
      var q_r = r;
      let c1 = q_r;
      let v1 = h_v1[j];
      let a1 = l_a1[j];
      let a2 = l_a2[j];
      let v6 = (v1 * v5);
      let v7 = (v6 * a1);
      let v8 = select((v7 + a2), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(v7) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(a2) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(v7) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(v7) == (bitcast<u32>(a2) ^ u32(0x80000000u)))));
      out0[u32(bitcast<i32>(params.w[3][3]) + i32(c0) * bitcast<i32>(params.w[4][0]) + i32(c1) * bitcast<i32>(params.w[4][1]))] = v8;
    }
    if (lane + 32u < n_red) {
      let j = 1u;
      let r = lane + 32u;
      var q_r = r;
      let c1 = q_r;
      let v1 = h_v1[j];
      let a1 = l_a1[j];
      let a2 = l_a2[j];
      let v6 = (v1 * v5);
      let v7 = (v6 * a1);
      let v8 = select((v7 + a2), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(v7) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(a2) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(v7) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(v7) == (bitcast<u32>(a2) ^ u32(0x80000000u)))));
      out0[u32(bitcast<i32>(params.w[3][3]) + i32(c0) * bitcast<i32>(params.w[4][0]) + i32(c1) * bitcast<i32>(params.w[4][1]))] = v8;
    }
  }
}
