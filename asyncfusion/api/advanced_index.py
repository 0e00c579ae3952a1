"""numpy's advanced indexing: keys holding lists, integer arrays, boolean arrays or
integer tensors, for reading (``t[key]``) and, with keys known on the host, assignment.

A key is first made *normal*: ``...`` becomes the whole slices it stands for, a list or
a numpy array becomes an integer array (a boolean array becomes the integer arrays of
its true positions, one per axis it covers: numpy's ``nonzero``), and a Python int
beside an array counts as a 0-d array, as numpy counts it. Integer arrays known on the
host are checked there: an index out of range raises :class:`IndexingError`, a
negative one counts from the end. An integer *tensor* holds values the host does not
know: its negative indices count from the end and out-of-range ones are clamped to the
axis (as :func:`take` does). A boolean tensor does not index, since the result's shape
would depend on its values: ``await af.nonzero(mask)`` gives the integer tensors.

**Reading.** The slices and ``None`` of the key apply first, as a view; then the arrays
broadcast together (shape ``B``) and become one flat index into the axes they index
(computed on the host when every array is known there: one upload), read by one
:func:`take`. As in numpy, ``B`` replaces the indexed axes where those are next to each
other in the key, and comes first otherwise (``t[0, :, [1, 2]]`` has shape ``(2, n)``).

**Assignment** (``t[key] = value``) with host arrays: numpy itself applies the key to a
map of the tensor's leading axes (up to the last one the key does not take whole),
recording there the element of ``value`` that lands at each position (``-1``: none), so
duplicates, broadcasting and the placement of ``B`` are numpy's. The map is uploaded
once; the new value is ``where(map >= 0, value at map, t)``, one fused kernel with the
gather of ``value``. Integer *tensor* keys do not assign (where their indices land is
not known when the assignment is recorded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import EllipsisType
import numpy as np
import numpy.typing as npt

from .._core.dtype import DType
from .._debug import in_event_loop
from .._core.errors import IndexingError, LimitError, ShapeError, device_mismatch
from .._core.shapes import broadcast_shapes, fits_region
from ..lazy.record import elementwise
from ..lazy.tensor import Operand, Tensor
from .creation import arange, tensor
from .elementwise import where
from .indexing import take, take_along_axis

__all__ = ["is_advanced", "getitem", "assigned"]

_MAX_FLAT = 2**31 - 1  # a flat index is int32 in the kernel
_NONZERO = ("a boolean tensor mask does not index inside an event loop: the result's shape "
            "depends on its values, and reading them would block the loop. Take its "
            "positions first, `idx = await af.nonzero(mask)`, then index with `t[idx]`; or "
            "keep the shape with `af.where(mask, t, 0)`")

_Array = npt.NDArray[np.int64]
_Part = object  # a key part as the user gave it
_HostPart = int | slice | EllipsisType | None | npt.NDArray[np.int64] | npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class _Index:
    """One advanced index of a normal key: integer positions along one axis of the
    tensor (host ones in range and non-negative; a tensor's as the user gave them)."""

    at: int  # the key part (an axis of the view taken by the basic parts) it indexes
    axis: int  # the axis of the tensor
    slot: int  # its place in the key (an ellipsis standing for no axis has one too)
    host: _Array | None
    device: Tensor | None

    @property
    def shape(self) -> tuple[int, ...]:
        if self.host is not None:
            return tuple(self.host.shape)
        assert self.device is not None
        return self.device.shape


def _is_array(k: _Part) -> bool:
    return isinstance(k, (list, np.ndarray)) or type(k) is Tensor


def is_advanced(key: _Part) -> bool:
    """Whether ``key`` holds a list, a numpy array or a tensor (not only ints, slices,
    ``None`` and ``...``, which index as views)."""
    if isinstance(key, tuple):
        return any(_is_array(k) for k in key)
    return _is_array(key)


def _host_array(k: list[object] | npt.NDArray[np.generic], what: str) -> npt.NDArray[np.generic]:
    try:
        a = np.asarray(k)
    except ValueError as exc:  # a ragged list
        raise IndexingError(f"{what}: the index {k!r} is not a rectangular array ({exc})") \
            from exc
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        return a
    if a.size == 0 and isinstance(k, list):
        return a.astype(np.int64)  # numpy's rule: an empty list is an integer index
    raise IndexingError(f"{what}: an index array must hold integers or booleans, got "
                        f"{a.dtype} ({k!r}); cast it with .astype(int)")


def _is_0d_mask(key: _Part) -> bool:
    """Whether ``key`` is a 0-d boolean array or tensor alone."""
    return (isinstance(key, np.ndarray) or type(key) is Tensor) and key.ndim == 0 and \
        (key.dtype == np.bool_ if isinstance(key, np.ndarray) else key.dtype is DType.bool)


def _mask_value(key: _Part, what: str) -> bool:
    """The value of a 0-d boolean mask (a tensor's read, blocking, outside a loop only)."""
    if type(key) is Tensor:
        if in_event_loop():
            raise IndexingError(f"{what}: {_NONZERO}")
        return bool(key.to_data_sync())
    return bool(key)


def _normal(shape: tuple[int, ...], key: _Part,
            what: str) -> tuple[list[slice | None], list[_Index]]:
    """The key's basic parts (an advanced part becomes ``slice(None)``, ``...`` its
    slices, a boolean array one whole slice per axis it covers) and its advanced
    indices. ``key`` is advanced (:func:`is_advanced`)."""
    parts: list[_Part] = list(key) if isinstance(key, tuple) else [key]
    for i, k in enumerate(parts):
        if type(k) is Tensor:
            if k.dtype is DType.bool:  # its values set the result's shape: read them first,
                if in_event_loop():    # where blocking for them is allowed
                    raise IndexingError(f"{what}: {_NONZERO}")
                parts[i] = _host_array(k.to_data_sync(), what)
                continue
            if not k.dtype.is_int:
                raise IndexingError(f"{what}: an index tensor must hold integers, got "
                                    f"{k.dtype.label}; cast it with .astype(af.int32)")
        elif isinstance(k, (list, np.ndarray)):
            parts[i] = _host_array(k, what)
        elif isinstance(k, (bool, np.bool_)):
            raise IndexingError(f"{what}: a bool scalar ({k!r}) is not an index; use None "
                                "to add an axis, or a boolean array")
    if sum(k is Ellipsis for k in parts) > 1:
        raise IndexingError(f"{what}: an index can have only one ellipsis (...)")
    covers = [_covers(k) for k in parts]
    named = sum(covers)
    if named > len(shape):
        raise IndexingError(f"{what}: too many indices for a tensor of shape {shape}: "
                            f"{named} given, {len(shape)} dimension(s)")
    basic: list[slice | None] = []
    indices: list[_Index] = []
    axis = 0
    gaps = 0  # ellipses standing for no axis: numpy's advanced indices are apart there
    for k, n in zip(parts, covers, strict=True):
        if k is Ellipsis:
            basic += [slice(None)] * (len(shape) - named)
            axis += len(shape) - named
            gaps += len(shape) == named
        elif k is None or isinstance(k, slice):
            basic.append(k)
            axis += n
        elif isinstance(k, np.ndarray) and k.dtype == np.bool_:
            covered = shape[axis:axis + n]
            if len(k.shape) != len(covered) or any(
                    m not in (c, 0) for m, c in zip(k.shape, covered)):  # 0: selects none
                raise IndexingError(f"{what}: a boolean mask of shape {k.shape} must match "
                                    f"the axes it covers, {covered}, each size or 0 (axes "
                                    f"{axis}..{axis + n - 1} of shape {shape})")
            for positions in np.nonzero(k):
                indices.append(_Index(len(basic), axis, len(basic) + gaps,
                                      positions.astype(np.int64), None))
                basic.append(slice(None))
                axis += 1
        else:
            indices.append(_positions(k, shape, axis, len(basic), len(basic) + gaps, what))
            basic.append(slice(None))
            axis += 1
    return basic, indices


def _positions(k: _Part, shape: tuple[int, ...], axis: int, at: int, slot: int,
               what: str) -> _Index:
    if type(k) is Tensor:
        return _Index(at, axis, slot, None, k)
    if not isinstance(k, (int, np.integer, np.ndarray)):
        raise IndexingError(f"{what}: index {k!r} ({type(k).__name__}) is not supported: use "
                            "ints, slices, None, ..., lists, numpy arrays or integer tensors")
    a = np.asarray(k, dtype=np.int64) if not isinstance(k, np.ndarray) else k.astype(np.int64)
    n = shape[axis]
    bad = (a < -n) | (a >= n)
    if bad.any():
        raise IndexingError(f"{what}: index {int(a[bad].flat[0])} is out of range for axis "
                            f"{axis} with size {n} (shape {shape}); valid: {-n}..{n - 1}")
    return _Index(at, axis, slot, np.where(a < 0, a + n, a), None)


def _device_positions(ix: _Index, x: Tensor, what: str) -> Tensor:
    """``ix``'s positions on ``x``'s device, in int32, in range (a tensor's wrapped from
    the end and clamped to its axis)."""
    if ix.host is not None:
        return tensor(ix.host.astype(np.int32), DType.int32, device=x.device)
    part = ix.device
    assert part is not None
    if part.device is not x.device:
        raise device_mismatch(f"{what}: the index t{part.id}", x.device, part.device)
    n = x.shape[ix.axis]
    if part.dtype.is_unsigned or part.dtype.itemsize == 8:  # into int32 without wrapping
        part = elementwise("minimum", part, n)
        if not part.dtype.is_unsigned:
            part = elementwise("maximum", part, -n - 1)
    if part.dtype is not DType.int32:
        part = part.astype(DType.int32)
    part = where(part < 0, part + n, part)
    return elementwise("minimum", elementwise("maximum", part, 0), max(n - 1, 0))


def _broadcast(indices: list[_Index], what: str) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*(ix.shape for ix in indices)))
    except ValueError as exc:
        raise IndexingError(f"{what}: the index arrays do not broadcast together "
                            f"(shapes {[ix.shape for ix in indices]})") from exc


