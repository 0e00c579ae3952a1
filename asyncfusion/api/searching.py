"""``searchsorted``: where values would go in a sorted 1-D tensor, one binary search each.

One custom WGSL kernel (:func:`~asyncfusion.custom_kernel`) a dtype: a thread per value
of ``x2`` runs a binary search over ``x1`` (at most 32 steps) and writes the insertion
index as int32, the index dtype ``argmax`` and ``nonzero`` give. The order is numpy's
sort order: NaN after every other value (NaNs equal to each other), ``-0.0`` equal to
``0.0``. float16 is compared as float32 (exactly); float64 and int64 run where the adapter
holds them. The numpy backend runs ``numpy.searchsorted``.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import numpy as np

from .._core.dtype import DType, promote
from .._core.errors import DTypeError, LimitError, ShapeError, device_mismatch
from ..extend.custom_kernel import CustomKernel, Spec, custom_kernel
from ..lazy.record import scalar_dtype
from ..lazy.tensor import Tensor
from ..codegen.wgsl.types import STORAGE_TYPE, isnan
from .creation import tensor
from .indexing import take
from .nonzero import groups_over_first, thread_wgsl

__all__ = ["searchsorted"]

_MAX_N = 2**31 - 1  # insertion indices are int32


def _key(dtype: DType) -> DType:
    """The type a kernel compares values of ``dtype`` in (float16 widened, exactly)."""
    return DType.float32 if dtype is DType.float16 else dtype


def _wgsl(dtype: DType) -> str:
    key = _key(dtype)
    ty = STORAGE_TYPE[key]
    if key.is_float:  # numpy's order: NaN last, NaNs equal
        before = (f"(a < b) || ({isnan('b', False, key)} && !{isnan('a', False, key)})")
    else:
        before = "a < b"
    enable = "enable f16;\n" if dtype is DType.float16 else ""
    store = STORAGE_TYPE[dtype]
    return enable + thread_wgsl(
        "n1: u32, n2: u32, right: u32", [("values", store), ("sorted", store)], f"""
    if (i >= p.n2) {{
        return;
    }}
    let v = {ty}(values[i]);
    var lo = 0u;
    var hi = p.n1;
    while (lo < hi) {{
        let mid = (lo + hi) / 2u;
        let s = {ty}(sorted[mid]);
        var go_right = before(s, v);
        if (p.right != 0u) {{
            go_right = !before(v, s);
        }}
        if (go_right) {{
            lo = mid + 1u;
        }} else {{
            hi = mid;
        }}
    }}
    out[i] = i32(lo);""", helpers=f"""
fn before(a: {ty}, b: {ty}) -> bool {{
    return {before};
}}
""")


def _twin(values: np.ndarray, sorted_: np.ndarray, n1: int, n2: int,
          right: int) -> np.ndarray:
    side: Literal["left", "right"] = "right" if right else "left"
    return np.searchsorted(sorted_, values, side=side).astype(np.int32)


def _outputs(values: Spec, sorted_: Spec, *_: Any) -> tuple[tuple[int, ...], str]:
    return values.shape, "int32"


@functools.cache
def _kernel(dtype: DType) -> CustomKernel:
    return custom_kernel(f"searchsorted_{dtype.label}", wgsl=_wgsl(dtype), inputs=2,
                         outputs=_outputs, workgroups=groups_over_first, numpy=_twin)


def searchsorted(x1: Tensor, x2: Tensor | int | float, /, *,
                 side: Literal["left", "right"] = "left",
                 sorter: Tensor | None = None) -> Tensor:
    """The indices at which the values of ``x2`` would be inserted into the sorted 1-D
    ``x1`` to keep it sorted (``numpy.searchsorted``): ``side="left"`` the first such
    index, ``"right"`` the last. ``sorter``: int32 indices that sort ``x1`` (as from
    ``argsort``). int32 of ``x2``'s shape; a Python scalar ``x2`` gives a 0-d result."""
    what = "searchsorted"
    if type(x1) is not Tensor:
        raise TypeError(f"{what} needs an asyncfusion Tensor x1, not {type(x1).__name__}")
    if isinstance(x2, (bool, int, float)):
        x2 = tensor(x2, scalar_dtype(x2, x1.dtype, what), device=x1.device)
    if type(x2) is not Tensor:
        raise TypeError(f"{what}: x2 must be an asyncfusion Tensor or a Python int or float, "
                        f"not {type(x2).__name__}")
    if x2.device is not x1.device:
        raise device_mismatch(f"{what}: x2 (t{x2.id})", x1.device, x2.device)
    if side not in ("left", "right"):
        raise ValueError(f"{what}: side must be 'left' or 'right', not {side!r}")
    if x1.ndim != 1:
        raise ShapeError(f"{what}: x1 must be 1-D (the sorted values), got shape {x1.shape}; "
                         "search each row on its own, or flatten it if it is sorted whole")
    if x1.shape[0] > _MAX_N:
        raise LimitError(f"{what}: x1 has {x1.shape[0]} elements; int32 indices reach "
                         f"{_MAX_N} at most")
    dtype = promote(x1.dtype, x2.dtype, what)
    if dtype is DType.bool:
        raise DTypeError(f"{what} needs real numeric tensors, not bool; cast with "
                         ".astype(asyncfusion.int32) first")
    if sorter is not None:
        if type(sorter) is not Tensor or sorter.shape != x1.shape:
            raise ShapeError(f"{what}: sorter must be a Tensor of x1's shape {x1.shape} "
                             f"(indices that sort x1, e.g. argsort(x1)), got "
                             f"{getattr(sorter, 'shape', type(sorter).__name__)}")
        x1 = take(x1, sorter)
    a, v = (x if x.dtype is dtype else x.astype(dtype) for x in (x1, x2))
    out = _kernel(dtype)(v, a, params=(x1.shape[0], v.size, side == "right"))
    assert isinstance(out, Tensor)
    return out
