"""Reductions and the composites built on them.

``reduce`` registers one :class:`~asyncfusion.ir.ReduceOp` (sum, prod, max, min, any,
all, argmax, argmin over an int, a tuple of axes or all, with ``keepdims``). ``mean``,
``var``/``std``, ``softmax``, ``log_softmax``, ``logsumexp`` and ``layer_norm`` are written
with ordinary ops; the reduce fuser chains their two reductions (a max then a sum, a mean
then a sum of squares) and the element-wise work around them in one kernel, so each is
one launch, with the element-wise work that feeds it or reads its result fused in.
"""

from __future__ import annotations

import builtins

from .._core.dtype import DType, DTypeSpec, as_dtype
from .._core.errors import AxisError, DTypeError, ShapeError
from .._core.shapes import check_binding, check_size, normalize_axis
from ..ir import ReduceOp, numel
from ..lazy.record import elementwise
from ..lazy.tensor import Axes, Scalar, Tensor, not_a_tensor
from ..ops import REDUCTIONS
from .indexing import take_along_axis

__all__ = ["reduce", "sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "mean",
           "var", "std", "softmax", "log_softmax", "logsumexp", "layer_norm", "gelu", "silu",
           "clip"]


_Reduced = tuple[tuple[int, ...], tuple[int, ...], int]
_REDUCED: dict[tuple[tuple[int, ...], int | None, bool], _Reduced] = {}
_REDUCED_KEPT = 4096


def _reduced(x: Tensor, axis: Axes, keepdims: bool, what: str) -> _Reduced:
    """(the axes, the result's shape, how many elements each result folds) of reducing
    ``x`` over ``axis``, or the AxisError that explains it; remembered per shape where
    ``axis`` is None or an int (not a bool or float, which hash as ints)."""
    key = (x.shape, axis, bool(keepdims)) if axis is None or type(axis) is int else None
    hit = _REDUCED.get(key) if key is not None else None
    if hit is not None:
        return hit
    shape = x.shape
    if axis is None:
        axes = tuple(range(len(shape)))
    else:
        seq = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(sorted(normalize_axis(a, len(shape), what) for a in seq))
        if len(set(axes)) != len(axes):
            raise AxisError(f"{what}: axis {axis} names an axis twice")
    out = tuple(1 if d in axes else s for d, s in enumerate(shape) if keepdims or d not in axes)
    plan = (axes, out, numel(tuple(shape[d] for d in axes)))
    if key is not None:
        if len(_REDUCED) >= _REDUCED_KEPT:
            _REDUCED.clear()
        _REDUCED[key] = plan
    return plan


def reduce(op: str, x: Tensor, axis: Axes = None, keepdims: bool = False) -> Tensor:
    what = f"{op}()"
    if type(x) is not Tensor:
        raise not_a_tensor(x, what)
    spec = REDUCTIONS[op]
    if spec.arg and isinstance(axis, (tuple, list)):
        raise AxisError(f"{what} takes one axis or None (all axes, flattened), not {axis!r}")
    axes, shape, folded = _reduced(x, axis, keepdims, what)
    check_binding(numel(x.shape) * x.dtype.itemsize, x.device, what,
                  "reduce parts of it and combine them, e.g. t[:h].sum() + t[h:].sum()")
    if spec.logical:
        if x.dtype is not DType.bool:
            x = x != 0
    elif x.dtype is DType.bool:
        raise DTypeError(f"{what} is not defined for bool tensors; use "
                         ".astype(asyncfusion.int32) first (or any()/all())")
    if folded == 0 and not spec.empty:
        raise ShapeError(f"{what} of an empty tensor (shape {x.shape}) has no value; "
                         "check the size before reducing")
    dtype = spec.out_dtype(x.dtype)
    if not axes:  # a 0-d tensor: nothing to fold (an int8 sum is still int32)
        if spec.arg:
            return elementwise("mul", x, 0)
        return elementwise("copy", x) if dtype is x.dtype else x.astype(dtype)
    check_size(shape, x.device, what, dtype)
    if folded > _SPLIT_AT:
        return _split(op, x, axes, shape)
    out = Tensor(shape, dtype, x.device)
    out_ir = out.out_ir()
    x.device.register(ReduceOp(op, x.ir(), axes, keepdims, out_ir), (x.id,), out_ir)
    return out


