"""Matrix products and the linalg functions shaped like them, all lazy and fused.

``a @ b`` and :func:`matmul` follow numpy's rules: 1-D operands are promoted to matrices
by views (a row on the left, a column on the right) and the added axis is removed from
the result, also by a view; batch dimensions broadcast. For 32-bit dtypes one
:class:`~asyncfusion.ir.MatmulOp` is registered; the matmul fuser runs the element-wise
work on its result (bias, activation, scale, residual) in the matmul's own store, so
``relu(x @ w + b)`` is one launch. 64-bit dtypes (float64, int64, uint64) are a product
and a sum over the inner axis, which the reduce fuser runs as one kernel (no tile
staging, so large float64 products are slower than float32 ones). Operands are read
through their layouts: a transposed view (``w.T``, ``x.mT``) costs no copy.

:func:`tensordot` permutes its operands (views) so that the contracted axes are the
left operand's last and the right operand's first, reshapes them to matrices (a copy only
where strides cannot express that) and runs one matmul, reshaped back.
:func:`diagonal` is a view (one stride across a row and a column); :func:`trace` one
reduction of it; :func:`outer` and :func:`cross` one element-wise kernel each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..creation import arange
from ..._core.dtype import DType, promote
from ..._core.errors import AxisError, device_mismatch, DTypeError, ShapeError
from ...ir import Layout, MatmulOp, numel
from ..reductions import reduce, sum as _sum
from ..._core.shapes import broadcast_shapes, check_binding, check_size, normalize_axis
from ...lazy.tensor import Tensor, not_a_tensor
from ..elementwise import where
from ..views import broadcast_to, view

__all__ = ["matmul", "tensordot", "matrix_transpose", "outer", "cross", "diagonal", "trace"]


def matmul(a: Tensor, b: Tensor, /) -> Tensor:
    """The matrix product of ``a`` and ``b`` (numpy.matmul): any numeric dtype (integers
    wrap, as numpy's); mixed operands are promoted as element-wise ops are."""
    if type(a) is not Tensor or type(b) is not Tensor:
        raise TypeError(f"matmul (@) needs two asyncfusion Tensors, got {type(a).__name__} "
                        f"and {type(b).__name__}; wrap arrays with asyncfusion.tensor()")
    if a.device is not b.device:
        raise device_mismatch(f"matmul (@): the operand t{b.id}", a.device, b.device)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul (@) needs operands with at least 1 dimension, got shapes "
                         f"{a.shape} and {b.shape}; multiply by a scalar with * instead")
    for t in (a, b):
        check_binding(numel(t.shape) * t.dtype.itemsize, t.device, "matmul (@)",
                      "multiply blocks of rows (a[:h] @ b, a[h:] @ b) and concatenate them")
    dtype = promote(a.dtype, b.dtype, "matmul (@)")
    if dtype is DType.bool:
        raise DTypeError("matmul (@) is not defined for bool tensors; cast with "
                         ".astype(asyncfusion.int32) or .astype(asyncfusion.float32) first")
    if dtype.lane is not dtype:  # 8/16-bit ints: in the 32-bit lane, wrapped once at the end
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
    check_size(shape, a.device, "matmul (@)", dtype)
    if (a.ndim == 1 or b.ndim == 1) and dtype is not DType.float16:
        return _vector_product(a, b)
    if dtype.itemsize == 8:  # the tiled kernel is written for 32-bit words
        return reduce("sum", va.unsqueeze(-1) * vb.unsqueeze(-3), -2)
    out = Tensor(shape, dtype, a.device)
    out_ir = out.out_ir()
    a.device.register(MatmulOp(va.ir(), vb.ir(), out_ir), (va.id, vb.id), out_ir)
    if a.ndim == 1:
        out = out.squeeze(-2)
    if b.ndim == 1:
        out = out.squeeze(-1)
    return out


