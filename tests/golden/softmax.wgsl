// kernel 0
struct Params { w: array<vec4<u32>, 3> }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read_write> out0: array<f32>;
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
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let n_out = params.w[0][0];
  let n_red = params.w[0][1];
  const tpr = 16u;
  let slot = lid / tpr;
  let lane = lid % tpr;
  let row = (wid.x + wid.y * nwg.x) * 16u + slot;
  let valid = row < n_out;
  var acc: f32 = bitcast<f32>(0xff800000u);
  if (valid) {
    var q_row = row;
    let c0 = q_row;
    let b0 = bitcast<i32>(params.w[1][2]) + i32(c0) * bitcast<i32>(params.w[1][3]);
    for (var p0 = lane; p0 < n_red; p0 = p0 + tpr * 1024u) {
      let p1 = min(n_red, p0 + tpr * 1024u);
      var p = p0;
      for (; p + 3u * tpr < p1; p = p + 4u * tpr) {
        {
          let r = p;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let x = a0;
          acc = select(max(acc, x), acc + x, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u));
        }
        {
          let r = p + 1u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let x = a0;
          acc = select(max(acc, x), acc + x, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u));
        }
        {
          let r = p + 2u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let x = a0;
          acc = select(max(acc, x), acc + x, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u));
        }
        {
          let r = p + 3u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let x = a0;
          acc = select(max(acc, x), acc + x, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u));
        }
      }
      for (; p < p1; p = p + tpr) {
        let r = p;
        var q_r = r;
        let c1 = q_r;
        let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
        let x = a0;
        acc = select(max(acc, x), acc + x, ((bitcast<u32>(acc) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u));
      }
    }
  }
  red_v[lid] = acc;
  workgroupBarrier();
  for (var s = tpr / 2u; s > 0u; s = s / 2u) {
    if (lane < s) {
      red_v[lid] = select(max(red_v[lid], red_v[lid + s]), red_v[lid] + red_v[lid + s], ((bitcast<u32>(red_v[lid]) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(red_v[lid + s]) & 0x7fffffffu) > 0x7f800000u));
    }
    workgroupBarrier();
  }
  acc = red_v[lid - lane];
  let row_v = acc;
  var acc1: f32 = f32(0);
  if (valid) {
    var q_row = row;
    let c0 = q_row;
    let b0 = bitcast<i32>(params.w[1][2]) + i32(c0) * bitcast<i32>(params.w[1][3]);
    let res = row_v;
    for (var p0 = lane; p0 < n_red; p0 = p0 + tpr * 1024u) {
      let p1 = min(n_red, p0 + tpr * 1024u);
      var p = p0;
      for (; p + 3u * tpr < p1; p = p + 4u * tpr) {
        {
          let r = p;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let v0 = select((a0 - res), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(res) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(res) ^ u32(0u)))));
          let v1 = af_exp_f32(v0);
          let x = v1;
          acc1 = (acc1 + x);
        }
        {
          let r = p + 1u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let v0 = select((a0 - res), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(res) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(res) ^ u32(0u)))));
          let v1 = af_exp_f32(v0);
          let x = v1;
          acc1 = (acc1 + x);
        }
        {
          let r = p + 2u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let v0 = select((a0 - res), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(res) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(res) ^ u32(0u)))));
          let v1 = af_exp_f32(v0);
          let x = v1;
          acc1 = (acc1 + x);
        }
        {
          let r = p + 3u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let v0 = select((a0 - res), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(res) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(res) ^ u32(0u)))));
          let v1 = af_exp_f32(v0);
          let x = v1;
          acc1 = (acc1 + x);
        }
      }
      for (; p < p1; p = p + tpr) {
        let r = p;
        var q_r = r;
        let c1 = q_r;
        let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
        let v0 = select((a0 - res), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(res) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(res) ^ u32(0u)))));
        let v1 = af_exp_f32(v0);
        let x = v1;
        acc1 = (acc1 + x);
      }
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
    let b0 = bitcast<i32>(params.w[1][2]) + i32(c0) * bitcast<i32>(params.w[1][3]);
    let res = row_v;
    let res1 = row_v1;
    for (var p0 = lane; p0 < n_red; p0 = p0 + tpr * 1024u) {
      let p1 = min(n_red, p0 + tpr * 1024u);
      var p = p0;
      for (; p + 3u * tpr < p1; p = p + 4u * tpr) {
        {
          let r = p;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let v0 = select((a0 - res), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(res) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(res) ^ u32(0u)))));
          let v1 = af_exp_f32(v0);
          let v2 = af_div_f32(v1, res1);
          out0[u32(bitcast<i32>(params.w[2][1]) + i32(c0) * bitcast<i32>(params.w[2][2]) + i32(c1) * bitcast<i32>(params.w[2][3]))] = v2;
        }
        {
          let r = p + 1u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let v0 = select((a0 - res), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(res) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(res) ^ u32(0u)))));
          let v1 = af_exp_f32(v0);
          let v2 = af_div_f32(v1, res1);
          out0[u32(bitcast<i32>(params.w[2][1]) + i32(c0) * bitcast<i32>(params.w[2][2]) + i32(c1) * bitcast<i32>(params.w[2][3]))] = v2;
        }
        {
          let r = p + 2u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let v0 = select((a0 - res), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(res) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(res) ^ u32(0u)))));
          let v1 = af_exp_f32(v0);
          let v2 = af_div_f32(v1, res1);
          out0[u32(bitcast<i32>(params.w[2][1]) + i32(c0) * bitcast<i32>(params.w[2][2]) + i32(c1) * bitcast<i32>(params.w[2][3]))] = v2;
        }
        {
          let r = p + 3u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let v0 = select((a0 - res), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(res) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(res) ^ u32(0u)))));
          let v1 = af_exp_f32(v0);
          let v2 = af_div_f32(v1, res1);
          out0[u32(bitcast<i32>(params.w[2][1]) + i32(c0) * bitcast<i32>(params.w[2][2]) + i32(c1) * bitcast<i32>(params.w[2][3]))] = v2;
        }
      }
      for (; p < p1; p = p + tpr) {
        let r = p;
        var q_r = r;
        let c1 = q_r;
        let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
        let v0 = select((a0 - res), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(a0) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(res) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(a0) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(a0) == (bitcast<u32>(res) ^ u32(0u)))));
        let v1 = af_exp_f32(v0);
        let v2 = af_div_f32(v1, res1);
        out0[u32(bitcast<i32>(params.w[2][1]) + i32(c0) * bitcast<i32>(params.w[2][2]) + i32(c1) * bitcast<i32>(params.w[2][3]))] = v2;
      }
    }
  }
}
