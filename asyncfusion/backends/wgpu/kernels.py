"""WGSL for the ops that are not element-wise: reductions along one axis and concatenation.

Both are plain, unfused kernels; like the element-wise ones they read every size from the
params block so one text serves all shapes.
"""

from __future__ import annotations

from ...dtype import DType
from .codegen import isnan

__all__ = ["render_reduce", "render_cat_slice"]

_HEAD = """struct Params {{ w: array<vec4<u32>, 1> }}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<{src}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{dst}>;
@compute @workgroup_size({wg})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
  let i = gid.x + gid.y * nwg.x * {wg}u;
  if (i >= params.w[0][0]) {{ return; }}
"""

_COMBINE = {
    "sum": "acc = acc + x;",
    "mean": "acc = acc + x;",
    "max": "acc = {sel}max(acc, x){nan};",
    "min": "acc = {sel}min(acc, x){nan};",
}


def render_reduce(op: str, dtype: DType, workgroup: int) -> str:
    """One thread per output element: loop over the reduced axis of a (outer, R, inner) view.

    params: [outputs, R, inner]. ``mean`` accumulates in f32 and divides by R.
    """
    acc_t = "f32" if op == "mean" else dtype.wgsl
    load = f"{acc_t}(src[base + k * inner])"
    if dtype.is_float and op in ("max", "min"):
        nan = f", acc + x, {isnan('x', False)} || {isnan('acc', False)})"
        combine = _COMBINE[op].format(sel="select(", nan=nan)
    else:
        combine = _COMBINE[op].format(sel="", nan="")
    if op in ("sum", "mean"):
        init, start = f"{acc_t}(0)", "0u"
    else:
        init, start = load.replace("k * inner", "0u"), "1u"
    result = "acc / f32(r)" if op == "mean" else "acc"
    return _HEAD.format(src=dtype.storage, dst=acc_t, wg=workgroup) + f"""  let r = params.w[0][1];
  let inner = params.w[0][2];
  let base = (i / inner) * r * inner + i % inner;
  var acc = {init};
  for (var k = {start}; k < r; k = k + 1u) {{
    let x = {load};
    {combine}
  }}
  dst[i] = {result};
}}
"""


def render_cat_slice(workgroup: int) -> str:
    """Copy one input of a concatenation into its slice of the output (bit copy, any dtype).

    params: [elements, input row, output row, offset within output row].
    """
    return _HEAD.format(src="u32", dst="u32", wg=workgroup) + """  let row = params.w[0][1];
  let out_row = params.w[0][2];
  let offset = params.w[0][3];
  dst[(i / row) * out_row + offset + i % row] = src[i];
}
"""
