"""numpy functions and ufuncs given tensors (``Tensor.__array_function__`` and
``__array_ufunc__``): one rule.

Outside a running event loop, a numpy function or ufunc given tensors reads them (a
blocking read, as ``t.numpy()``) and runs numpy on the values, so ``np.sum(t)``,
``np.mean(t, axis=0)`` and ``np.exp(t)`` return numpy results. Inside a running asyncio or
trio loop, where a blocking read would stall every other task, every one of them raises
:class:`~asyncfusion.BlockingCallError` naming what to await instead: the asyncfusion
function of that name where there is one (recorded on the device, then ``await
result.to_numpy()``), else numpy on ``await t.to_numpy()`` (``to_numpy`` is ``to_data``
under numpy's name). ``np.asarray(t)`` (``__array__``)
follows the same rule.

Python operators stay asyncfusion's, whichever side the tensor is on: numpy hands
``np.float32(2) * t`` and ``arr + t`` to the tensor as the ufunc calls
``np.multiply(np.float32(2), t)`` and ``np.add(arr, t)`` (a comparison with a 0-d array
for the scalar), and the tensor answers them with its reflected operator: a numpy scalar
records the op as a Python scalar does, an array is refused as by ``t + arr`` (wrap it
with ``af.asarray``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

import numpy as np

from .._debug import in_event_loop
from .._core.errors import BlockingCallError

__all__ = ["call_function", "call_ufunc"]


class HostReadable(Protocol):
    """What this module needs of a tensor: its id, the blocking read and the namespace."""

    id: int

    def _read_sync(self, what: str, instead: str) -> np.ndarray: ...

    def __array_namespace__(self, *, api_version: str | None = None) -> object: ...


T = TypeVar("T", bound=HostReadable)

# numpy's names whose asyncfusion function is spelled as the Array API spells it
_AF_NAMES = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
    "arcsinh": "asinh", "arctan": "atan", "arctan2": "atan2", "arctanh": "atanh",
    "true_divide": "divide", "power": "pow", "invert": "bitwise_invert",
    "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift",
    "mod": "remainder", "concatenate": "concat", "amax": "max", "amin": "min",
    "transpose": "permute_dims",
}

# ``scalar op t`` reaches the tensor as ufunc(scalar, t): the Tensor method it stands for
_REFLECTED: dict[np.ufunc, str] = {
    np.add: "__radd__", np.subtract: "__rsub__", np.multiply: "__rmul__",
    np.true_divide: "__rtruediv__", np.floor_divide: "__rfloordiv__",
    np.remainder: "__rmod__", np.power: "__rpow__", np.matmul: "__rmatmul__",
    np.bitwise_and: "__rand__", np.bitwise_or: "__ror__", np.bitwise_xor: "__rxor__",
    np.left_shift: "__rlshift__", np.right_shift: "__rrshift__",
    np.equal: "__eq__", np.not_equal: "__ne__", np.less: "__gt__", np.less_equal: "__ge__",
    np.greater: "__lt__", np.greater_equal: "__le__",
}

_Args = tuple[object, ...]


def call_ufunc(kind: type[T], ufunc: np.ufunc, method: str, inputs: _Args,
               kwargs: Mapping[str, object]) -> object:
    """``Tensor.__array_ufunc__``: the tensor's operator for ``left op t``, else the ufunc
    run on the tensors' values (outside an event loop only)."""
    if (method == "__call__" and not kwargs and len(inputs) == 2 and ufunc in _REFLECTED
            and type(inputs[1]) is kind and type(inputs[0]) is not kind):
        op: Callable[[object], object] = getattr(inputs[1], _REFLECTED[ufunc])
        left = inputs[0]
        return op(left[()] if isinstance(left, np.ndarray) and left.ndim == 0 else left)
    call = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    name = ufunc.__name__ if method == "__call__" else None
    args, kw = _on_host(kind, call, name, inputs, kwargs)
    return getattr(ufunc, method)(*args, **kw)


def call_function(kind: type[T], func: Callable[..., object], args: _Args,
                  kwargs: Mapping[str, object]) -> object:
    """``Tensor.__array_function__``: ``func`` run on the tensors' values (outside an event
    loop only)."""
    module = func.__module__.replace("numpy", "np", 1) if func.__module__ else "np"
    call = f"{module}.{func.__name__}"
    plain, kw = _on_host(kind, call, func.__name__ if module == "np" else None, args, kwargs)
    return func(*plain, **kw)


def _on_host(kind: type[T], call: str, name: str | None, args: _Args,
             kwargs: Mapping[str, object]) -> tuple[_Args, dict[str, object]]:
    """``args`` and ``kwargs`` with every tensor (also inside lists, tuples and dicts)
    replaced by its values, read once each; or the error that says what to do instead."""
    found: dict[int, T] = {}
    _collect(kind, (args, kwargs), found)
    if not found:  # numpy dispatched on another argument's protocol: nothing of ours
        return args, dict(kwargs)
    first = next(iter(found.values()))
    if _holds(kind, kwargs.get("out")):
        raise TypeError(f"{call}(..., out=t{first.id}): numpy cannot write into a tensor, "
                        "which lives on its device; drop out= and use the returned array")
    if in_event_loop():
        raise BlockingCallError(_loop_message(call, name, first))
    values = {i: t._read_sync(f"{call}(t{i})", "await t.to_numpy()") for i, t in found.items()}
    plain = _replace(kind, args, values)
    assert isinstance(plain, tuple)
    return plain, {k: _replace(kind, v, values) for k, v in kwargs.items()}


def _loop_message(call: str, name: str | None, t: HostReadable) -> str:
    af_name = _AF_NAMES.get(name, name) if name is not None else None
    head = (f"{call}() was given the tensor t{t.id}; reading it blocks until the device has "
            "computed it, and this code runs inside an event loop, where blocking would "
            "stall every other task; ")
    if af_name is not None and callable(getattr(t.__array_namespace__(), af_name, None)):
        return (head + f"use af.{af_name}(...) instead (recorded on the device; read its "
                f"result with 'await result.to_numpy()'), or {call}(await t.to_numpy())")
    return head + f"read the values first: {call}(await t.to_numpy())"


def _collect(kind: type[T], obj: object, found: dict[int, T]) -> None:
    if isinstance(obj, kind):
        found.setdefault(obj.id, obj)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            _collect(kind, item, found)
    elif isinstance(obj, dict):
        for item in obj.values():
            _collect(kind, item, found)


def _holds(kind: type[T], obj: object) -> bool:
    inner: dict[int, T] = {}
    _collect(kind, obj, inner)
    return bool(inner)


def _replace(kind: type[T], obj: object, values: dict[int, np.ndarray]) -> object:
    if isinstance(obj, kind):
        return values[obj.id]
    if isinstance(obj, list):
        return [_replace(kind, item, values) for item in obj]
    if isinstance(obj, tuple):
        return tuple(_replace(kind, item, values) for item in obj)
    if isinstance(obj, dict):
        return {k: _replace(kind, v, values) for k, v in obj.items()}
    return obj
