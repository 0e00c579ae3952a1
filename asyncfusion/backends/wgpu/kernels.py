"""WGSL for the ops that are not element-wise: reductions along one axis and concatenation.

Both are plain, unfused kernels; like the element-wise ones they read every size from the
params block so one text serves all shapes.
"""

from __future__ import annotations

from ...dtype import DType
from .codegen import isnan

__all__ = ["render_reduce", "render_cat_slice", "REDUCE_CHUNK"]

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
    "max": "acc = {sel}max(acc, x){nan};",
    "min": "acc = {sel}min(acc, x){nan};",
}

REDUCE_CHUNK = 1024


def render_reduce(combine: str, src: DType, acc: DType, divide: bool, workgroup: int) -> str:
    """One pass of a reduction over the R axis of a (outer, R, inner) view.

    Each thread folds one chunk of at most ``params[3]`` elements, writing an
    (outer, ceil(R / chunk), inner) result; the backend repeats passes until one chunk
    is left (a single thread looping over a long axis is slow, and lavapipe stops such
    loops at 65535 iterations). params: [outputs, R, inner, chunk, divisor].
    """
    acc_t = acc.wgsl
    load = f"{acc_t}(src[base + k * inner])"
    if acc.is_float and combine in ("max", "min"):
        nan = f", acc + x, {isnan('x', False)} || {isnan('acc', False)})"
        step = _COMBINE[combine].format(sel="select(", nan=nan)
    else:
        step = _COMBINE[combine].format(sel="", nan="")
    if combine == "sum":
        init, first = f"{acc_t}(0)", "k0"
    else:
        init, first = load.replace("k * inner", "k0 * inner"), "k0 + 1u"
    result = "acc / f32(params.w[1][0])" if divide else "acc"
    head = _HEAD.format(src=src.storage, dst=acc.storage, wg=workgroup).replace(
        "array<vec4<u32>, 1>", "array<vec4<u32>, 2>")
    return head + f"""  let r = params.w[0][1];
  let inner = params.w[0][2];
  let chunk = params.w[0][3];
  let chunks = max((r + chunk - 1u) / chunk, 1u);
  let rest = i / inner;
  let k0 = (rest % chunks) * chunk;
  let k1 = min(r, k0 + chunk);
  let base = (rest / chunks) * r * inner + i % inner;
  var acc = {init};
  for (var k = {first}; k < k1; k = k + 1u) {{
    let x = {load};
    {step}
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
