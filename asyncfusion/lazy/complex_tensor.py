"""The lazy complex tensor: a pair of real tensors, its real and imaginary parts.

A complex64 tensor is two float32 tensors of one shape on one device (complex128: two
float64 tensors). Kernels never see a complex dtype: complex math is recorded as real
ops on the parts (:mod:`asyncfusion.api.complex_math`), which fuse as any other, and a
read fetches both parts in one device round. ComplexTensor is a Tensor, so every
function's signature holds for it; a function that takes real tensors only refuses it
where it would record it (:meth:`ComplexTensor.ir`) with a :class:`DTypeError`.
"""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from .._core.dtype import DType
from .._core.errors import DTypeError, ShapeError
from .tensor import Tensor, new_id

__all__ = ["ComplexTensor"]


class ComplexTensor(Tensor):
    """A lazy complex tensor; ``z.real`` and ``z.imag`` are its parts (float tensors)."""

    __slots__ = ("real", "imag")

    def __init__(self, real: Tensor, imag: Tensor) -> None:  # noqa: D107
        if real.shape != imag.shape or real.dtype is not imag.dtype or \
                real.device is not imag.device or not real.dtype.is_float or \
                real.dtype is DType.float16:
            raise DTypeError("ComplexTensor(real, imag): the parts must be float32 (or "
                             "float64) tensors of one shape and dtype on one device")
        self.id = new_id()
        self.real, self.imag = real, imag
        self.shape, self.dtype, self.device = real.shape, real.dtype.complex, real.device
        self.layout = None
        self._ir = None

    def __del__(self) -> None:
        pass  # the parts free their own data; this id never reached the device

    # -- not a kernel's operand ----------------------------------------------------------
    def ir(self) -> NoReturn:
        raise DTypeError(
            f"t{self.id} is {self.dtype.label}, and this function takes real tensors only; "
            "complex tensors take element-wise math, views, indexing, joining, sum, mean, "
            "matmul and vecdot. Work on af.real(z) and af.imag(z) (or af.abs(z)) here")

    out_ir = ir

    # -- reading -------------------------------------------------------------------------
    def _join(self, re: np.ndarray, im: np.ndarray) -> np.ndarray:
        out = np.empty(self.shape, self.dtype.np)
        out.real, out.imag = re, im
        self._keep_host(out)
        return out

    async def to_data(self) -> np.ndarray:
        """Both parts, read in one device round, as one complex numpy array."""
        re, im = await self.device.read_many((self.real, self.imag))
        return self._join(re, im)

    def _read_sync(self, what: str, instead: str) -> np.ndarray:
        known = [getattr(p, "_host", None) for p in (self.real, self.imag)]
        if known[0] is not None and known[1] is not None:
            return self._join(known[0], known[1])
        re, im = self.device.read_many_sync((self.real, self.imag), what)
        return self._join(re, im)

    def _scalar(self, what: str) -> complex:  # type: ignore[override]
        if self.size != 1:
            raise ShapeError(f"{what} needs a tensor with exactly one element, and t{self.id} "
                             f"has shape {self.shape}; index or reduce it first")
        return complex(self._read_sync(what, "(await z.to_data()).item()").item())

    def item(self) -> complex:  # type: ignore[override]
        """The one element as a Python complex (blocking)."""
        return self._scalar("z.item()")

    def __complex__(self) -> complex:
        return self._scalar("complex(z)")

    def __float__(self) -> NoReturn:
        raise TypeError(f"float() of a {self.dtype.label} tensor: take af.real(z) or "
                        "af.abs(z) first")

    def __int__(self) -> NoReturn:
        raise TypeError(f"int() of a {self.dtype.label} tensor: take af.real(z) first")

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ShapeError(f"the truth value of a tensor with {self.size} elements is "
                             "ambiguous; reduce it first (for example af.any(z != 0))")
        return bool(self._scalar("bool(z)"))

    def __repr__(self) -> str:
        head = (f"ComplexTensor(t{self.id}, shape={self.shape}, dtype={self.dtype.label}, "
                f"parts=(t{self.real.id}, t{self.imag.id})")
        host: np.ndarray | None = getattr(self, "_host", None)
        if host is None:
            return head + ")"
        return f"{head},\n       values={np.array2string(host, separator=', ')})"

    __hash__ = object.__hash__

    def _status(self) -> str:
        return self.real._status()
