// kernel 0
struct Params { w: array<vec4<u32>, 2> }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> in0: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= params.w[0][0]) { return; }
  let a0 = in0[i];
  let v0 = (a0 * vec4<f32>(bitcast<f32>(params.w[1][1])));
  let v1 = exp(v0);
  in0[i] = v1;
}