def _accumulated(op: str, x: Tensor, axis: Axes, dtype: DTypeSpec | None, keepdims: bool) -> Tensor:
    if type(x) is not Tensor:
        raise not_a_tensor(x, f"{op}()")
    if dtype is None:
        return reduce(op, x, axis, keepdims)
    dt = as_dtype(dtype)
    out = reduce(op, x if dt is x.dtype else x.astype(dt), axis, keepdims)
    return out if out.dtype is dt else out.astype(dt)  # int8/int16 accumulate in their lane


def sum(x: Tensor, /, *, axis: Axes = None, dtype: DTypeSpec | None = None,  # noqa: A001 - the standard's
        keepdims: bool = False) -> Tensor:
    """The sum over ``axis`` (an int, a tuple of axes or None: all). Without ``dtype``:
    x's dtype, int32/uint32 for the 8- and 16-bit integers; with it, ``x`` is cast to
    ``dtype`` first (``dtype=float64`` sums float32 data in float64), and the result is
    ``dtype`` (int16 sums in its int32 lane, wrapped back to int16)."""
    return _accumulated("sum", x, axis, dtype, keepdims)


def prod(x: Tensor, /, *, axis: Axes = None, dtype: DTypeSpec | None = None,
         keepdims: bool = False) -> Tensor:
    """The product over ``axis``, with ``dtype`` as :func:`sum`'s."""
    return _accumulated("prod", x, axis, dtype, keepdims)


