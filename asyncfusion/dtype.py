"""The element types asyncfusion holds, and how they map to numpy.

Each dtype carries its ``itemsize`` on the device: bool is stored as a 4-byte word
(WGSL cannot put ``bool`` in a storage buffer), so all four current types are 4 bytes
wide. Backend type names (WGSL's ``f32`` ...) live with the backends, not here.
"""

from __future__ import annotations

import builtins
import enum

import numpy as np

from .errors import DTypeError

__all__ = ["DType", "float32", "int32", "uint32", "bool_", "as_dtype", "promote"]


class DType(enum.Enum):
    """An element type: its name, short name, numpy type and bytes per element on a device."""

    float32 = ("float32", "F32", np.float32, 4)
    int32 = ("int32", "I32", np.int32, 4)
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
        return self is DType.float32

    @property
    def is_int(self) -> builtins.bool:
        return self in (DType.int32, DType.uint32)

    __hash__ = object.__hash__  # members are singletons; Enum's own hash runs Python code

    def __repr__(self) -> str:
        return f"asyncfusion.{self.label}"

    __str__ = __repr__


float32 = DType.float32
int32 = DType.int32
uint32 = DType.uint32
bool_ = DType.bool

_FROM_NUMPY = {d.np: d for d in DType}
# numpy types the runtime converts on upload because they have a lossless-enough 32-bit home.
_CONVERTIBLE = {
    np.dtype(np.float64): DType.float32,
    np.dtype(np.float16): DType.float32,
    np.dtype(np.int64): DType.int32,
    np.dtype(np.int16): DType.int32,
    np.dtype(np.int8): DType.int32,
    np.dtype(np.uint8): DType.uint32,
    np.dtype(np.uint16): DType.uint32,
    np.dtype(np.uint64): DType.uint32,
}
_NAMES = {d.label: d for d in DType} | {"bool_": DType.bool, "f32": DType.float32,
                                        "i32": DType.int32, "u32": DType.uint32}


def as_dtype(value: object) -> DType:
    """Turn a DType, its name, a numpy dtype or a Python type into a DType.

    :raises DTypeError: for types the runtime does not hold (float64 is accepted only by
        ``tensor()``'s data conversion, never as a requested dtype).
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
    if npd is not None and npd in _FROM_NUMPY:
        return _FROM_NUMPY[npd]
    raise DTypeError(
        f"dtype {value!r} is not supported; asyncfusion holds float32, int32, uint32 and bool. "
        "Convert your data first (for example with numpy's .astype(np.float32))."
    )


def from_numpy(npd: np.dtype) -> DType:
    """The DType that numpy data of type ``npd`` is stored as (with documented narrowing).

    float64/float16 become float32, int8/16/64 become int32, uint8/16/64 become uint32.
    Complex, object, string and datetime data raise.
    """
    if npd in _FROM_NUMPY:
        return _FROM_NUMPY[npd]
    if npd in _CONVERTIBLE:
        return _CONVERTIBLE[npd]
    raise DTypeError(
        f"numpy dtype {npd} cannot be held: asyncfusion stores float32, int32, uint32 and bool "
        "(float64 and other ints are narrowed on upload). Convert complex data to two real "
        "tensors, and strings or objects to numbers, before calling tensor()."
    )


def promote(a: DType, b: DType, op: str) -> DType:
    """The common dtype of two operands, or a DTypeError naming both.

    Rules: equal types stay; an integer with float32 becomes float32; bool mixes only
    with bool; int32 with uint32 has no 32-bit common type and is refused.
    """
    if a is b:
        return a
    if DType.bool in (a, b):
        raise DTypeError(
            f"{op}: cannot combine {a.label} with {b.label}; bool only combines with bool. "
            "Use .astype(...) on one operand first."
        )
    if a.is_float or b.is_float:
        return DType.float32
    raise DTypeError(
        f"{op}: int32 and uint32 have no common 32-bit type; cast one operand with "
        ".astype(asyncfusion.int32) or .astype(asyncfusion.uint32)."
    )