def _vector_product(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` where one operand is a vector: products and one fused sum (a reduction
    kernel reads the matrix once; a tiled matmul would pad the vector to a whole tile).
    Batched across tasks, a shared matrix is read by every task's row of the launch."""
    if b.ndim == 1:
        return reduce("sum", a * b, -1)
    return reduce("sum", a.unsqueeze(-1) * b, -2)


def _contracted(x1: Tensor, x2: Tensor,
                axes: int | tuple[Sequence[int], Sequence[int]]) -> tuple[list[int], list[int]]:
    """The axes of ``x1`` and of ``x2`` that ``axes`` pairs, in pairing order."""
    if isinstance(axes, int) and not isinstance(axes, bool):
        if not 0 <= axes <= min(x1.ndim, x2.ndim):
            raise AxisError(f"tensordot: axes={axes} must be between 0 and the smaller rank "
                            f"({x1.shape} and {x2.shape})")
        return list(range(x1.ndim - axes, x1.ndim)), list(range(axes))
    if not (isinstance(axes, (tuple, list)) and len(axes) == 2
            and all(isinstance(s, Sequence) and not isinstance(s, str) for s in axes)):
        raise TypeError(f"tensordot: axes must be an int or a pair of sequences of ints, not "
                        f"{axes!r}")
    a1 = [normalize_axis(a, x1.ndim, "tensordot") for a in axes[0]]
    a2 = [normalize_axis(a, x2.ndim, "tensordot") for a in axes[1]]
    if len(a1) != len(a2) or len(set(a1)) != len(a1) or len(set(a2)) != len(a2):
        raise AxisError(f"tensordot: axes {axes!r} must name as many distinct axes of x1 as "
                        "of x2")
    return a1, a2


def tensordot(x1: Tensor, x2: Tensor, /, *,
              axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Tensor:
    """Sum of products over axes (numpy.tensordot): ``axes=n`` contracts the last ``n``
    axes of ``x1`` with the first ``n`` of ``x2``, a pair of sequences the axes it names,
    pairwise. The result has ``x1``'s other axes, then ``x2``'s. One matmul (its dtypes)."""
    if type(x1) is not Tensor or type(x2) is not Tensor:
        raise TypeError(f"tensordot needs two asyncfusion Tensors, got {type(x1).__name__} "
                        f"and {type(x2).__name__}")
    a1, a2 = _contracted(x1, x2, axes)
    for i, j in zip(a1, a2):
        if x1.shape[i] != x2.shape[j]:
            raise ShapeError(f"tensordot: axis {i} of x1 (shape {x1.shape}) has size "
                             f"{x1.shape[i]} but the axis {j} of x2 (shape {x2.shape}) it is "
                             f"paired with has {x2.shape[j]}; contracted sizes must be equal")
    free1 = [d for d in range(x1.ndim) if d not in a1]
    free2 = [d for d in range(x2.ndim) if d not in a2]
    rows, inner, cols = ([x1.shape[d] for d in free1], [x1.shape[i] for i in a1],
                         [x2.shape[d] for d in free2])
    left = x1.permute(*free1, *a1).reshape(math.prod(rows), math.prod(inner))
    right = x2.permute(*a2, *free2).reshape(math.prod(inner), math.prod(cols))
    return matmul(left, right).reshape(tuple(rows + cols))


def matrix_transpose(x: Tensor, /) -> Tensor:
    """Swap the last two axes (a view): the Array API's ``matrix_transpose``, also in
    ``asyncfusion.linalg``."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, "matrix_transpose")
    return x.mT


def _tensor(x: object, what: str) -> Tensor:
    if type(x) is not Tensor:
        raise TypeError(f"{what} needs an asyncfusion Tensor, not {type(x).__name__}; "
                        "convert with asyncfusion.asarray()")
    return x


def _numeric(x: Tensor, what: str) -> None:
    if x.dtype is DType.bool:
        raise DTypeError(f"{what} is not defined for bool tensors; cast with "
                         ".astype(asyncfusion.int32) or .astype(asyncfusion.float32) first")


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The outer product of two vectors: ``x1[i] * x2[j]`` (one element-wise kernel)."""
    for x in (_tensor(x1, "outer"), _tensor(x2, "outer")):
        _numeric(x, "outer")
        if x.ndim != 1:
            raise ShapeError(f"outer needs two 1-D tensors, got shapes {x1.shape} and "
                             f"{x2.shape}; flatten them with .reshape(-1) first")
    return x1.unsqueeze(1) * x2.unsqueeze(0)


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-element vectors along ``axis`` of the broadcast operands:
    one element-wise kernel (each component picked by its position along ``axis``)."""
    _numeric(_tensor(x1, "cross"), "cross")
    _numeric(_tensor(x2, "cross"), "cross")
    shape = broadcast_shapes(x1.shape, x2.shape, "cross")
    axis = normalize_axis(axis, len(shape), "cross") - len(shape)  # counted from the end
    for x in (x1, x2):
        if x.ndim < -axis or x.shape[axis] != 3:
            raise ShapeError(f"cross: axis {axis} must have size 3 in both operands, got "
                             f"shapes {x1.shape} and {x2.shape}")
    a = [_part(x1, axis, k, shape) for k in range(3)]
    b = [_part(x2, axis, k, shape) for k in range(3)]
    parts = [a[(k + 1) % 3] * b[(k + 2) % 3] - a[(k + 2) % 3] * b[(k + 1) % 3]
             for k in range(3)]
    at = arange(3, dtype=DType.int32, device=x1.device).reshape((3,) + (1,) * (-axis - 1))
    at = broadcast_to(at, shape)
    return where(at == 0, parts[0], where(at == 1, parts[1], parts[2]))


def _part(x: Tensor, axis: int, k: int, shape: tuple[int, ...]) -> Tensor:
    """Component ``k`` of ``x`` along ``axis`` (negative) seen at every position of
    ``shape`` along it (views: every op of the product has one shape, so they fuse)."""
    key = (Ellipsis, slice(k, k + 1)) + (slice(None),) * (-axis - 1)
    return broadcast_to(x[key], shape)


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """Diagonal ``offset`` of each matrix (the last two axes): a view, no copy; above
    the main diagonal for a positive ``offset``, below it for a negative one."""
    _tensor(x, "diagonal")
    if x.ndim < 2:
        raise ShapeError(f"diagonal needs at least 2 dimensions, got shape {x.shape}")
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise TypeError(f"diagonal: offset must be an int, not {offset!r}")
    lay = x.view_layout
    rows, cols = x.shape[-2:]
    s_row, s_col = lay.strides[-2:]
    if offset >= 0:
        k, start = max(0, min(rows, cols - offset)), offset * s_col
    else:
        k, start = max(0, min(rows + offset, cols)), -offset * s_row
    layout = Layout(x.shape[:-2] + (k,), lay.strides[:-2] + (s_row + s_col,),
                    lay.offset + (start if k else 0))
    return view(x, layout, "diagonal")


def trace(x: Tensor, /, *, offset: int = 0, dtype: DType | None = None) -> Tensor:
    """The sum of diagonal ``offset`` of each matrix (one reduction of the
    :func:`diagonal` view), with ``dtype`` as :func:`asyncfusion.sum`'s."""
    d = diagonal(x, offset=offset)
    _numeric(x, "trace")
    return _sum(d, axis=-1, dtype=dtype)
