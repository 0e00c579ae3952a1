"""Cross-stream (horizontal) batching: equal segments of many streams, one launch per step.

In one round, the segments that different streams hand the executor often have the same
relative signature — hundreds of tasks serving one model each run the same chain on their
own inputs — and so the same cached plan. :class:`Deferred` holds such segments back
while the round drains its streams, grouped by signature, and then runs each group's plan
in lockstep: every step for all members, and each kernel step as *one* launch over all
members whose launch arguments (sizes, strides, scalars) are equal.

A batched launch is the step's kernel with one more index-space dimension, the instance
(:meth:`Kernel.over_instances`). An input whose instances all sit in one slab at a fixed
stride (a batched step's outputs) is bound as it is; one tensor that every instance reads
is bound once, at stride 0; otherwise the instances' inputs are copied into one packed
buffer first (once per group, for every step that reads them). Each output is one *slab*: every instance's tensor is a range of it (a
:class:`~asyncfusion.engine.memory.Storage` of the slab), so the next batched step reads
it in place and the round's reads of it are one staging copy.

A launch takes at most ``max_batch`` instances (``open_device(max_batch=...)``; a bigger
group makes several launches per step); how long a round may wait for more streams is
the server's business (``max_wait_ms``, in ``runtime/server.py``).

A segment whose results were all dropped while it waited (its reader was cancelled)
is left out of its group. Only self-contained segments wait: their inputs are already
computed, and no segment waiting before them reads what they free. Anything else first
runs what waits, so the order of the streams' effects on memory is the one an unbatched
round has. Failures stay per instance: a poisoned instance runs its step alone (and
poisons only its own outputs), and a batched launch that fails is run again instance by
instance, each isolated as usual.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Set
from dataclasses import dataclass
import numpy as np

from .._core.dtype import to_storage
from ..backends.base import Backend, Buffer
from ..ir import DropOp, InitOp, OperationIr, TensorStatus, dense_strides, numel
from ..kernel import Kernel, LaunchArgs, Level
from ..trace import Counters, emit, trace_enabled
from .memory import Memory, Slab, Storage
from .plan import Context, KernelStep, OpStep, Step, store_nbytes
from .runner import Runner
from .streams import Segment

__all__ = ["Deferred", "over_instances"]

# A batched launch's kernel, made once per (kernel, which bound buffers stay dense).
over_instances = functools.lru_cache(maxsize=1024)(Kernel.over_instances)


@dataclass(slots=True)
class _Group:
    plan: list[Step]
    members: list[tuple[list[OperationIr], list[int]]]  # (segment, its ids per relative id)


@dataclass(slots=True)
class _Instance:
    ops: list[OperationIr]
    ids: list[int]
    inputs: list[int]
    outputs: list[int]


class Deferred:
    """The self-contained segments of one round, grouped by plan (executor thread)."""

    def __init__(self, runner: Runner, memory: Memory, counters: Counters,
                 max_batch: int | None = None) -> None:
        self.runner = runner
        self.max_batch = max_batch  # instances per launch at most (None: all that fit)
        self.memory = memory
        self.counters = counters
        self.groups: dict[int, _Group] = {}  # by id of the plan, which they hold
        self.reads: set[int] = set()  # computed tensors that waiting segments read
        self.releases: set[int] = set()  # and those they free
        self.frees: list[int] = []  # freed once the waiting segments ran

    def offer(self, seg: Segment) -> bool:
        """Hold ``seg`` (a stream's whole take) back for batching, with the ids that are
        free once it ran; False (nothing held) if it cannot wait."""
        if not self.runner.fuse:
            return False
        if seg.reads is not None and seg.releases is not None:  # its liveness, as it came
            reads, releases = seg.reads, seg.releases
        else:
            reads, releases = _liveness(seg.ops)[1:]
        table = self.memory.table
        for tid in reads:
            if tid not in table:
                return False  # made by a stream still queued, or by a waiting one
        if releases & self.reads or reads & self.releases:
            return False
        ops = seg.ops
        try:
            plan, ids = self.runner.lookup(ops)[1:]
        except Exception:  # noqa: BLE001 - a bug in planning: the unbatched path recovers
            return False
        # grouped by plan: one plan per signature (hashing the signature again costs more)
        group = self.groups.get(id(plan))
        if group is None:
            self.groups[id(plan)] = _Group(plan, [(ops, ids)])
        else:
            group.members.append((ops, ids))
        self.reads |= reads
        self.releases |= releases
        self.frees.extend(seg.frees)
        return True

    def flush(self, recover: Callable[[list[OperationIr]], None],
              gone: Set[int] = frozenset()) -> None:
        """Run every waiting segment, a group at a time; ``recover`` re-runs the ops of a
        group's members that did not run if the group fails outside its steps' isolation.
        A member whose results are all ``gone`` (dropped since it was offered: its reader
        was cancelled) is left out of its group's launches."""
        if not self.groups:
            return
        groups, self.groups = self.groups, {}
        ctx = Context(self.memory, self.counters)
        for group in groups.values():
            if gone:
                group.members = [m for m in group.members if not self._withdrawn(m[0], gone)]
            packed = _Packed(ctx.backend)
            try:
                many = len(group.members) > 1
                for step in group.plan:
                    if many and type(step) is KernelStep:
                        _run_batched(step, group.members, ctx, packed, self.max_batch)
                    elif many and type(step) is OpStep and \
                            type(group.members[0][0][step.index]) is InitOp:
                        _upload_batched(step, group.members, ctx)
                    else:
                        for ops, ids in group.members:
                            step.run(ops, ids, ctx)
            except Exception:  # noqa: BLE001 - a bug outside the steps' own isolation
                for ops, _ in group.members:
                    recover(ops)
            finally:
                packed.free()
        frees, self.frees = self.frees, []
        self.reads.clear()
        self.releases.clear()
        for tid in frees:
            self.memory.release(tid)

    def _withdrawn(self, ops: list[OperationIr], gone: Set[int]) -> bool:
        """Whether nobody is left for what ``ops`` make: then what they would free of
        what was computed before them is freed now, and they do not run."""
        made, _, frees = _liveness(ops)
        results = made - frees
        if not results or not results <= gone:
            return False
        for tid in frees - made:
            self.memory.release(tid)
        return True


def _liveness(ops: list[OperationIr]) -> tuple[set[int], set[int], set[int]]:
    """(tensors ``ops`` make, those they read that were made before them, those they
    free: last uses and drops)."""
    made: set[int] = set()
    reads: set[int] = set()
    releases: set[int] = set()
    rw = TensorStatus.READ_WRITE
    for op in ops:
        if type(op) is DropOp:
            releases.add(op.tensor.id)
            continue
        for t in op.inputs():
            tid = t.id
            if tid not in made:
                reads.add(tid)
            if t.status is rw:
                releases.add(tid)
        for t in op.outputs():
            made.add(t.id)
    return made, reads, releases


def _run_batched(step: KernelStep, members: list[tuple[list[OperationIr], list[int]]],
                 ctx: Context, packed: _Packed, max_batch: int | None) -> None:
    """One kernel step for every member: one launch per set of equal launch arguments
    (of ``max_batch`` instances at most)."""
    memory = ctx.memory
    by_args: dict[LaunchArgs, list[_Instance]] = {}
    for ops, ids in members:
        outputs = [ids[r] for r in step.outputs]
        inputs = [ids[r] for r in step.inputs]
        if not outputs or memory.poisoned(inputs) is not None:
            step.run(ops, ids, ctx)  # nothing to launch, or its poison to pass on
            continue
        args = step.launch_args([ops[p] for p in step.positions])
        by_args.setdefault(args, []).append(_Instance(ops, ids, inputs, outputs))
    limit = _max_instances(step, ctx)
    for args, insts in by_args.items():
        cap = min(limit(args), max_batch or len(insts))
        while insts:
            chunk, insts = insts[:cap], insts[cap:]
            if len(chunk) > 1:
                try:
                    _launch(step, args, chunk, ctx, packed)
                    continue
                except Exception:  # noqa: BLE001 - rerun alone below, each isolated
                    pass
            for inst in chunk:
                step.run(inst.ops, inst.ids, ctx)


def _upload_batched(step: OpStep, members: list[tuple[list[OperationIr], list[int]]],
                    ctx: Context) -> None:
    """The upload at ``step`` for every member as one: their data, each at a stride of its
    own in one slab, which the group's batched kernels then read in place (no copies)."""
    backend, memory = ctx.backend, ctx.memory
    inits = [ops[step.index] for ops, _ in members]
    raws = [to_storage(op.data) for op in inits if type(op) is InitOp]
    size = raws[0].nbytes
    stride = -(-size // backend.storage_align) * backend.storage_align
    if not size or any(r.nbytes != size for r in raws) or \
            stride * len(raws) > backend.max_binding:
        for ops, ids in members:
            step.run(ops, ids, ctx)
        return
    packed = np.zeros(stride * len(raws), np.uint8)
    for b, raw in enumerate(raws):
        packed[b * stride:b * stride + size] = raw.reshape(-1).view(np.uint8)
    try:
        backend.faults.check("alloc")
        buffer = backend.upload(packed.view(np.uint32))  # words: bytes would be widened
    except Exception:  # noqa: BLE001 - out of memory, say: each upload alone, isolated
        for ops, ids in members:
            step.run(ops, ids, ctx)
        return
    slab = Slab(buffer, len(raws))
    for b, op in enumerate(inits):
        assert type(op) is InitOp
        memory.bind(op.out.id, Storage(backend.sub(buffer, b * stride, size), slab, b * stride))
    ctx.counters.blocks += len(raws)
    if trace_enabled():
        emit(f"[batch] {len(raws)} uploads of {size} bytes in one")


def _max_instances(step: KernelStep, ctx: Context) -> Callable[[LaunchArgs], int]:
    """How many instances of ``step`` one launch may take under ``args`` (1: it is not
    batched): every packed buffer within the backend's largest; a matmul's results
    (stored by row of its tiles) without gaps between instances."""
    kernel = step.lowered.kernel
    align = ctx.backend.storage_align

    def cap(args: LaunchArgs) -> int:
        n = numel(args.shape)
        if n == 0:
            return 1
        biggest = 0
        for st in kernel.stores:
            size = store_nbytes(kernel, st, args.shape)
            if kernel.matmul and size % align:
                return 1
            biggest = max(biggest, size)
        biggest = max([biggest] + [n * ld.dtype.itemsize for ld in kernel.loads])
        limit = ctx.backend.max_binding // (-(-biggest // align) * align)
        return max(1, min(limit, (1 << 31) // n))

    return cap


def _launch(step: KernelStep, args: LaunchArgs, insts: list[_Instance], ctx: Context,
            packed: _Packed) -> None:
    """The batched launch of ``step`` over ``insts`` (all healthy, equal ``args``)."""
    memory, backend = ctx.memory, ctx.backend
    kernel = step.lowered.kernel
    lent = [st.inplace for st in kernel.stores if st.inplace is not None]
    align = backend.storage_align
    count = len(insts)
    space = args.shape
    n = numel(space)
    dense = dense_strides(space)
    maps = iter(args.maps)
    new_maps: list[tuple[int, tuple[int, ...]]] = []
    loads: list[Buffer] = []
    loads_dense: list[bool] = []
    slabs: list[Buffer] = []
    try:
        for k, ld in enumerate(kernel.loads):
            if ld.iota is not None:  # an arange, bound to nothing: equal in every instance
                loads_dense.append(False)
                stride = 0
            else:
                ids = tuple(inst.inputs[k] for inst in insts)
                storages = [memory.storage(tid) for tid in ids]
                need = n * ld.dtype.itemsize if ld.dense else max(s.buffer.nbytes
                                                                  for s in storages)
                buffer, stride = packed.get(ids, storages, need)
                loads.append(buffer)
                loads_dense.append(ld.dense and stride == need)
            if not loads_dense[-1]:
                offset, strides = (0, dense) if ld.dense else next(maps)
                new_maps.append((offset, (stride // ld.dtype.itemsize,) + strides))
        stores_dense: list[bool] = []
        strides_out: list[int] = []
        for st in kernel.stores:
            size = store_nbytes(kernel, st, space)
            stride = -(-size // align) * align
            slabs.append(backend.alloc(count * stride))
            strides_out.append(stride)
            stores_dense.append(st.dense and stride == size)
            if not stores_dense[-1]:
                offset, strides = (0, _store_strides(kernel, st.level, space)) if st.dense \
                    else next(maps)
                new_maps.append((offset, (stride // st.dtype.itemsize,) + strides))
        batched = over_instances(kernel, tuple(loads_dense), tuple(stores_dense))
        backend.launch(batched, LaunchArgs((count,) + space, tuple(new_maps), args.scalars),
                       loads, slabs)
    except Exception:
        for buf in slabs:
            backend.free(buf)
        raise
    for j, st in enumerate(kernel.stores):
        size, stride = store_nbytes(kernel, st, space), strides_out[j]
        slab = Slab(slabs[j], count)
        for b, inst in enumerate(insts):
            memory.bind(inst.outputs[j], Storage(backend.sub(slabs[j], b * stride, size),
                                                 slab, b * stride))
    if trace_enabled():
        emit(f"[batch] {count} instances of {kernel.title}")
    counters = ctx.counters
    counters.blocks += count
    counters.fused_blocks += count * step.fused
    counters.batched_instances += count
    for inst in insts:
        for k in lent:  # planned to be lent to an output: this launch wrote fresh ones
            memory.release(inst.inputs[k])
        for r in step.frees:
            memory.release(inst.ids[r])


def _store_strides(kernel: Kernel, level: Level, space: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of a dense store over ``space`` (an OUT-level one: over the rows)."""
    if level is Level.OUT and kernel.reduced:
        return dense_strides(tuple(1 if r else s
                                   for s, r in zip(space, kernel.reduced, strict=True)))
    return dense_strides(space)


class _Packed:
    """The inputs of a group's instances, each set in one buffer: the one storage they
    all read (stride 0), the slab they sit in at a fixed stride, or a packed copy — made
    once per set of tensors (a tensor's data never changes) for every step that reads
    it, and freed when the group has run."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.copies: dict[tuple[tuple[int, ...], int], tuple[Buffer, int]] = {}

    def get(self, ids: tuple[int, ...], storages: list[Storage], need: int
            ) -> tuple[Buffer, int]:
        """(buffer, stride in bytes) holding ``need`` bytes of each of ``storages``."""
        first = storages[0]
        if all(s is first for s in storages):
            return first.buffer, 0
        slab = first.slab
        if slab is not None:
            stride = storages[1].at - first.at
            if stride >= need and all(s.slab is slab and s.at == first.at + b * stride
                                      for b, s in enumerate(storages)):
                return self.backend.sub(slab.buffer, first.at, stride * len(storages)), stride
        hit = self.copies.get((ids, need))
        if hit is not None:
            return hit
        stride = -(-need // 4) * 4
        if stride * len(storages) > self.backend.max_binding:
            raise ValueError("the packed inputs would exceed the largest buffer")
        buffer = self.backend.alloc(stride * len(storages))
        for b, s in enumerate(storages):
            self.backend.copy(s.buffer, buffer, min(s.buffer.nbytes, need), b * stride)
        self.copies[(ids, need)] = buffer, stride
        return buffer, stride

    def free(self) -> None:
        for buffer, _ in self.copies.values():
            self.backend.free(buffer)
