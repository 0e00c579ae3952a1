"""Operation records: plain immutable data, apart from any execution.

A :class:`TensorIr` describes one tensor as an op sees it (id, shape, dtype, status and
layout). The status of an input is ``ReadWrite`` when that op is the tensor's last use
(the Python handle is gone), which is what lets fusion skip writing dead intermediates
and reuse buffers in place. ``layout`` is ``None`` for dense tensors (every kernel output)
and the strided :class:`Layout` of a view otherwise.

``signature()`` renders an op *relative* to the segment it sits in: tensor ids are
renumbered by first appearance and dimensions by equality class (a size of 1 stays
literal, since broadcasting depends on it); scalar values, strides and offsets are left
out (only whether a tensor is dense counts). Two runs of the same program therefore
produce equal signatures and share one cached execution plan.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, cast, ClassVar

import numpy as np

from .._core.dtype import DType
from .layout import Layout

__all__ = ["TensorStatus", "TensorIr", "ScalarIr", "OperationIr", "InitOp", "IotaOp",
           "ElementwiseOp", "ReduceOp", "MatmulOp", "GatherOp", "ViewOp", "CatOp", "ExternOp",
           "DropOp", "Renumber", "Signature", "numel"]


class TensorStatus(enum.Enum):
    """How an op may treat a tensor: produce it, read it, or read it for the last time."""

    NOT_INIT = "NotInit"
    READ_ONLY = "ReadOnly"
    READ_WRITE = "ReadWrite"

    __hash__ = object.__hash__  # members are singletons; Enum's own hash runs Python code


def _title(op: str) -> str:
    """An op's name as it titles records: ``floor_divide`` -> ``FloorDivide``."""
    return "".join(w.capitalize() for w in op.split("_"))


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# The records made for every registered op (TensorIr, ElementwiseOp) are immutable values
# like the rest, hashed into plan signatures: nothing assigns to their fields after
# construction (``dataclasses.replace`` makes changed copies). They are not frozen=True
# because a frozen dataclass's __init__ sets each field through object.__setattr__, which
# made them cost 0.5 µs more each on the registration hot path.
@dataclass(slots=True, unsafe_hash=True)
class TensorIr:
    id: int
    shape: tuple[int, ...]
    dtype: DType
    status: TensorStatus
    layout: Layout | None = None  # None: dense (C order from offset 0)

    def __str__(self) -> str:
        return f"t{self.id}:{self.status.value}"

    @property
    def view(self) -> Layout:
        """The layout, dense ones included."""
        return self.layout if self.layout is not None else Layout.dense(self.shape)


@dataclass(frozen=True, slots=True)
class ScalarIr:
    """A Python scalar operand; its value lives in the op's ``scalars`` tuple, in order."""

    dtype: DType


Signature = tuple[Hashable, ...]
"""An op's part of a segment's relative signature: hashable values only."""
_ShapeClass = tuple[tuple[int, ...], bool]  # renumbered dimensions, whether numel % 4 == 0
_TensorSig = tuple[int, TensorStatus, DType, _ShapeClass, bool]


class Renumber:
    """Renumbers tensor ids and dimensions of one segment, collecting the real ids in order."""

    __slots__ = ("rel", "dims", "ids", "shapes")

    def __init__(self) -> None:
        self.rel: dict[int, int] = {}
        self.dims: dict[int, int] = {1: -1}
        self.ids: list[int] = []
        self.shapes: dict[tuple[int, ...], _ShapeClass] = {}

    def tensor(self, t: TensorIr) -> _TensorSig:
        tid = t.id
        r = self.rel.get(tid)
        if r is None:
            ids = self.ids
            r = self.rel[tid] = len(ids)
            ids.append(tid)
        key = t.shape
        shape = self.shapes.get(key)
        if shape is None:
            dims = self.dims
            shape = self.shapes[key] = (
                tuple([dims.setdefault(d, len(dims)) for d in key]), numel(key) % 4 == 0)
        return (r, t.status, t.dtype, shape, t.layout is None)


class OperationIr:
    """Base of all op records. Subclasses are immutable slotted dataclasses (frozen, but
    for the two made on the registration hot path: see TensorIr)."""

    __slots__ = ()
    fusible: ClassVar[bool] = False

    def inputs(self) -> tuple[TensorIr, ...]:
        raise NotImplementedError

    def outputs(self) -> tuple[TensorIr, ...]:
        raise NotImplementedError

    def title(self) -> str:
        return type(self).__name__.removesuffix("Op")

    def signature(self, rn: Renumber) -> Signature:
        return (self.title(),) + tuple(rn.tensor(t) for t in self.inputs()) + tuple(
            rn.tensor(t) for t in self.outputs())

    def with_last_use(self, tid: int) -> OperationIr:
        """This op with every read of ``tid`` marked ReadWrite (its last use)."""
        raise NotImplementedError

    def describe(self) -> str:
        ins = ", ".join(str(t) for t in self.inputs())
        outs = ", ".join(str(t) for t in self.outputs())
        return f"{self.title()} in=[{ins}] out=[{outs}]"


