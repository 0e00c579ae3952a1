"""Shape rules every op checks before it records anything: numpy's broadcasting, axis
normalisation, and the size limits of a device's kernels and buffers."""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from .dtype import DType
from .errors import AxisError, LimitError, ShapeError

__all__ = ["MAX_DIM", "Buffers", "broadcast_shapes", "normalize_axis", "check_dims",
           "check_size"]

MAX_DIM = 2**32 - 1  # kernels hold dimensions in u32 uniforms
_WIDEST = 4  # the widest dtype a call without dtype= makes (64-bit ones need dtype=)


class Buffers(Protocol):
    """What a size check needs of a device."""

    @property
    def max_buffer_size(self) -> int: ...

    @property
    def max_binding(self) -> int: ...


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...], what: str) -> tuple[int, ...]:
    """numpy's broadcasting rule, with an error that names both shapes."""
    if a == b:
        return a
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + a
    pb = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ShapeError(
                f"{what}: shapes {a} and {b} do not broadcast (dimension {x} vs {y}); "
                "reshape one operand so each dimension matches or is 1")
    return tuple(out)


def normalize_axis(axis: object, rank: int, what: str) -> int:
    """``axis`` as a position in ``0..rank-1`` (negative ones count from the end)."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise AxisError(f"{what}: axis must be an int, not {type(axis).__name__}")
    if not -rank <= axis < max(rank, 1) or rank == 0:
        raise AxisError(f"{what}: axis {axis} is out of range for a tensor of rank {rank} "
                        f"(valid: {-rank}..{rank - 1})" if rank else
                        f"{what}: a 0-d tensor has no axis {axis}")
    return int(axis) % rank


def check_dims(dims: tuple[int, ...] | list[int], what: str) -> None:
    """Refuse a dimension larger than kernels index (an empty tensor has no size check)."""
    for d in dims:
        if d > MAX_DIM:
            raise LimitError(f"{what}: dimension {d} in {tuple(dims)} is larger than "
                             f"{MAX_DIM}, the largest asyncfusion indexes")


def check_size(shape: tuple[int, ...], device: Buffers, what: str,
               dtype: DType | None = None) -> None:
    """Refuse a tensor larger than the device's largest buffer (``dtype`` unknown yet: 4
    bytes an element)."""
    nbytes = math.prod(shape) * (dtype.itemsize if dtype is not None else _WIDEST)
    if nbytes > device.max_buffer_size:
        raise LimitError(
            f"{what}: a tensor of shape {shape} needs {nbytes} bytes, more than this device's "
            f"largest buffer (the adapter's max-buffer-size: {device.max_buffer_size} "
            "bytes); split the work into smaller tensors")


def fits_region(shape: tuple[int, ...], region: tuple[int, ...], what: str) -> tuple[int, ...]:
    """``shape`` with the leading 1s beyond ``region``'s rank dropped, once it is checked to
    broadcast to ``region`` (as numpy assigns); a ShapeError naming ``what`` otherwise."""
    while len(shape) > len(region) and shape[0] == 1:
        shape = shape[1:]
    if len(shape) > len(region) or any(
            v not in (1, r) for v, r in zip(reversed(shape), reversed(region), strict=False)):
        raise ShapeError(f"{what}: a value of shape {shape} does not broadcast to the "
                         f"selected region's shape {region}")
    return shape


def check_binding(nbytes: int, device: Buffers, what: str, remedy: str) -> None:
    """Refuse, where it is called, an op that must bind ``nbytes`` of one tensor in one
    kernel when that is more than one storage binding reaches (element-wise ops split
    their bindings; reductions, products, gathers and sorts do not)."""
    if nbytes > device.max_binding:
        raise LimitError(
            f"{what} reads {nbytes} bytes of one tensor in one kernel, more than this "
            f"adapter's max-storage-buffer-binding-size ({device.max_binding} bytes; its "
            f"max-buffer-size, the largest tensor, is {device.max_buffer_size} bytes). "
            f"Element-wise ops split such bindings; this one cannot: {remedy}")