def max(x: Tensor, /, axis: Axes = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Maximum over an axis, a tuple of axes or all (NaN propagates)."""
    return reduce("max", x, axis, keepdims)


def min(x: Tensor, /, axis: Axes = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Minimum over an axis, a tuple of axes or all (NaN propagates)."""
    return reduce("min", x, axis, keepdims)


def any(x: Tensor, /, axis: Axes = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether any element is true (non-zero) over the axes."""
    return reduce("any", x, axis, keepdims)


def all(x: Tensor, /, axis: Axes = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every element is true (non-zero) over the axes."""
    return reduce("all", x, axis, keepdims)


def argmax(x: Tensor, /, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first maximum (one axis, or all flattened)."""
    return reduce("argmax", x, axis, keepdims)


def argmin(x: Tensor, /, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first minimum (one axis, or all flattened)."""
    return reduce("argmin", x, axis, keepdims)


# A row folds in one workgroup, so a very long one takes one GPU core (and past ~16M
# elements, more loop iterations per thread than lavapipe runs: its results went wrong).
# Rows longer than _SPLIT_AT fold in two stages: chunks of _CHUNK (many workgroups), then
# the chunks' results; a tail shorter than a chunk folds on its own and is combined.
_SPLIT_AT = 1 << 22
_CHUNK = 1 << 14
def _split(op: str, x: Tensor, axes: tuple[int, ...], shape: tuple[int, ...]) -> Tensor:
    """``reduce(op, x, axes)`` (of shape ``shape``) with the reduced axes flattened into
    one row per kept index, folded chunk by chunk and then across the chunks."""
    spec = REDUCTIONS[op]
    if x.dtype is DType.float16 and spec.widens:  # accumulate in float32
        return _split(op, x.astype(DType.float32), axes, shape).astype(DType.float16)
    kept = [d for d in range(x.ndim) if d not in axes]
    lead = tuple(x.shape[d] for d in kept)
    n = numel(tuple(x.shape[d] for d in axes))
    rows = x.permute(*kept, *axes).reshape(*lead, n)
    m = n // _CHUNK * _CHUNK
    chunked = rows[..., :m].reshape(*lead, m // _CHUNK, _CHUNK)
    tail = rows[..., m:] if m < n else None
    if spec.arg:
        out = _split_arg(op, chunked, tail, m)
    else:
        out = reduce(op, reduce(op, chunked, -1), -1)
        if tail is not None:
            out = elementwise(spec.combine, out, reduce(op, tail, -1))
    return out.reshape(*shape)


def _split_arg(op: str, chunked: Tensor, tail: Tensor | None, m: int) -> Tensor:
    """argmax/argmin in two stages: each chunk's best, the best chunk (ties: the first,
    as the earlier index), then the tail's best where it is strictly better (or NaN
    where the rest holds none: numpy's first NaN)."""
    spec = REDUCTIONS[op]
    fold, better_op = spec.combine, spec.better or "gt"
    at = reduce(op, chunked, -1, keepdims=True)  # (..., chunks, 1)
    best = take_along_axis(chunked, at, -1)[..., 0]  # (..., chunks)
    which = reduce(op, best, -1, keepdims=True)  # (..., 1)
    index = take_along_axis(at[..., 0], which, -1)[..., 0] + which[..., 0] * _CHUNK
    if tail is None:
        return index
    value = reduce(fold, best, -1)
    t_value, t_index = reduce(fold, tail, -1), reduce(op, tail, -1) + m
    better = elementwise(better_op, t_value, value)
    if chunked.dtype.is_float:
        better = better | (t_value.isnan() & ~value.isnan())
    return elementwise("where", better, t_index, index)


def _count(x: Tensor, axis: Axes, what: str) -> int:
    return _reduced(x, axis, False, what)[2]


def _as_float(x: Tensor) -> Tensor:
    if x.dtype is DType.bool:
        raise DTypeError("mean()/var() are not defined for bool tensors; cast with "
                         ".astype(asyncfusion.float32) first")
    return x if x.dtype.is_float else x.astype(DType.float32)


def mean(x: Tensor, axis: Axes = None, keepdims: bool = False) -> Tensor:
    """Sum over ``axis`` divided by the count (float32; NaN for an empty axis)."""
    n = _count(x, axis, "mean()")
    return reduce("sum", _as_float(x), axis, keepdims) / float(n)


def var(x: Tensor, axis: Axes = None, keepdims: bool = False, correction: float = 0) -> Tensor:
    """Variance with ``correction`` (numpy's ``ddof``): the mean, then the mean square of
    the deviations from it (two passes over the row, one launch)."""
    xf = _as_float(x)
    n = _count(x, axis, "var()")
    d = xf - mean(xf, axis, keepdims=True)
    return reduce("sum", d * d, axis, keepdims) / float(builtins.max(n - correction, 0))


def std(x: Tensor, /, axis: Axes = None, keepdims: bool = False,
        correction: float = 0) -> Tensor:
    """Standard deviation with ``correction`` (numpy's ddof)."""
    return elementwise("sqrt", var(x, axis, keepdims, correction))


def logsumexp(x: Tensor, axis: Axes = -1, keepdims: bool = False) -> Tensor:
    """log(sum(exp(x - max))) + max: one launch (the dims are dropped after it)."""
    xf = _as_float(x)
    m = reduce("max", xf, axis, keepdims=True)
    out = reduce("sum", (xf - m).exp(), axis, keepdims=True).log() + m
    return out if keepdims else out.reshape(_reduced(xf, axis, False, "logsumexp()")[1])


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """exp(x - max) / sum: one launch (the max, the sum, the division: three passes over
    each row, which stays in registers between them where it fits)."""
    xf = _as_float(x)
    e = (xf - reduce("max", xf, axis, keepdims=True)).exp()
    return e / reduce("sum", e, axis, keepdims=True)


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    xf = _as_float(x)
    d = xf - reduce("max", xf, axis, keepdims=True)
    return d - reduce("sum", d.exp(), axis, keepdims=True).log()


def layer_norm(x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None, *,
               axis: Axes = -1, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over ``axis``: one launch (the mean,
    the variance of the deviations, the normalized row)."""
    xf = _as_float(x)
    d = xf - mean(xf, axis, keepdims=True)
    y = d * (var_of(d, axis) + eps).rsqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def var_of(d: Tensor, axis: Axes) -> Tensor:
    """Mean of squares of an already centred tensor, kept dims."""
    return reduce("sum", d * d, axis, keepdims=True) / float(_count(d, axis, "layer_norm()"))


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), exact (erf) or with torch's ``approximate="tanh"`` formula."""
    xf = _as_float(x)
    if approximate == "tanh":
        inner = (xf + xf * xf * xf * 0.044715) * 0.7978845608028654
        return xf * 0.5 * (inner.tanh() + 1.0)
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
    return xf * 0.5 * (elementwise("erf", xf * 0.7071067811865476) + 1.0)


def silu(x: Tensor) -> Tensor:
    xf = _as_float(x)
    return xf * xf.sigmoid()


def clip(x: Tensor, min: Tensor | Scalar | None = None, max: Tensor | Scalar | None = None) -> Tensor:  # noqa: A002 - numpy's names
    """Limit values to [min, max] (either or both may be None: no bound on that side)."""
    if min is None and max is None:
        return elementwise("copy", x)
    y = x
    if min is not None:
        y = elementwise("maximum", y, min)
    if max is not None:
        y = elementwise("minimum", y, max)
    return y
