"""Joining tensors along an axis: ``cat`` (and the Array API's ``concat``) records one
:class:`~asyncfusion.ir.CatOp`."""

from __future__ import annotations

from collections.abc import Sequence

from .._core.dtype import check_promoted, promote
from .._core.errors import ShapeError, device_mismatch
from .._core.shapes import check_size, normalize_axis
from ..ir import CatOp
from ..lazy.tensor import Tensor

__all__ = ["cat", "concat"]


def cat(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """Concatenate tensors of one device along ``axis``; their dtypes promote as an
    element-wise op's operands do (int16 with int32 gives int32, int8 with uint8 int16)."""
    tensors = list(tensors)
    if not tensors or any(type(t) is not Tensor for t in tensors):
        raise TypeError("cat: give a non-empty list of asyncfusion Tensors")
    first = tensors[0]
    dtype = first.dtype
    for t in tensors[1:]:
        if t.device is not first.device:
            raise device_mismatch(f"cat: of t{first.id} and t{t.id}, t{t.id}", first.device,
                                  t.device)
        dtype = promote(dtype, t.dtype, "cat")
        if t.ndim != first.ndim:
            raise ShapeError(f"cat: ranks differ (shapes {first.shape} and {t.shape})")
    ax = normalize_axis(axis, first.ndim, "cat")
    for t in tensors[1:]:
        if any(a != b for d, (a, b) in enumerate(zip(first.shape, t.shape)) if d != ax):
            raise ShapeError(f"cat: shapes {first.shape} and {t.shape} differ outside axis {ax}")
    shape = list(first.shape)
    shape[ax] = sum(t.shape[ax] for t in tensors)
    check_size(tuple(shape), first.device, "cat", dtype)
    check_promoted(dtype, first.device, "cat")
    tensors = [t if t.dtype is dtype else t.astype(dtype) for t in tensors]
    out = Tensor(tuple(shape), dtype, first.device)
    out_ir = out.out_ir()
    first.device.register(CatOp(tuple(t.ir() for t in tensors), ax, out_ir),
                          tuple(t.id for t in tensors), out_ir)
    return out


def concat(arrays: Sequence[Tensor], /, *, axis: int | None = 0) -> Tensor:
    """The Array API's ``concat``: :func:`cat`; ``axis=None`` joins the flattened arrays."""
    if axis is None:
        return cat([t.reshape(-1) if type(t) is Tensor else t for t in arrays], 0)
    return cat(arrays, axis)