def _device_term(indices: list[_Index], strides: list[int], x: Tensor, what: str) -> Tensor:
    """Sum of each index times its axis's stride, on the device."""
    total: Tensor | None = None
    for ix, s in zip(indices, strides, strict=True):
        term = _device_positions(ix, x, what)
        term = term * s if s != 1 else term
        total = term if total is None else total + term
    assert total is not None
    return total


def getitem(x: Tensor, key: _Part) -> Tensor:
    """``x[key]`` for an advanced key (see the module's docstring): one gather from
    ``x``'s elements. Where every index is known on the host, the gather's index is
    computed there (one upload, of the result's size, or of the indices' alone when
    one array indexes an axis that the key otherwise leaves whole)."""
    what = "t[key]"
    if _is_0d_mask(key):  # numpy's rule: a new axis, of one element if true, else empty
        grown = x.reshape((1,) + x.shape)
        return grown if _mask_value(key, what) else grown[0:0]
    basic, indices = _normal(x.shape, key, what)
    shape_b = _broadcast(indices, what)
    host = all(ix.host is not None for ix in indices)
    if len(indices) == 1 and len(shape_b) == 1 and all(k == slice(None) for k in basic):
        ix = indices[0]
        index = tensor(ix.host.astype(np.int32), DType.int32, device=x.device) \
            if ix.host is not None else _device_positions(ix, x, what)
        return take_along_axis(x, index.reshape(
            (1,) * ix.at + shape_b + (1,) * (x.ndim - ix.at - 1)), ix.at)
    if x.size > _MAX_FLAT:
        raise LimitError(f"{what}: the tensor has {x.size} elements; a gather's flat index "
                         f"reaches {_MAX_FLAT} at most. Index a slice of it first")
    dense = [math.prod(x.shape[d + 1:]) for d in range(x.ndim)]
    axes: list[tuple[int, int]] = []  # (size, stride) per axis of x[basic]
    offset = 0
    axis = 0
    for k in basic + [slice(None)] * (x.ndim - sum(k is not None for k in basic)):
        if k is None:
            axes.append((1, 0))
            continue
        start, stop, step = k.indices(x.shape[axis])
        axes.append((len(range(start, stop, step)), step * dense[axis]))
        offset += start * dense[axis]
        axis += 1
    at = [ix.at for ix in indices]
    slots = [ix.slot for ix in indices]
    strides = [axes[a][1] for a in at]
    rest = [d for d in range(len(axes)) if d not in at]
    here = at[0] if slots == list(range(slots[0], slots[0] + len(slots))) else 0
    before, after = rest[:here], rest[here:]
    shape = tuple(axes[d][0] for d in before) + shape_b + tuple(axes[d][0] for d in after)
    # per other axis of the result: where it sits, its size and its stride
    others = [(i, axes[d][0], axes[d][1]) for i, d in enumerate(before)] + [
        (here + len(shape_b) + i, axes[d][0], axes[d][1]) for i, d in enumerate(after)]
    lined = (1,) * here + shape_b + (1,) * len(after)
    if host:
        total = np.full((), offset, np.int64)
        for ix, s in zip(indices, strides, strict=True):
            assert ix.host is not None
            total = total + ix.host * s
        total = total.reshape(lined)
        for place, size, stride in others:
            total = total + _along(place, size, len(shape)) * stride
        return _gather(x, tensor(np.broadcast_to(total, shape).astype(np.int32),
                                 DType.int32, device=x.device))
    index = _device_term(indices, strides, x, what)
    index = index.reshape(lined)
    if offset:
        index = index + offset
    for place, size, stride in others:
        if stride and size > 1:
            index = index + tensor(_along(place, size, len(shape)).astype(np.int32) * stride,
                                   DType.int32, device=x.device)
    return _gather(x, index if index.shape == shape else index.broadcast_to(shape))


