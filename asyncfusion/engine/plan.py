"""Execution plans: the steps a segment runs as, and how each step runs.

A plan is built once per *relative* segment signature and then replayed: steps refer to
ops by their position in the segment and to tensors by relative id, so one plan serves
every later segment with an equal signature, whatever its ids, sizes, strides and
scalars. Sizes and strides are read from the segment's own op records at launch.

Every step isolates failure: if its inputs are poisoned or it raises, its outputs become
:class:`Poison` and the rest of the segment runs on. A fused step that fails re-runs its
ops one by one first, so only the op that really fails poisons its dependents.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..ir import (CatOp, DropOp, ElementwiseOp, ExternOp, GatherOp, InitOp, MatmulOp, OperationIr,
                  ReduceOp, Renumber, Signature, TensorStatus, ViewOp, dense_strides, numel)
from ..ir import IotaOp
from ..kernel import (Kernel, LaunchArgs, Level, Lowered, Store, align_to, copy_kernel,
                      lower)
from ..trace import Counters, emit, trace_enabled
from .memory import Memory, Poison, Storage

__all__ = ["PlanKey", "Context", "Step", "OpStep", "ReleaseStep", "KernelStep", "single_step",
           "run_single", "store_nbytes"]

PlanKey = tuple[Signature, ...]
"""A segment's relative signature: its ops' signatures, in order; plans are cached by it."""


class Context:
    """What a step runs against: the memory owner, its backend, the counters."""

    __slots__ = ("memory", "backend", "counters")

    def __init__(self, memory: Memory, counters: Counters) -> None:
        self.memory = memory
        self.backend = memory.backend
        self.counters = counters


def _block_line(ops: list[OperationIr]) -> None:
    if trace_enabled():
        emit(f"[block] {len(ops)} op(s): {', '.join(op.title() for op in ops)}")


def _release_last_uses(op: OperationIr, memory: Memory) -> None:
    for t in op.inputs():
        if t.status is TensorStatus.READ_WRITE:
            memory.release(t.id)


class Step:
    __slots__ = ()

    def run(self, ops: list[OperationIr], ids: list[int], ctx: Context) -> None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class OpStep(Step):
    """An op run on its own, outside the fusers' kernels: an upload, a view (an alias), a
    drop, a ``cat`` (one copy kernel per input), an :class:`ExternOp` (a user's WGSL
    kernel, an adopted buffer). Its outputs are poisoned if its inputs are or if it
    fails."""

    index: int
    hoisted: bool = False  # a view run ahead of a kernel: its last uses come after

    def run(self, ops: list[OperationIr], ids: list[int], ctx: Context) -> None:
        op = ops[self.index]
        if type(op) is DropOp:
            ctx.memory.release(op.tensor.id)
            return
        ctx.counters.blocks += 1
        _block_line([op])
        memory = ctx.memory
        poison = memory.poisoned(t.id for t in op.inputs())
        try:
            if poison is None:
                _run_alone(op, ctx)
        except Exception as exc:  # noqa: BLE001 - isolated: recorded as poison
            poison = Poison(exc)
        if poison is not None:
            for t in op.outputs():
                memory.poison(t.id, poison)
        if not self.hoisted:
            _release_last_uses(op, memory)


def _run_alone(op: OperationIr, ctx: Context) -> None:
    memory = ctx.memory
    if type(op) is InitOp:
        ctx.backend.faults.check("alloc")
        memory.bind(op.out.id, Storage(ctx.backend.upload(op.data)))
    elif type(op) is ViewOp:
        memory.bind(op.out.id, memory.storage(op.input.id))
    elif type(op) is CatOp:
        _concatenate(op, ctx)
    else:
        assert type(op) is ExternOp
        made = op.work.run(ctx.backend, [memory.storage(t.id).buffer for t in op.ins], op)
        for t, storage in zip(op.outs, made, strict=True):
            memory.bind(t.id, storage)


@dataclass(frozen=True, slots=True)
class ReleaseStep(Step):
    """Release what hoisted views read for the last time, once their kernel ran."""

    tensors: tuple[int, ...]  # relative ids

    def run(self, ops: list[OperationIr], ids: list[int], ctx: Context) -> None:
        for r in self.tensors:
            ctx.memory.release(ids[r])


@dataclass(frozen=True, slots=True)
class KernelStep(Step):
    """One kernel for a block of ops (or none, if nothing in it is live)."""

    positions: tuple[int, ...]  # ops of the block, by segment position
    lowered: Lowered
    inputs: tuple[int, ...]  # relative ids, per load
    outputs: tuple[int, ...]  # relative ids, per store
    frees: tuple[int, ...]
    fused: bool

    @staticmethod
    def build(positions: tuple[int, ...], lowered: Lowered, rel: dict[int, int],
              fused: bool) -> KernelStep:
        return KernelStep(positions, lowered, tuple(rel[t] for t in lowered.inputs),
                          tuple(rel[t] for t in lowered.outputs),
                          tuple(rel[t] for t in lowered.frees), fused)

    def run(self, ops: list[OperationIr], ids: list[int], ctx: Context) -> None:
        block = [ops[p] for p in self.positions]
        ctx.counters.blocks += 1
        ctx.counters.fused_blocks += self.fused
        _block_line(block)
        memory = ctx.memory
        outputs = [ids[r] for r in self.outputs]
        if outputs:
            inputs = [ids[r] for r in self.inputs]
            poison = memory.poisoned(inputs)
            if poison is not None:
                for tid in outputs:
                    memory.poison(tid, poison)
            else:
                try:
                    self._launch(block, inputs, outputs, ctx)
                except Exception as exc:  # noqa: BLE001 - isolated
                    for tid in outputs:
                        memory.release(tid)
                    if self.fused:  # fall back to the ops' own kernels
                        for op in block:
                            run_single(op, ctx)
                        return
                    for tid in outputs:
                        memory.poison(tid, Poison(exc))
        for r in self.frees:
            memory.release(ids[r])

    def _launch(self, block: list[OperationIr], inputs: list[int], outputs: list[int],
                ctx: Context) -> None:
        lw = self.lowered
        memory = ctx.memory
        kernel = lw.kernel
        storages = [memory.storage(t) for t in inputs]
        unlent: list[int] = []  # inputs planned to be lent, released after all
        for st in kernel.stores:  # lend in place only what nothing else (a view) holds,
            # and never an adopted buffer (its owner still has it)
            if st.inplace is not None and (storages[st.inplace].refs != 1
                                           or not storages[st.inplace].owned):
                unlent = [inputs[s.inplace] for s in kernel.stores if s.inplace is not None]
                kernel = _without_inplace(kernel)
                break
        args = self.launch_args(block)
        stores = []
        for st, tid in zip(kernel.stores, outputs, strict=True):
            if st.inplace is not None:
                stores.append(storages[st.inplace].buffer)
            else:
                stores.append(memory.allocate(tid, store_nbytes(kernel, st, args.shape)).buffer)
        ctx.backend.launch(kernel, args, [s.buffer for s in storages], stores)
        for st, tid in zip(kernel.stores, outputs, strict=True):
            if st.inplace is not None:  # only now: a failed launch leaves its inputs as they were
                memory.move(inputs[st.inplace], tid)
        for tid in unlent:
            memory.release(tid)

    def launch_args(self, block: list[OperationIr]) -> LaunchArgs:
        """The sizes, index maps and scalars of this step's kernel on ``block``."""
        lw = self.lowered
        p, of_input = lw.shape_from
        src = block[p]
        if type(src) is MatmulOp:
            space = src.space
        else:
            space = (src.inputs()[0] if of_input else src.outputs()[0]).shape
        maps = []
        for align, (pos, j) in zip(lw.load_align, lw.load_refs, strict=True):
            if align is not None:
                op = block[pos]  # j == -1: its output (an arange its kernel stores)
                t = op.inputs()[j] if j >= 0 else op.outputs()[0]
                lay = t.layout
                if lay is None:  # dense
                    offset, strides = 0, _dense_strides(t.shape)
                else:
                    offset, strides = lay.offset, lay.strides
                maps.append((offset, tuple([strides[a] if a >= 0 else 0 for a in align])))
        if lw.store_align:
            dense = _dense_strides(space)
            for align in lw.store_align:
                if align is not None:
                    maps.append((0, dense))
        scalars = tuple([block[pos].scalars[k]  # type: ignore[attr-defined]
                         for pos, k in lw.scalar_refs]) if lw.scalar_refs else ()
        return LaunchArgs(space, tuple(maps), scalars)


