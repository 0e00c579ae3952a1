// kernel 0
struct Params { w: array<vec4<u32>, 3> }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read_write> out0: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= params.w[0][0]) { return; }
  var q_i = i;
  let c1 = q_i % params.w[1][1]; q_i = q_i / params.w[1][1];
  let c0 = q_i;
  let a0 = in0[u32(bitcast<i32>(params.w[1][2]) + i32(c0) * bitcast<i32>(params.w[1][3]) + i32(c1) * bitcast<i32>(params.w[2][0]))];
  let v0 = (a0 + bitcast<f32>(params.w[2][1]));
  out0[i] = v0;
}
