// kernel 0
struct Params { w: array<vec4<u32>, 3> }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read_write> out0: array<i32>;
var<workgroup> red_v: array<f32, 256>;
var<workgroup> red_i: array<u32, 256>;
fn af_better(x: f32, xi: u32, a: f32, ai: u32) -> bool {
  let xn = ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u);
  let an = ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u);
  if (xn || an) { return xn && (!an || xi < ai); }
  return x > a || (x == a && xi < ai);
}
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(subgroup_size) sgs: u32) {
  let n_out = params.w[0][0];
  let n_red = params.w[0][1];
  const tpr = 16u;
  let slot = lid / tpr;
  let lane = lid % tpr;
  let row = (wid.x + wid.y * nwg.x) * 16u + slot;
  let valid = row < n_out;
  var acc: f32 = bitcast<f32>(0xff800000u);
  var acc_i: u32 = 0xffffffffu;
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
          let v0 = (a0 * bitcast<f32>(params.w[2][1]));
          let x = v0;
          if (af_better(x, r, acc, acc_i)) { acc = x; acc_i = r; }
        }
        {
          let r = p + 1u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let v0 = (a0 * bitcast<f32>(params.w[2][1]));
          let x = v0;
          if (af_better(x, r, acc, acc_i)) { acc = x; acc_i = r; }
        }
        {
          let r = p + 2u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let v0 = (a0 * bitcast<f32>(params.w[2][1]));
          let x = v0;
          if (af_better(x, r, acc, acc_i)) { acc = x; acc_i = r; }
        }
        {
          let r = p + 3u * tpr;
          var q_r = r;
          let c1 = q_r;
          let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
          let v0 = (a0 * bitcast<f32>(params.w[2][1]));
          let x = v0;
          if (af_better(x, r, acc, acc_i)) { acc = x; acc_i = r; }
        }
      }
      for (; p < p1; p = p + tpr) {
        let r = p;
        var q_r = r;
        let c1 = q_r;
        let a0 = in0[u32(b0 + i32(c1) * bitcast<i32>(params.w[2][0]))];
        let v0 = (a0 * bitcast<f32>(params.w[2][1]));
        let x = v0;
        if (af_better(x, r, acc, acc_i)) { acc = x; acc_i = r; }
      }
    }
  }
  if (8u < sgs) {
    let o = subgroupShuffleXor(acc, 8u);
    let oi = subgroupShuffleXor(acc_i, 8u);
    if (af_better(o, oi, acc, acc_i)) { acc = o; acc_i = oi; }
  }
  if (4u < sgs) {
    let o = subgroupShuffleXor(acc, 4u);
    let oi = subgroupShuffleXor(acc_i, 4u);
    if (af_better(o, oi, acc, acc_i)) { acc = o; acc_i = oi; }
  }
  {
    let o = subgroupShuffleXor(acc, 2u);
    let oi = subgroupShuffleXor(acc_i, 2u);
    if (af_better(o, oi, acc, acc_i)) { acc = o; acc_i = oi; }
  }
  {
    let o = subgroupShuffleXor(acc, 1u);
    let oi = subgroupShuffleXor(acc_i, 1u);
    if (af_better(o, oi, acc, acc_i)) { acc = o; acc_i = oi; }
  }
  if (tpr > sgs) {
    let parts = tpr / sgs;
    if (lid % sgs == 0u) {
      red_v[lid / sgs] = acc;
      red_i[lid / sgs] = acc_i;
    }
    workgroupBarrier();
    acc = red_v[slot * parts];
    acc_i = red_i[slot * parts];
    for (var m = 1u; m < parts; m = m + 1u) {
      if (af_better(red_v[slot * parts + m], red_i[slot * parts + m], acc, acc_i)) { acc = red_v[slot * parts + m]; acc_i = red_i[slot * parts + m]; }
    }
  }
  let row_v = acc;
  let row_i = acc_i;
  if (valid && lane == 0u) {
    var q_row = row;
    let c0 = q_row;
    let c1 = 0u;
    let res = i32(row_i);
    out0[row] = res;
  }
}