def _gather(x: Tensor, index: Tensor) -> Tensor:
    """``x``'s elements (in C order) at ``index``, in ``index``'s shape: one gather whose
    output is the result (no view after it, so the work after it fuses with it)."""
    if not index.ndim:
        return take(x, index)
    flat = x.reshape((1,) * (index.ndim - 1) + (x.size,))
    return take_along_axis(flat, index, -1)


def _along(place: int, size: int, rank: int) -> _Array:
    """``arange(size)`` laid along axis ``place`` of a rank-``rank`` array."""
    along = [1] * rank
    along[place] = size
    return np.arange(size, dtype=np.int64).reshape(along)


def assigned(t: Tensor, key: _Part, value: Operand) -> Tensor:
    """``t`` with the elements an advanced ``key`` selects replaced by ``value`` (already
    checked against, and cast to, ``t``'s dtype); see the module's docstring."""
    what = "t[key] = value"
    parts = list(key) if isinstance(key, tuple) else [key]
    if any(type(k) is Tensor for k in parts):
        if any(type(k) is Tensor and k.dtype is DType.bool for k in parts):
            raise IndexingError(f"{what}: a boolean tensor mask assigns alone (t[mask] = "
                                "value); combine it with the rest of the key first")
        raise IndexingError(f"{what}: integer tensors in an assignment's key are not "
                            "supported (where they land is not known when it is recorded); "
                            "index with a list or numpy array, or build a mask (for example "
                            "af.arange(n) == i) and use af.where(mask, value, t)")
    _normal(t.shape, key, what)  # the key's checks, with the messages of a read
    cut = _host_key(parts, t.ndim)
    while cut and isinstance(cut[-1], slice) and cut[-1] == slice(None):
        cut.pop()  # whole trailing axes are taken on the device
    lead = sum(_covers(k) for k in cut)
    trail = t.shape[lead:]
    region_lead = np.empty(t.shape[:lead], np.bool_)[tuple(cut)].shape
    mine = np.zeros(region_lead, np.int64)  # per selected element: its element of value
    strides: list[int] = []
    if type(value) is Tensor:
        strides = _value_strides(value.shape, region_lead + trail, what)
        for d, s in enumerate(strides[:len(region_lead)]):
            if s:
                along = [1] * len(region_lead)
                along[d] = region_lead[d]
                mine = mine + np.arange(region_lead[d], dtype=np.int64).reshape(along) * s
    places = np.full(t.shape[:lead], -1, np.int64)
    places[tuple(cut)] = mine
    if not (places >= 0).any():
        return t  # nothing selected
    mapped = tensor(places.astype(np.int32), DType.int32, device=t.device)
    mapped = mapped.reshape(t.shape[:lead] + (1,) * len(trail)).broadcast_to(t.shape)
    hit = mapped >= 0
    if type(value) is not Tensor:
        return where(hit, value, t)
    at = where(hit, mapped, 0)
    for j, s in enumerate(strides[len(region_lead):]):
        if s:
            along = [1] * t.ndim
            along[lead + j] = trail[j]
            at = at + arange(trail[j], dtype=DType.int32, device=t.device).reshape(
                tuple(along)) * s
    return where(hit, _gather(value, at), t)


