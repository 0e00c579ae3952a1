"""Recording one element-wise op.

:func:`elementwise` checks the operands (tensors of one device, or scalars), broadcasts
their shapes, applies the registry entry's dtype rule (cached per op and operand types)
and registers one :class:`~asyncfusion.ir.ElementwiseOp`. The public functions, the
Tensor operators and their reflected forms call :func:`unary` and :func:`binary` with
the operands in the order the user wrote them, so a scalar on either side follows one
rule: those take a short path for the common calls once one such call went through
:func:`elementwise` (the same record, built without its checks), and hand every other
call to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from .._core.dtype import NEEDS, DType, check_promoted, int_range, promote
from .._core.errors import DataError, DTypeError, device_mismatch
from .._core.shapes import broadcast_shapes, check_size
from ..ir import ElementwiseOp, ScalarIr, TensorIr, TensorStatus
from ..ops import PRIMITIVES
from .tensor import Operand, Scalar, Tensor, new_id

if TYPE_CHECKING:
    from ..runtime.device import Device

__all__ = ["elementwise", "unary", "binary", "scalar_dtype", "float_scalar", "what",
           "ComplexOperands"]

_SCALARS = (int, float, bool, np.integer, np.floating, np.bool_)
Value = int | float | bool
"""A scalar as an op records it: a Python number."""
_NOT_INIT = TensorStatus.NOT_INIT


class ComplexOperands(DTypeError):
    """An element-wise call met a complex operand: the public function it came through
    records it as real ops on the parts (:mod:`asyncfusion.api.complex_math`)."""


def what(op: str) -> str:
    """How errors name the registry's op ``op``: ``add (+)``."""
    p = PRIMITIVES.get(op)
    return p.what if p is not None else op


def scalar_dtype(value: Scalar, other: DType, what: str) -> DType:
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


def _compute_dtype(op: str, rule: str, dtypes: list[DType], what: str) -> tuple[DType, DType]:
    """(compute dtype, output dtype) of an element-wise op, or a DTypeError. float16 is
    computed in float32 and rounded to float16 per op, as numpy does; the 8- and
    16-bit integers in their 32-bit lane, wrapped to their width per op."""
    common = dtypes[0]
    for d in dtypes[1:]:
        common = promote(common, d, what)
    if common is DType.float16 and rule in ("numeric", "float", "compare", "predicate"):
        return DType.float32, (DType.bool if rule in ("compare", "predicate") else common)
    if common.lane is not common and rule != "logical":
        compute, out = _compute_dtype(op, rule, [common.lane], what)
        return compute, (common if out is common.lane else out)
    if common.itemsize == 8 and not PRIMITIVES[op].wide and not (
            common.is_int and rule == "float"):
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


def _resolve(op: str, args: tuple[Operand, ...], dtype: DType | None
             ) -> tuple[DType, DType, tuple[int, ...]]:
    """(compute dtype, output dtype, positions of plain scalars) of an element-wise call,
    or the error that explains it.

    Runs once per (op, operand types); the result is cached by :func:`elementwise`.
    """
    compute, out = _dtypes(op, args, dtype)
    return compute, out, _plain_scalars(args, compute)


def _dtypes(op: str, args: tuple[Operand, ...], dtype: DType | None) -> tuple[DType, DType]:
    """(compute dtype, output dtype) of an element-wise call (see :func:`_resolve`)."""
    spec = PRIMITIVES[op]
    name = what(op)
    if len(args) != spec.arity:
        raise TypeError(f"{name} takes {spec.arity} operand(s), got {len(args)}")
    tensors = [a for a in args if type(a) is Tensor]
    first = tensors[0]
    if spec.rule == "cast":
        assert dtype is not None
        if first.dtype.is_float and dtype.is_unsigned and dtype.lane is not dtype:
            return DType.int32, dtype  # as numpy: through int32, so -1.0 gives 255 in uint8
        return dtype.lane, dtype
    if spec.rule == "where":
        cond = args[0]
        if type(cond) is not Tensor or cond.dtype is not DType.bool:
            raise DTypeError("where: the condition must be a bool tensor (for example x > 0)")
        ref = next((a.dtype for a in args[1:] if isinstance(a, Tensor)), None)
        if ref is None:
            raise TypeError("where: give at least one tensor among the two value operands")
        dts = [a.dtype if isinstance(a, Tensor) else scalar_dtype(a, ref, name)
               for a in args[1:]]
        return _compute_dtype(op, "numeric" if ref is not DType.bool else "logical", dts, name)
    dts = [a.dtype for a in tensors]
    dts += [scalar_dtype(a, first.dtype, name) for a in args if not isinstance(a, Tensor)]
    return _compute_dtype(op, spec.rule, dts, name)


