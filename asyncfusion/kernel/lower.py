"""Lowering a block of op records to one :class:`Kernel` plus where its data comes from.

Fusers decide which ops share a kernel and at which level each runs; :func:`lower` turns
that decision into the kernel and a :class:`Lowered` record: the tensor ids behind each
load and store, how each non-dense load lines up with the index space (``align``), which
tensors die with the kernel, and where each scalar comes from. Everything here depends
only on the block's relative signature, so a plan stores it once and replays it.

An arange (:class:`IotaOp`) in the block, and the views of it the fuser took along, are
read as iota loads: computed from the index, never bound. An arange that outlives the
block is stored (its own kernel writes it; a fuser keeps only those of the index space's
shape).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .._core.dtype import DType
from ..ir import (DropOp, ElementwiseOp, GatherOp, IotaOp, MatmulOp, OperationIr, ReduceOp,
                  ScalarIr, TensorIr, TensorStatus, ViewOp)
from ..ops import REDUCTIONS
from .ir import Arg, Instr, Kernel, Level, Load, Reduce, Store

__all__ = ["Lowered", "lower", "align_to", "matmul_align", "copy_kernel"]

Align = tuple[int, ...]  # per index-space dimension: the tensor's dimension, or -1


@dataclass(frozen=True, slots=True)
class Lowered:
    kernel: Kernel
    inputs: tuple[int, ...]  # tensor id per bound load (iota loads, last, have none)
    outputs: tuple[int, ...]  # tensor id per store
    load_align: tuple[Align | None, ...]  # None for dense loads
    load_refs: tuple[tuple[int, int], ...]  # (op position, input index) of each load
    store_align: tuple[Align | None, ...]  # None for dense stores
    frees: tuple[int, ...]
    scalar_refs: tuple[tuple[int, int], ...]  # (op position in the block, scalar index)
    shape_from: tuple[int, bool]  # (op position, True: its input (a matmul: its space),
    #                               False: its output)


def align_to(shape: tuple[int, ...], space: tuple[int, ...]) -> Align:
    """Right-aligned numpy broadcasting of ``shape`` onto ``space``."""
    pad = len(space) - len(shape)
    return tuple(-1 if d < pad or shape[d - pad] == 1 else d - pad for d in range(len(space)))


def _out_align(shape: tuple[int, ...], out_shape: tuple[int, ...],
               reduced: tuple[bool, ...]) -> Align:
    """Align a tensor read by an OUT-level op (whose result has ``out_shape``: the
    reduction's output, kept dims or not) onto the full index space."""
    inner = align_to(shape, out_shape)
    if len(out_shape) == len(reduced):
        return tuple(-1 if r else a for a, r in zip(inner, reduced, strict=True))
    kept = iter(inner)
    return tuple(-1 if r else next(kept) for r in reduced)


def matmul_align(op: MatmulOp) -> tuple[Align, Align]:
    """How ``a`` (..., M, K) and ``b`` (..., K, N) line up with the index space
    (batch..., M, N, K): batch dimensions broadcast, the matrix ones are named."""
    space = op.space
    nb = len(space) - 3
    a, b = op.a.shape, op.b.shape
    return (align_to(a[:-2], space[:nb]) + (len(a) - 2, -1, len(a) - 1),
            align_to(b[:-2], space[:nb]) + (-1, len(b) - 1, len(b) - 2))


_KERNELS: dict[Kernel, Kernel] = {}
_MAX_KERNELS = 4096


def _interned(kernel: Kernel) -> Kernel:
    """The one object of each distinct kernel: the blocks of a plan that lower alike
    share it, so the launch caches keyed by kernel find it by identity, never by a deep
    comparison."""
    if len(_KERNELS) >= _MAX_KERNELS:
        _KERNELS.clear()
    return _KERNELS.setdefault(kernel, kernel)


def lower(block: list[OperationIr], levels: list[Level], space: tuple[int, ...],
          reduced: tuple[bool, ...] = (), *, inplace: bool = True) -> Lowered:
    """One kernel for ``block`` (element-wise ops, a chain of reductions over the same
    axes, drops), each op at the level the fuser chose and in the phase its place in the
    chain gives. An op's output is stored unless it dies inside the block (read for the
    last time there, or dropped). A tensor is loaded once per kind of read (per element,
    per output row), whatever the phase that reads it."""
    rank = len(space)
    values: dict[int, tuple[Arg, Level, DType]] = {}
    # a tensor read twice with different alignments (``a @ a``) takes two loads
    load_slot: dict[tuple[int, bool, tuple[int, int, int] | None, Align | None], int] = {}
    loads: list[Load] = []
    load_ids: list[int] = []
    load_align: list[Align | None] = []
    load_refs: list[tuple[int, int]] = []
    body: list[Instr] = []
    scalars: list[DType] = []
    scalar_refs: list[tuple[int, int]] = []
    reduces: list[Reduce] = []
    dead: set[int] = set()
    dropped: set[int] = set()
    shape_from = (0, False)
    iotas: dict[int, tuple[int, int]] = {}  # an arange (or a view of one): its scalars

    def load(t: TensorIr, level: Level, out_shape: tuple[int, ...], pos: int,
             op: OperationIr, align: Align | None = None,
             gather: tuple[int, int, int] | None = None) -> Arg:
        per_row = level is Level.OUT
        key = (t.id, per_row, gather, align)
        slot = load_slot.get(key)
        if slot is None:
            slot = load_slot[key] = len(loads)
            ins = [i.id for i in op.inputs()]  # -1: the op's own output (a stored arange)
            load_refs.append((pos, ins.index(t.id) if t.id in ins else -1))
            dense = (not reduced and t.layout is None and t.shape == space and gather is None
                     and align is None)
            loads.append(Load(t.dtype, dense, Level.OUT if per_row else Level.ROW, gather,
                              iotas.get(t.id)))
            load_ids.append(t.id)
            if dense:
                load_align.append(None)
            elif align is not None:
                load_align.append(align)
            elif per_row:
                load_align.append(_out_align(t.shape, out_shape, reduced))
            else:
                load_align.append(align_to(t.shape, space))
        return Arg("in", slot)

    for pos, (op, level) in enumerate(zip(block, levels, strict=True)):
        if isinstance(op, DropOp):
            dropped.add(op.tensor.id)
            continue
        for t in op.inputs():
            if t.status is TensorStatus.READ_WRITE:
                dead.add(t.id)
        if isinstance(op, IotaOp):
            scalars += [op.out.dtype, op.out.dtype]
            scalar_refs += [(pos, 0), (pos, 1)]
            iotas[op.out.id] = (len(scalars) - 2, len(scalars) - 1)
            continue
        if isinstance(op, ViewOp):
            if op.input.id in values:  # the same value (a row value without unit dims)
                values[op.out.id] = values[op.input.id]
            else:  # a view of an arange: its layout is the index map
                iotas[op.out.id] = iotas[op.input.id]
            continue
        if isinstance(op, MatmulOp):
            a_align, b_align = matmul_align(op)
            operands = (load(op.a, Level.ROW, space, pos, op, a_align),
                        load(op.b, Level.ROW, space, pos, op, b_align))
            dt = op.out.dtype
            acc = REDUCTIONS["sum"].acc_dtype(dt)  # float16 products sum in float32
            body.append(Instr("mul", acc, acc, operands))
            reduces.append(Reduce("sum", Arg("v", len(body) - 1), acc, acc, dt))
            values[op.out.id] = (Arg("r"), Level.OUT, dt)
            shape_from = (pos, True)
            continue
        if isinstance(op, GatherOp):
            index = load(op.index, level, space, pos, op)
            scalars.append(DType.int32)
            scalar_refs.append((pos, 0))
            values[op.out.id] = (load(op.input, level, space, pos, op, gather=(
                index.index, op.axis, len(scalars) - 1)), level, op.out.dtype)
            shape_from = (pos, False)
            continue
        if isinstance(op, ReduceOp):
            src = values[op.input.id][0] if op.input.id in values else load(
                op.input, Level.ROW, space, pos, op)
            red = REDUCTIONS[op.op]
            values[op.out.id] = (Arg("r", len(reduces)), Level.OUT, op.out.dtype)
            reduces.append(Reduce(op.op, src, op.input.dtype, red.acc_dtype(op.input.dtype),
                                  op.out.dtype))
            shape_from = (pos, True)
            continue
        assert isinstance(op, ElementwiseOp)
        if not reduces:
            shape_from = (pos, False)
        args: list[Arg] = []
        k = 0
        for a in op.args:
            if isinstance(a, ScalarIr):
                args.append(Arg("s", len(scalars)))
                scalars.append(a.dtype)
                scalar_refs.append((pos, k))
                k += 1
            elif a.id in values:
                args.append(values[a.id][0])
            else:
                args.append(load(a, level, op.out.shape if level is Level.OUT else space, pos,
                                 op))
        values[op.out.id] = (Arg("v", len(body)), level, op.out.dtype)
        body.append(Instr(op.op, op.compute, op.out.dtype, tuple(args), level,
                          0 if level is Level.ROW else len(reduces)))

    dead |= dropped
    for pos, op in enumerate(block):
        if isinstance(op, IotaOp) and op.out.id not in dead:
            values[op.out.id] = (load(op.out, Level.ROW, space, pos, op), Level.ROW,
                                 op.out.dtype)
    loads, load_ids, load_align, load_refs, body, reduces = _iotas_last(
        loads, load_ids, load_align, load_refs, body, reduces, values)
    stores: list[Store] = []
    store_ids: list[int] = []
    store_align: list[Align | None] = []
    donors = [s for s, tid in enumerate(load_ids)
              if inplace and not reduced and tid in dead and loads[s].dense and tid not in iotas]
    for tid, (arg, level, dtype) in values.items():
        if tid in dead:
            continue
        slot = None
        dense = not reduced or level is Level.OUT
        if dense:
            slot = next((s for s in donors if loads[s].dtype.storage_np == dtype.storage_np),
                        None)
            if slot is not None:
                donors.remove(slot)
        stores.append(Store(arg, dtype, level, dense, slot))
        store_ids.append(tid)
        store_align.append(None if dense else tuple(range(rank)))
    lent = {s.inplace for s in stores if s.inplace is not None}
    frees = tuple(tid for s, tid in enumerate(load_ids) if tid in dead and s not in lent
                  and tid not in iotas)
    frees += tuple(tid for tid in dropped if tid not in values and tid not in load_ids
                   and tid not in iotas)

    n = 1
    for d in space:
        n *= d
    wide = any(ld.dtype.itemsize == 8 for ld in loads) or any(
        d.itemsize == 8 for ins in body for d in (ins.compute, ins.out))
    vec4 = (not reduced and n > 0 and n % 4 == 0 and not wide and all(s.dense for s in stores)
            and all(ld.gather is None for ld in loads)
            and all(ld.dense or all(a == -1 for a in al or ())
                    for ld, al in zip(loads, load_align, strict=True)))
    matmul = any(isinstance(op, MatmulOp) for op in block)
    kernel = _interned(Kernel(rank, tuple(loads), tuple(body), tuple(stores),
                              tuple(scalars), tuple(reduces), reduced, vec4, matmul))
    return Lowered(kernel, tuple(t for t in load_ids if t not in iotas), tuple(store_ids),
                   tuple(load_align), tuple(load_refs), tuple(store_align),
                   tuple(dict.fromkeys(frees)), tuple(scalar_refs), shape_from)


def _iotas_last(loads: list[Load], load_ids: list[int], load_align: list[Align | None],
                load_refs: list[tuple[int, int]], body: list[Instr], reduces: list[Reduce],
                values: dict[int, tuple[Arg, Level, DType]]
                ) -> tuple[list[Load], list[int], list[Align | None], list[tuple[int, int]],
                           list[Instr], list[Reduce]]:
    """The loads reordered so that iota loads (bound to no buffer) come last, and every
    reference to a load renumbered to match."""
    order = sorted(range(len(loads)), key=lambda k: loads[k].iota is not None)
    if order == list(range(len(loads))):
        return loads, load_ids, load_align, load_refs, body, reduces
    new = {old: k for k, old in enumerate(order)}

    def arg(a: Arg) -> Arg:
        return Arg("in", new[a.index]) if a.kind == "in" else a

    moved = [loads[k] for k in order]
    moved = [ld if ld.gather is None else dataclasses.replace(
        ld, gather=(new[ld.gather[0]],) + ld.gather[1:]) for ld in moved]
    for tid, (a, level, dtype) in values.items():
        values[tid] = (arg(a), level, dtype)
    body = [dataclasses.replace(ins, args=tuple(arg(a) for a in ins.args)) for ins in body]
    reduces = [dataclasses.replace(red, value=arg(red.value)) for red in reduces]
    return (moved, [load_ids[k] for k in order], [load_align[k] for k in order],
            [load_refs[k] for k in order], body, reduces)


def copy_kernel(dtype: DType, rank: int, dense_load: bool) -> Kernel:
    """Copy a tensor into a strided window of another storage (``cat``'s pieces)."""
    return Kernel(rank, (Load(dtype, dense_load),), (), (Store(Arg("in", 0), dtype, Level.ROW,
                                                               False),), ())
