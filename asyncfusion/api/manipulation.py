"""The Array API's manipulation, statistics and utility functions, built on views,
element-wise ops, ``cat`` and reductions (so each fuses with what surrounds it).

``moveaxis``, ``expand_dims``, ``permute_dims``, ``unstack``, ``broadcast_arrays`` and
``meshgrid`` are views (``reshape`` too, where strides allow); ``tile`` and ``repeat`` a broadcast view made dense; ``roll`` and
``diff`` slices joined or subtracted; ``tril``/``triu`` a ``where`` over an index
comparison; ``count_nonzero`` and ``vecdot`` one fused reduction; ``cumulative_sum`` and
``cumulative_prod`` a Hillis-Steele scan (log2(n) shifted adds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._core.dtype import DType, as_dtype
from .._core.errors import AxisError, DTypeError, ShapeError
from .._core.shapes import broadcast_shapes as broadcast_shapes_of, normalize_axis
from ..lazy.record import elementwise
from ..lazy.tensor import Tensor, not_a_tensor
from .creation import arange, full
from .elementwise import where
from .joining import cat
from .reductions import reduce
from .views import broadcast_to, permute, reshape as view_reshape, reshape_target, unsqueeze

__all__ = ["moveaxis", "expand_dims", "permute_dims", "unstack", "broadcast_arrays",
           "meshgrid", "tile", "repeat", "roll", "diff", "tril", "triu", "count_nonzero",
           "vecdot", "cumulative_sum", "cumulative_prod", "broadcast_shapes", "isin", "reshape"]


def _tensor(x: Any, what: str) -> Tensor:
    if type(x) is not Tensor:
        raise not_a_tensor(x, what)
    return x


def _zero(dtype: DType) -> bool | int | float:
    return False if dtype is DType.bool else (0.0 if dtype.is_float else 0)


def _seq(v: int | Sequence[int]) -> tuple[int, ...]:
    return tuple(v) if isinstance(v, Sequence) else (int(v),)


def _take(x: Tensor, axis: int, part: slice) -> Tensor:
    return x[(slice(None),) * axis + (part,)]


def reshape(x: Tensor, /, shape: int | Sequence[int], *, copy: bool | None = None) -> Tensor:
    """The same elements in ``shape`` (one dimension may be -1): a view where strides
    allow, else a copy. ``copy=True`` always copies; ``copy=False`` never does and raises
    :class:`ShapeError` where a view cannot express the new shape (a transposed or
    sliced tensor, for example)."""
    x = _tensor(x, "reshape")
    dims = tuple(shape) if isinstance(shape, Sequence) else (shape,)
    if copy is False and x.view_layout.reshape(reshape_target(x.shape, dims)) is None:
        raise ShapeError(f"reshape: a tensor of shape {x.shape} laid out with strides "
                         f"{x.view_layout.strides} cannot be seen as shape {dims} without a "
                         "copy, and copy=False forbids one; pass copy=None (copy only when "
                         "needed) or call .contiguous() first")
    return view_reshape(elementwise("copy", x) if copy else x, dims)


def moveaxis(x: Tensor, source: int | Sequence[int], destination: int | Sequence[int]
             ) -> Tensor:
    """Move axes to new positions, keeping the others in order (a view)."""
    x = _tensor(x, "moveaxis")
    src = [normalize_axis(a, x.ndim, "moveaxis") for a in _seq(source)]
    dst = [normalize_axis(a, x.ndim, "moveaxis") for a in _seq(destination)]
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise AxisError(f"moveaxis: source {source} and destination {destination} must name "
                        "the same number of distinct axes")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(x, tuple(order))


def expand_dims(x: Tensor, /, axis: int | Sequence[int] = 0) -> Tensor:
    """New size-1 axes at ``axis`` (an int or a tuple of positions in the result; a
    view)."""
    x = _tensor(x, "expand_dims")
    if not isinstance(axis, Sequence):
        return unsqueeze(x, axis)
    rank = x.ndim + len(axis)
    new = {normalize_axis(a, rank, "expand_dims") for a in axis}
    if len(new) != len(axis):
        raise AxisError(f"expand_dims: axis {tuple(axis)} names a position twice (a "
                        f"negative position counts from the end of the rank-{rank} result)")
    rest = iter(x.shape)
    return view_reshape(x, tuple(1 if d in new else next(rest) for d in range(rank)))


def permute_dims(x: Tensor, /, axes: Sequence[int]) -> Tensor:
    """The axes in the order ``axes`` (a view)."""
    return permute(_tensor(x, "permute_dims"), tuple(axes))


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis`` (views)."""
    x = _tensor(x, "unstack")
    ax = normalize_axis(axis, x.ndim, "unstack")
    return tuple(x[(slice(None),) * ax + (i,)] for i in range(x.shape[ax]))