_dense_strides = functools.lru_cache(maxsize=1024)(dense_strides)  # a launch's hot path
_without_inplace = functools.lru_cache(maxsize=1024)(Kernel.without_inplace)


def store_nbytes(kernel: Kernel, st: Store, space: tuple[int, ...]) -> int:
    """Bytes of the buffer a store of ``kernel`` writes over ``space``."""
    n = numel(space) if st.level is not Level.OUT else _out_numel(space, kernel)
    return n * st.dtype.itemsize


def _out_numel(space: tuple[int, ...], kernel: Kernel) -> int:
    return numel(tuple(s for s, r in zip(space, kernel.reduced, strict=True) if not r))


def _concatenate(op: CatOp, ctx: Context) -> None:
    """Each input copied into its window of the output."""
    memory = ctx.memory
    ctx.backend.faults.check("launch", ("cat",))
    out = memory.allocate(op.out.id, numel(op.out.shape) * op.out.dtype.itemsize)
    strides = dense_strides(op.out.shape)
    offset = 0
    for t in op.tensors:
        if numel(t.shape):
            lay = t.view
            kernel = copy_kernel(t.dtype, len(t.shape), t.layout is None)
            maps = [] if t.layout is None else [
                (lay.offset, tuple(lay.strides[a] if a >= 0 else 0
                                   for a in align_to(t.shape, t.shape)))]
            maps.append((offset, strides))
            ctx.backend.launch(kernel, LaunchArgs(t.shape, tuple(maps), ()),
                               [memory.storage(t.id).buffer], [out.buffer])
        offset += t.shape[op.axis] * strides[op.axis]