_RESOLVED: dict[tuple[object, ...], tuple[DType, DType, tuple[int, ...]]] = {}
_SCALAR_IR = {d: ScalarIr(d) for d in DType}
_PENDING = ScalarIr(DType.float32)  # a scalar's slot before the call's dtypes are known
_new_tensor = object.__new__


def elementwise(op: str, *args: Operand, dtype: DType | None = None) -> Tensor:
    """Record one element-wise op on tensors and Python scalars (numpy broadcasting).

    The whole way: one pass over the operands, dtype rules cached per (op, operand
    types), and nothing else before the op is queued.
    """
    first: Tensor | None = None
    shape: tuple[int, ...] = ()
    kinds: list[object] = [op, dtype]
    ids: list[int] = []
    irs: list[TensorIr | ScalarIr] = []  # a scalar's slot: a placeholder until resolved
    for a in args:
        if type(a) is Tensor:
            if first is None:
                first, shape = a, a.shape
            elif a.device is not first.device:
                raise device_mismatch(f"{what(op)}: the operand t{a.id}", first.device,
                                      a.device)
            elif a.shape != shape:
                shape = broadcast_shapes(shape, a.shape, what(op))
            kinds.append(a.dtype)
            ids.append(a.id)
            r = a._ir
            irs.append(r if r is not None else a.ir())
        elif isinstance(a, _SCALARS):
            kinds.append(type(a))
            irs.append(_PENDING)
        elif isinstance(a, (complex, np.complexfloating)) or (
                isinstance(a, Tensor) and a.dtype.is_complex):
            raise ComplexOperands(f"{what(op)} got a complex operand, which this function "
                                  "does not take; apply it to af.real(z), af.imag(z) or "
                                  "af.abs(z)")
        else:
            raise TypeError(f"{what(op)}: operands must be Tensors or Python "
                            f"scalars, not {type(a).__name__}; wrap arrays with "
                            "asyncfusion.tensor()")
    if first is None:
        raise _no_tensor(op, args)
    if op == "pow" and len(args) == 2 and args[0] is first and type(args[1]) in (int, float):
        if type(args[1]) is int and args[1] < 0 and first.dtype.is_int:
            raise DataError(f"{what(op)}: Integers to negative integer powers are not "
                            f"allowed ({first.dtype.label} tensor ** {args[1]}; numpy refuses "
                            "it too); cast to float first: "
                            f"t.astype(asyncfusion.float32) ** {args[1]}")
        if _squares(first, cast(int | float, args[1])):
            return elementwise("square", first)
    key = tuple(kinds)
    resolved = _RESOLVED.get(key)
    if resolved is None:
        resolved = _RESOLVED[key] = _resolve(op, args, dtype)
    compute, out_dtype, plain = resolved
    device = first.device
    if out_dtype is DType.int64:  # int32 with uint32: held where the adapter has int64
        check_promoted(out_dtype, device, what(op))
    scalars: tuple[Value, ...] = ()
    if len(ids) < len(args):
        if plain:  # Python bools and floats go in as they are
            sir = _SCALAR_IR[compute]
            if len(plain) == 1:
                p = plain[0]
                scalars = cast(tuple[Value], (args[p],))
                irs[p] = sir
            else:
                scalars = cast(tuple[Value, ...], tuple([args[p] for p in plain]))
                for p in plain:
                    irs[p] = sir
        else:
            irs, scalars = _with_scalars(op, args, compute)
    if shape is not first.shape and shape != first.shape:
        check_size(shape, device, what(op), out_dtype)
    out = _new_tensor(Tensor)  # an op's result: Tensor.__init__'s checks hold already
    out.id = tid = new_id()
    out.shape, out.dtype, out.device, out.layout, out._ir = shape, out_dtype, device, None, None
    out_ir = TensorIr(tid, shape, out_dtype, _NOT_INIT)
    device.register(ElementwiseOp(op, tuple(irs), scalars, out_ir, compute), ids, out_ir)
    return out


