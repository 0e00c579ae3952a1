"""Selecting by index tensors: gather/take, one-hot, stack, top-k and sorting.

``take_along_axis`` (also ``gather``) registers one :class:`~asyncfusion.ir.GatherOp`: its
kernel reads the input at a coordinate taken from the index tensor, and the element-wise
fuser runs it with the work around it (``take(x, i) * 2`` is one launch). ``take`` and
``index_select`` view their indices so that they become a gather along one axis.

Indices are int32 (uint32 and Python ints are converted). A negative index counts from
the end; an index out of range cannot raise inside a kernel, so it is **clamped** to the
axis (as JAX does) — check indices on the host when they come from outside.

``topk`` selects in workgroups (:mod:`asyncfusion.api.selection`): each keeps the best ``k``
of a segment of the row, then of the segments' candidates: three launches at most for
``k`` up to 1024 and rows up to 16M elements, values and indices written by the last.
For a larger ``k`` the rows are sorted (32-bit dtypes: the sorting network) or, for
64-bit dtypes, which the network does not sort, taken in ``k`` passes of a fused argmax
(each masks what earlier passes took).

``sort``/``argsort`` of a row up to ``_RANK_SORT`` long rank every element against every
other of its row in one fused reduction (two launches plus a gather); longer rows of
32-bit dtypes go through the bitonic sorting network (O(n log^2 n), any length the
device's buffers hold); 64-bit dtypes keep the rank sort, up to ``_MAX_SORT``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.dtype import DType, int_range
from .._core.errors import DTypeError, IndexingError, LimitError, ShapeError, device_mismatch
from .._core.shapes import broadcast_shapes, check_binding, check_size, normalize_axis
from ..ir import GatherOp, numel
from ..lazy.record import elementwise
from ..lazy.tensor import Tensor, not_a_tensor
from . import selection, sorting
from .creation import arange, full, tensor
from .elementwise import where
from .joining import cat

__all__ = ["take_along_axis", "gather", "take", "index_select", "stack", "one_hot", "topk",
           "sort", "argsort"]

_MAX_AXIS = 2**31 - 1  # kernels wrap and clamp indices in i32
_MAX_SORT = 8192  # the rank sort (64-bit dtypes) does n * n work per row
_RANK_SORT = 64  # rows up to this long sort by rank (one fused kernel, batched across
# streams); longer ones of 32-bit dtypes go through the sorting network


def _indices(index: Any, like: Tensor, what: str) -> Tensor:
    if type(index) is not Tensor:
        return tensor(index, DType.int32, device=like.device)
    t: Tensor = index
    if t.device is not like.device:
        raise device_mismatch(f"{what}: the index t{t.id}", like.device, t.device)
    if not t.dtype.is_int:
        raise DTypeError(f"{what}: indices must be integers (int32 is native), got "
                         f"{t.dtype.label}; cast with .astype(asyncfusion.int32)")
    if t.dtype.itemsize == 8:  # into int32's range first: out of range clamps either way
        t = elementwise("minimum", t, _MAX_AXIS)
        if not t.dtype.is_unsigned:
            t = elementwise("maximum", t, -_MAX_AXIS)
    return t if t.dtype is DType.int32 else t.astype(DType.int32)


def take_along_axis(x: Tensor, index: Any, axis: int = -1) -> Tensor:
    """``x`` picked along ``axis`` at ``index`` (numpy.take_along_axis): ``index`` has
    ``x``'s rank; the other dimensions broadcast."""
    what = "take_along_axis"
    if type(x) is not Tensor:
        raise not_a_tensor(x, what)
    check_binding(numel(x.shape) * x.dtype.itemsize, x.device, what,
                  "gather from parts of it (t[:h], t[h:]) and combine the results")
    index = _indices(index, x, what)
    if index.ndim != x.ndim:
        raise ShapeError(f"{what}: indices of shape {index.shape} need the tensor's rank "
                         f"{x.ndim} (shape {x.shape}); reshape or unsqueeze them")
    ax = normalize_axis(axis, x.ndim, what)
    if x.shape[ax] > _MAX_AXIS:
        raise LimitError(f"{what}: axis {ax} has {x.shape[ax]} elements; indices reach "
                         f"{_MAX_AXIS} at most")
    picked = x.shape[:ax] + (index.shape[ax],) + x.shape[ax + 1:]
    shape = broadcast_shapes(picked, index.shape, what)
    if x.shape[ax] == 0 and 0 not in shape:
        raise IndexingError(f"{what}: cannot pick from axis {ax} of size 0 (shape {x.shape})")
    check_size(shape, x.device, what, x.dtype)
    out = Tensor(shape, x.dtype, x.device)
    out_ir = out.out_ir()
    x.device.register(GatherOp(x.ir(), index.ir(), ax, out_ir), (x.id, index.id), out_ir)
    return out


def gather(x: Tensor, index: Any, axis: int = -1) -> Tensor:
    """torch's name for :func:`take_along_axis`."""
    return take_along_axis(x, index, axis)


