"""Indexing's entry, ``t[key]``, and assignment, ``t[key] = value``.

**Assignment** is functional underneath. The new value of the whole tensor is one
element-wise ``where(selected, value, t)``: per axis, the positions that the key selects
and each one's place in the selected region are computed from an :func:`arange` (an
index expression in the fused kernel: no buffer, no upload); ``value`` is gathered from
that place, so a value of the region's shape (or any shape that broadcasts to it) lands
where numpy puts it. Then the Tensor object is *rebound* to the result: it takes the new
tensor's id, and the old value is dropped with the temporary that took the old id (its
storage is freed once nothing else reads it). Other tensors keep their values: a view
taken of ``t`` before, or the tensor that ``t`` was a view of, does not change (copy on
write, as torch's functionalization and JAX's ``x.at[key].set(value)``).

Keys holding lists, numpy arrays or tensors (numpy's advanced indexing) are
:mod:`asyncfusion.api.advanced_index`'s.
"""

from __future__ import annotations

import numpy as np

from .._core.dtype import DType
from .._core.errors import DTypeError, IndexingError, device_mismatch
from .._core.shapes import fits_region
from ..ir import IndexItem, numel
from ..lazy.record import elementwise, float_scalar, scalar_dtype
from ..lazy.tensor import Key, Operand, Tensor
from . import advanced_index
from .creation import arange, full
from .elementwise import where
from .indexing import take_along_axis
from .namespace import can_cast
from .views import broadcast_to, index, parse_key

__all__ = ["getitem", "assign", "assigned"]


def getitem(x: Tensor, key: Key, /) -> Tensor:
    """``x[key]``: a view for a basic key (:func:`~asyncfusion.api.views.index`), a
    gather for a key holding lists, numpy arrays or integer tensors
    (:func:`asyncfusion.api.advanced_index.getitem`)."""
    if advanced_index.is_advanced(key):
        return advanced_index.getitem(x, key)
    return index(x, key)


def assign(t: Tensor, key: Key, value: Operand) -> None:
    """``t[key] = value``: rebind ``t`` to :func:`assigned` (see the module's docstring)."""
    new = assigned(t, key, value)
    if new is t:
        return
    t.id, new.id = new.id, t.id
    t.layout, new.layout = new.layout, t.layout
    t._ir, new._ir = new._ir, t._ir
    for known in ("_host", "_source"):  # the old values, and where they came from
        if hasattr(t, known):
            delattr(t, known)
    # ``new`` (now holding the old id) goes away here and drops the old value


def assigned(t: Tensor, key: Key, value: Operand) -> Tensor:
    """A new tensor: ``t`` with the elements that ``key`` selects replaced by ``value``."""
    value = _value(t, value)
    if type(key) is Tensor and key.dtype is DType.bool:
        return _masked(t, key, value)
    if advanced_index.is_advanced(key):
        return advanced_index.assigned(t, key, value)
    items = parse_key(t.shape, key)
    region = tuple(1 if it.kind == "new" else it.length for it in items if it.kind != "int")
    region += t.shape[sum(it.kind != "new" for it in items):]
    if type(value) is Tensor:
        fits_region(value.shape, region, "t[key] = value")
    if numel(region) == 0:
        return t  # nothing selected
    axes = _axes(items, t.ndim)
    mask: Tensor | None = None
    places: list[Tensor] = []
    for d, item in enumerate(axes):
        selected, place = _selection(item, t, d)
        if type(selected) is Tensor:
            mask = selected if mask is None else mask & selected
        if place is not None:
            places.append(place)
    if type(value) is Tensor:
        value = _gather(value, places, items, region)
    if mask is None:
        return _filled(t, value)
    return where(mask, value, t)


def _value(t: Tensor, value: Operand) -> Operand:
    """``value`` checked against ``t``'s dtype (the Array API's rule: the value converts
    to ``t``'s dtype without changing kind or losing range) and cast to it."""
    what = "t[key] = value"
    if type(value) is Tensor:
        if value.device is not t.device:
            raise device_mismatch(f"{what}: the value t{value.id}", t.device, value.device)
        if not can_cast(value.dtype, t.dtype):
            raise DTypeError(f"{what}: a {value.dtype.label} value cannot be assigned into a "
                             f"{t.dtype.label} tensor without changing kind or losing range; "
                             f"cast it with .astype(asyncfusion.{t.dtype.label}) first")
        return value if value.dtype is t.dtype else value.astype(t.dtype)
    if isinstance(value, np.generic):
        value = value.item()  # a numpy scalar counts as the Python scalar it holds
    if isinstance(value, bool) != (t.dtype is DType.bool) or not isinstance(
            value, (bool, int, float)) or (isinstance(value, float) and not t.dtype.is_float):
        raise DTypeError(f"{what}: a {type(value).__name__} value ({value!r}) cannot be "
                         f"assigned into a {t.dtype.label} tensor (bool into bool, int into "
                         "int or float, float into float); cast the tensor or the value first")
    scalar_dtype(value, t.dtype, what)  # an int's range
    if isinstance(value, int) and t.dtype.is_float and not isinstance(value, bool):
        float_scalar(value, what)
    return value


