"""Matrix products: ``a @ b`` and :func:`matmul`, with numpy's rules.

1-D operands are promoted to matrices by views (a row on the left, a column on the
right) and the added axis is removed from the result, also by a view; batch dimensions
broadcast. One :class:`~asyncfusion.ir.MatmulOp` is registered; the matmul fuser runs the
element-wise work on its result (bias, activation, scale, residual) in the matmul's own
store, so ``relu(x @ w + b)`` is one launch. Operands are read through their layouts:
a transposed view (``w.T``, ``x.mT``) costs no copy.
"""

from __future__ import annotations

from typing import Any

from .dtype import NEEDS, DType, promote
from .errors import DeviceMismatchError, DTypeError, ShapeError
from .ir import MatmulOp
from .tensor import Tensor, _check_size, broadcast_shapes

__all__ = ["matmul"]


def matmul(a: Any, b: Any) -> Tensor:
    """The matrix product of ``a`` and ``b`` (numpy.matmul): float32, int32 (wrapping, as
    numpy) or uint32; mixed operands are promoted as element-wise ops are."""
    if type(a) is not Tensor or type(b) is not Tensor:
        raise TypeError(f"matmul (@) needs two asyncfusion Tensors, got {type(a).__name__} "
                        f"and {type(b).__name__}; wrap arrays with asyncfusion.tensor()")
    if a.device is not b.device:
        raise DeviceMismatchError(
            f"matmul (@): operands live on two devices ({a.device!r} and {b.device!r}); "
            "read one and create it again on the other's device")
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul (@) needs operands with at least 1 dimension, got shapes "
                         f"{a.shape} and {b.shape}; multiply by a scalar with * instead")
    dtype = promote(a.dtype, b.dtype, "matmul (@)")
    if dtype is DType.bool:
        raise DTypeError("matmul (@) is not defined for bool tensors; cast with "
                         ".astype(asyncfusion.int32) or .astype(asyncfusion.float32) first")
    if dtype.itemsize == 8:
        raise DTypeError(f"matmul (@) of {dtype.label} is not available (the tiled kernel is "
                         "written for 32-bit words); cast with "
                         f".astype(asyncfusion.{NEEDS[dtype][1].label})")
    if dtype.lane is not dtype:  # int16/uint16: in the 32-bit lane, wrapped once at the end
        return matmul(a.astype(dtype.lane), b.astype(dtype.lane)).astype(dtype)
    if a.dtype is not dtype:
        a = a.astype(dtype)
    if b.dtype is not dtype:
        b = b.astype(dtype)
    va = a.unsqueeze(0) if a.ndim == 1 else a
    vb = b.unsqueeze(1) if b.ndim == 1 else b
    if va.shape[-1] != vb.shape[-2]:
        raise ShapeError(
            f"matmul (@): inner dimensions differ: {a.shape} @ {b.shape} pairs {va.shape[-1]} "
            f"(last of the left operand) with {vb.shape[-2]} (the right operand's "
            f"{'only' if b.ndim == 1 else 'second to last'} dimension); transpose an operand "
            "(.mT) or fix the shapes")
    batch = broadcast_shapes(va.shape[:-2], vb.shape[:-2], "matmul (@) batch dimensions")
    shape = batch + (va.shape[-2], vb.shape[-1])
    _check_size(shape, a.device, "matmul (@)", dtype)
    out = Tensor(shape, dtype, a.device)
    out_ir = out.out_ir()
    a.device.register(MatmulOp(va.ir(), vb.ir(), out_ir), (va.id, vb.id), out_ir)
    if a.ndim == 1:
        out = out.squeeze(-2)
    if b.ndim == 1:
        out = out.squeeze(-1)
    return out