def _squares(x: Tensor, exponent: int | float) -> bool:
    """Whether ``x ** exponent`` is recorded as ``square(x)``: exactly x * x, and far
    cheaper than pow."""
    return exponent == 2 and (type(exponent) is int or x.dtype.is_float) \
        and x.dtype is not DType.bool


# The calls a shorter path records exactly as elementwise() would: (op, each operand's
# dtype (a tensor) or type (a Python bool or float)) -> (compute dtype, output dtype, the
# scalar's slot or None), learned from a call that went the whole way; None for a call
# that always goes the whole way. Only calls whose checks depend on operand types alone
# are learned (no int64 result, which the device decides; no pow, which rewrites some
# exponents).
_SHORT: dict[tuple[object, ...], tuple[DType, DType, ScalarIr | None] | None] = {}


def _learn(key: tuple[object, ...], spot: int | None) -> None:
    """Note whether the call of ``key`` (its Python scalar at position ``spot``, if any),
    just recorded the whole way, may take the short path from now on (:data:`_SHORT`)."""
    op = key[0]
    short = None
    if op != "pow":
        compute, out, plain = _RESOLVED[(op, None, *key[1:])]
        if out is not DType.int64 and plain == (() if spot is None else (spot,)):
            short = (compute, out, None if spot is None else _SCALAR_IR[compute])
    _SHORT[key] = short


def _result(shape: tuple[int, ...], device: Device, dtype: DType) -> tuple[Tensor, TensorIr]:
    """A new tensor of ``shape`` on ``device``, and its record as an output."""
    out = _new_tensor(Tensor)
    out.id = tid = new_id()
    out.shape, out.dtype, out.device, out.layout, out._ir = shape, dtype, device, None, None
    return out, TensorIr(tid, shape, dtype, _NOT_INIT)


# Broadcast shapes of tensor pairs the short path met: (shape, shape) -> their shape.
_BROADCAST: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}
_BROADCAST_KEPT = 4096


