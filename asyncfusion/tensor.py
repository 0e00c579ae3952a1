"""The lazy Tensor: a handle (id, shape, dtype, device) whose ops are recorded, not run.

Every op computes its output's shape and dtype immediately and validates its inputs
there and then, so a bad call raises on the line that made it. Nothing runs until a
read (``await t.to_data()``), a ``sync``, or a stream growing past its flush threshold.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from ._debug import in_event_loop
from ._tracebacks import clear_read_frames
from .engine.memory import Poison
from .dtype import NEEDS, DType, as_dtype, check_held, check_promoted, int_range, promote
from .errors import (AxisError, BlockingCallError, device_mismatch, DTypeError, LimitError,
                     ShapeError)
from .ir import CatOp, ElementwiseOp, Layout, ScalarIr, TensorIr, TensorStatus, numel
from .numpy_protocols import call_function, call_ufunc
from .primitives import PRIMITIVES, WIDE

__all__ = ["Tensor", "elementwise", "where", "minimum", "maximum", "cat", "concat"]

_ids = itertools.count(1)
_REPR_VALUES = 1000  # results up to this many elements are kept for repr (numpy's threshold)
MAX_DIM = 2**32 - 1  # kernels hold dimensions in u32 uniforms
_NOT_INIT = TensorStatus.NOT_INIT
_READ_ONLY = TensorStatus.READ_ONLY
_SCALARS = (int, float, bool, np.integer, np.floating, np.bool_)


def _what(op: str) -> str:
    p = PRIMITIVES.get(op)
    return p.what if p is not None else op


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


def normalize_axis(axis: int, rank: int, what: str) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise AxisError(f"{what}: axis must be an int, not {type(axis).__name__}")
    if not -rank <= axis < max(rank, 1) or rank == 0:
        raise AxisError(f"{what}: axis {axis} is out of range for a tensor of rank {rank} "
                        f"(valid: {-rank}..{rank - 1})" if rank else
                        f"{what}: a 0-d tensor has no axis {axis}")
    return int(axis) % rank


def _scalar_dtype(value: Any, other: DType, what: str) -> DType:
    """The dtype a Python scalar takes beside a tensor of dtype ``other``."""
    if isinstance(value, (bool, np.bool_)):
        return DType.bool if other is DType.bool else other
    if isinstance(value, (float, np.floating)):
        if other is DType.bool:
            raise DTypeError(f"{what}: cannot combine a bool tensor with float {value!r}; "
                             "cast it with .astype(asyncfusion.float32) first")
        return other if other.is_float else DType.float32
    if other is DType.bool:
        raise DTypeError(f"{what}: cannot combine a bool tensor with int {value!r}; "
                         "cast it with .astype(asyncfusion.int32) first")
    if not other.is_int:
        return other
    lo, hi = int_range(other)
    if not lo <= int(value) <= hi:
        raise DTypeError(f"{what}: {value!r} does not fit in {other.label} "
                         f"(range {lo}..{hi}); cast the tensor first")
    return other


class Tensor:
    """A lazy tensor. Create one with :func:`asyncfusion.tensor` and friends."""

    __slots__ = ("id", "shape", "dtype", "device", "layout", "_ir", "_host")
    __array_priority__ = 1000  # numpy scalars on the left defer to our operators

    def __init__(self, shape: tuple[int, ...], dtype: DType, device: Any,
                 layout: Layout | None = None) -> None:
        if type(shape) is not tuple or type(dtype) is not DType or not hasattr(
                device, "streams"):
            raise TypeError("Tensor(shape, dtype, device) is made by asyncfusion's ops; "
                            "create tensors with asyncfusion.tensor(), zeros(), ones(), "
                            "full(), arange(), rand() or randn()")
        self.id = next(_ids)
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.layout = layout  # None: dense; a view's strided layout otherwise
        self._ir: TensorIr | None = None

    def __del__(self) -> None:
        try:
            self.device.streams.drops.append(self.id)
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to free
            pass

    # -- copying and pickling ------------------------------------------------------------
    # A tensor is an immutable value (no op writes into it), so a copy shares it: the
    # copy is the tensor itself, as for tuples. A field-by-field copy would own the same
    # id and free its data when it went away.
    def __copy__(self) -> Tensor:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        return self

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError(
            f"a lazy Tensor (t{self.id}) cannot be pickled: its data lives on a device. Read "
            "it with 'await t.to_data()' (or t.to_data_sync()), pickle the numpy array, and "
            "rebuild it with asyncfusion.tensor(array)")

    # -- IR ------------------------------------------------------------------------------
    def ir(self) -> TensorIr:
        """This tensor as an op input (ReadOnly; the server upgrades its last use)."""
        r = self._ir
        if r is None:
            r = self._ir = TensorIr(self.id, self.shape, self.dtype, _READ_ONLY, self.layout)
        return r

    def out_ir(self) -> TensorIr:
        return TensorIr(self.id, self.shape, self.dtype, _NOT_INIT, self.layout)

    @property
    def view_layout(self) -> Layout:
        """Where this tensor's elements sit in its storage (dense ones included)."""
        return self.layout if self.layout is not None else Layout.dense(self.shape)

    # -- facts ---------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return numel(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    __hash__ = object.__hash__

    # -- reading -------------------------------------------------------------------------
    async def to_data(self) -> np.ndarray:
        """Run what this tensor needs and return its values as a numpy array."""
        try:
            out: np.ndarray = await self.device.read(self)
        except BaseException as exc:  # cancelled or failed: the traceback keeps no tensor
            clear_read_frames(exc)
            del self
            raise
        self._keep_host(out)
        return out

    def to_data_sync(self) -> np.ndarray:
        """``to_data()`` for plain scripts and threads; refuses to run inside an event loop."""
        return self._read_sync("t.to_data_sync()", "await t.to_data()")

    # -- host interop: numpy and Python conversions through the sync door ------------------
    def _read_sync(self, what: str, instead: str) -> np.ndarray:
        """Read through the blocking door, or explain which ``await`` to use instead."""
        if in_event_loop():
            raise BlockingCallError(
                f"{what} blocks until the device has computed the tensor, and this code runs "
                "inside an event loop, where blocking would stall every other task; use "
                f"'{instead}' instead (in Jupyter and IPython a cell may 'await' at top level)")
        out: np.ndarray = self.device._blocking(self, False, what)
        self._keep_host(out)
        return out

    def _keep_host(self, values: np.ndarray) -> None:
        """Keep a copy of small results so that ``repr`` can show them without a read."""
        if values.size <= _REPR_VALUES:
            kept = values.copy()
            kept.flags.writeable = False
            self._host = kept

    def _scalar(self, what: str) -> Any:
        if self.size != 1:
            raise ShapeError(f"{what} needs a tensor with exactly one element, and t{self.id} "
                             f"has shape {self.shape} ({self.size} elements); index or reduce "
                             "it first (for example t.sum())")
        return self._read_sync(what, "(await t.to_data()).item()").item()

    def numpy(self) -> np.ndarray:
        """This tensor's values as a new numpy array (blocking; plain scripts and threads)."""
        return self._read_sync("t.numpy()", "await t.to_data()")

    def tolist(self) -> Any:
        """This tensor's values as nested Python lists (blocking, like ``numpy()``)."""
        return self._read_sync("t.tolist()", "(await t.to_data()).tolist()").tolist()

    def item(self) -> int | float | bool:
        """The one element of a one-element tensor as a Python scalar (blocking)."""
        value: int | float | bool = self._scalar("t.item()")
        return value

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("np.asarray(t, copy=False): a tensor lives on its device, so "
                             "converting it always copies; use copy=None or copy=True")
        out = self._read_sync("np.asarray(t)", "np.asarray(await t.to_data())")
        return out if dtype is None else out.astype(dtype, copy=False)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: object,
                        **kwargs: object) -> object:
        """numpy ufuncs on tensors: see :mod:`asyncfusion.numpy_protocols` for the rule."""
        return call_ufunc(Tensor, ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Callable[..., object], types: Collection[type],
                           args: tuple[object, ...], kwargs: dict[str, object]) -> object:
        """numpy functions on tensors: see :mod:`asyncfusion.numpy_protocols` for the rule."""
        return call_function(Tensor, func, args, kwargs)

    def __float__(self) -> float:
        return float(self._scalar("float(t)"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex(t)"))

    def __int__(self) -> int:
        return int(self._scalar("int(t)"))

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ShapeError(f"the truth value of a tensor with {self.size} elements (shape "
                             f"{self.shape}) is ambiguous; read it and use numpy's .any() or "
                             ".all(), or compare a reduction (for example t.max() > 0)")
        return bool(self._scalar("bool(t)"))

    def __index__(self) -> int:
        if self.ndim != 0 or not self.dtype.is_int:
            raise TypeError(f"only 0-d integer tensors can be used as an index, and t{self.id} "
                            f"has shape {self.shape} and dtype {self.dtype.label}")
        return int(self._scalar("operator.index(t)"))

    def __repr__(self) -> str:
        """Shape, dtype, device and status; the values only when already on the host."""
        dev = self.device
        where = f"{getattr(dev.backend, 'name', '?')}#{getattr(dev, 'number', '?')}"
        head = (f"Tensor(t{self.id}, shape={self.shape}, dtype={self.dtype.label}, "
                f"device={where}, status={self._status()}")
        host: np.ndarray | None = getattr(self, "_host", None)
        if host is None:
            return head + ")"
        values = np.array2string(host, separator=", ", prefix="       values=")
        return f"{head},\n       values={values})"

    def _status(self) -> str:
        """Where the tensor's data stands, looked up without waiting for anything."""
        dev = self.device
        if dev.closed:
            return "device closed"
        if dev.streams.queued(self.id):
            return "queued"
        handle = dev._server.executor.memory.get(self.id)
        if handle is None:
            return "running"
        return "failed" if isinstance(handle, Poison) else "on device"

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """The ``asyncfusion`` module: the Array API namespace of this tensor."""
        if api_version not in (None, "2023.12", "2024.12", "2025.12"):
            raise ValueError(f"__array_namespace__: api_version {api_version!r} is not "
                             "supported; use None, '2023.12', '2024.12' or '2025.12'")
        import asyncfusion
        return asyncfusion

    # -- element-wise operators ----------------------------------------------------------
    def __add__(self, o: Any) -> Tensor: return elementwise("add", self, o)
    def __radd__(self, o: Any) -> Tensor: return elementwise("add", o, self)
    def __sub__(self, o: Any) -> Tensor: return elementwise("sub", self, o)
    def __rsub__(self, o: Any) -> Tensor: return elementwise("sub", o, self)
    def __mul__(self, o: Any) -> Tensor: return elementwise("mul", self, o)
    def __rmul__(self, o: Any) -> Tensor: return elementwise("mul", o, self)
    def __truediv__(self, o: Any) -> Tensor: return elementwise("div", self, o)
    def __rtruediv__(self, o: Any) -> Tensor: return elementwise("div", o, self)
    def __pow__(self, o: Any) -> Tensor: return elementwise("pow", self, o)
    def __rpow__(self, o: Any) -> Tensor: return elementwise("pow", o, self)
    def __neg__(self) -> Tensor: return elementwise("neg", self)
    def __abs__(self) -> Tensor: return elementwise("abs", self)
    def __eq__(self, o: Any) -> Tensor: return elementwise("eq", self, o)  # type: ignore[override]
    def __ne__(self, o: Any) -> Tensor: return elementwise("ne", self, o)  # type: ignore[override]
    def __lt__(self, o: Any) -> Tensor: return elementwise("lt", self, o)
    def __le__(self, o: Any) -> Tensor: return elementwise("le", self, o)
    def __gt__(self, o: Any) -> Tensor: return elementwise("gt", self, o)
    def __ge__(self, o: Any) -> Tensor: return elementwise("ge", self, o)
    def __and__(self, o: Any) -> Tensor: return elementwise("bitwise_and", self, o)
    def __rand__(self, o: Any) -> Tensor: return elementwise("bitwise_and", o, self)
    def __or__(self, o: Any) -> Tensor: return elementwise("bitwise_or", self, o)
    def __ror__(self, o: Any) -> Tensor: return elementwise("bitwise_or", o, self)
    def __xor__(self, o: Any) -> Tensor: return elementwise("bitwise_xor", self, o)
    def __rxor__(self, o: Any) -> Tensor: return elementwise("bitwise_xor", o, self)
    def __invert__(self) -> Tensor: return elementwise("bitwise_invert", self)
    def __lshift__(self, o: Any) -> Tensor: return elementwise("bitwise_left_shift", self, o)
    def __rlshift__(self, o: Any) -> Tensor: return elementwise("bitwise_left_shift", o, self)
    def __rshift__(self, o: Any) -> Tensor: return elementwise("bitwise_right_shift", self, o)
    def __rrshift__(self, o: Any) -> Tensor: return elementwise("bitwise_right_shift", o, self)
    def __pos__(self) -> Tensor: return elementwise("positive", self)
    def __matmul__(self, o: Any) -> Tensor: return _linalg.matmul(self, o)
    def __rmatmul__(self, o: Any) -> Tensor: return _linalg.matmul(o, self)

    def abs(self) -> Tensor: return elementwise("abs", self)
    def exp(self) -> Tensor: return elementwise("exp", self)
    def log(self) -> Tensor: return elementwise("log", self)
    def sqrt(self) -> Tensor: return elementwise("sqrt", self)
    def sin(self) -> Tensor: return elementwise("sin", self)
    def cos(self) -> Tensor: return elementwise("cos", self)
    def tanh(self) -> Tensor: return elementwise("tanh", self)
    def sigmoid(self) -> Tensor: return elementwise("sigmoid", self)
    def relu(self) -> Tensor: return elementwise("relu", self)

    def astype(self, dtype: Any) -> Tensor:
        """This tensor converted to ``dtype`` (float->int truncates toward zero)."""
        dt = as_dtype(dtype)
        check_held(dt, self.device, "astype")
        return elementwise("cast", self, dtype=dt)

    # -- views, reductions and composites live in their own modules -------------------
    def reshape(self, *shape: Any) -> Tensor:
        """The same elements in another shape (a view when strides allow, else a copy);
        one dimension may be -1 (inferred)."""
        return _views.reshape(self, shape)

    def permute(self, *axes: Any) -> Tensor:
        return _views.permute(self, axes)

    def transpose(self, a: int = -2, b: int = -1) -> Tensor:
        return _views.transpose(self, a, b)

    @property
    def T(self) -> Tensor:  # noqa: N802 - numpy's name
        return _views.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:  # noqa: N802 - numpy's name
        return _views.transpose(self, -2, -1)

    def expand(self, *shape: Any) -> Tensor:
        return _views.broadcast_to(self, shape)

    def broadcast_to(self, *shape: Any) -> Tensor:
        return _views.broadcast_to(self, shape)

    def squeeze(self, axis: Any = None) -> Tensor:
        return _views.squeeze(self, axis)

    def unsqueeze(self, axis: int) -> Tensor:
        return _views.unsqueeze(self, axis)

    def flip(self, axis: Any = None) -> Tensor:
        return _views.flip(self, axis)

    def contiguous(self) -> Tensor:
        """This tensor in dense C order (a copy kernel only when it is a strided view)."""
        return _views.contiguous(self)

    def __getitem__(self, key: Any) -> Tensor:
        return _views.index(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        """``t[key] = value``: this tensor takes a new value (a new id) in which the
        elements ``key`` selects are ``value`` (cast to this dtype); tensors that were
        views of it, or that it was a view of, keep their values (copy on write)."""
        from .setitem import assign
        assign(self, key, value)

    def to(self, device: Any, /) -> Tensor:
        """This tensor on ``device`` (itself when it is already there): a lazy copy,
        ordered after what computes this tensor; it runs when a read on ``device`` needs
        it (one read here, one upload there). See ``docs/concepts/devices.md``."""
        from .runtime import as_device
        from .moving import copy_to

        target = as_device(device)
        return self if target is self.device else copy_to(self, target)

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """The Array API's name for :meth:`to`."""
        if stream is not None:
            raise ValueError("to_device: stream= is not supported (asyncfusion orders work "
                             "by its own streams); leave it None")
        return self.to(device)

    def __dlpack_device__(self) -> tuple[int, int]:
        """The DLPack device type of this tensor's device: CPU (1) for the numpy backend,
        Vulkan (7) or Metal (8) for wgpu on those APIs, else ext_dev (12)."""
        dev = self.device.backend
        if dev.name == "numpy":
            return (1, 0)
        api = getattr(dev, "rt", None)
        backend_type = api.adapter_info.get("backend_type", "") if api is not None else ""
        return ({"Vulkan": 7, "Metal": 8}.get(str(backend_type), 12), 0)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:
        """Refused: a lazy tensor's memory cannot be handed out synchronously (it may not
        be computed yet, and a wgpu buffer is not addressable by other libraries)."""
        raise BufferError(
            f"t{self.id} is a lazy asyncfusion tensor: its memory cannot be exported through "
            "DLPack without waiting for the device; read it first "
            "('np.from_dlpack(await t.to_data())', or t.numpy() outside an event loop), or "
            "use 'async with af.resolve(t) as buf:' for its wgpu buffer")

    def sum(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _red.reduce("sum", self, axis, keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _red.reduce("prod", self, axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _red.reduce("max", self, axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _red.reduce("min", self, axis, keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _red.reduce("any", self, axis, keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _red.reduce("all", self, axis, keepdims)

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        return _red.reduce("argmax", self, axis, keepdims)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        return _red.reduce("argmin", self, axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _red.mean(self, axis, keepdims)

    def var(self, axis: Any = None, keepdims: bool = False, correction: float = 0) -> Tensor:
        return _red.var(self, axis, keepdims, correction)

    def std(self, axis: Any = None, keepdims: bool = False, correction: float = 0) -> Tensor:
        return _red.var(self, axis, keepdims, correction).sqrt()

    def __floordiv__(self, o: Any) -> Tensor: return elementwise("floor_divide", self, o)
    def __rfloordiv__(self, o: Any) -> Tensor: return elementwise("floor_divide", o, self)
    def __mod__(self, o: Any) -> Tensor: return elementwise("remainder", self, o)
    def __rmod__(self, o: Any) -> Tensor: return elementwise("remainder", o, self)

    def square(self) -> Tensor: return elementwise("square", self)
    def rsqrt(self) -> Tensor: return elementwise("rsqrt", self)
    def floor(self) -> Tensor: return elementwise("floor", self)
    def ceil(self) -> Tensor: return elementwise("ceil", self)
    def round(self) -> Tensor: return elementwise("round", self)
    def sign(self) -> Tensor: return elementwise("sign", self)
    def isnan(self) -> Tensor: return elementwise("isnan", self)
    def isinf(self) -> Tensor: return elementwise("isinf", self)
    def isfinite(self) -> Tensor: return elementwise("isfinite", self)


def check_dims(dims: tuple[int, ...] | list[int], what: str) -> None:
    """Refuse a dimension larger than kernels index (an empty tensor has no size check)."""
    for d in dims:
        if d > MAX_DIM:
            raise LimitError(f"{what}: dimension {d} in {tuple(dims)} is larger than "
                             f"{MAX_DIM}, the largest asyncfusion indexes")


_WIDEST = 4  # the widest dtype a call without dtype= makes (64-bit ones need dtype=)


def _check_size(shape: tuple[int, ...], device: Any, what: str,
                dtype: DType | None = None) -> None:
    """Refuse a tensor larger than the device's largest buffer (``dtype`` unknown yet: 4
    bytes an element)."""
    nbytes = numel(shape) * (dtype.itemsize if dtype is not None else _WIDEST)
    if nbytes > device.max_buffer_size:
        raise LimitError(
            f"{what}: a tensor of shape {shape} needs {nbytes} bytes, more than this device's "
            f"largest buffer ({device.max_buffer_size} bytes); split the work into smaller "
            "tensors")


def _compute_dtype(op: str, rule: str, dtypes: list[DType], what: str) -> tuple[DType, DType]:
    """(compute dtype, output dtype) of an element-wise op, or a DTypeError. float16 is
    computed in float32 and rounded to float16 per op, as numpy does; int16/uint16 in
    their 32-bit lane, wrapped to 16 bits per op."""
    common = dtypes[0]
    for d in dtypes[1:]:
        common = promote(common, d, what)
    if common is DType.float16 and rule in ("numeric", "float", "compare", "predicate"):
        return DType.float32, (DType.bool if rule in ("compare", "predicate") else common)
    if common.lane is not common and rule != "logical":
        compute, out = _compute_dtype(op, rule, [common.lane], what)
        return compute, (common if out is common.lane else out)
    if common.itemsize == 8 and op not in WIDE and not (common.is_int and rule == "float"):
        instead = NEEDS[common][1].label
        raise DTypeError(f"{what} is not available for {common.label} (WGSL's builtins take "
                         "16/32-bit floats only, and asyncfusion writes no 64-bit version of "
                         f"it); cast with .astype(asyncfusion.{instead}) first")
    if rule == "numeric":
        if common is DType.bool:
            raise DTypeError(f"{what} is not defined for bool tensors; cast with "
                             ".astype(asyncfusion.int32) or use & | ~ for logic")
        return common, common
    if rule == "float":
        if common is DType.bool:
            raise DTypeError(f"{what} is not defined for bool tensors; cast with "
                             ".astype(asyncfusion.float32) first")
        wide = common is DType.float64
        return (common, common) if wide else (DType.float32, DType.float32)
    if rule == "integer" and not common.is_int:
        raise DTypeError(f"{what} needs integer tensors, got {common.label}; cast with "
                         ".astype(asyncfusion.int32) first")
    if rule == "bitwise" and common.is_float:
        raise DTypeError(f"{what} needs integer or bool tensors, got {common.label}; cast "
                         "with .astype(asyncfusion.int32), or compare first (x > 0)")
    if rule in ("integer", "bitwise"):
        return common, common
    if rule == "compare":
        return common, DType.bool
    if rule == "predicate":
        return common, DType.bool
    if rule == "same":
        return common, common
    if common is not DType.bool:  # logical
        raise DTypeError(f"{what} needs bool tensors, got {common.label}; compare first "
                         "(for example x > 0) or use .astype(asyncfusion.bool_)")
    return DType.bool, DType.bool


def _resolve(op: str, args: tuple[Any, ...], dtype: DType | None
             ) -> tuple[DType, DType, tuple[int, ...]]:
    """(compute dtype, output dtype, positions of plain scalars) of an element-wise call,
    or the error that explains it.

    Runs once per (op, operand types); the result is cached by :func:`elementwise`.
    """
    compute, out = _dtypes(op, args, dtype)
    return compute, out, _plain_scalars(args, compute)


def _dtypes(op: str, args: tuple[Any, ...], dtype: DType | None) -> tuple[DType, DType]:
    """(compute dtype, output dtype) of an element-wise call (see :func:`_resolve`)."""
    spec = PRIMITIVES[op]
    what = _what(op)
    if len(args) != spec.arity:
        raise TypeError(f"{what} takes {spec.arity} operand(s), got {len(args)}")
    tensors = [a for a in args if type(a) is Tensor]
    first = tensors[0]
    if spec.rule == "cast":
        assert dtype is not None
        return dtype.lane, dtype
    if spec.rule == "where":
        cond = args[0]
        if type(cond) is not Tensor or cond.dtype is not DType.bool:
            raise DTypeError("where: the condition must be a bool tensor (for example x > 0)")
        ref = next((a.dtype for a in args[1:] if type(a) is Tensor), None)
        if ref is None:
            raise TypeError("where: give at least one tensor among the two value operands")
        dts = [a.dtype if type(a) is Tensor else _scalar_dtype(a, ref, what) for a in args[1:]]
        return _compute_dtype(op, "numeric" if ref is not DType.bool else "logical", dts, what)
    dts = [a.dtype for a in tensors]
    dts += [_scalar_dtype(a, first.dtype, what) for a in args if type(a) is not Tensor]
    return _compute_dtype(op, spec.rule, dts, what)


_RESOLVED: dict[tuple[Any, ...], tuple[DType, DType, tuple[int, ...]]] = {}
_SCALAR_IR = {d: ScalarIr(d) for d in DType}
_new_tensor = object.__new__


def elementwise(op: str, *args: Any, dtype: DType | None = None) -> Tensor:
    """Record one element-wise op on tensors and Python scalars (numpy broadcasting).

    This is the hot path of every program: one pass over the operands, dtype rules
    cached per (op, operand types), and nothing else before the op is queued.
    """
    first: Tensor | None = None
    shape: tuple[int, ...] = ()
    kinds: list[Any] = [op, dtype]
    ids: list[int] = []
    irs: list[Any] = []  # a scalar's slot holds its value until the scalars are sorted out
    for a in args:
        if type(a) is Tensor:
            if first is None:
                first, shape = a, a.shape
            elif a.device is not first.device:
                raise device_mismatch(f"{_what(op)}: the operand t{a.id}", first.device,
                                      a.device)
            elif a.shape != shape:
                shape = broadcast_shapes(shape, a.shape, _what(op))
            kinds.append(a.dtype)
            ids.append(a.id)
            r = a._ir
            irs.append(r if r is not None else a.ir())
        elif isinstance(a, _SCALARS):
            kinds.append(type(a))
            irs.append(a)
        else:
            raise TypeError(f"{_what(op)}: operands must be Tensors or Python "
                            f"scalars, not {type(a).__name__}; wrap arrays with "
                            "asyncfusion.tensor()")
    if first is None:
        raise TypeError(f"{_what(op)}: at least one operand must be an asyncfusion "
                        "Tensor")
    if op == "pow" and len(args) == 2 and args[0] is first and type(args[1]) in (int, float) \
            and args[1] == 2 and (type(args[1]) is int or first.dtype.is_float) \
            and first.dtype is not DType.bool:
        return elementwise("square", first)  # x ** 2 is exactly x * x, and far cheaper
    key = tuple(kinds)
    resolved = _RESOLVED.get(key)
    if resolved is None:
        resolved = _RESOLVED[key] = _resolve(op, args, dtype)
    compute, out_dtype, plain = resolved
    device = first.device
    if out_dtype is DType.int64:  # int32 with uint32: held where the adapter has int64
        check_promoted(out_dtype, device, _what(op))
    scalars: tuple[Any, ...] = ()
    if len(ids) < len(args):
        if plain:  # the scalars go in as they are: their slots take the placeholder
            sir = _SCALAR_IR[compute]
            if len(plain) == 1:
                p = plain[0]
                scalars = (irs[p],)
                irs[p] = sir
            else:
                scalars = tuple([irs[p] for p in plain])
                for p in plain:
                    irs[p] = sir
        else:
            irs, scalars = _with_scalars(op, args, compute)
    if shape is not first.shape and shape != first.shape:
        _check_size(shape, device, _what(op), out_dtype)
    out = _new_tensor(Tensor)  # an op's result: Tensor.__init__'s checks hold already
    out.id = tid = next(_ids)
    out.shape, out.dtype, out.device, out.layout, out._ir = shape, out_dtype, device, None, None
    out_ir = TensorIr(tid, shape, out_dtype, _NOT_INIT)
    device.register(ElementwiseOp(op, tuple(irs), scalars, out_ir, compute), ids, out_ir)
    return out


def _plain_scalars(args: tuple[Any, ...], compute: DType) -> tuple[int, ...]:
    """Positions of the scalars of a call whose scalars need no check and no rounding
    (Python bools; Python floats computed in a float dtype, no float16 operand), or ()
    when some scalar does (see :func:`_with_scalars`). Depends on types only."""
    spots = tuple(i for i, a in enumerate(args) if type(a) is not Tensor)
    for i in spots:
        t = type(args[i])
        if t is bool:
            continue
        if t is not float or compute not in (DType.float32, DType.float64) or (
                compute is DType.float32 and _has_half(args)):
            return ()
    return spots


def _with_scalars(op: str, args: tuple[Any, ...], compute: DType
                  ) -> tuple[list[Any], tuple[Any, ...]]:
    irs: list[Any] = []
    scalars: list[Any] = []
    for a in args:
        if type(a) is Tensor:
            irs.append(a.ir())
            continue
        value = a.item() if isinstance(a, np.generic) else a
        if type(value) is float and compute is DType.float32:
            pass  # the common case: nothing to check
        elif compute.is_int and not isinstance(value, bool):
            _scalar_dtype(value, _narrowest(args, compute), _what(op))  # range check
        elif type(value) is int and compute is DType.float32:
            _float_scalar(value, _what(op))
        if compute is DType.float32 and _has_half(args):
            value = _to_half(value)  # the scalar takes the float16 operand's dtype first
        irs.append(_SCALAR_IR[compute])
        scalars.append(value)
    return irs, tuple(scalars)


def _narrowest(args: tuple[Any, ...], compute: DType) -> DType:
    """The dtype a scalar must fit beside tensors computed in ``compute``: int16 when
    the integer tensors are int16 (computed in their int32 lane), else ``compute``."""
    held = {a.dtype for a in args if type(a) is Tensor and a.dtype.lane is compute}
    return held.pop() if len(held) == 1 else compute


def _has_half(args: tuple[Any, ...]) -> bool:
    return any(type(a) is Tensor and a.dtype is DType.float16 for a in args)


def _to_half(value: Any) -> Any:
    """A Python number rounded to float16 (beyond its range: infinity, as numpy)."""
    if isinstance(value, bool):
        return value
    with np.errstate(over="ignore"):
        return float(np.float16(value))


def _float_scalar(value: int, what: str) -> None:
    """A Python int beside a float tensor must convert to a float, as numpy requires."""
    try:
        float(value)
    except OverflowError:
        raise OverflowError(f"{what}: the int {str(value)[:20]}... ({value.bit_length()} bits) "
                            "is too large to convert to float; pass a float (for example "
                            "float('inf')) or a smaller number") from None


def where(cond: Tensor, a: Any, b: Any) -> Tensor:
    """Elements of ``a`` where ``cond`` is true, else of ``b`` (numpy.where)."""
    return elementwise("where", cond, a, b)


def minimum(a: Any, b: Any) -> Tensor:
    """Element-wise minimum; NaN in either operand gives NaN (as numpy)."""
    return elementwise("minimum", a, b)


def maximum(a: Any, b: Any) -> Tensor:
    """Element-wise maximum; NaN in either operand gives NaN (as numpy)."""
    return elementwise("maximum", a, b)


def cat(tensors: list[Tensor] | tuple[Tensor, ...], axis: int = 0) -> Tensor:
    """Concatenate tensors of one device along ``axis``; their dtypes promote as an
    element-wise op's operands do (int16 with int32 gives int32)."""
    tensors = list(tensors)
    if not tensors or any(type(t) is not Tensor for t in tensors):
        raise TypeError("cat: give a non-empty list of asyncfusion Tensors")
    first = tensors[0]
    dtype = first.dtype
    for t in tensors[1:]:
        if t.device is not first.device:
            raise device_mismatch(f"cat: of t{first.id} and t{t.id}, t{t.id}", first.device,
                                  t.device)
        dtype = promote(dtype, t.dtype, "cat")
        if t.ndim != first.ndim:
            raise ShapeError(f"cat: ranks differ (shapes {first.shape} and {t.shape})")
    ax = normalize_axis(axis, first.ndim, "cat")
    for t in tensors[1:]:
        if any(a != b for d, (a, b) in enumerate(zip(first.shape, t.shape)) if d != ax):
            raise ShapeError(f"cat: shapes {first.shape} and {t.shape} differ outside axis {ax}")
    shape = list(first.shape)
    shape[ax] = sum(t.shape[ax] for t in tensors)
    _check_size(tuple(shape), first.device, "cat", dtype)
    check_promoted(dtype, first.device, "cat")
    tensors = [t if t.dtype is dtype else t.astype(dtype) for t in tensors]
    out = Tensor(tuple(shape), dtype, first.device)
    out_ir = out.out_ir()
    first.device.register(CatOp(tuple(t.ir() for t in tensors), ax, out_ir),
                          tuple(t.id for t in tensors), out_ir)
    return out



def concat(arrays: list[Tensor] | tuple[Tensor, ...], /, *, axis: int | None = 0) -> Tensor:
    """The Array API's ``concat``: :func:`cat`; ``axis=None`` joins the flattened arrays."""
    if axis is None:
        return cat([t.reshape(-1) if type(t) is Tensor else t for t in arrays], 0)
    return cat(arrays, axis)


from . import reductions as _red  # noqa: E402 - they build on Tensor
from . import views as _views  # noqa: E402
from . import linalg as _linalg  # noqa: E402
