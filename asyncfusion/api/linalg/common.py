"""What the factorizations share: checking their input, and the batch they run on."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..._core.dtype import DType
from ..._core.errors import DTypeError, ShapeError
from ...lazy.tensor import Tensor, not_a_tensor

__all__ = ["Stack", "floating", "stack_of", "eps"]


@dataclass(frozen=True, slots=True)
class Stack:
    """A call's matrices: ``x`` in the dtype they are computed in (float32 or float64),
    the ``batch`` shape and ``count``, the matrix ``rows`` and ``cols``, and the dtype the
    results are given in (``out``: float16 inputs are computed in float32)."""

    x: Tensor
    batch: tuple[int, ...]
    count: int
    rows: int
    cols: int
    out: DType

    def flat(self) -> Tensor:
        """The matrices as one dense ``(count, rows, cols)`` tensor."""
        return self.x.reshape(self.count, self.rows, self.cols).contiguous()

    def give(self, t: Tensor, shape: tuple[int, ...]) -> Tensor:
        """A result computed as ``(count, *shape)``: the batch shape back, in ``out``."""
        t = t.reshape(self.batch + shape)
        return t if t.dtype is self.out else t.astype(self.out)


def floating(x: object, what: str) -> Tensor:
    """``x`` checked as a tensor of a floating dtype."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, what)
    if not x.dtype.is_float:
        raise DTypeError(f"{what} needs a floating-point tensor, not {x.dtype.label}; cast "
                         "with .astype(asyncfusion.float32) (or float64) first")
    return x


def stack_of(x: object, what: str, *, square: bool) -> Stack:
    """``x`` checked as a stack of matrices (``(..., M, N)``; ``square``: M == N) of a
    floating dtype."""
    x = floating(x, what)
    if x.ndim < 2:
        raise ShapeError(f"{what} needs a stack of matrices (..., M, N), got shape {x.shape}")
    rows, cols = x.shape[-2:]
    if square and rows != cols:
        raise ShapeError(f"{what} needs square matrices (..., M, M), got shape {x.shape}; "
                         "the last two dimensions differ")
    out = x.dtype
    if out is DType.float16:
        x = x.astype(DType.float32)
    batch = x.shape[:-2]
    return Stack(x, batch, math.prod(batch), rows, cols, out)


def eps(dtype: DType) -> float:
    """Machine epsilon of the floating ``dtype``."""
    return {DType.float16: 2.0 ** -10, DType.float32: 2.0 ** -23,
            DType.float64: 2.0 ** -52}[dtype]
