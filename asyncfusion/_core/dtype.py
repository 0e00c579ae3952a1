"""The element types asyncfusion holds, and how they map to numpy.

Each dtype carries its ``itemsize`` on the device: bool is stored as a 4-byte word
(WGSL cannot put ``bool`` in a storage buffer), float16 as 2 bytes, float64, int64 and
uint64 as 8, the rest as 4. int8, uint8, int16 and uint16 (the *narrow* integers) are
held in 32-bit lanes (their ``lane``, int32/uint32: WGSL has no 8- or 16-bit integers),
sign- or zero-extended, so they take 4 bytes on the device and 1 or 2 on the host;
kernels compute them in the lane and wrap every result to 8 or 16 bits. float16 needs
the adapter's ``shader-f16`` feature, float64 ``shader-f64`` and ``shader-int64``, int64
and uint64 ``shader-int64``: :func:`check_held` refuses them on a device without it.
complex64 and complex128 are never a kernel's dtype: a complex tensor
(:class:`~asyncfusion.lazy.complex_tensor.ComplexTensor`) is a pair of float32 (float64)
tensors, its real and imaginary parts, and complex math is recorded as real ops on them.
Backend type names (WGSL's ``f32`` ...) live with the backends.
"""

from __future__ import annotations

import builtins
import enum

import numpy as np

from .errors import DTypeError

__all__ = ["DType", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
           "uint8", "uint16", "uint32", "uint64", "bool_", "complex64", "complex128", "as_dtype", "promote", "check_held",
           "int_range", "to_storage", "check_promoted", "NarrowingWarning", "NARROWED",
           "DTypeSpec"]


class DType(enum.Enum):
    """An element type: its name, short name, numpy type and bytes per element on a device."""

    float16 = ("float16", "F16", np.float16, 2)
    float32 = ("float32", "F32", np.float32, 4)
    float64 = ("float64", "F64", np.float64, 8)
    int8 = ("int8", "I8", np.int8, 4)  # in a 32-bit lane
    int16 = ("int16", "I16", np.int16, 4)  # in a 32-bit lane
    int32 = ("int32", "I32", np.int32, 4)
    int64 = ("int64", "I64", np.int64, 8)
    uint8 = ("uint8", "U8", np.uint8, 4)  # in a 32-bit lane
    uint16 = ("uint16", "U16", np.uint16, 4)  # in a 32-bit lane
    uint32 = ("uint32", "U32", np.uint32, 4)
    uint64 = ("uint64", "U64", np.uint64, 8)
    bool = ("bool", "BOOL", np.bool_, 4)
    complex64 = ("complex64", "C64", np.complex64, 8)  # two float32 tensors
    complex128 = ("complex128", "C128", np.complex128, 16)  # two float64 tensors

    __hash__ = object.__hash__  # members are singletons; Enum's own hash runs Python code

    def __init__(self, label: str, short: str, np_type: type, itemsize: int) -> None:
        self.label = label
        self.short = short
        self.np = np.dtype(np_type)
        self.itemsize = itemsize

    @property
    def storage_np(self) -> np.dtype:
        """The numpy type of the device's storage words (bool is stored as uint32, the
        narrow integers in their 32-bit lanes)."""
        return _STORAGE_NP.get(self, self.np)

    @property
    def lane(self) -> DType:
        """The dtype this one is held and computed in: int32 for int8 and int16, uint32
        for uint8 and uint16, itself for the others."""
        return _LANES.get(self, self)

    @property
    def bits(self) -> int:
        """Bits of a value (not of its storage: int16 has 16)."""
        return self.np.itemsize * 8

    @property
    def is_unsigned(self) -> builtins.bool:
        return self in _UNSIGNED

    @property
    def is_float(self) -> builtins.bool:
        return self in _FLOATS

    @property
    def is_int(self) -> builtins.bool:
        return self in _INTS

    @property
    def is_complex(self) -> builtins.bool:
        return self in _PARTS

    @property
    def part(self) -> DType:
        """The real dtype of a complex dtype's real and imaginary parts (float32 for
        complex64); itself for a real dtype."""
        return _PARTS.get(self, self)

    @property
    def complex(self) -> DType:
        """The complex dtype whose parts are this float dtype (complex64 for float32)."""
        return _COMPLEX_OF[self]

    __hash__ = object.__hash__  # members are singletons; Enum's own hash runs Python code

    def __repr__(self) -> str:
        return f"asyncfusion.{self.label}"

    __str__ = __repr__


