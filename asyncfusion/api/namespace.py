"""The Array API namespace: the inspection object, dtype queries and the constants.

``t.__array_namespace__()`` returns the ``asyncfusion`` module, so code written against
the standard (``xp = array_namespace(x)``) runs on it. What it reports is what this
runtime holds: float32, int8, int16, int32, uint8, uint16, uint32 and bool on every
adapter, float16, float64, int64 and uint64 where the adapter has
``shader-f16``/``-f64``/``-int64`` (the numpy backend always), complex64 everywhere and
complex128 where float64 is held (a pair of real tensors each). Every op
knows its output's shape when it is recorded, so there is no boolean-mask indexing; the
functions whose output size depends on data (``nonzero``,
``unique_all``/``_counts``/``_inverse``/``_values``) read that size first: outside a
running event loop they block for it and return the standard's results (data-dependent
shapes are supported there), inside one they return an awaitable of them,
``await af.nonzero(x)``, so that no task is stalled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
import numpy as np

from .._core.dtype import DType, DTypeSpec, as_dtype, promote
from .._core.errors import DTypeError
from .._debug import in_event_loop
from ..lazy.record import elementwise, scalar_dtype
from ..lazy.tensor import Tensor, not_a_tensor
from ..runtime import Device, as_device, default_device

Kind = DTypeSpec | str | tuple[DTypeSpec | str, ...] | None
"""What ``isdtype`` takes as a kind: a dtype, a kind name, or a tuple of them."""

__all__ = ["__array_namespace_info__", "ArrayNamespaceInfo", "finfo", "iinfo", "finfo_object",
           "iinfo_object", "result_type", "can_cast", "isdtype", "astype", "e", "pi", "inf",
           "nan", "newaxis"]

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

_KINDS = {
    "bool": (DType.bool,),
    "signed integer": tuple(d for d in DType if d.is_int and not d.is_unsigned),
    "unsigned integer": tuple(d for d in DType if d.is_unsigned),
    "integral": tuple(d for d in DType if d.is_int),
    "real floating": tuple(d for d in DType if d.is_float),
    "complex floating": (DType.complex64, DType.complex128),
    "numeric": tuple(d for d in DType if d is not DType.bool),
}


def isdtype(dtype: DTypeSpec, kind: Kind) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name (``"integral"``, ``"real
    floating"``, ...) or a tuple of them."""
    dt = as_dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; use a dtype or one of "
                             f"{', '.join(map(repr, _KINDS))}")
        return dt in _KINDS[kind]
    return dt is as_dtype(kind)


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name
    """Machine limits of a floating dtype (``finfo``)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's name
    """Limits of an integer dtype (``iinfo``)."""

    bits: int
    max: int
    min: int
    dtype: DType


def _dtype_of(x: Tensor | DTypeSpec) -> DType:
    return x.dtype if isinstance(x, Tensor) else as_dtype(x)


def finfo(type: Tensor | DTypeSpec, /) -> finfo_object:  # noqa: A002 - the standard's name
    """Limits of a floating dtype (or of a tensor's dtype); of a complex dtype, those of
    its real and imaginary parts (``finfo(complex64)`` is ``finfo(float32)``)."""
    dt = _dtype_of(type)
    if not (dt.is_float or dt.is_complex):
        raise DTypeError(f"finfo: {dt.label} is not a floating dtype; use iinfo for integers")
    part = dt.part  # a complex dtype's: its real parts' (the standard's rule)
    f = np.finfo(part.np)
    return finfo_object(f.bits, float(f.eps), float(f.max), float(f.min),
                        float(f.smallest_normal), part)


def iinfo(type: Tensor | DTypeSpec, /) -> iinfo_object:  # noqa: A002 - the standard's name
    """Limits of an integer dtype (or of a tensor's dtype)."""
    dt = _dtype_of(type)
    if not dt.is_int:
        raise DTypeError(f"iinfo: {dt.label} is not an integer dtype; use finfo for floats")
    i = np.iinfo(dt.np)  # type: ignore[type-var]  # an integer dtype: checked above
    return iinfo_object(i.bits, int(i.max), int(i.min), dt)


def result_type(*arrays_and_dtypes: Tensor | DTypeSpec | complex) -> DType:
    """The dtype an operation on these tensors, dtypes and Python scalars gives (the rules
    the element-wise ops use: the Array API's integer lattice, int8 with uint8 giving
    int16 and int32 with uint32 int64; int with float32 is float32; uint64 with a signed
    integer is refused)."""
    held = [_dtype_of(a) for a in arrays_and_dtypes
            if not isinstance(a, (bool, int, float, complex))]
    if not held:
        raise TypeError("result_type: give at least one tensor or dtype (Python scalars alone "
                        "have no dtype here)")
    out = held[0]
    for d in held[1:]:
        out = promote(out, d, "result_type")
    for a in arrays_and_dtypes:
        if isinstance(a, complex):
            if out is DType.bool or out.is_int:
                raise DTypeError(f"result_type: a complex scalar beside {out.label} gives no "
                                 "dtype of the standard's; cast first")
            out = out if out.is_complex else out.complex
        elif isinstance(a, (bool, int, float)):
            out = promote(out, scalar_dtype(a, out, "result_type"), "result_type")
    return out


def can_cast(from_: Tensor | DTypeSpec, to: DTypeSpec, /) -> bool:
    """Whether the standard's promotion lattice casts ``from_`` to ``to`` without loss:
    each type to itself, a float to a wider float, an integer to one that holds all its
    values (uint8 to int16, uint16 to int32, uint32 to int64 ...); mixing kinds is never a
    safe cast."""
    src, dst = _dtype_of(from_), as_dtype(to)
    if src is dst:
        return True
    if (src.is_float or src.is_complex) != (dst.is_float or dst.is_complex) or \
            (src.is_complex and not dst.is_complex) or DType.bool in (src, dst):
        return False
    try:
        return promote(src, dst, "can_cast") is dst
    except DTypeError:
        return False


def astype(x: Tensor, dtype: DTypeSpec, /, *, copy: bool = True,
           device: Device | None = None) -> Tensor:
    """``x`` converted to ``dtype`` (float to int truncates toward zero). Without
    ``copy`` the same tensor comes back when its dtype is already ``dtype``."""
    if not isinstance(x, Tensor):
        raise not_a_tensor(x, "astype")
    if device is not None and device is not x.device:
        raise DTypeError("astype: moving to another device is not supported; read the "
                         "tensor and create it again there")
    dt = as_dtype(dtype)
    if dt is x.dtype and not copy:
        return x
    if dt is x.dtype and not dt.is_complex:
        return elementwise("copy", x)
    return x.astype(dt)


class ArrayNamespaceInfo:
    """What ``__array_namespace_info__()`` returns: devices, dtypes and capabilities."""

    def capabilities(self) -> dict[str, bool | int | None]:
        """Boolean-mask indexing and data-dependent shapes outside a running event loop
        only, where ``t[mask]`` reads the mask, and ``nonzero`` and ``unique_*`` their
        sizes, blocking, and return the standard's results (inside one ``t[mask]`` raises,
        naming ``await af.nonzero(mask)``, and ``nonzero`` and ``unique_*`` return
        awaitables); no rank limit beyond memory."""
        outside = not in_event_loop()
        return {"boolean indexing": outside, "data-dependent shapes": outside,
                "max dimensions": None}

    def default_device(self) -> Device:
        return default_device()

    def devices(self) -> tuple[Device, ...]:
        return (self.default_device(),)

    def default_dtypes(self, *, device: Device | None = None) -> dict[str, DType | None]:
        """float32, complex64 and int32, on every device: int64 is not
        on every adapter, and indices (argmax, argsort, topk, nonzero) are int32."""
        return {"real floating": DType.float32, "complex floating": DType.complex64,
                "integral": DType.int32, "indexing": DType.int32}

    def dtypes(self, *, device: Device | None = None, kind: Kind = None) -> dict[str, DType]:
        """The standard's dtypes ``device`` (the default device) holds, optionally of one
        ``kind``: float64 where its adapter has ``shader-f64`` and ``shader-int64``, int64
        and uint64 where it has ``shader-int64``. float16 is not a dtype of the standard, so
        it is never listed (``asyncfusion.float16`` exists where the adapter has
        ``shader-f16``)."""
        held = (self.default_device() if device is None else as_device(device)).backend.dtypes
        return {d.label: d for d in DType if d in held and d is not DType.float16
                and (kind is None or isdtype(d, kind))}


def __array_namespace_info__() -> ArrayNamespaceInfo:  # noqa: N807 - the standard's name
    return ArrayNamespaceInfo()