def _broadcast(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """:func:`broadcast_shapes` of ``a`` and ``b`` (its error on a mismatch), remembered."""
    shape = _BROADCAST.get((a, b))
    if shape is None:
        shape = broadcast_shapes(a, b, what(op))
        if len(_BROADCAST) >= _BROADCAST_KEPT:
            _BROADCAST.clear()
        _BROADCAST[a, b] = shape
    return shape


def unary(op: str, x: Operand) -> Tensor:
    """``elementwise(op, x)``, recorded by a shorter path where ``x`` is a tensor whose
    call was learned (:data:`_SHORT`)."""
    if type(x) is not Tensor:
        return elementwise(op, x)
    key = (op, x.dtype)
    hit = _SHORT.get(key)
    if hit is None:
        out = elementwise(op, x)
        if key not in _SHORT:
            _learn(key, None)
        return out
    compute, dtype, _ = hit
    out, out_ir = _result(x.shape, x.device, dtype)
    r = x._ir
    x.device.register(ElementwiseOp(op, (r if r is not None else x.ir(),), (), out_ir,
                                    compute), (x.id,), out_ir)
    return out


def binary(op: str, x1: Operand, x2: Operand) -> Tensor:
    """``elementwise(op, x1, x2)``, recorded by a shorter path for two tensors on one
    device (their shapes broadcast), or a tensor and a Python bool or float on either
    side, once the call was learned (:data:`_SHORT`). Anything else takes the whole way."""
    t1, t2 = type(x1), type(x2)
    if t1 is Tensor and t2 is Tensor:
        a, b = cast(Tensor, x1), cast(Tensor, x2)
        if b.device is not a.device:
            return elementwise(op, x1, x2)
        key: tuple[object, ...] = (op, a.dtype, b.dtype)
        spot = None
    elif op == "pow" and t1 is Tensor and (t2 is int or t2 is float) \
            and _squares(cast(Tensor, x1), cast(int | float, x2)):
        return unary("square", x1)
    elif t1 is Tensor and (t2 is float or t2 is bool):
        a = b = cast(Tensor, x1)
        key, spot = (op, a.dtype, t2), 1
    elif t2 is Tensor and (t1 is float or t1 is bool):
        a = b = cast(Tensor, x2)
        key, spot = (op, t1, a.dtype), 0
    else:
        return elementwise(op, x1, x2)
    hit = _SHORT.get(key)
    if hit is None:
        out = elementwise(op, x1, x2)
        if key not in _SHORT:
            _learn(key, spot)
        return out
    compute, dtype, sir = hit
    shape = a.shape
    if b.shape != shape:
        shape = _broadcast(op, shape, b.shape)
        if shape != a.shape:
            check_size(shape, a.device, what(op), dtype)
    out, out_ir = _result(shape, a.device, dtype)
    ra, rb = a._ir, b._ir
    ra = ra if ra is not None else a.ir()
    if spot is None:
        args: tuple[TensorIr | ScalarIr, ...] = (ra, rb if rb is not None else b.ir())
        scalars: tuple[Value, ...] = ()
        ids: tuple[int, ...] = (a.id, b.id)
    else:
        assert sir is not None
        args = (ra, sir) if spot else (sir, ra)
        scalars, ids = (cast(Value, x2 if spot else x1),), (a.id,)
    a.device.register(ElementwiseOp(op, args, scalars, out_ir, compute), ids, out_ir)
    return out


def _plain_scalars(args: tuple[Operand, ...], compute: DType) -> tuple[int, ...]:
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


def _with_scalars(op: str, args: tuple[Operand, ...], compute: DType
                  ) -> tuple[list[TensorIr | ScalarIr], tuple[Value, ...]]:
    irs: list[TensorIr | ScalarIr] = []
    scalars: list[Value] = []
    for a in args:
        if isinstance(a, Tensor):
            irs.append(a.ir())
            continue
        value: Value = a.item() if isinstance(a, np.generic) else a
        if type(value) is float and compute is DType.float32:
            pass  # the common case: nothing to check
        elif compute.is_int and not isinstance(value, bool):
            scalar_dtype(value, _narrowest(args, compute), what(op))  # range check
        elif type(value) is int and compute is DType.float32:
            float_scalar(value, what(op))
        if compute is DType.float32 and _has_half(args):
            value = _to_half(value)  # the scalar takes the float16 operand's dtype first
        irs.append(_SCALAR_IR[compute])
        scalars.append(value)
    return irs, tuple(scalars)


def _narrowest(args: tuple[Operand, ...], compute: DType) -> DType:
    """The dtype a scalar must fit beside tensors computed in ``compute``: the narrow
    integer (int8, int16 ... computed in their 32-bit lane) the integer tensors are,
    else ``compute``."""
    held = {a.dtype for a in args if type(a) is Tensor and a.dtype.lane is compute}
    return held.pop() if len(held) == 1 else compute


def _has_half(args: tuple[Operand, ...]) -> bool:
    return any(type(a) is Tensor and a.dtype is DType.float16 for a in args)


def _to_half(value: Value) -> Value:
    """A Python number rounded to float16 (beyond its range: infinity, as numpy)."""
    if isinstance(value, bool):
        return value
    with np.errstate(over="ignore"):
        return float(np.float16(value))


def float_scalar(value: int, what: str) -> None:
    """A Python int beside a float tensor must convert to a float, as numpy requires."""
    try:
        float(value)
    except OverflowError:
        raise OverflowError(f"{what}: the int {str(value)[:20]}... ({value.bit_length()} bits) "
                            "is too large to convert to float; pass a float (for example "
                            "float('inf')) or a smaller number") from None


def _no_tensor(op: str, args: tuple[Operand, ...]) -> TypeError:
    """The error of a call without a tensor: it names what was given and what to pass."""
    got = " and ".join(type(a).__name__ for a in args)
    if len(args) == 1:
        return TypeError(f"{what(op)}: needs an asyncfusion Tensor, not {got}; make one "
                         "with asyncfusion.tensor(value) (on the default device), or "
                         "compute a Python number with the math module")
    return TypeError(f"{what(op)}: at least one operand must be an asyncfusion Tensor, "
                     f"got {got}; make one with asyncfusion.tensor(value)")