def broadcast_arrays(*arrays: Tensor) -> tuple[Tensor, ...]:
    """The tensors broadcast to their common shape (views)."""
    shape = broadcast_shapes(*(_tensor(a, "broadcast_arrays").shape for a in arrays))
    return tuple(broadcast_to(a, shape) for a in arrays)


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape that tensors of these shapes broadcast to."""
    out: tuple[int, ...] = ()
    for s in shapes:
        out = broadcast_shapes_of(out, tuple(s), "broadcast_shapes")
    return out


def isin(x1: Tensor | int, x2: Tensor | int, /, *, invert: bool = False) -> Tensor:
    """Whether each element of ``x1`` occurs in ``x2`` (one fused comparison and any-
    reduction over x1.size * x2.size pairs). Either (not both) may be a Python int: an int
    ``x1`` gives a 0-d result, an int ``x2`` an element-wise comparison."""
    if not isinstance(x1, Tensor) and not isinstance(x2, Tensor):
        raise TypeError(f"isin: at least one of x1 and x2 must be an asyncfusion Tensor, got "
                        f"{type(x1).__name__} and {type(x2).__name__}")
    if not isinstance(x2, Tensor):
        hit = elementwise("eq", x1, _int(x2, "isin: x2"))
    elif not isinstance(x1, Tensor):
        hit = reduce("any", elementwise("eq", x2, _int(x1, "isin: x1")), None)
    else:
        hit = reduce("any", unsqueeze(x1, -1) == reshape(x2, (-1,)), -1)
    return ~hit if invert else hit


def _int(v: object, what: str) -> int:
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise TypeError(f"{what} must be a tensor or a Python int, not {type(v).__name__}")
    return int(v)


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors (``"xy"``: Cartesian, ``"ij"``: matrix indexing);
    views of the inputs."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', not {indexing!r}")
    for a in arrays:
        if _tensor(a, "meshgrid").ndim != 1:
            raise ShapeError(f"meshgrid: every input must be 1-D, got shape {a.shape}")
    shape = [a.shape[0] for a in arrays]
    swap = indexing == "xy" and len(arrays) > 1
    if swap:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        pos = (1 - i if i < 2 else i) if swap else i
        dims = [1] * len(arrays)
        dims[pos] = a.shape[0]
        out.append(broadcast_to(reshape(a, tuple(dims)), tuple(shape)))
    return tuple(out)


def tile(x: Tensor, repetitions: Sequence[int], /) -> Tensor:
    """``x`` repeated ``repetitions[d]`` times along each axis d (one copy kernel)."""
    x = _tensor(x, "tile")
    reps = tuple(int(r) for r in repetitions)
    if any(r < 0 for r in reps):
        raise ShapeError(f"tile: repetitions {reps} must be non-negative")
    n = max(len(reps), x.ndim)
    reps = (1,) * (n - len(reps)) + reps
    shape = (1,) * (n - x.ndim) + x.shape
    paired = tuple(v for s in shape for v in (1, s))
    target = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    grid = broadcast_to(reshape(x, paired), target)
    return reshape(grid, tuple(r * s for r, s in zip(reps, shape)))


def repeat(x: Tensor, repeats: int | Sequence[int] | Tensor, /, *, axis: int | None = None
           ) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (``x`` flattened when None);
    ``repeats`` an int, one int (broadcast) or one int per element. The output shape
    depends on the counts, so a tensor of counts is read first: a blocking read, refused
    inside an event loop (pass ``(await repeats.to_data()).tolist()`` there)."""
    x = _tensor(x, "repeat")
    if isinstance(repeats, Tensor):
        if not repeats.dtype.is_int or repeats.ndim > 1:
            raise TypeError(f"repeat: a tensor of repeats must be 0-d or 1-d with an integer "
                            f"dtype, not shape {repeats.shape} {repeats.dtype.label}")
        held = repeats._read_sync("repeat(x, repeats)",
                                  "repeat(x, (await repeats.to_data()).tolist())")
    else:
        held = np.asarray(repeats)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    ax = normalize_axis(axis, x.ndim, "repeat")
    n = x.shape[ax]
    if held.ndim > 1 or held.shape not in ((), (1,), (n,)) or (held < 0).any():
        raise ShapeError(f"repeat: repeats must be a non-negative int, one or {n} of them "
                         f"(axis {ax} of shape {x.shape}), got {repeats!r}")
    counts = [int(c) for c in np.broadcast_to(held, (n,))]  # one count broadcasts
    if len(set(counts)) <= 1:
        r = counts[0] if counts else 0
        grid = unsqueeze(x, ax + 1)
        grid = broadcast_to(grid, grid.shape[:ax + 1] + (r,) + grid.shape[ax + 2:])
        return reshape(grid, x.shape[:ax] + (n * r,) + x.shape[ax + 1:])
    parts = [broadcast_to(_take(x, ax, slice(i, i + 1)),
                          x.shape[:ax] + (c,) + x.shape[ax + 1:])
             for i, c in enumerate(counts) if c]
    return cat(parts, axis=ax)


def roll(x: Tensor, /, shift: int | Sequence[int], *, axis: int | Sequence[int] | None = None
         ) -> Tensor:
    """Elements shifted along axes, those past the end coming back at the start."""
    x = _tensor(x, "roll")
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, axis=0), x.shape)
    shifts, axes = _seq(shift), _seq(axis)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ShapeError(f"roll: shift {shift} and axis {axis} must have the same length")
    for s, a in zip(shifts, axes):
        ax = normalize_axis(a, x.ndim, "roll")
        n = x.shape[ax]
        k = s % n if n else 0
        if k:
            x = cat([_take(x, ax, slice(n - k, n)), _take(x, ax, slice(0, n - k))], axis=ax)
    return x