float16 = DType.float16
float32 = DType.float32
float64 = DType.float64
int8 = DType.int8
int16 = DType.int16
int32 = DType.int32
int64 = DType.int64
uint8 = DType.uint8
uint16 = DType.uint16
uint32 = DType.uint32
uint64 = DType.uint64
bool_ = DType.bool
complex64 = DType.complex64
complex128 = DType.complex128

_FLOATS = frozenset((DType.float16, DType.float32, DType.float64))
_UNSIGNED = frozenset((DType.uint8, DType.uint16, DType.uint32, DType.uint64))
_INTS = frozenset((DType.int8, DType.int16, DType.int32, DType.int64)) | _UNSIGNED
_PARTS = {DType.complex64: DType.float32, DType.complex128: DType.float64}
_COMPLEX_OF = {DType.float16: DType.complex64, DType.float32: DType.complex64,
               DType.float64: DType.complex128}
_LANES = {DType.int8: DType.int32, DType.int16: DType.int32, DType.uint8: DType.uint32,
          DType.uint16: DType.uint32}
_STORAGE_NP = {d: d.lane.np for d in _LANES} | {DType.bool: np.dtype(np.uint32)}
_STORAGE_OF_NUMPY = {d.np: w for d, w in _STORAGE_NP.items()}
_BY_NUMPY = {d.np: d for d in DType}
_FROM_NUMPY = {d.np: d for d in DType if d.itemsize <= 4} | {
    np.dtype(np.complex64): DType.complex64}
# numpy data the runtime converts on upload: 64-bit data is narrowed (as JAX does by
# default; ask for dtype=float64/int64 to keep it).
_CONVERTIBLE = {
    np.dtype(np.float64): DType.float32,
    np.dtype(np.int64): DType.int32,
    np.dtype(np.uint64): DType.uint32,
    np.dtype(np.complex128): DType.complex64,
}
# The conversions that lose bits (warned about once per process, :class:`NarrowingWarning`).
NARROWED = frozenset(np.dtype(t) for t in (np.float64, np.int64, np.uint64, np.complex128))


HELD = ("float32, int8, int16, int32, uint8, uint16, uint32, bool, complex64 and, where the "
        "adapter has them, float16, float64, int64, uint64 and complex128")

DTypeSpec = DType | str | type | np.dtype
"""What a ``dtype=`` takes: a DType, its name, a numpy dtype or a Python type."""


class NarrowingWarning(UserWarning):
    """numpy float64/int64/uint64 data given without ``dtype=`` was narrowed to
    float32/int32/uint32 (shown once per process for each source dtype)."""


_NAMES = {d.label: d for d in DType} | {"bool_": DType.bool, "f32": DType.float32,
                                        "f16": DType.float16, "half": DType.float16,
                                        "f64": DType.float64, "double": DType.float64,
                                        "i8": DType.int8, "i16": DType.int16,
                                        "i32": DType.int32, "i64": DType.int64,
                                        "u8": DType.uint8, "u16": DType.uint16,
                                        "u32": DType.uint32, "u64": DType.uint64,
                                        "c64": DType.complex64, "c128": DType.complex128}


def as_dtype(value: object) -> DType:
    """Turn a DType, its name, a numpy dtype or a Python type into a DType.

    :raises DTypeError: for types the runtime does not hold (whether a device holds
        float16, float64, int64 and uint64 is :func:`check_held`'s question).
    """
    if isinstance(value, DType):
        return value
    if value is float:
        return DType.float32
    if value is int:
        return DType.int32
    if value is bool:
        return DType.bool
    if value is complex:
        return DType.complex64
    if isinstance(value, str) and value in _NAMES:
        return _NAMES[value]
    try:
        npd = np.dtype(value)  # type: ignore[call-overload]
    except TypeError:
        npd = None
    if npd is not None and npd in _BY_NUMPY:
        return _BY_NUMPY[npd]
    raise DTypeError(
        f"dtype {value!r} is not supported; asyncfusion holds {HELD}. Convert your data "
        "first (for example with numpy's .astype(np.float32))."
    )


