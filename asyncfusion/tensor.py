"""The lazy Tensor: a handle (id, shape, dtype, device) whose ops are recorded, not run.

Every op computes its output's shape and dtype immediately and validates its inputs
there and then, so a bad call raises on the line that made it. Nothing runs until a
read (``await t.to_data()``), a ``sync``, or a stream growing past its flush threshold.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .dtype import DType, as_dtype, promote
from .errors import AxisError, DeviceMismatchError, DTypeError, LimitError, ShapeError
from .ir import (ELEMENTWISE, CatOp, ElementwiseOp, ReduceOp,
                 ReshapeOp, ScalarIr, TensorIr, TensorStatus, numel)

__all__ = ["Tensor", "elementwise", "where", "minimum", "maximum", "cat"]

_ids = itertools.count(1)
MAX_DIM = 2**32 - 1  # kernels hold dimensions in u32 uniforms
_NOT_INIT = TensorStatus.NOT_INIT
_READ_ONLY = TensorStatus.READ_ONLY
_SCALARS = (int, float, bool, np.integer, np.floating, np.bool_)
_SYMBOLS = {"add": "add (+)", "sub": "sub (-)", "mul": "mul (*)", "div": "div (/)",
            "pow": "pow (**)", "eq": "eq (==)", "ne": "ne (!=)", "lt": "lt (<)",
            "le": "le (<=)", "gt": "gt (>)", "ge": "ge (>=)", "logical_and": "and (&)",
            "logical_or": "or (|)", "logical_not": "not (~)", "neg": "neg (-x)"}


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
        return DType.float32
    if other is DType.bool:
        raise DTypeError(f"{what}: cannot combine a bool tensor with int {value!r}; "
                         "cast it with .astype(asyncfusion.int32) first")
    lo, hi = (0, 2**32 - 1) if other is DType.uint32 else (-(2**31), 2**31 - 1)
    if other.is_int and not lo <= int(value) <= hi:
        raise DTypeError(f"{what}: {value!r} does not fit in {other.label} "
                         f"(range {lo}..{hi}); cast the tensor first")
    return other


class Tensor:
    """A lazy tensor. Create one with :func:`asyncfusion.tensor` and friends."""

    __slots__ = ("id", "shape", "dtype", "device", "_ir")
    __array_priority__ = 1000  # numpy scalars on the left defer to our operators

    def __init__(self, shape: tuple[int, ...], dtype: DType, device: Any) -> None:
        if type(shape) is not tuple or type(dtype) is not DType or not hasattr(
                device, "streams"):
            raise TypeError("Tensor(shape, dtype, device) is made by asyncfusion's ops; "
                            "create tensors with asyncfusion.tensor(), zeros(), ones(), "
                            "full(), arange(), rand() or randn()")
        self.id = next(_ids)
        self.shape = shape
        self.dtype = dtype
        self.device = device
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
            r = self._ir = TensorIr(self.id, self.shape, self.dtype, _READ_ONLY)
        return r

    def out_ir(self) -> TensorIr:
        return TensorIr(self.id, self.shape, self.dtype, _NOT_INIT)

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

    def __repr__(self) -> str:
        return f"Tensor(t{self.id}, shape={self.shape}, dtype={self.dtype.label}, lazy)"

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a lazy tensor is unknown until it is read; use "
                        "'await t.to_data()' and test the numpy result")

    __hash__ = object.__hash__

    # -- reading -------------------------------------------------------------------------
    async def to_data(self) -> np.ndarray:
        """Run what this tensor needs and return its values as a numpy array."""
        return await self.device.read(self)

    def to_data_sync(self) -> np.ndarray:
        """``to_data()`` for plain scripts and threads; refuses to run inside an event loop."""
        return self.device._blocking(self, False, "t.to_data_sync")

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
    def __and__(self, o: Any) -> Tensor: return elementwise("logical_and", self, o)
    def __rand__(self, o: Any) -> Tensor: return elementwise("logical_and", o, self)
    def __or__(self, o: Any) -> Tensor: return elementwise("logical_or", self, o)
    def __ror__(self, o: Any) -> Tensor: return elementwise("logical_or", o, self)
    def __invert__(self) -> Tensor: return elementwise("logical_not", self)

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
        return elementwise("cast", self, dtype=as_dtype(dtype))

    # -- shape ops -----------------------------------------------------------------------
    def reshape(self, *shape: Any) -> Tensor:
        """The same elements in another shape; one dimension may be -1 (inferred)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        target = _reshape_target(self.shape, shape)
        out = Tensor(target, self.dtype, self.device)
        out_ir = out.out_ir()
        self.device.register(ReshapeOp(self.ir(), out_ir), (self.id,), out_ir)
        return out

    def _reduce(self, op: str, axis: int | None, keepdims: bool) -> Tensor:
        what = f"{op}()"
        if self.dtype is DType.bool:
            raise DTypeError(f"{what} is not defined for bool tensors; use "
                             ".astype(asyncfusion.int32) first")
        if axis is None:
            reduced = set(range(self.ndim))
            ax = None
            if self.ndim > 1 or (self.ndim == 1 and keepdims):
                src = self.reshape(-1)
                return src._reduce(op, 0, False).reshape(
                    (1,) * self.ndim if keepdims else ())
        else:
            ax = normalize_axis(axis, self.ndim, what)
            reduced = {ax}
        n = numel(tuple(self.shape[d] for d in reduced))
        if n == 0 and op in ("max", "min"):
            raise ShapeError(f"{what} of an empty tensor (shape {self.shape}) has no value; "
                             "check the size before reducing")
        shape = tuple(1 if d in reduced else s for d, s in enumerate(self.shape)
                      if keepdims or d not in reduced)
        dtype = DType.float32 if op == "mean" else self.dtype
        _check_size(shape, self.device, what)
        out = Tensor(shape, dtype, self.device)
        out_ir = out.out_ir()
        self.device.register(ReduceOp(op, self.ir(), ax, keepdims, out_ir), (self.id,), out_ir)
        return out

    def sum(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        return self._reduce("sum", axis, keepdims)

    def mean(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        return self._reduce("mean", axis, keepdims)

    def max(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        return self._reduce("max", axis, keepdims)

    def min(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        return self._reduce("min", axis, keepdims)



def check_dims(dims: tuple[int, ...] | list[int], what: str) -> None:
    """Refuse a dimension larger than kernels index (an empty tensor has no size check)."""
    for d in dims:
        if d > MAX_DIM:
            raise LimitError(f"{what}: dimension {d} in {tuple(dims)} is larger than "
                             f"{MAX_DIM}, the largest asyncfusion indexes")


def _reshape_target(src: tuple[int, ...], shape: tuple[Any, ...]) -> tuple[int, ...]:
    dims = []
    for d in shape:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise ShapeError(f"reshape: dimensions must be ints, got {d!r} in {shape}")
        dims.append(int(d))
    check_dims(dims, "reshape")
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise ShapeError(f"reshape: invalid shape {tuple(dims)}; use non-negative sizes and "
                         "at most one -1")
    total = numel(src)
    if -1 in dims:
        known = numel(tuple(d for d in dims if d != -1))
        if known == 0 or total % known:
            raise ShapeError(f"reshape: cannot reshape {src} ({total} elements) to {tuple(dims)}")
        dims[dims.index(-1)] = total // known
    if numel(tuple(dims)) != total:
        raise ShapeError(f"reshape: cannot reshape {src} ({total} elements) to {tuple(dims)} "
                         f"({numel(tuple(dims))} elements)")
    return tuple(dims)


def _check_size(shape: tuple[int, ...], device: Any, what: str) -> None:
    nbytes = numel(shape) * 4
    if nbytes > device.max_buffer_size:
        raise LimitError(
            f"{what}: a tensor of shape {shape} needs {nbytes} bytes, more than this device's "
            f"largest buffer ({device.max_buffer_size} bytes); split the work into smaller "
            "tensors")


def _compute_dtype(op: str, rule: str, dtypes: list[DType], what: str) -> tuple[DType, DType]:
    """(compute dtype, output dtype) of an element-wise op, or a DTypeError."""
    common = dtypes[0]
    for d in dtypes[1:]:
        common = promote(common, d, what)
    if rule == "numeric":
        if common is DType.bool:
            raise DTypeError(f"{what} is not defined for bool tensors; cast with "
                             ".astype(asyncfusion.int32) or use & | ~ for logic")
        return common, common
    if rule == "float":
        if common is DType.bool:
            raise DTypeError(f"{what} is not defined for bool tensors; cast with "
                             ".astype(asyncfusion.float32) first")
        return DType.float32, DType.float32
    if rule == "compare":
        return common, DType.bool
    if common is not DType.bool:  # logical
        raise DTypeError(f"{what} needs bool tensors, got {common.label}; compare first "
                         "(for example x > 0) or use .astype(asyncfusion.bool_)")
    return DType.bool, DType.bool


def _resolve(op: str, args: tuple[Any, ...], dtype: DType | None) -> tuple[DType, DType]:
    """(compute dtype, output dtype) of an element-wise call, or the error that explains it.

    Runs once per (op, operand types); the result is cached by :func:`elementwise`.
    """
    spec = ELEMENTWISE[op]
    what = _SYMBOLS.get(op, op)
    if len(args) != spec.arity:
        raise TypeError(f"{what} takes {spec.arity} operand(s), got {len(args)}")
    tensors = [a for a in args if type(a) is Tensor]
    first = tensors[0]
    if spec.rule == "cast":
        assert dtype is not None
        return dtype, dtype
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


_RESOLVED: dict[tuple[Any, ...], tuple[DType, DType]] = {}
_SCALAR_IR = {d: ScalarIr(d) for d in DType}


def elementwise(op: str, *args: Any, dtype: DType | None = None) -> Tensor:
    """Record one element-wise op on tensors and Python scalars (numpy broadcasting).

    This is the hot path of every program: one pass over the operands, dtype rules
    cached per (op, operand types), and nothing else before the op is queued.
    """
    first: Tensor | None = None
    shape: tuple[int, ...] = ()
    kinds: list[Any] = [op, dtype]
    ids: list[int] = []
    for a in args:
        if type(a) is Tensor:
            if first is None:
                first, shape = a, a.shape
            elif a.device is not first.device:
                raise DeviceMismatchError(
                    f"{_SYMBOLS.get(op, op)}: operands live on two devices ({first.device!r} "
                    f"and {a.device!r}); read one and create it again on the other's device")
            elif a.shape != shape:
                shape = broadcast_shapes(shape, a.shape, _SYMBOLS.get(op, op))
            kinds.append(a.dtype)
            ids.append(a.id)
        elif isinstance(a, _SCALARS):
            kinds.append(type(a))
        else:
            raise TypeError(f"{_SYMBOLS.get(op, op)}: operands must be Tensors or Python "
                            f"scalars, not {type(a).__name__}; wrap arrays with "
                            "asyncfusion.tensor()")
    if first is None:
        raise TypeError(f"{_SYMBOLS.get(op, op)}: at least one operand must be an asyncfusion "
                        "Tensor")
    key = tuple(kinds)
    resolved = _RESOLVED.get(key)
    if resolved is None:
        resolved = _RESOLVED[key] = _resolve(op, args, dtype)
    compute, out_dtype = resolved
    device = first.device
    if len(ids) == len(args):
        irs = tuple(a.ir() for a in args)
        scalars: tuple[Any, ...] = ()
    else:
        irs, scalars = _with_scalars(op, args, compute)
    if shape is not first.shape and shape != first.shape:
        _check_size(shape, device, _SYMBOLS.get(op, op))
    out = Tensor(shape, out_dtype, device)
    out_ir = TensorIr(out.id, shape, out_dtype, _NOT_INIT)
    device.register(ElementwiseOp(op, irs, scalars, out_ir, compute), ids, out_ir)
    return out


def _with_scalars(op: str, args: tuple[Any, ...], compute: DType
                  ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    irs: list[Any] = []
    scalars: list[Any] = []
    for a in args:
        if type(a) is Tensor:
            irs.append(a.ir())
            continue
        value = a.item() if isinstance(a, np.generic) else a
        if compute.is_int and not isinstance(value, bool):
            _scalar_dtype(value, compute, _SYMBOLS.get(op, op))  # range check
        elif type(value) is int and compute is DType.float32:
            _float_scalar(value, _SYMBOLS.get(op, op))
        irs.append(_SCALAR_IR[compute])
        scalars.append(value)
    return tuple(irs), tuple(scalars)


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
    """Concatenate tensors of one device and dtype along ``axis``."""
    tensors = list(tensors)
    if not tensors or any(type(t) is not Tensor for t in tensors):
        raise TypeError("cat: give a non-empty list of asyncfusion Tensors")
    first = tensors[0]
    for t in tensors[1:]:
        if t.device is not first.device:
            raise DeviceMismatchError(
                f"cat: tensors t{first.id} and t{t.id} live on two devices ({first.device!r} "
                f"and {t.device!r}); read one and create it again on the other's device")
        if t.dtype is not first.dtype:
            raise DTypeError(f"cat: dtypes differ ({first.dtype.label} and {t.dtype.label}); "
                             "cast with .astype(...) first")
        if t.ndim != first.ndim:
            raise ShapeError(f"cat: ranks differ (shapes {first.shape} and {t.shape})")
    ax = normalize_axis(axis, first.ndim, "cat")
    for t in tensors[1:]:
        if any(a != b for d, (a, b) in enumerate(zip(first.shape, t.shape)) if d != ax):
            raise ShapeError(f"cat: shapes {first.shape} and {t.shape} differ outside axis {ax}")
    shape = list(first.shape)
    shape[ax] = sum(t.shape[ax] for t in tensors)
    _check_size(tuple(shape), first.device, "cat")
    out = Tensor(tuple(shape), first.dtype, first.device)
    out_ir = out.out_ir()
    first.device.register(CatOp(tuple(t.ir() for t in tensors), ax, out_ir),
                          tuple(t.id for t in tensors), out_ir)
    return out
