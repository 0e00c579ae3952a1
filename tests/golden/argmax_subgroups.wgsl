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
  let tpr = params.w[0][2];
  let slot = lid / tpr;
  let lane = lid % tpr;
  let row = (wid.x + wid.y * nwg.x) * params.w[0][3] + slot;
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
  let width = min(tpr, sgs);
  for (var s = width / 2u; s > 0u; s = s / 2u) {
    let o = subgroupShuffleXor(acc, s);
    let oi = subgroupShuffleXor(acc_i, s);
    if (af_better(o, oi, acc, acc_i)) { acc = o; acc_i = oi; }
  }
  let parts = tpr / width;
  if (lane % width == 0u) {
    red_v[slot * parts + lane / width] = acc;
    red_i[slot * parts + lane / width] = acc_i;
  }
  workgroupBarrier();
  for (var s = parts / 2u; s > 0u; s = s / 2u) {
    if (lane < s) {
      if (af_better(red_v[slot * parts + lane + s], red_i[slot * parts + lane + s], red_v[slot * parts + lane], red_i[slot * parts + lane])) { red_v[slot * parts + lane] = red_v[slot * parts + lane + s]; red_i[slot * parts + lane] = red_i[slot * parts + lane + s]; }
    }
    workgroupBarrier();
  }
  let first = slot * parts;
  if (valid && lane == 0u) {
    var q_row = row;
    let c0 = q_row;
    let c1 = 0u;
    let res = i32(red_i[first]);
    out0[row] = res;
  }
}
