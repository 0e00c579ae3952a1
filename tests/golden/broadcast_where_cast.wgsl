// kernel 0
struct Params { w: array<vec4<u32>, 4> }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in0: array<i32>;
@group(0) @binding(2) var<storage, read> in1: array<f32>;
@group(0) @binding(3) var<storage, read> in2: array<f32>;
@group(0) @binding(4) var<storage, read_write> out0: array<i32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= params.w[0][0]) { return; }
  var q_i = i;
  let c1 = q_i % params.w[1][1]; q_i = q_i / params.w[1][1];
  let c0 = q_i;
  let a0 = in0[i];
  let a1 = in1[u32(bitcast<i32>(params.w[1][2]) + i32(c0) * bitcast<i32>(params.w[1][3]) + i32(c1) * bitcast<i32>(params.w[2][0]))];
  let a2 = in2[u32(bitcast<i32>(params.w[2][1]) + i32(c0) * bitcast<i32>(params.w[2][2]) + i32(c1) * bitcast<i32>(params.w[2][3]))];
  let v0 = (a0 > bitcast<i32>(params.w[3][0]));
  let v1 = (a1 * f32(a0));
  let v2 = select((v1 + a2), f32(bitcast<f32>(0x7fc00000u)), ((bitcast<u32>(v1) & 0x7fffffffu) > 0x7f800000u) | ((bitcast<u32>(a2) & 0x7fffffffu) > 0x7f800000u) | (((bitcast<u32>(v1) & u32(0x7fffffffu)) == u32(0x7f800000u)) & (bitcast<u32>(v1) == (bitcast<u32>(a2) ^ u32(0x80000000u)))));
  let v3 = select(bitcast<f32>(params.w[3][1]), v2, v0);
  let v4 = i32(v3);
  out0[i] = v4;
}