def from_numpy(npd: np.dtype) -> DType:
    """The DType that numpy data of type ``npd`` is stored as (with documented narrowing).

    float64 becomes float32 (as JAX does by default), int64 int32, uint64 uint32,
    complex128 complex64; float16 and the 8- and 16-bit integers stay. ``dtype=float64``
    (or int64, uint64, complex128) keeps 64 bits. Object, string and datetime data raise.
    """
    if npd in _FROM_NUMPY:
        return _FROM_NUMPY[npd]
    if npd in _CONVERTIBLE:
        return _CONVERTIBLE[npd]
    raise DTypeError(
        f"numpy dtype {npd} cannot be held: asyncfusion holds {HELD} (64-bit data without "
        "dtype= is narrowed to 32 bits on upload, complex128 to complex64). Convert strings "
        "or objects to numbers before calling tensor()."
    )


def promote(a: DType, b: DType, op: str) -> DType:
    """The common dtype of two operands, or a DTypeError naming both.

    Rules: equal types stay; two floats give the wider; a complex dtype with any number
    gives the complex dtype whose parts are the promoted parts (complex64 with float64
    gives complex128); an integer with a float gives
    the float (as torch); integers follow the Array API's lattice (the wider of one
    signedness; an unsigned with a wider signed gives the signed, an unsigned with a
    signed no wider the signed integer of twice the unsigned's bits: uint8 with int8
    gives int16, uint16 with int16 int32, int32 or int16 with uint32 int64); bool mixes
    only with bool. Refused: uint64 with a signed integer (no common integer type).
    Whether a device holds the result (int64 needs ``shader-int64``) is
    :func:`check_promoted`'s question.
    """
    if a is b:
        return a
    if DType.bool in (a, b):
        raise DTypeError(
            f"{op}: cannot combine {a.label} with {b.label}; bool only combines with bool. "
            "Use .astype(...) on one operand first."
        )
    if a.is_complex or b.is_complex:  # the parts promote; the result is complex
        return promote(a.part, b.part, op).complex
    if a.is_float and b.is_float:
        return a if a.itemsize > b.itemsize else b
    if a.is_float or b.is_float:
        return a if a.is_float else b
    if a.is_unsigned == b.is_unsigned:
        return a if a.bits > b.bits else b
    signed, unsigned = (b, a) if a.is_unsigned else (a, b)
    if signed.bits > unsigned.bits:
        return signed
    if unsigned is DType.uint64:
        raise DTypeError(
            f"{op}: {a.label} and {b.label} have no common integer type (numpy gives "
            "float64); cast one operand with .astype(asyncfusion.int64) or "
            ".astype(asyncfusion.uint64)."
        )
    return _SIGNED_OF_BITS[2 * unsigned.bits]


_SIGNED_OF_BITS = {d.bits: d for d in _INTS - _UNSIGNED}


def check_promoted(dtype: DType, device: object, what: str) -> None:
    """Refuse the int64 that promotion gives for a signed integer with uint32 on a
    device whose adapter lacks ``shader-int64`` (its operands are held: only this
    widening can give a dtype the device does not hold)."""
    held = getattr(getattr(device, "backend", None), "dtypes", None)
    if held is not None and dtype not in held:
        raise DTypeError(
            f"{what}: a signed integer with uint32 gives int64 (the Array API's promotion), "
            "which this device's adapter cannot hold (it lacks shader-int64); cast one "
            "operand with .astype(asyncfusion.int32) or .astype(asyncfusion.uint32) first")


# The adapter features each optional dtype needs, and the dtype to use without them.
NEEDS = {DType.float16: (("shader-f16",), DType.float32),
         DType.float64: (("shader-f64", "shader-int64"), DType.float32),
         DType.int64: (("shader-int64",), DType.int32),
         DType.uint64: (("shader-int64",), DType.uint32),
         DType.complex128: (("shader-f64", "shader-int64"), DType.complex64)}


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


def int_range(dtype: DType) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype."""
    return _RANGES[dtype]


_RANGES = {d: (int(np.iinfo(d.np).min), int(np.iinfo(d.np).max))  # type: ignore[type-var]
           for d in _INTS}


def to_storage(data: np.ndarray) -> np.ndarray:
    """Host data as the device's storage words, C-ordered: bool as uint32 words, the
    narrow integers sign- or zero-extended to their 32-bit lanes, the rest as they are."""
    raw = np.ascontiguousarray(data)
    word = _STORAGE_OF_NUMPY.get(raw.dtype)
    return raw if word is None else raw.astype(word)