def _covers(k: _Part) -> int:
    """The tensor axes a key part indexes."""
    if isinstance(k, np.ndarray) and k.dtype == np.bool_:
        return int(k.ndim)
    return 0 if k is None or k is Ellipsis else 1


def _host_key(parts: list[_Part], ndim: int) -> list[_HostPart]:
    """The key (checked by :func:`_normal`) as numpy takes it: lists and arrays as
    integer or boolean arrays, and ``...`` as the whole slices it stands for."""
    out: list[_HostPart] = []
    for k in parts:
        if isinstance(k, (list, np.ndarray)):
            a = np.asarray(k)
            out.append(a.astype(np.bool_) if a.dtype == np.bool_ else a.astype(np.int64))
        elif isinstance(k, (int, np.integer)):
            out.append(int(k))
        elif k is None or k is Ellipsis or isinstance(k, slice):
            out.append(k)
        else:
            raise AssertionError(f"unchecked key part {k!r}")
    if any(k is Ellipsis for k in out):  # one standing for no axis stays: numpy's rule
        i = next(i for i, k in enumerate(out) if k is Ellipsis)
        whole = ndim - sum(_covers(k) for k in out)
        if whole:
            out[i:i + 1] = [slice(None)] * whole
    return out


def _value_strides(shape: tuple[int, ...], region: tuple[int, ...], what: str) -> list[int]:
    """Per axis of ``region``, the step in ``value``'s flat elements (0 where it
    broadcasts), or an error when it does not broadcast (leading 1s beyond the region's
    rank allowed, as numpy)."""
    shape = fits_region(shape, region, what)
    full = (1,) * (len(region) - len(shape)) + shape
    return [math.prod(full[j + 1:]) if n != 1 else 0 for j, n in enumerate(full)]