def take(x: Tensor, indices: Any, axis: int | None = None) -> Tensor:
    """Elements of ``x`` at ``indices`` along ``axis`` (numpy.take; ``None``: of the
    flattened tensor). The result's shape is ``x``'s with ``axis`` replaced by the
    indices' shape."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, "take")
    if axis is None:
        x, axis = x.reshape(-1), 0
    ax = normalize_axis(axis, x.ndim, "take")
    index = _indices(indices, x, "take")
    flat = index.reshape(-1)
    lined = flat.reshape((1,) * ax + (flat.shape[0],) + (1,) * (x.ndim - ax - 1))
    picked = take_along_axis(x, lined, ax)
    return picked.reshape(x.shape[:ax] + index.shape + x.shape[ax + 1:])


def index_select(x: Tensor, axis: int, indices: Any) -> Tensor:
    """``take`` with 1-D indices (torch.index_select)."""
    index = _indices(indices, x, "index_select")
    if index.ndim != 1:
        raise ShapeError(f"index_select: indices must be 1-D, got shape {index.shape}; use "
                         "take() for indices of any shape")
    return take(x, index, axis)


def stack(tensors: list[Tensor] | tuple[Tensor, ...], axis: int = 0) -> Tensor:
    """Join tensors of one shape along a new ``axis``."""
    tensors = list(tensors)
    if not tensors or any(type(t) is not Tensor for t in tensors):
        raise TypeError("stack: give a non-empty list of asyncfusion Tensors")
    for t in tensors[1:]:
        if t.shape != tensors[0].shape:
            raise ShapeError(f"stack: shapes differ ({tensors[0].shape} and {t.shape}); "
                             "stack needs tensors of one shape")
    ax = normalize_axis(axis, tensors[0].ndim + 1, "stack")
    return cat([t.unsqueeze(ax) for t in tensors], ax)


def one_hot(index: Tensor, num_classes: int, dtype: Any = DType.float32) -> Tensor:
    """A trailing axis of ``num_classes`` that is 1 at each index and 0 elsewhere
    (indices outside ``[0, num_classes)`` give a row of zeros)."""
    if type(index) is not Tensor:
        raise TypeError(f"one_hot needs an int32 Tensor, not {type(index).__name__}")
    index = _indices(index, index, "one_hot")
    if num_classes < 1:
        raise ShapeError(f"one_hot: num_classes must be at least 1, got {num_classes}")
    classes = arange(num_classes, dtype=DType.int32, device=index.device)
    return (index.unsqueeze(-1) == classes).astype(dtype)


def _along(n: int, ndim: int, ax: int, device: Any) -> Tensor:
    """0..n-1 laid along axis ``ax`` of a rank-``ndim`` tensor (size 1 elsewhere)."""
    return arange(n, dtype=DType.int32, device=device).reshape(
        (1,) * ax + (n,) + (1,) * (ndim - ax - 1))


def topk(x: Tensor, k: int, axis: int = -1, largest: bool = True) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (``largest=False``: smallest) values along ``axis`` and their
    indices, best first, ties by lower index (a stable sort's first ``k``); NaN counts as
    the largest value and ``-0.0`` equals ``0.0``. See the module for how (never a sort of
    a long row for ``k`` up to 1024). For a larger ``k`` of a 64-bit dtype, an axis that
    holds the masking value itself (``-inf``, or the minimum; ``+inf``/maximum for
    ``largest=False``) may list a position twice once the other values are taken."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, "topk")
    if x.dtype is DType.bool:
        raise DTypeError("topk is not defined for bool tensors; cast with "
                         ".astype(asyncfusion.int32) first")
    check_binding(numel(x.shape) * x.dtype.itemsize, x.device, "topk",
                  "take the top k of parts of it and then the top k of those")
    ax = normalize_axis(axis, x.ndim, "topk")
    n = x.shape[ax]
    if not 1 <= k <= n:
        raise ShapeError(f"topk: k={k} must be between 1 and the axis size {n} (axis {ax} "
                         f"of shape {x.shape})")
    if k <= selection.max_k(x.device.backend, x.dtype):
        if ax == x.ndim - 1:  # rows along the last axis, of any rank: no views around it
            return selection.top_k(x, k, largest)
        rows, back = _rows(x, ax)
        values, at = selection.top_k(rows, k, largest)
        return back(values), back(at)
    rows, back = _rows(x, ax)
    # more than a workgroup's memory keeps
    if x.dtype in sorting.SORTABLE:
        at = sorting.top_positions(rows, k, largest)
        return back(take_along_axis(rows, at, 1)), back(at)
    if x.dtype.is_float:
        mask: float | int = float("-inf") if largest else float("inf")
    else:
        lo, hi = int_range(x.dtype)
        mask = lo if largest else hi
    return _topk_passes(x, k, ax, largest, mask)


def _rows(x: Tensor, ax: int) -> tuple[Tensor, Callable[[Tensor], Tensor]]:
    """``x`` with axis ``ax`` last, as a 2-D (rows, n) tensor, and the function that
    turns a (rows, m) result back into ``x``'s layout (m along ``ax``)."""
    last = x.ndim - 1
    xt = x.transpose(ax, last) if ax != last else x
    lead = xt.shape[:-1]
    rows = xt if xt.ndim == 2 else xt.reshape(math.prod(lead), xt.shape[-1])

    def back(t: Tensor) -> Tensor:  # t: a result of the caller's own (no one else holds it)
        shape = lead + (t.shape[-1],)
        out = t if t.shape == shape else t.reshape(shape)
        return out.transpose(ax, last) if ax != last else out
    return rows, back


