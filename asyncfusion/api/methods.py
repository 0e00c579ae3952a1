"""The Tensor's operators and methods, bound in one place onto the handle of
:mod:`asyncfusion.api.tensor` from the API's functions.

An operator is the public function itself (``Tensor.__add__`` is ``asyncfusion.add``)
and its reflected form calls that function with the operands swapped (``2 - t`` is
``subtract(2, t)``), so an op behaves alike however it is spelled. Methods whose
signature differs from their function's (``t.reshape(2, 3)``, ``t.sum(0)``) are written
out below; the rest are the functions. :func:`attach` runs once, from the package's
``__init__``, after every module it binds from exists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType

from . import linalg
from .._core.dtype import DTypeSpec, as_dtype, check_held
from ..lazy.record import elementwise
from ..lazy.tensor import Axes, Operand, Tensor
from ..runtime import as_device
from ..runtime.device import Device
from . import complex_parts, elementwise as ew, reductions, setitem, views
from .moving import copy_to

__all__ = ["attach", "BOUND"]

_OPERATORS: dict[str, Callable[[Operand, Operand], Tensor]] = {
    "add": ew.add, "sub": ew.subtract, "mul": ew.multiply, "truediv": ew.divide,
    "floordiv": ew.floor_divide, "mod": ew.remainder, "pow": ew.pow,
    "and": ew.bitwise_and, "or": ew.bitwise_or, "xor": ew.bitwise_xor,
    "lshift": ew.bitwise_left_shift, "rshift": ew.bitwise_right_shift,
}
_COMPARISONS: dict[str, Callable[[Operand, Operand], Tensor]] = {
    "__eq__": ew.equal, "__ne__": ew.not_equal, "__lt__": ew.less, "__le__": ew.less_equal,
    "__gt__": ew.greater, "__ge__": ew.greater_equal,
}
_UNARY: dict[str, Callable[[Operand], Tensor]] = {
    "__neg__": ew.negative, "__pos__": ew.positive, "__abs__": ew.abs,
    "__invert__": ew.bitwise_invert,
    **{f.__name__: f for f in (ew.abs, ew.exp, ew.log, ew.sqrt, ew.rsqrt, ew.square, ew.sin,
                               ew.cos, ew.tanh, ew.sigmoid, ew.relu, ew.floor, ew.ceil,
                               ew.round, ew.sign, ew.isnan, ew.isinf, ew.isfinite)},
}


def _reflected(fn: Callable[[Operand, Operand], Tensor]) -> Callable[[Tensor, Operand], Tensor]:
    def reflected(self: Tensor, other: Operand, /) -> Tensor:
        return fn(other, self)
    reflected.__name__ = reflected.__qualname__ = f"{fn.__name__} (reflected)"
    reflected.__doc__ = f"``{fn.__name__}(other, self)``."
    return reflected


def astype(self: Tensor, dtype: DTypeSpec, /) -> Tensor:
    """This tensor converted to ``dtype`` (float->int truncates toward zero)."""
    dt = as_dtype(dtype)
    if dt.is_complex:
        return complex_parts.astype(self, dt)
    check_held(dt, self.device, "astype")
    return elementwise("cast", self, dtype=dt)


def reshape(self: Tensor, *shape: int | Sequence[int]) -> Tensor:
    """The same elements in another shape (a view when strides allow, else a copy);
    one dimension may be -1 (inferred)."""
    return views.reshape(self, shape)


def permute(self: Tensor, *axes: int | Sequence[int]) -> Tensor:
    """A view with the axes in the order given."""
    return views.permute(self, axes)


def expand(self: Tensor, *shape: int | Sequence[int]) -> Tensor:
    """A broadcast view of this tensor in ``shape``."""
    return views.broadcast_to(self, shape)


def _t(self: Tensor) -> Tensor:
    return views.permute(self, tuple(range(self.ndim - 1, -1, -1)))


def _mt(self: Tensor) -> Tensor:
    return views.transpose(self, -2, -1)


def _reduction(op: str) -> Callable[[Tensor, Axes, bool], Tensor]:
    def method(self: Tensor, axis: Axes = None, keepdims: bool = False) -> Tensor:
        return reductions.reduce(op, self, axis, keepdims)
    method.__name__ = op
    method.__qualname__ = f"Tensor.{op}"
    method.__doc__ = f"``asyncfusion.{op}`` of this tensor over ``axis``."
    return method


def to(self: Tensor, device: Device, /) -> Tensor:
    """This tensor on ``device`` (itself when it is already there): a lazy copy,
    ordered after what computes this tensor; it runs when a read on ``device`` needs
    it (one read here, one upload there). See ``docs/concepts/devices.md``."""
    target = as_device(device)
    return self if target is self.device else copy_to(self, target)


def to_device(self: Tensor, device: Device, /, *, stream: None = None) -> Tensor:
    """The Array API's name for :meth:`to`."""
    if stream is not None:
        raise ValueError("to_device: stream= is not supported (asyncfusion orders work "
                         "by its own streams); leave it None")
    return to(self, device)


def _matmul(self: Tensor, other: Tensor, /) -> Tensor:
    return linalg.matmul(self, other)


def _rmatmul(self: Tensor, other: Tensor, /) -> Tensor:
    return linalg.matmul(other, self)


_METHODS: dict[str, object] = {
    "astype": astype, "reshape": reshape, "permute": permute, "expand": expand,
    "broadcast_to": expand, "transpose": views.transpose, "squeeze": views.squeeze,
    "unsqueeze": views.unsqueeze, "flip": views.flip, "contiguous": views.contiguous,
    "T": property(_t, doc="The axes reversed (numpy's ``T``)."),
    "mT": property(_mt, doc="The last two axes swapped (the Array API's ``mT``)."),
    "__getitem__": setitem.getitem, "__setitem__": setitem.assign,
    "__matmul__": _matmul, "__rmatmul__": _rmatmul,
    **{op: _reduction(op) for op in ("sum", "prod")},
    "max": reductions.max, "min": reductions.min, "any": reductions.any,
    "all": reductions.all, "argmax": reductions.argmax, "argmin": reductions.argmin,
    "mean": reductions.mean, "var": reductions.var, "std": reductions.std,
    "to": to, "to_device": to_device,
}

BOUND: tuple[str, ...] = (
    *(f"__{n}__" for n in _OPERATORS), *(f"__r{n}__" for n in _OPERATORS),
    *_COMPARISONS, *_UNARY, *_METHODS, "__array_namespace__")
"""Every name :func:`attach` binds onto Tensor."""


def attach(namespace: ModuleType) -> None:
    """Bind the operators and methods onto Tensor; ``namespace`` (the ``asyncfusion``
    module) is what ``t.__array_namespace__()`` answers."""
    for name, fn in _OPERATORS.items():
        setattr(Tensor, f"__{name}__", fn)
        setattr(Tensor, f"__r{name}__", _reflected(fn))
    for table in (_COMPARISONS, _UNARY, _METHODS):
        for key, value in table.items():
            setattr(Tensor, key, value)

    def __array_namespace__(self: Tensor, *, api_version: str | None = None) -> ModuleType:
        """The ``asyncfusion`` module: the Array API namespace of this tensor."""
        if api_version not in (None, "2023.12", "2024.12", "2025.12"):
            raise ValueError(f"__array_namespace__: api_version {api_version!r} is not "
                             "supported; use None, '2023.12', '2024.12' or '2025.12'")
        return namespace
    Tensor.__array_namespace__ = __array_namespace__  # type: ignore[method-assign]
    complex_parts.attach()
