"""``await af.nonzero(x)``: the indices of non-zero elements, whose count depends on data.

Every other op knows its output's shape when it is called; ``nonzero`` cannot, so it is a
coroutine function that **waits**: it records a running count of the non-zero elements
(a fused comparison and a log2(n)-step scan), reads back the total (one ``await``: the
work queued before it on this task runs then), and only then records the kernel that
writes the indices (a custom WGSL stream-compaction kernel, :func:`custom_kernel`) and
their split into one int32 tensor per axis. The result is lazy again: nothing more is
read until you read it. :func:`flag_positions` is that count-then-compact step, which
the set functions (:mod:`asyncfusion.api.sets`) share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._core.dtype import DType
from .._core.errors import ShapeError
from ..extend.custom_kernel import Spec, custom_kernel
from ..lazy.tensor import Tensor
from .manipulation import cumulative_sum

__all__ = ["nonzero", "flag_positions", "groups_over_first", "thread_wgsl"]

WG = 256  # threads per workgroup of the kernels thread_wgsl writes
_MAX_X = 65535  # workgroups per dimension every adapter allows


def thread_wgsl(fields: str, inputs: Sequence[tuple[str, str]], body: str,
                helpers: str = "") -> str:
    """A custom kernel's WGSL with one thread per element: a params struct of ``fields``,
    ``inputs`` (name, element type) from binding 1, an ``array<i32>`` output ``out`` after
    them, ``helpers`` (functions), and ``main`` running ``body`` with the thread's index
    ``i`` (launch it with :func:`groups_over_first`)."""
    decls = "".join(f"@group(0) @binding({b}) var<storage, read> {name}: array<{ty}>;\n"
                    for b, (name, ty) in enumerate(inputs, start=1))
    return f"""
struct P {{ {fields} }}
@group(0) @binding(0) var<uniform> p: P;
{decls}@group(0) @binding({len(inputs) + 1}) var<storage, read_write> out: array<i32>;
{helpers}
@compute @workgroup_size({WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>,
        @builtin(num_workgroups) nw: vec3<u32>) {{
    let i = g.x + g.y * nw.x * {WG}u;
{body}
}}
"""


_COMPACT = thread_wgsl("n: u32", [("flag", "u32"), ("count", "i32")], """
    if (i < p.n && flag[i] != 0u) {
        out[count[i] - 1] = i32(i);
    }""")


def groups_over_first(first: Spec, *_: Any) -> tuple[int, int]:
    """Workgroups for one thread per element of a kernel's first input: ``WG`` a group,
    spread over y past the adapter's 65,535 per dimension (the kernel's index is
    ``g.x + g.y * nw.x * WG``)."""
    g = -(-math.prod(first.shape) // WG)
    return min(g, _MAX_X), -(-g // _MAX_X)


async def flag_positions(flag: Tensor) -> tuple[Tensor, Tensor]:
    """The positions of the true elements of the 1-D bool ``flag`` (int32, ascending), and
    the running count of true elements (int32, ``flag``'s length). Waits for the count:
    the number of positions depends on the data."""
    n = flag.shape[0]
    count = cumulative_sum(flag)
    k = int((await count[-1:].to_data())[0]) if n else 0
    positions = _compact(flag, count, params=(n, k))
    assert isinstance(positions, Tensor)
    return positions, count


async def nonzero(x: Tensor) -> tuple[Tensor, ...]:
    """One int32 tensor per axis of ``x`` with the coordinates of its non-zero (true)
    elements in C order, as ``numpy.nonzero``. Waits for the count (see the module)."""
    if type(x) is not Tensor:
        raise TypeError(f"nonzero needs an asyncfusion Tensor, not {type(x).__name__}")
    if x.ndim == 0:
        raise ShapeError("nonzero of a 0-d tensor is not defined (the Array API forbids "
                         "it); reshape it to (1,) first")
    flat, _ = await flag_positions((x if x.dtype is DType.bool else x != 0).reshape(-1))
    coords = []
    for size in reversed(x.shape[1:]):
        coords.append(flat % size)
        flat = flat // size
    coords.append(flat)
    return tuple(reversed(coords))


_compact = custom_kernel(
    "nonzero_compact", wgsl=_COMPACT, inputs=2,
    outputs=lambda flag, count, n, k: ((k,), "int32"),
    workgroups=groups_over_first,
    numpy=lambda flag, count, n, k: np.flatnonzero(flag).astype(np.int32))
