"""Creating tensors: ``tensor``, ``zeros``, ``ones``, ``full``, ``rand``, ``randn`` make
the data on the host and register one Init (upload) op; ``arange`` (and ``eye``, built
on it) registers an Iota op, computed on the device where it is read.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._core.dtype import (DTypeSpec, NARROWED, DType, NarrowingWarning, as_dtype, check_held, from_numpy,
                           int_range)
from .._core.errors import DataError, ShapeError
from .._core.shapes import check_dims, check_size
from ..ir import InitOp, IotaOp
from ..lazy.complex_tensor import ComplexTensor
from ..lazy.tensor import KEPT_ON_HOST, Scalar, Tensor
from ..runtime import Device, as_device, default_device

ShapeLike = int | np.integer | Sequence[int | np.integer]
"""A shape: one int, or a sequence of them."""

__all__ = ["tensor", "zeros", "ones", "full", "arange", "rand", "randn", "from_numpy_array",
           "zeros_like", "ones_like", "full_like", "empty", "empty_like", "eye", "linspace"]

def _device(device: Device | None) -> Device:
    return default_device() if device is None else as_device(device)


def _shape(shape: ShapeLike) -> tuple[int, ...]:
    refused = ShapeError(f"shape must be an int or a sequence of ints, not {shape!r}")
    if isinstance(shape, bool):
        raise refused
    if isinstance(shape, (int, np.integer)):
        dims: tuple[object, ...] = (shape,)
    else:
        try:
            dims = tuple(shape)
        except TypeError:
            raise refused from None
    out = []
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
            raise ShapeError(f"shape {dims} is invalid: every dimension must be an int >= 0")
        out.append(int(d))
    check_dims(out, "shape")
    return tuple(out)


def from_numpy_array(arr: np.ndarray, device: Device) -> Tensor:
    """Upload an array whose dtype is already one the device holds."""
    dtype = as_dtype(arr.dtype)
    check_held(dtype, device, "tensor()")
    if dtype.is_complex:  # two uploads: the parts
        part = dtype.part.np
        return ComplexTensor(from_numpy_array(arr.real.astype(part), device),
                             from_numpy_array(arr.imag.astype(part), device))
    shape = tuple(int(d) for d in arr.shape)
    out = Tensor(shape, dtype, device)
    out_ir = out.out_ir()
    data = arr if arr.flags.c_contiguous else arr.copy()
    device.register(InitOp(out_ir, data), (), out_ir)
    out._keep_host(data)
    return out


def _convert(data: ArrayLike, dtype: DType | None, device: Device, what: str) -> np.ndarray:
    """``data`` as a host array of a held dtype, checked against the device's limits
    before any full-size copy is made."""
    if isinstance(data, Tensor):
        raise DataError("tensor() got a Tensor; it is already on a device (use it directly)")
    _read_elements(data)
    try:
        arr = np.asarray(data)
    except ValueError as exc:
        raise DataError(f"tensor(): data is ragged or malformed ({exc}); every row of a "
                        "nested list must have the same length") from None
    if dtype is not None and dtype.is_int and dtype.bits == 64 and arr.dtype.kind == "f" \
            and type(data) is not np.ndarray:
        arr = _exact_ints(data, arr, dtype)
    if arr.dtype.kind in "USO" or data is None:
        raise DataError(f"tensor(): data must be numbers or bools, got {arr.dtype} data "
                        f"({str(data)[:40]!r}); convert strings/objects to numbers first")
    target = dtype or from_numpy(arr.dtype)
    if arr.dtype.kind == "c" and not target.is_complex:
        raise DataError(f"{what}: complex data cannot become {target.label} (its imaginary "
                        "part would be lost); pass dtype=asyncfusion.complex64, or take the "
                        "real part on the host first")
    check_size(tuple(int(d) for d in arr.shape), device, what, dtype)
    if target.is_int and arr.dtype.kind in "iuf" and arr.size:
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise DataError(f"{what}: NaN or infinity cannot become {target.label}; "
                            "keep the data as float32 or replace them first")
        low, high = arr.min(), arr.max()
        lo, hi = int_range(target)
        wide = _WIDE.get(arr.dtype)
        if dtype is None and type(data) is not np.ndarray and not lo <= low <= high <= hi \
                and wide in device.backend.dtypes:
            target = wide  # Python ints that int32 cannot hold stay 64-bit where held
        _check_fits(low, high, target, what)
    with np.errstate(all="ignore"):
        out = arr.astype(target.np)
    if dtype is None and arr.dtype in NARROWED and type(data) is np.ndarray:
        _warn_narrowing(arr.dtype, target, what)
    return out


def _exact_ints(data: ArrayLike, arr: np.ndarray, dtype: DType) -> np.ndarray:
    """Python ints that numpy met as float64 (ints past int64 beside smaller ones: numpy
    has no common integer type for them), taken exactly as ``dtype`` where every value is
    an int that fits it; ``arr`` otherwise."""
    exact = np.asarray(data, dtype=object)
    lo, hi = int_range(dtype)
    if all(type(v) is int and lo <= v <= hi for v in exact.flat):
        return exact.astype(dtype.np)
    return arr


def _read_elements(data: object) -> None:
    """Nested lists holding small tensors (``asarray([[x[i] * y[j] for j ...] for i ...])``)
    get them read in one device round per device, not one each as numpy converts them.
    Looked for only where the first element found is a tensor."""
    first = data
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if type(first) is not Tensor:
        return
    small: dict[Device, list[Tensor]] = {}

    def walk(items: list[object] | tuple[object, ...]) -> None:
        for v in items:
            if isinstance(v, (list, tuple)):
                walk(v)
            elif type(v) is Tensor and v.size <= KEPT_ON_HOST and \
                    getattr(v, "_host", None) is None:
                small.setdefault(v.device, []).append(v)
    walk(data)  # type: ignore[arg-type]
    for dev, tensors in small.items():
        if len(tensors) > 1:
            for t, values in zip(tensors, dev.read_many_sync(tuple(tensors), "asarray()"),
                                 strict=True):
                t._keep_host(values)


_WIDE = {np.dtype(np.int64): DType.int64, np.dtype(np.uint64): DType.uint64}
_WARNED: set[np.dtype] = set()  # the source dtypes already warned about in this process


def _warn_narrowing(source: np.dtype, target: DType, what: str) -> None:
    """Say once per process (per source dtype) that 64-bit numpy data was narrowed."""
    if source in _WARNED:
        return
    _WARNED.add(source)
    keep = "float64" if source.kind == "f" else source.name
    warnings.warn(f"{what}: numpy {source.name} data becomes {target.label} (asyncfusion's "
                  f"default, as JAX's); pass dtype=asyncfusion.{keep} to keep 64 bits (where "
                  f"the adapter has them) or dtype=asyncfusion.{target.label} to narrow "
                  "without this warning (shown once per process)", NarrowingWarning,
                  stacklevel=4)


def _check_fits(low: float, high: float, target: DType, what: str) -> None:
    lo, hi = int_range(target)
    if low < lo or high > hi:
        raise DataError(f"{what}: values {low}..{high} do not fit in "
                        f"{target.label}; pass dtype=asyncfusion.float32 or scale them")


def tensor(data: ArrayLike, dtype: DTypeSpec | None = None, *, device: Device | None = None) -> Tensor:
    """A tensor holding ``data`` (nested lists, a scalar, or a numpy array).

    float64 data becomes float32 and int64 becomes int32 (values must fit) unless
    ``dtype`` says float64/int64 (where the adapter has them); Python ints that do not fit
    int32 give int64 where the adapter has it (``tensor(2**40)``); numpy float64/int64/uint64 arrays
    given without ``dtype`` warn once per process (:class:`NarrowingWarning`); complex data
    gives a :class:`~asyncfusion.lazy.complex_tensor.ComplexTensor` (complex64 unless
    ``dtype`` says complex128); string and object data raise :class:`DataError`.
    """
    device = _device(device)
    target = as_dtype(dtype) if dtype is not None else None
    return from_numpy_array(_convert(data, target, device, "tensor()"), device)


def full(shape: ShapeLike, fill_value: Scalar, dtype: DTypeSpec | None = None, *, device: Device | None = None) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``."""
    device = _device(device)
    shape = _shape(shape)
    dt = as_dtype(dtype) if dtype is not None else None
    fill = _convert(fill_value, dt, device, "full()")
    if fill.ndim:
        raise DataError(f"full(): the fill value must be a scalar, not shape {fill.shape}")
    check_size(shape, device, "full()", as_dtype(fill.dtype))
    return from_numpy_array(np.full(shape, fill, dtype=fill.dtype), device)