def _rw(t: TensorIr, tid: int) -> TensorIr:
    if type(t) is TensorIr and t.id == tid:  # not dataclasses.replace: 10x dearer
        return TensorIr(tid, t.shape, t.dtype, TensorStatus.READ_WRITE, t.layout)
    return t


@dataclass(frozen=True, slots=True)
class InitOp(OperationIr):
    """Upload host data into a new tensor."""

    out: TensorIr
    data: np.ndarray = field(compare=False, repr=False)

    def inputs(self) -> tuple[TensorIr, ...]:
        return ()

    def outputs(self) -> tuple[TensorIr, ...]:
        return (self.out,)


@dataclass(frozen=True, slots=True)
class IotaOp(OperationIr):
    """``out[i] = start + i * step`` (an arange), computed where it is read: a fused
    kernel loads it as an index expression (no buffer, no upload), and a kernel of its
    own writes it out when it must exist in memory. ``start`` and ``step`` are values of
    ``out``'s dtype (an integer step wraps, as the kernel's arithmetic does) and travel
    as launch scalars, so aranges of every range share one plan."""

    start: float | int
    step: float | int
    out: TensorIr
    fusible: ClassVar[bool] = True

    def inputs(self) -> tuple[TensorIr, ...]:
        return ()

    def outputs(self) -> tuple[TensorIr, ...]:
        return (self.out,)

    @property
    def scalars(self) -> tuple[float | int, float | int]:
        return (self.start, self.step)

    def with_last_use(self, tid: int) -> IotaOp:
        return self


@dataclass(slots=True, unsafe_hash=True)  # not frozen: see TensorIr
class ElementwiseOp(OperationIr):
    """One element-wise primitive; ``args`` mixes tensors and scalar placeholders.

    ``compute`` is the dtype the op computes in (inputs are cast to it); the output
    dtype may differ (comparisons give bool).
    """

    op: str
    args: tuple[TensorIr | ScalarIr, ...]
    scalars: tuple[float | int | bool, ...]
    out: TensorIr
    compute: DType
    fusible: ClassVar[bool] = True
    # the tensor args, found once (the executor asks for them several times a round)
    _inputs: tuple[TensorIr, ...] | None = field(default=None, init=False, repr=False,
                                                 compare=False, hash=False)

    def inputs(self) -> tuple[TensorIr, ...]:
        if not self.scalars:  # no scalar placeholders: the args are the tensors
            return cast("tuple[TensorIr, ...]", self.args)
        ins = self._inputs
        if ins is None:
            ins = self._inputs = tuple([a for a in self.args if type(a) is TensorIr])
        return ins

    def outputs(self) -> tuple[TensorIr, ...]:
        return (self.out,)

    def title(self) -> str:
        t = _title(self.op)
        if self.scalars:
            t += "Scalar"
        return f"{t}({self.compute.short})"

    def signature(self, rn: Renumber) -> Signature:
        # a scalar stands as its dtype (a DType hashes in C, a ScalarIr in Python)
        tensor = rn.tensor
        args = tuple([tensor(a) if type(a) is TensorIr else a.dtype for a in self.args])
        return (self.op, self.compute, args, tensor(self.out))

    def with_last_use(self, tid: int) -> ElementwiseOp:
        rw = TensorStatus.READ_WRITE  # _rw inlined: this runs for most drops
        args = tuple([TensorIr(tid, a.shape, a.dtype, rw, a.layout)
                      if type(a) is TensorIr and a.id == tid else a for a in self.args])
        return ElementwiseOp(self.op, args, self.scalars, self.out, self.compute)


@dataclass(frozen=True, slots=True)
class ReduceOp(OperationIr):
    """Reduce ``input`` over ``axes`` (sorted, at least one) with a registered reduction."""

    op: str
    input: TensorIr
    axes: tuple[int, ...]
    keepdims: bool
    out: TensorIr
    fusible: ClassVar[bool] = True

    def inputs(self) -> tuple[TensorIr, ...]:
        return (self.input,)

    def outputs(self) -> tuple[TensorIr, ...]:
        return (self.out,)

    def title(self) -> str:
        return _title(self.op) + ("Dim" if len(self.axes) < len(self.input.shape) else "")

    def signature(self, rn: Renumber) -> Signature:
        return ("reduce", self.op, self.axes, self.keepdims, rn.tensor(self.input),
                rn.tensor(self.out))

    def with_last_use(self, tid: int) -> ReduceOp:
        return ReduceOp(self.op, _rw(self.input, tid), self.axes, self.keepdims, self.out)


@dataclass(frozen=True, slots=True)
class MatmulOp(OperationIr):
    """``out = a @ b`` for operands of rank >= 2 (batch dimensions broadcast as numpy's).

    Its kernel iterates ``space``: the output's shape plus the inner dimension K, which it
    folds (a sum of products, scheduled as a tiled matmul)."""

    a: TensorIr
    b: TensorIr
    out: TensorIr
    fusible: ClassVar[bool] = True

    def inputs(self) -> tuple[TensorIr, ...]:
        return (self.a, self.b)

    def outputs(self) -> tuple[TensorIr, ...]:
        return (self.out,)

    @property
    def space(self) -> tuple[int, ...]:
        return self.out.shape + (self.a.shape[-1],)

    def with_last_use(self, tid: int) -> MatmulOp:
        return MatmulOp(_rw(self.a, tid), _rw(self.b, tid), self.out)


