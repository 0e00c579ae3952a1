"""``af.nonzero(x)``: the indices of non-zero elements, whose count depends on data.

Every other op knows its output's shape when it is called; ``nonzero`` cannot, so it
**waits** for one number: it records a running count of the non-zero elements (a fused
comparison and a log2(n)-step scan), reads back the total (the work queued before it on
this stream runs then), and only then records the kernel that writes the indices (a
custom WGSL stream-compaction kernel, :func:`custom_kernel`) and their split into one
int32 tensor per axis. The result is lazy again: nothing more is read until you read it.

How it waits follows the rule of the blocking door (``docs/concepts/interop.md``):
outside a running event loop the read blocks and ``af.nonzero(x)`` returns the standard's
tuple of tensors; inside a running asyncio or trio loop it returns an awaitable of that
tuple, ``await af.nonzero(x)``, so no task is stalled. :data:`OrAwaitable` is that
return type. :func:`with_positions` is the count-then-compact step, which the set
functions (:mod:`asyncfusion.api.sets`) share.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias, TypeVar, Union

import numpy as np

from .._core.dtype import DType
from .._core.errors import ShapeError
from .._debug import in_event_loop
from ..extend.custom_kernel import Spec, custom_kernel
from ..lazy.tensor import Tensor, not_a_tensor
from .manipulation import cumulative_sum

__all__ = ["nonzero", "with_positions", "OrAwaitable", "groups_over_first", "thread_wgsl"]

R = TypeVar("R")
OrAwaitable: TypeAlias = Union[R, Awaitable[R]]
"""What a function whose result's size depends on data returns: the result itself outside
a running event loop (a blocking read of that size), an awaitable of it inside one. Code
that runs in one place knows which; code that may run in both narrows with
``inspect.isawaitable``."""

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


def with_positions(flag: Tensor, what: str,
                   then: Callable[[Tensor, Tensor], R]) -> OrAwaitable[R]:
    """``then(positions, count)``: the positions of the true elements of the 1-D bool
    ``flag`` (int32, ascending) and the running count of true elements (int32, ``flag``'s
    length). The number of positions is read from the device first: blocking outside an
    event loop, with an ``await`` (the awaitable returned) inside one (see the module);
    ``what`` names the caller in the error of a failed read."""
    count = cumulative_sum(flag)
    if in_event_loop():
        return _after_awaited_total(flag, count, then)
    total = count[-1:]._read_sync(what, f"await {what}") if flag.shape[0] else None
    return _compacted(flag, count, then, 0 if total is None else int(total[0]))


async def _after_awaited_total(flag: Tensor, count: Tensor,
                               then: Callable[[Tensor, Tensor], R]) -> R:
    k = int((await count[-1:].to_data())[0]) if flag.shape[0] else 0
    return _compacted(flag, count, then, k)


def _compacted(flag: Tensor, count: Tensor, then: Callable[[Tensor, Tensor], R], k: int) -> R:
    positions = _compact(flag, count, params=(flag.shape[0], k))
    assert isinstance(positions, Tensor)
    return then(positions, count)


def nonzero(x: Tensor, /) -> OrAwaitable[tuple[Tensor, ...]]:
    """One int32 tensor per axis of ``x`` with the coordinates of its non-zero (true)
    elements in C order, as ``numpy.nonzero``.

    Their number depends on the data, so it is read from the device first (see the
    module): outside a running event loop ``af.nonzero(x)`` blocks for it and returns the
    tuple, the standard's function; inside a running asyncio or trio loop it returns an
    awaitable of the tuple: ``rows, cols = await af.nonzero(x)``. Either way the
    coordinates themselves are lazy tensors."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, "nonzero")
    if x.ndim == 0:
        raise ShapeError("nonzero of a 0-d tensor is not defined (the Array API forbids "
                         "it); reshape it to (1,) first")
    flag = (x if x.dtype is DType.bool else x != 0).reshape(-1)
    return with_positions(flag, "af.nonzero(x)", lambda flat, _: _coordinates(flat, x.shape))


def _coordinates(flat: Tensor, shape: tuple[int, ...]) -> tuple[Tensor, ...]:
    coords = []
    for size in reversed(shape[1:]):
        coords.append(flat % size)
        flat = flat // size
    coords.append(flat)
    return tuple(reversed(coords))


_compact = custom_kernel(
    "nonzero_compact", wgsl=_COMPACT, inputs=2,
    outputs=lambda flag, count, n, k: ((k,), "int32"),
    workgroups=groups_over_first,
    numpy=lambda flag, count, n, k: np.flatnonzero(flag).astype(np.int32))
