"""Views: new layouts over a tensor's storage, registered as ops that launch nothing.

``reshape`` (a copy only when strides cannot express it), ``permute``/``transpose``,
``broadcast_to``, ``squeeze``/``unsqueeze``, ``flip`` and basic indexing (ints, slices with
any step, ``None``, ``...``) each register one :class:`~asyncfusion.ir.ViewOp`; kernels
that read the view load through its strides, so views fuse into whatever reads them.
``contiguous`` materializes a strided view with one copy kernel.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import SupportsIndex, cast

import numpy as np

from .._core.errors import AxisError, IndexingError, ShapeError
from .._core.shapes import MAX_DIM, broadcast_shapes, check_dims, normalize_axis
from ..ir import IndexItem, Layout, ViewOp, numel
from ..lazy.record import elementwise
from ..lazy.tensor import Axes, Key, Tensor

__all__ = ["view", "reshape", "permute", "transpose", "broadcast_to", "squeeze",
           "unsqueeze", "flip", "index", "contiguous", "reshape_target", "parse_key",
           "int_index"]


def view(x: Tensor, layout: Layout, kind: str) -> Tensor:
    """Register ``x`` seen through ``layout`` (over x's storage) as a new tensor."""
    dense = layout.is_dense
    out = Tensor(layout.shape, x.dtype, x.device, None if dense else layout)
    out_ir = out.out_ir()
    x.device.register(ViewOp(kind, x.ir(), out_ir), (x.id,), out_ir)
    return out


def contiguous(x: Tensor) -> Tensor:
    """This tensor in dense C order (a copy kernel only when it is a strided view)."""
    return x if x.layout is None else elementwise("copy", x)


def reshape_target(src: tuple[int, ...], shape: tuple[int | Sequence[int], ...]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if all(type(d) is int and 0 <= d <= MAX_DIM for d in shape) and \
            numel(cast(tuple[int, ...], shape)) == numel(src):
        return cast(tuple[int, ...], shape)  # sizes that need no check
    dims = []
    for d in shape:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise ShapeError(f"reshape: dimensions must be ints, got {d!r} in {shape}")
        dims.append(int(d))
    check_dims(dims, "reshape")
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise ShapeError(f"reshape: invalid shape {tuple(dims)}; use non-negative sizes and "
                         "at most one -1")
    total = numel(src)
    if -1 in dims:
        known = numel(tuple(d for d in dims if d != -1))
        if known == 0 or total % known:
            raise ShapeError(f"reshape: cannot reshape {src} ({total} elements) to {tuple(dims)}")
        dims[dims.index(-1)] = total // known
    if numel(tuple(dims)) != total:
        raise ShapeError(f"reshape: cannot reshape {src} ({total} elements) to {tuple(dims)} "
                         f"({numel(tuple(dims))} elements)")
    return tuple(dims)


def reshape(x: Tensor, shape: tuple[int | Sequence[int], ...]) -> Tensor:
    target = reshape_target(x.shape, shape)
    if x.layout is None:  # dense stays dense: no layout to work out
        out = Tensor(target, x.dtype, x.device)
        out_ir = out.out_ir()
        x.device.register(ViewOp("reshape", x.ir(), out_ir), (x.id,), out_ir)
        return out
    layout = x.view_layout.reshape(target)
    if layout is None:  # strides cannot express it: copy, then view the dense copy
        x = contiguous(x)
        layout = Layout.dense(target)
    return view(x, layout, "reshape")


def _axes(axes: tuple[int | Sequence[int], ...], ndim: int, what: str) -> tuple[int, ...]:
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    out = tuple(normalize_axis(a, ndim, what) for a in axes)
    if sorted(out) != list(range(ndim)):
        raise AxisError(f"{what}: axes {axes} are not a permutation of the {ndim} axes of "
                        "the tensor; name each axis exactly once")
    return out


def permute(x: Tensor, axes: tuple[int | Sequence[int], ...]) -> Tensor:
    if x.ndim == 0 and axes in ((), ((),)):
        return view(x, x.view_layout, "permute")
    return view(x, x.view_layout.permute(_axes(axes, x.ndim, "permute")), "permute")


def transpose(x: Tensor, /, a: int = -2, b: int = -1) -> Tensor:
    """Swap two axes (the last two by default)."""
    if x.ndim < 2:
        raise AxisError(f"transpose/mT needs at least 2 dimensions, got shape {x.shape}; "
                        "use reshape or unsqueeze first")
    a, b = normalize_axis(a, x.ndim, "transpose"), normalize_axis(b, x.ndim, "transpose")
    axes = list(range(x.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return view(x, x.view_layout.permute(tuple(axes)), "transpose")


def broadcast_to(x: Tensor, shape: tuple[int | Sequence[int], ...]) -> Tensor:
    parts = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    dims = []
    for d in parts:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
            raise ShapeError(f"broadcast_to: shape {parts} must be non-negative ints")
        dims.append(int(d))
    target = tuple(dims)
    if len(target) < x.ndim or broadcast_shapes(x.shape, target, "broadcast_to") != target:
        raise ShapeError(f"broadcast_to: shape {x.shape} cannot be broadcast to {target}; "
                         "each dimension must match or be 1, and the rank cannot shrink")
    return view(x, x.view_layout.expand(target), "expand")


def squeeze(x: Tensor, axis: Axes = None) -> Tensor:
    """A view without the size-1 axes (all of them, or those ``axis`` names)."""
    lay = x.view_layout
    if axis is None:
        drop = {d for d, s in enumerate(x.shape) if s == 1}
    else:
        axes = axis if isinstance(axis, (tuple, list)) else (axis,)
        drop = {normalize_axis(a, x.ndim, "squeeze") for a in axes}
        for d in drop:
            if x.shape[d] != 1:
                raise ShapeError(f"squeeze: axis {d} has size {x.shape[d]}, not 1 (shape "
                                 f"{x.shape}); only size-1 axes can be removed")
    keep = [d for d in range(x.ndim) if d not in drop]
    return view(x, Layout(tuple(lay.shape[d] for d in keep), tuple(lay.strides[d] for d in keep),
                          lay.offset), "squeeze")


def unsqueeze(x: Tensor, axis: int) -> Tensor:
    """A view with a new size-1 axis at position ``axis``."""
    d = normalize_axis(axis, x.ndim + 1, "unsqueeze")
    lay = x.view_layout
    return view(x, Layout(lay.shape[:d] + (1,) + lay.shape[d:],
                          lay.strides[:d] + (0,) + lay.strides[d:], lay.offset), "unsqueeze")


def flip(x: Tensor, axis: Axes = None) -> Tensor:
    """A view with the elements reversed along ``axis`` (all axes by default)."""
    if axis is None:
        axes = set(range(x.ndim))
    else:
        seq = axis if isinstance(axis, (tuple, list)) else (axis,)
        axes = {normalize_axis(a, x.ndim, "flip") for a in seq}
    return index(x, tuple(slice(None, None, -1) if d in axes else slice(None)
                          for d in range(x.ndim)), "flip")


def _int_index(k: object) -> bool:
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def index(x: Tensor, key: Key, kind: str = "index") -> Tensor:
    """Basic indexing (ints, slices with any non-zero step, ``None`` and ``...``): a view.
    A view of a small tensor remembers where it came from (:meth:`Tensor.note_source`),
    so that reading it outside an event loop reads the whole tensor once."""
    out = view(x, x.view_layout.index(parse_key(x.shape, key)), kind)
    out.note_source(x, key)
    return out


def parse_key(shape: tuple[int, ...], key: Key) -> tuple[IndexItem, ...]:
    """A basic index normalized against ``shape``: one item per key part, ``...`` expanded
    (the key may name fewer axes than ``shape`` has; the rest are kept whole)."""
    if not isinstance(key, tuple):
        key = (key,)
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, slice) or _int_index(k)):
            raise IndexingError(
                f"index {k!r} ({type(k).__name__}) is not supported: use ints, slices, None, "
                "..., lists, numpy arrays or integer tensors")
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexingError(f"an index can have only one ellipsis (...), got {key!r}")
    ndim = len(shape)
    named = sum(1 for k in key if k is not None and k is not Ellipsis)
    if named > ndim:
        raise IndexingError(f"too many indices for a tensor of shape {shape}: {named} "
                            f"given, {ndim} dimension(s)")
    items: list[IndexItem] = []
    axis = 0
    for k in key:
        if k is Ellipsis:
            for _ in range(ndim - named):
                items.append(IndexItem("slice", axis, 0, 1, shape[axis]))
                axis += 1
        elif k is None:
            items.append(IndexItem("new"))
        elif isinstance(k, slice):
            size = shape[axis]
            bounds = slice(*(_slice_bound(part, k) for part in (k.start, k.stop, k.step)))
            if bounds.step == 0:
                raise IndexingError(f"slice step cannot be zero (axis {axis} of shape "
                                    f"{shape}); use a positive or negative step")
            start, stop, step = bounds.indices(size)
            items.append(IndexItem("slice", axis, start, step, len(range(start, stop, step))))
            axis += 1
        else:
            items.append(IndexItem("int", axis, int_index(k, shape, axis)))
            axis += 1
    return tuple(items)


def _slice_bound(part: object, k: slice) -> int | None:
    """A slice's start, stop or step as an int: ints, numpy integers and objects with
    ``__index__`` (a 0-d integer tensor reads its value, blocking, as ``int(t)``: refused
    inside an event loop); bools are refused."""
    if part is None:
        return None
    if isinstance(part, (bool, np.bool_)) or not isinstance(part, SupportsIndex):
        raise IndexingError(f"slice bounds must be ints, objects with __index__ or None, "
                            f"got {k!r}")
    return operator.index(part)


def int_index(k: object, shape: tuple[int, ...], axis: int) -> int:
    """The int ``k`` on ``axis`` of ``shape``, counted from the end when negative."""
    size = shape[axis]
    if not isinstance(k, (int, np.integer)):
        raise IndexingError(f"index {k!r} on axis {axis} is not an int")
    i = int(k)
    if not -size <= i < size:
        raise IndexingError(f"index {i} is out of range for axis {axis} with size "
                            f"{size} (shape {shape}); valid: {-size}..{size - 1}")
    return i % size
