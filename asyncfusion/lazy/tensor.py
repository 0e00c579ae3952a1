"""The lazy Tensor: a handle (id, shape, dtype, device) whose ops are recorded, not run.

Every op computes its output's shape and dtype immediately and validates its inputs
there and then, so a bad call raises on the line that made it. Nothing runs until a
read (``await t.to_data()``), a ``sync``, or a stream growing past its flush threshold.

This module holds the handle alone: what a tensor is and how it is read. Its operators
and the methods that record ops (``t + 1``, ``t.exp()``, ``t.sum()``, ``t[1:]``) are the
API's functions, bound onto the class by :mod:`asyncfusion.api.methods`; the
declarations under ``TYPE_CHECKING`` below give them their types.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Collection, Sequence
from types import EllipsisType, ModuleType
from typing import TYPE_CHECKING, NoReturn, SupportsIndex

import numpy as np
from numpy.typing import DTypeLike

from .._core.dtype import DType, DTypeSpec
from .._core.errors import BlockingCallError, DTypeError, ShapeError
from .._core.tracebacks import clear_read_frames
from .._debug import in_event_loop
from .numpy_protocols import call_function, call_ufunc
from ..engine.memory import Poison
from ..ir import Layout, TensorIr, TensorStatus, numel

if TYPE_CHECKING:
    from ..runtime.device import Device

__all__ = ["Tensor", "Scalar", "Operand", "Axes", "Nested", "Index", "Key", "not_a_tensor",
           "KEPT_ON_HOST"]

_ids = itertools.count(1)
new_id = _ids.__next__  # the id of a new tensor (ids are never reused)
KEPT_ON_HOST = 1000  # values of tensors up to this size are kept once read (numpy's repr
# threshold): for repr, and for reading them again without a device round
_NOT_INIT = TensorStatus.NOT_INIT
_READ_ONLY = TensorStatus.READ_ONLY
_DLPACK_HOST = (1, 0)  # DLPack's (kDLCPU, device 0)

Scalar = int | float | bool | np.integer | np.floating | np.bool_
"""A Python or numpy scalar: an operand beside tensors, taking their dtype (numpy's rule)."""
Axes = int | tuple[int, ...] | list[int] | None
"""An axis, several, or None (all of them)."""
Nested = list["Nested"] | int | float | bool
"""A tensor's values as Python objects: :meth:`Tensor.tolist`'s answer."""


class Tensor:
    """A lazy tensor. Create one with :func:`asyncfusion.tensor` and friends."""

    __slots__ = ("id", "shape", "dtype", "device", "layout", "_ir", "_host", "_source",
                 "__weakref__")
    __array_priority__ = 1000  # numpy scalars on the left defer to our operators

    def __init__(self, shape: tuple[int, ...], dtype: DType, device: Device,
                 layout: Layout | None = None) -> None:
        if type(shape) is not tuple or type(dtype) is not DType or not hasattr(
                device, "streams"):
            raise TypeError("Tensor(shape, dtype, device) is made by asyncfusion's ops; "
                            "create tensors with asyncfusion.tensor(), zeros(), ones(), "
                            "full(), arange(), rand() or randn()")
        self.id = new_id()
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

    def __deepcopy__(self, memo: dict[int, object]) -> Tensor:
        return self

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
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

    async def to_numpy(self) -> np.ndarray:
        """:meth:`to_data` under numpy's name: the values as a numpy array."""
        return await self.to_data()

    def to_data_sync(self) -> np.ndarray:
        """``to_data()`` for plain scripts and threads; refuses to run inside an event loop."""
        return self._read_sync("t.to_data_sync()", "await t.to_data()")

    # -- host interop: numpy and Python conversions through the sync door ------------------
    def _read_sync(self, what: str, instead: str) -> np.ndarray:
        """Read through the blocking door, or explain which ``await`` to use instead.

        Values already on the host (an upload, or a tensor read before) come back without
        a device round, and a basic-index view of a small tensor reads that tensor (so
        reading its elements one by one, as ``float(t[i])`` in a loop, costs one round)."""
        if in_event_loop():
            raise BlockingCallError(
                f"{what} blocks until the device has computed the tensor, and this code runs "
                "inside an event loop, where blocking would stall every other task; use "
                f"'{instead}' instead (in Jupyter and IPython a cell may 'await' at top level)")
        host: np.ndarray | None = getattr(self, "_host", None)
        if host is not None:
            return host.copy()
        source: tuple[weakref.ref[Tensor], tuple[object, ...]] | None = getattr(
            self, "_source", None)
        base = None if source is None else source[0]()
        if base is not None:
            values = np.array(base._read_sync(what, instead)[source[1]])  # type: ignore[index]
            self._keep_host(values)
            return values
        out = self.device._blocking(self, False, what)
        assert out is not None  # a read, not a sync
        self._keep_host(out)
        return out

    def note_source(self, base: Tensor, key: object) -> None:
        """Note that this tensor is ``base[key]`` (a basic index of Python ints, slices,
        ``None`` and ``...``), where ``base`` is small: its host values, if known, are
        this tensor's too, and a blocking read of this one reads ``base`` while ``base``
        lives (held weakly: a view does not keep an intermediate alive, so fusion is
        unchanged)."""
        if base.size > KEPT_ON_HOST:
            return
        parts = key if isinstance(key, tuple) else (key,)
        if not all(k is None or k is Ellipsis or type(k) in (int, slice) for k in parts):
            return
        host: np.ndarray | None = getattr(base, "_host", None)
        if host is not None:
            self._host = np.asarray(host[parts])  # all ints: a numpy scalar, made 0-d
        else:
            self._source = (weakref.ref(base), parts)

    def _keep_host(self, values: np.ndarray) -> None:
        """Keep a copy of small results so that ``repr`` can show them without a read."""
        if values.size <= KEPT_ON_HOST:
            kept = values.copy()
            kept.flags.writeable = False
            self._host = kept

    def _scalar(self, what: str) -> int | float | bool:
        if self.size != 1:
            raise ShapeError(f"{what} needs a tensor with exactly one element, and t{self.id} "
                             f"has shape {self.shape} ({self.size} elements); index or reduce "
                             "it first (for example t.sum())")
        value: int | float | bool = self._read_sync(what, "(await t.to_data()).item()").item()
        return value

    def numpy(self) -> np.ndarray:
        """This tensor's values as a new numpy array (blocking; plain scripts and threads)."""
        return self._read_sync("t.numpy()", "await t.to_data()")

    def tolist(self) -> Nested:
        """This tensor's values as nested Python lists (blocking, like ``numpy()``)."""
        values: Nested = self._read_sync("t.tolist()", "(await t.to_data()).tolist()").tolist()
        return values

    def item(self) -> int | float | bool:
        """The one element of a one-element tensor as a Python scalar (blocking)."""
        return self._scalar("t.item()")

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("np.asarray(t, copy=False): a tensor lives on its device, so "
                             "converting it always copies; use copy=None or copy=True")
        out = self._read_sync("np.asarray(t)", "np.asarray(await t.to_numpy())")
        return out if dtype is None else out.astype(dtype, copy=False)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: object,
                        **kwargs: object) -> object:
        """numpy ufuncs on tensors: see :mod:`asyncfusion.lazy.numpy_protocols` for the
        rule."""
        return call_ufunc(Tensor, ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Callable[..., object], types: Collection[type],
                           args: tuple[object, ...], kwargs: dict[str, object]) -> object:
        """numpy functions on tensors: see :mod:`asyncfusion.lazy.numpy_protocols` for the
        rule."""
        return call_function(Tensor, func, args, kwargs)

    def __complex__(self) -> complex:
        return complex(self._scalar("complex(t)"))

    def __float__(self) -> float:
        return float(self._scalar("float(t)"))

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


    __hash__ = object.__hash__

    if TYPE_CHECKING:  # bound by asyncfusion.api.methods from the API's functions
        def __add__(self, o: Operand, /) -> Tensor: ...
        def __radd__(self, o: Operand, /) -> Tensor: ...
        def __sub__(self, o: Operand, /) -> Tensor: ...
        def __rsub__(self, o: Operand, /) -> Tensor: ...
        def __mul__(self, o: Operand, /) -> Tensor: ...
        def __rmul__(self, o: Operand, /) -> Tensor: ...
        def __truediv__(self, o: Operand, /) -> Tensor: ...
        def __rtruediv__(self, o: Operand, /) -> Tensor: ...
        def __floordiv__(self, o: Operand, /) -> Tensor: ...
        def __rfloordiv__(self, o: Operand, /) -> Tensor: ...
        def __mod__(self, o: Operand, /) -> Tensor: ...
        def __rmod__(self, o: Operand, /) -> Tensor: ...
        def __pow__(self, o: Operand, /) -> Tensor: ...
        def __rpow__(self, o: Operand, /) -> Tensor: ...
        def __eq__(self, o: Operand, /) -> Tensor: ...  # type: ignore[override]
        def __ne__(self, o: Operand, /) -> Tensor: ...  # type: ignore[override]
        def __lt__(self, o: Operand, /) -> Tensor: ...
        def __le__(self, o: Operand, /) -> Tensor: ...
        def __gt__(self, o: Operand, /) -> Tensor: ...
        def __ge__(self, o: Operand, /) -> Tensor: ...
        def __and__(self, o: Operand, /) -> Tensor: ...
        def __rand__(self, o: Operand, /) -> Tensor: ...
        def __or__(self, o: Operand, /) -> Tensor: ...
        def __ror__(self, o: Operand, /) -> Tensor: ...
        def __xor__(self, o: Operand, /) -> Tensor: ...
        def __rxor__(self, o: Operand, /) -> Tensor: ...
        def __lshift__(self, o: Operand, /) -> Tensor: ...
        def __rlshift__(self, o: Operand, /) -> Tensor: ...
        def __rshift__(self, o: Operand, /) -> Tensor: ...
        def __rrshift__(self, o: Operand, /) -> Tensor: ...
        def __matmul__(self, o: Tensor, /) -> Tensor: ...
        def __rmatmul__(self, o: Tensor, /) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __pos__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
        def abs(self) -> Tensor: ...
        def exp(self) -> Tensor: ...
        def log(self) -> Tensor: ...
        def sqrt(self) -> Tensor: ...
        def rsqrt(self) -> Tensor: ...
        def square(self) -> Tensor: ...
        def sin(self) -> Tensor: ...
        def cos(self) -> Tensor: ...
        def tanh(self) -> Tensor: ...
        def sigmoid(self) -> Tensor: ...
        def relu(self) -> Tensor: ...
        def floor(self) -> Tensor: ...
        def ceil(self) -> Tensor: ...
        def round(self) -> Tensor: ...
        def sign(self) -> Tensor: ...
        def isnan(self) -> Tensor: ...
        def isinf(self) -> Tensor: ...
        def isfinite(self) -> Tensor: ...
        def astype(self, dtype: DTypeSpec, /) -> Tensor: ...
        def reshape(self, *shape: int | Sequence[int]) -> Tensor: ...
        def permute(self, *axes: int | Sequence[int]) -> Tensor: ...
        def transpose(self, a: int = -2, b: int = -1) -> Tensor: ...
        def expand(self, *shape: int | Sequence[int]) -> Tensor: ...
        def broadcast_to(self, *shape: int | Sequence[int]) -> Tensor: ...
        def squeeze(self, axis: Axes = None) -> Tensor: ...
        def unsqueeze(self, axis: int) -> Tensor: ...
        def flip(self, axis: Axes = None) -> Tensor: ...
        def contiguous(self) -> Tensor: ...
        @property
        def T(self) -> Tensor: ...  # noqa: N802 - numpy's name
        @property
        def mT(self) -> Tensor: ...  # noqa: N802 - numpy's name
        def __getitem__(self, key: Key, /) -> Tensor: ...
        def __setitem__(self, key: Key, value: Operand, /) -> None: ...
        def sum(self, axis: Axes = None, keepdims: bool = False) -> Tensor: ...
        def prod(self, axis: Axes = None, keepdims: bool = False) -> Tensor: ...
        def max(self, axis: Axes = None, keepdims: bool = False) -> Tensor: ...
        def min(self, axis: Axes = None, keepdims: bool = False) -> Tensor: ...
        def any(self, axis: Axes = None, keepdims: bool = False) -> Tensor: ...
        def all(self, axis: Axes = None, keepdims: bool = False) -> Tensor: ...
        def argmax(self, axis: int | None = None, keepdims: bool = False) -> Tensor: ...
        def argmin(self, axis: int | None = None, keepdims: bool = False) -> Tensor: ...
        def mean(self, axis: Axes = None, keepdims: bool = False) -> Tensor: ...
        def var(self, axis: Axes = None, keepdims: bool = False,
                correction: float = 0) -> Tensor: ...
        def std(self, axis: Axes = None, keepdims: bool = False,
                correction: float = 0) -> Tensor: ...
        def to(self, device: Device, /) -> Tensor: ...
        def to_device(self, device: Device, /, *, stream: None = None) -> Tensor: ...
        def __array_namespace__(self, *, api_version: str | None = None) -> ModuleType: ...

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(1, 0)``, the host (kDLCPU): :meth:`__dlpack__` exports a host copy of the
        values (a lazy tensor's device memory cannot be handed to other libraries)."""
        return _DLPACK_HOST

    def __dlpack__(self, *, stream: object = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None,
                   copy: bool | None = None) -> object:
        """The values as a DLPack capsule on the host: a blocking read, as ``t.numpy()``,
        so ``np.from_dlpack(t)`` and ``torch.from_dlpack(t)`` work outside an event loop
        (inside one it raises :class:`~asyncfusion.BlockingCallError`: use
        ``np.from_dlpack(await t.to_data())``). The values always move from the device, so
        ``copy=True`` and ``copy=False`` both get the values as read (the read is the
        move to the host that ``__dlpack_device__`` names; nothing is copied after it);
        a ``dl_device`` other than the host or a ``stream`` (the host has none) raise
        ``BufferError``."""
        if dl_device is not None and tuple(dl_device) != _DLPACK_HOST:
            raise BufferError(f"t{self.id}.__dlpack__(dl_device={dl_device!r}): asyncfusion "
                              "exports only to the host, dl_device=(1, 0) (kDLCPU)")
        if stream is not None:
            raise BufferError(f"t{self.id}.__dlpack__(stream={stream!r}): the export is on "
                              "the host, which has no streams; pass stream=None")
        values = self._read_sync("t.__dlpack__()", "np.from_dlpack(await t.to_data())")
        if not values.flags.writeable:
            values = values.copy()
        return values.__dlpack__(max_version=max_version)


def not_a_tensor(x: object, what: str) -> TypeError:
    """The error of a function of real tensors given ``x``: a DTypeError naming the
    parts for a complex tensor, a TypeError otherwise."""
    if isinstance(x, Tensor) and x.dtype.is_complex:
        return DTypeError(f"{what} takes real tensors, and t{x.id} is {x.dtype.label}; apply "
                          "it to af.real(z), af.imag(z) or af.abs(z)")
    return TypeError(f"{what} needs an asyncfusion Tensor, not {type(x).__name__}")


Operand = Tensor | Scalar
"""An element-wise operand: a tensor, or a scalar that takes the tensors' dtype."""
Index = int | slice | EllipsisType | None | Tensor | Sequence[int] | np.ndarray
Key = Index | tuple[Index, ...]
"""What ``t[key]`` takes: basic indices (a view) or integer tensors (a gather)."""