def diff(x: Tensor, /, *, axis: int = -1, n: int = 1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along ``axis`` (not-equal for bool, as numpy)."""
    x = _tensor(x, "diff")
    ax = normalize_axis(axis, x.ndim, "diff")
    if n < 0:
        raise ValueError(f"diff: n must be >= 0, got {n}")
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = cat(parts, axis=ax)
    op = "ne" if x.dtype is DType.bool else "sub"
    for _ in range(n):
        m = x.shape[ax]
        x = elementwise(op, _take(x, ax, slice(1, m)), _take(x, ax, slice(0, max(m - 1, 0))))
    return x


def _triangle(x: Tensor, k: int, lower: bool, what: str) -> Tensor:
    x = _tensor(x, what)
    if x.ndim < 2:
        raise ShapeError(f"{what}: needs at least 2 dimensions, got shape {x.shape}")
    m, n = x.shape[-2:]
    rows = reshape(arange(m, dtype=DType.int32, device=x.device), (m, 1))
    cols = arange(n, dtype=DType.int32, device=x.device)
    keep = (cols - rows <= k) if lower else (cols - rows >= k)
    return where(keep, x, _zero(x.dtype))


def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The lower triangle of the last two axes (above diagonal ``k`` zeroed)."""
    return _triangle(x, k, True, "tril")


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The upper triangle of the last two axes (below diagonal ``k`` zeroed)."""
    return _triangle(x, k, False, "triu")


def count_nonzero(x: Tensor, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """How many elements are non-zero (int32), over ``axis``."""
    x = _tensor(x, "count_nonzero")
    nz = x if x.dtype is DType.bool else x != _zero(x.dtype)
    return reduce("sum", nz.astype(DType.int32), axis, keepdims)


def vecdot_axis(x1: Tensor, x2: Tensor, axis: int) -> int:
    """The reduced axis of ``vecdot(x1, x2, axis=axis)`` in the broadcast shape, checked:
    no bool operand, and equal sizes along it (no broadcasting there)."""
    if DType.bool in (x1.dtype, x2.dtype):
        raise DTypeError("vecdot: not defined for bool tensors; cast with .astype(...) first")
    shape = broadcast_shapes(x1.shape, x2.shape)
    ax = normalize_axis(axis, len(shape), "vecdot")
    n1, n2 = ((1,) * (len(shape) - x.ndim) + x.shape for x in (x1, x2))
    if n1[ax] != n2[ax]:
        raise ShapeError(f"vecdot: axis {axis} has sizes {n1[ax]} and {n2[ax]} in shapes "
                         f"{x1.shape} and {x2.shape}; they must be equal (no broadcasting "
                         "along the reduced axis)")
    return ax


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """Dot products along ``axis`` of the broadcast operands (one fused reduction)."""
    _tensor(x1, "vecdot")
    _tensor(x2, "vecdot")
    ax = vecdot_axis(x1, x2, axis)
    prod = x1 * x2
    out = reduce("sum", prod, ax)  # the narrow ints sum in their 32-bit lanes: wrapped back
    return out if out.dtype is prod.dtype else out.astype(prod.dtype)


def _scan(x: Tensor, axis: int | None, dtype: Any, include_initial: bool, op: str,
          what: str) -> Tensor:
    x = _tensor(x, what)
    if axis is None:
        if x.ndim > 1:
            raise AxisError(f"{what}: give axis= for a tensor of rank {x.ndim}")
        axis = 0
    if x.ndim == 0:
        raise ShapeError(f"{what}: needs at least one dimension")
    ax = normalize_axis(axis, x.ndim, what)
    target = as_dtype(dtype) if dtype is not None else (
        DType.int32 if x.dtype is DType.bool else x.dtype.lane)  # int8/int16 sum as int32
    if x.dtype is not target:
        x = x.astype(target)
    unit = 0 if op == "add" else 1
    n = x.shape[ax]

    def pad(k: int) -> Tensor:
        return full(x.shape[:ax] + (k,) + x.shape[ax + 1:], unit, target, device=x.device)

    step = 1
    while step < n:
        x = elementwise(op, x, cat([pad(step), _take(x, ax, slice(0, n - step))], axis=ax))
        step *= 2
    return cat([pad(1), x], axis=ax) if include_initial else x


def cumulative_sum(x: Tensor, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Tensor:
    """Running sums along ``axis`` (optional for 1-D); bool counts as int32, the 8- and
    16-bit integers sum in int32/uint32 (as ``sum``)."""
    return _scan(x, axis, dtype, include_initial, "add", "cumulative_sum")


def cumulative_prod(x: Tensor, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Tensor:
    """Running products along ``axis`` (optional for 1-D); bool counts as int32, the 8-
    and 16-bit integers multiply in int32/uint32 (as ``prod``)."""
    return _scan(x, axis, dtype, include_initial, "mul", "cumulative_prod")
