"""Norms: vector_norm and matrix_norm, written with reductions (one fused launch each,
but for the spectral and nuclear norms, which take the singular values first)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..._core.dtype import DType
from ..._core.errors import AxisError, DTypeError, ShapeError
from ..reductions import reduce
from ..._core.shapes import normalize_axis
from ...lazy.tensor import Tensor
from .common import floating, stack_of
from .factor import svdvals

__all__ = ["vector_norm", "matrix_norm"]


def vector_norm(x: Tensor, /, *, axis: int | Sequence[int] | None = None,
                keepdims: bool = False, ord: float = 2) -> Tensor:  # noqa: A002 - the standard's
    """The ``ord``-norm over ``axis`` (an int, a tuple of axes, or None: all elements as
    one vector): ``inf`` the largest magnitude, ``-inf`` the smallest, 0 the count of
    non-zero elements, otherwise ``sum(|x|**ord) ** (1/ord)``."""
    x = floating(x, "vector_norm")
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"vector_norm: ord must be a number (inf, -inf included), not {ord!r}")
    if axis is None:
        axes: tuple[int, ...] = tuple(range(x.ndim))
    else:
        seq = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(normalize_axis(a, x.ndim, "vector_norm") for a in seq)
        if len(set(axes)) != len(axes):
            raise AxisError(f"vector_norm: axis {axis} names an axis twice")
    a = x.abs()
    if ord == math.inf:
        return reduce("max", a, axes, keepdims)
    if ord == -math.inf:
        return reduce("min", a, axes, keepdims)
    if ord == 0:
        return reduce("sum", (x != 0).astype(x.dtype), axes, keepdims)
    if ord == 1:
        return reduce("sum", a, axes, keepdims)
    if ord == 2:
        return reduce("sum", x * x, axes, keepdims).sqrt()
    return reduce("sum", a ** float(ord), axes, keepdims) ** (1.0 / ord)


_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def matrix_norm(x: Tensor, /, *, keepdims: bool = False,
                ord: float | str = "fro") -> Tensor:  # noqa: A002 - the standard's
    """The ``ord``-norm of each matrix (the last two axes): ``"fro"`` (Frobenius),
    ``"nuc"`` (the sum of the singular values), 1 / -1 (the largest / smallest column
    sum of magnitudes), inf / -inf (the same of rows), 2 / -2 (the largest / smallest
    singular value)."""
    x = floating(x, "matrix_norm")
    if isinstance(ord, bool) or ord not in _ORDS:
        raise ValueError(f"matrix_norm: ord must be one of 'fro', 'nuc', 1, -1, 2, -2, inf, "
                         f"-inf, not {ord!r}")
    if x.ndim < 2:
        raise ShapeError(f"matrix_norm needs a stack of matrices (..., M, N), got shape "
                         f"{x.shape}")
    if ord == "fro":
        out = reduce("sum", x * x, (-2, -1)).sqrt()
    elif ord in (1, -1, math.inf, -math.inf):
        along = -2 if ord in (1, -1) else -1
        sums = reduce("sum", x.abs(), along)
        out = reduce("max" if ord in (1, math.inf) else "min", sums, -1)
    else:
        stack_of(x, "matrix_norm", square=False)
        sv = svdvals(x)
        if min(x.shape[-2:]) == 0:
            raise ShapeError(f"matrix_norm: ord={ord!r} of an empty matrix (shape {x.shape}) "
                             "has no singular values")
        out = (reduce("sum", sv, -1) if ord == "nuc" else
               reduce("max" if ord == 2 else "min", sv, -1))
    if out.dtype is not x.dtype and x.dtype is DType.float16:
        out = out.astype(x.dtype)
    return out.reshape(out.shape + (1, 1)) if keepdims else out