def _topk_passes(x: Tensor, k: int, ax: int, largest: bool,
                 mask: float | int) -> tuple[Tensor, Tensor]:
    """``k`` argmax (argmin) passes along ``ax``, each masking what the last one took."""
    pick = "argmax" if largest else "argmin"
    iota = _along(x.shape[ax], x.ndim, ax, x.device)
    cur = x
    picked: list[Tensor] = []
    for j in range(k):
        i = getattr(cur, pick)(ax, keepdims=True)
        picked.append(i)
        if j + 1 < k:
            cur = where(iota == i, mask, cur)
    # Lay the k picks side by side with one fused chain of selects (registered after the
    # passes, so it is one kernel), then gather the values once: k + 2 launches in all.
    shape = x.shape[:ax] + (k,) + x.shape[ax + 1:]
    slot = _along(k, x.ndim, ax, x.device).broadcast_to(shape)  # every select: one shape
    indices = picked[0] if k == 1 else where(slot == 0, picked[0], picked[1])
    for j in range(2, k):
        indices = where(slot == j, picked[j], indices)
    return take_along_axis(x, indices, ax), indices


def rank_sort_limit(x: Tensor, rows: int = 1) -> int | None:
    """The longest row ``argsort`` takes for ``x``'s dtype (None: any) in ``rows`` rows,
    on its device: the rank sort compares every pair of a row, rows * n * n 4-byte flags
    in one buffer."""
    if x.dtype in sorting.SORTABLE:
        return None
    return min(_MAX_SORT, math.isqrt(x.device.backend.max_binding // (4 * max(rows, 1))))


def argsort(x: Tensor, axis: int = -1, descending: bool = False, *,
            stable: bool = True) -> Tensor:
    """Indices that sort ``x`` along ``axis`` (stable; NaN last, as numpy; ``descending``
    keeps equal elements in order too). See the module for the two methods. Both are
    stable, so ``stable=False`` (the standard's keyword) gives the same order."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, "argsort")
    if x.dtype is DType.bool:
        x = x.astype(DType.int32)
    check_binding(numel(x.shape) * x.dtype.itemsize, x.device, "argsort",
                  "sort parts of it and merge them")
    ax = normalize_axis(axis, x.ndim, "argsort")
    n = x.shape[ax]
    if n > _RANK_SORT and x.dtype in sorting.SORTABLE and x.size:
        rows, back = _rows(x, ax)
        return back(sorting.sorted_pairs(rows, descending))
    n_rows = x.size // n if n else 0
    most = rank_sort_limit(x, n_rows)
    if most is not None and n > most:
        raise LimitError(f"argsort/sort: axis {ax} has {n} {x.dtype.name} elements in {n_rows} "
                         f"row(s); 64-bit rows sort by rank (n^2 work per row) and take at "
                         f"most {most} each here on {x.device!r}. Sort a 32-bit copy "
                         "(astype) if it keeps the order, sort fewer rows at a time, or use "
                         "topk(x, k) for the first k of a long axis")
    last = x.ndim - 1
    xs = x.transpose(ax, last) if ax != last else x
    xi, xj = xs.unsqueeze(-1), xs.unsqueeze(-2)  # element i of the row vs element j
    iota = arange(n, dtype=DType.int32, device=x.device)
    ii, jj = iota.unsqueeze(-1), iota
    a, b = (xi, xj) if descending else (xj, xi)
    if x.dtype.is_float:  # NaN sorts last either way
        nan_i, nan_j = xi.isnan(), xj.isnan()
        ahead = (a < b) | (~nan_j & nan_i)
        same = (xj == xi) | (nan_i & nan_j)
    else:
        ahead = a < b
        same = xj == xi
    before = ahead | (same & (jj < ii))  # j sorts before i
    rank = before.astype(DType.int32).sum(-1)  # where element i lands
    order = (rank.unsqueeze(-2) == ii).astype(DType.int32) * jj  # [r, i]: i if it lands at r
    perm = order.sum(-1)
    return perm.transpose(ax, last) if ax != last else perm


def sort(x: Tensor, axis: int = -1, descending: bool = False, *,
         stable: bool = True) -> Tensor:
    """``x`` sorted along ``axis`` (stable whatever ``stable`` says; NaN last). See
    :func:`argsort` for its cost."""
    return take_along_axis(x, argsort(x, axis, descending), axis)
