"""Creating tensors from host data: ``tensor``, ``zeros``, ``ones``, ``full``, ``arange``,
``rand``, ``randn``. Each makes the data on the host and registers one Init (upload) op.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dtype import DType, as_dtype, from_numpy
from .errors import DataError, ShapeError
from .ir import InitOp
from .tensor import Tensor, _check_size

__all__ = ["tensor", "zeros", "ones", "full", "arange", "rand", "randn", "from_numpy_array"]

_RANGES = {DType.int32: (-(2**31), 2**31 - 1), DType.uint32: (0, 2**32 - 1)}


def _device(device: Any) -> Any:
    if device is None:
        from .device import default_device

        return default_device()
    return device


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise ShapeError(f"shape must be an int or a sequence of ints, not {shape!r}") from None
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
            raise ShapeError(f"shape {dims} is invalid: every dimension must be an int >= 0")
    return tuple(int(d) for d in dims)


def from_numpy_array(arr: np.ndarray, device: Any) -> Tensor:
    """Upload an array whose dtype is already one the device holds."""
    dtype = from_numpy(arr.dtype)
    shape = tuple(int(d) for d in arr.shape)
    _check_size(shape, device, "tensor()")
    out = Tensor(shape, dtype, device)
    device.register(InitOp(out.out_ir(), arr if arr.flags.c_contiguous else arr.copy()))
    return out


def _convert(data: Any, dtype: DType | None) -> np.ndarray:
    if isinstance(data, Tensor):
        raise DataError("tensor() got a Tensor; it is already on a device (use it directly)")
    try:
        arr = np.asarray(data)
    except ValueError as exc:
        raise DataError(f"tensor(): data is ragged or malformed ({exc}); every row of a "
                        "nested list must have the same length") from None
    if arr.dtype.kind in "USO" or data is None:
        raise DataError(f"tensor(): data must be numbers or bools, got {arr.dtype} data "
                        f"({str(data)[:40]!r}); convert strings/objects to numbers first")
    target = dtype or from_numpy(arr.dtype)
    if target in _RANGES and arr.dtype.kind in "iu" and arr.size:
        lo, hi = _RANGES[target]
        if int(arr.min()) < lo or int(arr.max()) > hi:
            raise DataError(f"tensor(): values {int(arr.min())}..{int(arr.max())} do not fit in "
                            f"{target.label}; pass dtype=asyncfusion.float32 or scale them")
    if arr.dtype.kind == "c":
        from_numpy(arr.dtype)  # raises the complex error
    with np.errstate(all="ignore"):
        return arr.astype(target.np)


def tensor(data: Any, dtype: Any = None, *, device: Any = None) -> Tensor:
    """A tensor holding ``data`` (nested lists, a scalar, or a numpy array).

    float64 data becomes float32 and int64 becomes int32 (values must fit); complex,
    string and object data raise :class:`DTypeError` / :class:`DataError`.
    """
    return from_numpy_array(_convert(data, as_dtype(dtype) if dtype is not None else None),
                            _device(device))


def full(shape: Any, value: Any, dtype: Any = None, *, device: Any = None) -> Tensor:
    """A tensor of ``shape`` filled with ``value``."""
    dt = as_dtype(dtype) if dtype is not None else from_numpy(np.asarray(value).dtype)
    return from_numpy_array(np.full(_shape(shape), value, dtype=dt.np), _device(device))


def zeros(shape: Any, dtype: Any = DType.float32, *, device: Any = None) -> Tensor:
    return full(shape, 0, dtype, device=device)


def ones(shape: Any, dtype: Any = DType.float32, *, device: Any = None) -> Tensor:
    return full(shape, 1, dtype, device=device)


def arange(start: float, stop: float | None = None, step: float = 1, dtype: Any = None, *,
           device: Any = None) -> Tensor:
    """Evenly spaced values in ``[start, stop)`` (numpy.arange)."""
    if step == 0:
        raise ShapeError("arange: step must not be zero")
    values = np.arange(start, stop, step) if stop is not None else np.arange(start)
    return tensor(values, dtype, device=device)


def rand(shape: Any, *, seed: int | None = None, device: Any = None) -> Tensor:
    """Uniform float32 values in [0, 1) from numpy's PCG64 generator with ``seed``."""
    rng = np.random.default_rng(seed)
    return from_numpy_array(rng.random(_shape(shape), dtype=np.float32), _device(device))


def randn(shape: Any, *, seed: int | None = None, device: Any = None) -> Tensor:
    """Standard normal float32 values from numpy's PCG64 generator with ``seed``."""
    rng = np.random.default_rng(seed)
    return from_numpy_array(rng.standard_normal(_shape(shape), dtype=np.float32),
                            _device(device))


