// kernel 0
struct Params { w: array<vec4<u32>, 2> }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> in1: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out0: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= params.w[0][0]) { return; }
  let a0 = in0[i];
  let a1 = in1[i];
  let v0 = (a0 * a1);
  let v1 = select((v0 + vec4<f32>(bitcast<f32>(params.w[1][1]))), vec4<f32>(bitcast<f32>(0x7fc00000u)), ((bitcast<vec4<u32>>(v0) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u)) | ((bitcast<vec4<u32>>(vec4<f32>(bitcast<f32>(params.w[1][1]))) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u)) | (((bitcast<vec4<u32>>(v0) & vec4<u32>(0x7fffffffu)) == vec4<u32>(0x7f800000u)) & (bitcast<vec4<u32>>(v0) == (bitcast<vec4<u32>>(vec4<f32>(bitcast<f32>(params.w[1][1]))) ^ vec4<u32>(0x80000000u)))));
  let v2 = exp(v1);
  out0[i] = v2;
}