def _masked(t: Tensor, mask: Tensor, value: Operand) -> Tensor:
    """``t[mask] = value`` with a mask over ``t``'s leading axes and one value."""
    if mask.shape != t.shape[:mask.ndim]:
        raise IndexingError(f"t[mask] = value: a mask of shape {mask.shape} must match the "
                            f"leading axes of the tensor's shape {t.shape}")
    if type(value) is Tensor and value.size != 1:
        raise IndexingError(f"t[mask] = value: the value must be one element (a scalar or a "
                            f"0-d tensor), got shape {value.shape}; for a value per element "
                            "use where(mask, values, t)")
    if mask.device is not t.device:
        raise device_mismatch(f"t[mask] = value: the mask t{mask.id}", t.device, mask.device)
    one = value.reshape(()) if type(value) is Tensor else value
    return where(mask.reshape(mask.shape + (1,) * (t.ndim - mask.ndim)), one, t)


def _axes(items: tuple[IndexItem, ...], ndim: int) -> list[IndexItem]:
    """One item per axis of the tensor (``new`` items dropped, unnamed axes whole)."""
    named = [it for it in items if it.kind != "new"]
    return named + [IndexItem("slice", d, 0, 1, -1) for d in range(len(named), ndim)]


def _position(n: int, d: int, t: Tensor) -> Tensor:
    """``arange(n)`` along axis ``d`` of ``t``'s shape (a view: every op of the assignment
    then has ``t``'s shape, and the fuser runs them all in one kernel)."""
    shape = [1] * t.ndim
    shape[d] = n
    return broadcast_to(arange(n, device=t.device).reshape(tuple(shape)), t.shape)


def _selection(item: IndexItem, t: Tensor, d: int) -> tuple[Tensor | bool, Tensor | None]:
    """Which positions along axis ``d`` the item selects (``True``: all), and each one's
    place in the region along that axis (``None`` for an int: no region axis)."""
    n = t.shape[d]
    pos = _position(n, d, t)
    if item.length == -1 or (item.kind == "slice" and item.start == 0 and item.step == 1
                             and item.length == n):
        return True, pos
    if item.kind == "int":
        return pos == item.start, None
    rel = pos - item.start
    if item.step == 1:
        place = rel
    elif item.step == -1:
        place = -rel
    else:
        place = elementwise("floor_divide", rel, item.step)
    inside = (place >= 0) & (place < item.length)
    if abs(item.step) != 1:
        inside = inside & (place * item.step == rel)
    return inside, place


def _gather(value: Tensor, places: list[Tensor], items: tuple[IndexItem, ...],
            region: tuple[int, ...]) -> Tensor:
    """``value`` (broadcastable to ``region``) read at each element's place: one take of
    its elements at a flat index made from the per-axis places; an axis where the value
    has size 1 reads its only element, and a value of one element is a 0-d tensor."""
    if value.size == 1:
        return value.reshape(())
    dims = list(value.shape[-len(region):] if region else ())
    dims = [1] * (len(region) - len(dims)) + dims
    kinds = [it.kind for it in items if it.kind != "int"]
    kinds += ["slice"] * (len(region) - len(kinds))
    dims = [size for size, kind in zip(dims, kinds, strict=True) if kind != "new"]
    flat: Tensor | None = None
    stride = 1
    for place, size in zip(reversed(places), reversed(dims), strict=True):
        if size != 1:
            term = place * stride if stride != 1 else place
            flat = term if flat is None else term + flat
        stride *= size
    assert flat is not None  # more than one element: some axis has more than one
    return take_along_axis(value.reshape((1,) * (flat.ndim - 1) + (-1,)), flat, -1)


def _filled(t: Tensor, value: Operand) -> Tensor:
    """Every element selected: the value broadcast to ``t``'s shape, as a new tensor."""
    if isinstance(value, Tensor):
        return elementwise("copy", broadcast_to(value, t.shape))
    return full(t.shape, value, dtype=t.dtype, device=t.device)