@dataclass(frozen=True, slots=True)
class GatherOp(OperationIr):
    """``out[c] = input[c with c[axis] := index[c]]`` (numpy's ``take_along_axis``):
    ``index`` is an int32 tensor broadcastable to ``out``; negative entries count from
    the end and out-of-range ones are clamped (a kernel cannot raise)."""

    input: TensorIr
    index: TensorIr
    axis: int
    out: TensorIr
    fusible: ClassVar[bool] = True

    def inputs(self) -> tuple[TensorIr, ...]:
        return (self.input, self.index)

    def outputs(self) -> tuple[TensorIr, ...]:
        return (self.out,)

    @property
    def scalars(self) -> tuple[int, ...]:
        """The size of the gathered axis: the kernel wraps and clamps indices with it."""
        return (self.input.shape[self.axis],)

    def signature(self, rn: Renumber) -> Signature:
        return ("gather", self.axis, rn.tensor(self.input), rn.tensor(self.index),
                rn.tensor(self.out))

    def with_last_use(self, tid: int) -> GatherOp:
        return GatherOp(_rw(self.input, tid), _rw(self.index, tid), self.axis, self.out)


@dataclass(frozen=True, slots=True)
class ViewOp(OperationIr):
    """``out`` is a view of ``input``'s storage: ``out.layout`` says where its elements
    are. Costs no launch; kernels read the view through their index maps."""

    kind: str  # what made it (reshape, permute, index, ...), for the trace
    input: TensorIr
    out: TensorIr

    def inputs(self) -> tuple[TensorIr, ...]:
        return (self.input,)

    def outputs(self) -> tuple[TensorIr, ...]:
        return (self.out,)

    def title(self) -> str:
        return f"View[{self.kind}]"

    def signature(self, rn: Renumber) -> Signature:
        return ("view", rn.tensor(self.input), rn.tensor(self.out))

    def with_last_use(self, tid: int) -> ViewOp:
        return ViewOp(self.kind, _rw(self.input, tid), self.out)


@dataclass(frozen=True, slots=True)
class CatOp(OperationIr):
    """Concatenate ``tensors`` along ``axis``."""

    tensors: tuple[TensorIr, ...]
    axis: int
    out: TensorIr

    def inputs(self) -> tuple[TensorIr, ...]:
        return self.tensors

    def outputs(self) -> tuple[TensorIr, ...]:
        return (self.out,)

    def signature(self, rn: Renumber) -> Signature:
        return ("cat", self.axis) + tuple(rn.tensor(t) for t in self.tensors) + (
            rn.tensor(self.out),)

    def with_last_use(self, tid: int) -> CatOp:
        return dataclasses.replace(self, tensors=tuple(_rw(t, tid) for t in self.tensors))


@dataclass(frozen=True, slots=True)
class ExternOp(OperationIr):
    """Work that asyncfusion runs but does not compile: a user's WGSL kernel, or a buffer
    adopted from outside (:mod:`asyncfusion.extend.custom_kernel`, :mod:`asyncfusion.extend.adopt`).

    ``work`` carries it out (``work.run(backend, loads, op)`` returns the outputs'
    storages); ``work.key`` stands for it in plan signatures, and ``args`` holds what
    differs between calls of the same work (its parameters, an adopted buffer)."""

    work: Any
    ins: tuple[TensorIr, ...]
    outs: tuple[TensorIr, ...]
    args: tuple[Any, ...] = field(compare=False)

    def inputs(self) -> tuple[TensorIr, ...]:
        return self.ins

    def outputs(self) -> tuple[TensorIr, ...]:
        return self.outs

    def title(self) -> str:
        return str(self.work.title)

    def signature(self, rn: Renumber) -> Signature:
        return ("extern", self.work.key) + tuple(rn.tensor(t) for t in self.ins) + tuple(
            rn.tensor(t) for t in self.outs)

    def with_last_use(self, tid: int) -> ExternOp:
        return dataclasses.replace(self, ins=tuple(_rw(t, tid) for t in self.ins))


@dataclass(frozen=True, slots=True)
class DropOp(OperationIr):
    """The Python handle of ``tensor`` is gone: its storage may be freed, or never written.

    ``tensor`` is the record its producer made; a drop is always the tensor's last use.
    """

    tensor: TensorIr

    def inputs(self) -> tuple[TensorIr, ...]:
        return (self.tensor,)

    def describe(self) -> str:
        return f"Drop in=[t{self.tensor.id}:{TensorStatus.READ_WRITE.value}] out=[]"

    def signature(self, rn: Renumber) -> Signature:
        return ("Drop", rn.tensor(self.tensor)[0])

    def outputs(self) -> tuple[TensorIr, ...]:
        return ()

    def with_last_use(self, tid: int) -> DropOp:
        return self