def zeros(shape: ShapeLike, dtype: DTypeSpec = DType.float32, *, device: Device | None = None) -> Tensor:
    """A tensor of ``shape`` filled with 0 (give the shape as one tuple: ``zeros((2, 3))``)."""
    _one_shape("zeros", shape, dtype)
    return full(shape, 0, DType.float32 if dtype is None else dtype, device=device)


def ones(shape: ShapeLike, dtype: DTypeSpec = DType.float32, *, device: Device | None = None) -> Tensor:
    """A tensor of ``shape`` filled with 1 (give the shape as one tuple: ``ones((2, 3))``)."""
    _one_shape("ones", shape, dtype)
    return full(shape, 1, DType.float32 if dtype is None else dtype, device=device)


def _one_shape(name: str, shape: ShapeLike, dtype: DTypeSpec) -> None:
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        dims = (shape if isinstance(shape, tuple) else (shape,)) + (dtype,)
        raise TypeError(f"{name}{dims}: the second argument is the dtype; give the shape as "
                        f"one tuple: asyncfusion.{name}({dims})")


def arange(start: float, stop: float | None = None, step: float = 1, dtype: DTypeSpec | None = None, *,
           device: Device | None = None) -> Tensor:
    """Evenly spaced values in ``[start, stop)`` (numpy.arange): int32 for int arguments,
    float32 otherwise, unless ``dtype`` says.

    Nothing is uploaded: element ``i`` is ``start + i * step``, computed by the kernels
    that read it (so ``(arange(n) * x).sum()`` is one launch and needs no buffer for the
    arange); where the arange itself must exist (it is read, kept, or given to an op that
    does not fuse) one kernel writes it. Float ranges are computed in float32 (in float64
    for ``dtype=float64``): within a few ulps of numpy, which computes in float64 and
    rounds; integer ranges are exact. Float bounds with an integer ``dtype`` give numpy's
    truncated float64 values, made on the host and uploaded.
    """
    if stop is None:
        start, stop = 0, start
    bounds = (start, stop, step)
    for v in bounds:
        if not isinstance(v, (int, float, np.integer, np.floating)):
            raise DataError(f"arange: start, stop and step must be real numbers, got {v!r}")
    if not all(math.isfinite(v) for v in bounds):
        raise DataError(f"arange: start, stop and step must be finite, got {start!r}, "
                        f"{stop!r}, {step!r}")
    if step == 0:
        raise ShapeError("arange: step must not be zero")
    device = _device(device)
    ints = all(isinstance(v, (int, np.integer)) for v in bounds)
    n = max(0, int(-((start - stop) // step)) if ints else math.ceil((stop - start) / step))
    check_size((n,), device, "arange()")
    target = as_dtype(dtype) if dtype is not None else DType.int32 if ints else DType.float32
    check_held(target, device, "arange()")
    if ints and target.is_int or target is DType.float64:
        compute = target.lane  # the narrow ints count in their 32-bit lanes
    else:
        compute = DType.int32 if ints and not target.is_float else DType.float32
    last = start + (n - 1) * step
    for dt in (d for d in {target, compute} if d.is_int and n):
        _check_fits(min(start, last), max(start, last), dt, "arange()")
    if target.is_int and not ints:  # numpy truncates its float64 values (float32 would
        # round some across an integer): made on the host, as numpy makes them
        return tensor(np.trunc(np.arange(start, stop, step)), target, device=device)
    if compute.is_int:
        bits = compute.bits
        start, step = (int(v) % 2**bits for v in (start, step))  # wraps as the kernel does
        if not compute.is_unsigned:
            start, step = (v - 2**bits if v >= 2**(bits - 1) else v for v in (start, step))
    else:
        start, step = float(start), float(step)
    out = Tensor((n,), compute, device)
    out_ir = out.out_ir()
    device.register(IotaOp(start, step, out_ir), (), out_ir)
    return out if compute is target else out.astype(target)


def rand(shape: ShapeLike, *, seed: int | None = None, device: Device | None = None) -> Tensor:
    """Uniform float32 values in [0, 1) from numpy's PCG64 generator with ``seed``."""
    device, shape = _device(device), _shape(shape)
    check_size(shape, device, "rand()")
    rng = np.random.default_rng(seed)
    return from_numpy_array(rng.random(shape, dtype=np.float32), device)


def randn(shape: ShapeLike, *, seed: int | None = None, device: Device | None = None) -> Tensor:
    """Standard normal float32 values from numpy's PCG64 generator with ``seed``."""
    device, shape = _device(device), _shape(shape)
    check_size(shape, device, "randn()")
    rng = np.random.default_rng(seed)
    return from_numpy_array(rng.standard_normal(shape, dtype=np.float32), device)




def full_like(x: Tensor, fill_value: Scalar, dtype: DTypeSpec | None = None, *, device: Device | None = None) -> Tensor:
    """A tensor of ``x``'s shape (and dtype and device, unless given) filled with
    ``fill_value``."""
    return full(x.shape, fill_value, dtype if dtype is not None else x.dtype,
                device=device if device is not None else x.device)


def zeros_like(x: Tensor, dtype: DTypeSpec | None = None, *, device: Device | None = None) -> Tensor:
    return full_like(x, 0, dtype, device=device)


def ones_like(x: Tensor, dtype: DTypeSpec | None = None, *, device: Device | None = None) -> Tensor:
    return full_like(x, 1, dtype, device=device)


def empty(shape: ShapeLike, dtype: DTypeSpec = DType.float32, *, device: Device | None = None) -> Tensor:
    """A tensor of ``shape`` (filled with 0: an upload costs the same either way)."""
    return zeros(shape, dtype, device=device)


def empty_like(x: Tensor, dtype: DTypeSpec | None = None, *, device: Device | None = None) -> Tensor:
    return full_like(x, 0, dtype, device=device)


def eye(n_rows: int, n_cols: int | None = None, *, k: int = 0, dtype: DTypeSpec | None = None,
        device: Device | None = None) -> Tensor:
    """Ones on diagonal ``k`` of an ``n_rows`` x ``n_cols`` matrix, zeros elsewhere: one
    kernel comparing two aranges, nothing uploaded."""
    dt = as_dtype(dtype) if dtype is not None else DType.float32
    rows, cols = _shape((n_rows, n_rows if n_cols is None else n_cols))
    device = _device(device)
    check_size((rows, cols), device, "eye()", dt)
    k = max(-rows, min(operator.index(k), cols))  # past the corners: no diagonal at all
    row = arange(rows, device=device).reshape((rows, 1))
    return ((arange(cols, device=device) - row) == k).astype(dt)


def linspace(start: float, stop: float, /, num: int, *, dtype: DTypeSpec | None = None,
             device: Device | None = None, endpoint: bool = True) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (float32 by default),
    computed in float64 on the host as numpy does, then rounded."""
    if isinstance(start, complex) or isinstance(stop, complex) or (
            dtype is not None and as_dtype(dtype).is_complex):
        raise DataError("linspace: complex ranges are not supported; build the real and "
                        "imaginary parts with two linspace calls")
    dt = as_dtype(dtype) if dtype is not None else DType.float32
    device = _device(device)
    check_size(_shape(num), device, "linspace()", dt)
    values = np.linspace(start, stop, num, endpoint=endpoint)
    return tensor(values if dt.is_float else np.trunc(values), dt, device=device)
