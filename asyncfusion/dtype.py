"""The element types asyncfusion holds, and how they map to numpy.

Each dtype carries its ``itemsize`` on the device: bool is stored as a 4-byte word
(WGSL cannot put ``bool`` in a storage buffer), float16 as 2 bytes, float64 and int64
as 8, the rest as 4. float16 needs the adapter's ``shader-f16`` feature, float64
``shader-f64`` and ``shader-int64``, int64 ``shader-int64``: :func:`check_held` refuses
them on a device without it. Backend type names (WGSL's ``f32`` ...) live with the backends.
"""

from __future__ import annotations

import builtins
import enum

import numpy as np

from .errors import DTypeError

__all__ = ["DType", "float16", "float32", "float64", "int32", "int64", "uint32", "bool_",
           "as_dtype", "promote", "check_held"]


class DType(enum.Enum):
    """An element type: its name, short name, numpy type and bytes per element on a device."""

    float16 = ("float16", "F16", np.float16, 2)
    float32 = ("float32", "F32", np.float32, 4)
    float64 = ("float64", "F64", np.float64, 8)
    int32 = ("int32", "I32", np.int32, 4)
    int64 = ("int64", "I64", np.int64, 8)
    uint32 = ("uint32", "U32", np.uint32, 4)
    bool = ("bool", "BOOL", np.bool_, 4)

    def __init__(self, label: str, short: str, np_type: type, itemsize: int) -> None:
        self.label = label
        self.short = short
        self.np = np.dtype(np_type)
        self.itemsize = itemsize

    @property
    def storage_np(self) -> np.dtype:
        """The numpy type of the device's storage words (bool is stored as uint32)."""
        return np.dtype(np.uint32) if self is DType.bool else self.np

    @property
    def is_float(self) -> builtins.bool:
        return self in _FLOATS

    @property
    def is_int(self) -> builtins.bool:
        return self in _INTS

    __hash__ = object.__hash__  # members are singletons; Enum's own hash runs Python code

    def __repr__(self) -> str:
        return f"asyncfusion.{self.label}"

    __str__ = __repr__


float16 = DType.float16
float32 = DType.float32
float64 = DType.float64
int32 = DType.int32
int64 = DType.int64
uint32 = DType.uint32
bool_ = DType.bool

_FLOATS = frozenset((DType.float16, DType.float32, DType.float64))
_INTS = frozenset((DType.int32, DType.uint32, DType.int64))
_BY_NUMPY = {d.np: d for d in DType}
_FROM_NUMPY = {d.np: d for d in DType if d.itemsize <= 4}
# numpy data the runtime converts on upload: 64-bit data is narrowed (as JAX does by
# default; ask for dtype=float64/int64 to keep it), small integers widened.
_CONVERTIBLE = {
    np.dtype(np.float64): DType.float32,
    np.dtype(np.int64): DType.int32,
    np.dtype(np.int16): DType.int32,
    np.dtype(np.int8): DType.int32,
    np.dtype(np.uint8): DType.uint32,
    np.dtype(np.uint16): DType.uint32,
    np.dtype(np.uint64): DType.uint32,
}
_NAMES = {d.label: d for d in DType} | {"bool_": DType.bool, "f32": DType.float32,
                                        "f16": DType.float16, "half": DType.float16,
                                        "f64": DType.float64, "double": DType.float64,
                                        "i32": DType.int32, "i64": DType.int64,
                                        "u32": DType.uint32}


def as_dtype(value: object) -> DType:
    """Turn a DType, its name, a numpy dtype or a Python type into a DType.

    :raises DTypeError: for types the runtime does not hold (whether a device holds
        float16, float64 and int64 is :func:`check_held`'s question).
    """
    if isinstance(value, DType):
        return value
    if value is float:
        return DType.float32
    if value is int:
        return DType.int32
    if value is bool:
        return DType.bool
    if isinstance(value, str) and value in _NAMES:
        return _NAMES[value]
    try:
        npd = np.dtype(value)  # type: ignore[call-overload]
    except TypeError:
        npd = None
    if npd is not None and npd in _BY_NUMPY:
        return _BY_NUMPY[npd]
    raise DTypeError(
        f"dtype {value!r} is not supported; asyncfusion holds float32, int32, uint32, bool "
        "and, where the adapter has them, float16, float64 and int64. "
        "Convert your data first (for example with numpy's .astype(np.float32))."
    )


def from_numpy(npd: np.dtype) -> DType:
    """The DType that numpy data of type ``npd`` is stored as (with documented narrowing).

    float64 becomes float32 (as JAX does by default), int8/16/64 int32, uint8/16/64
    uint32; float16 stays float16. ``dtype=float64`` (or int64) keeps 64 bits.
    Complex, object, string and datetime data raise.
    """
    if npd in _FROM_NUMPY:
        return _FROM_NUMPY[npd]
    if npd in _CONVERTIBLE:
        return _CONVERTIBLE[npd]
    raise DTypeError(
        f"numpy dtype {npd} cannot be held: asyncfusion stores float32, float16, int32, uint32 "
        "and bool "
        "(float64 and other ints are narrowed on upload). Convert complex data to two real "
        "tensors, and strings or objects to numbers, before calling tensor()."
    )


def promote(a: DType, b: DType, op: str) -> DType:
    """The common dtype of two operands, or a DTypeError naming both.

    Rules: equal types stay; two floats give the wider; an integer with a float gives
    the float (as torch); int64 with int32 or uint32 gives int64; bool mixes only with
    bool; int32 with uint32 is refused (their common type, int64, is not on every
    adapter).
    """
    if a is b:
        return a
    if DType.bool in (a, b):
        raise DTypeError(
            f"{op}: cannot combine {a.label} with {b.label}; bool only combines with bool. "
            "Use .astype(...) on one operand first."
        )
    if a.is_float and b.is_float:
        return a if a.itemsize > b.itemsize else b
    if a.is_float or b.is_float:
        return a if a.is_float else b
    if DType.int64 in (a, b):
        return DType.int64
    raise DTypeError(
        f"{op}: int32 and uint32 have no common 32-bit type; cast one operand with "
        ".astype(asyncfusion.int32) or .astype(asyncfusion.uint32)."
    )


# The adapter features each optional dtype needs, and the dtype to use without them.
NEEDS = {DType.float16: (("shader-f16",), DType.float32),
         DType.float64: (("shader-f64", "shader-int64"), DType.float32),
         DType.int64: (("shader-int64",), DType.int32)}


def check_held(dtype: DType, device: object, what: str) -> None:
    """Refuse ``dtype`` on a device whose adapter lacks it (float16 without
    ``shader-f16`` ...), naming the dtype to use instead."""
    held = getattr(getattr(device, "backend", None), "dtypes", None)
    if held is not None and dtype not in held:
        features, instead = NEEDS[dtype]
        raise DTypeError(
            f"{what}: this device's adapter lacks {' and '.join(features)}, so it cannot hold "
            f"{dtype.label}; use asyncfusion.{instead.label} instead "
            f"(dtype=asyncfusion.{instead.label}, or numpy's .astype(np.{instead.label}) on "
            "the data)")