def single_step(ops: list[OperationIr], pos: int, rel: dict[int, int]) -> Step:
    """The unfused step of ``ops[pos]``: its own kernel, or no launch at all."""
    op = ops[pos]
    if type(op) is ElementwiseOp or type(op) is GatherOp or type(op) is IotaOp:
        return KernelStep.build((pos,), lower([op], [Level.ROW], op.out.shape, inplace=False),
                                rel, False)
    if type(op) is MatmulOp:
        reduced = (False,) * len(op.out.shape) + (True,)
        return KernelStep.build((pos,), lower([op], [Level.ROW], op.space, reduced), rel,
                                False)
    if type(op) is ReduceOp:
        space = op.input.shape
        reduced = tuple(d in op.axes for d in range(len(space)))
        return KernelStep.build((pos,), lower([op], [Level.ROW], space, reduced), rel, False)
    return OpStep(pos)


def run_single(op: OperationIr, ctx: Context) -> None:
    """Run one op unfused (a failed fused kernel's fallback); poison what it cannot make."""
    rn = Renumber()
    op.signature(rn)
    step = single_step([op], 0, rn.rel)
    try:
        step.run([op], rn.ids, ctx)
    except Exception as exc:  # noqa: BLE001 - isolated: recorded as poison
        for t in op.outputs():
            ctx.memory.poison(t.id, Poison(exc))
        _release_last_uses(op, ctx.memory)

