"""The wgpu backend: allocate, upload, launch kernels of the kernel IR, read back.

Kernels are rendered to WGSL once per distinct kernel (an LRU keyed by the kernel IR)
and compiled once per WGSL text by the runtime. Reduction kernels pick their threads per
output row from the launch's sizes: rows of a few elements share a workgroup, long rows
get a whole one; where the rows are contiguous, a multiple of 4 long and aligned, they
are read in vec4 words (:func:`row_words`); a kernel of several passes over each row
holds the row in registers between them where it fits (:func:`row_slots`), else reads
it again. Matmul launches take a plan (:mod:`.matmul_launch`): tiles from the output's
size and the adapter's limits, or tuned once per shape class where tuning is on
(:mod:`asyncfusion.codegen.wgsl.autotune`), split over K where few tiles face a long K.
"""

from __future__ import annotations

import os

from collections import OrderedDict

import numpy as np

from ..._debug import assert_off_loop
from ..._core.dtype import NEEDS, DType, to_storage
from ...ir import Layout, numel
from ...kernel import Kernel, LaunchArgs, Level
from ...kernel.rows import held_bytes
from ...trace import Counters
from ..base import MemoryStats, host_view
from ..faults import FaultInjector
from .memory import STAGING_CACHE, BufferPool
from ...codegen.wgsl.matmul import MatmulShader, render_matmul
from ...codegen.wgsl.params import param_bytes
from ...codegen.wgsl.render import RowWords, render
from .bindings import oversized, pieces, refuse
from .matmul_launch import MatmulLaunch, MatmulLauncher
from ...codegen.wgsl.autotune import MatmulTuner, TuneCache, device_key, tune_enabled
from ...codegen.wgsl.autotune import tune_dir as tuning_dir
from .runtime import Buffer, Runtime, detach, get_runtime

__all__ = ["WgpuBackend"]

# How one kernel renders: a matmul stage, or a reduction's held slots, vec4 words and
# threads per row.
_Variant = MatmulShader | tuple[int, RowWords | None, int]

_MAX_KERNELS = 1024
_MAX_LAUNCHES = 4096
_Prepared = tuple[str, bytes, int]  # WGSL, uniform bytes, threads


_PER_THREAD = 16  # elements each thread of a reduction folds, where rows are many
_FILL = 1 << 17  # threads that keep a large GPU busy


def threads_per_row(n_out: int, n_red: int, workgroup: int, lanes: int = 1) -> int:
    """Threads per row of a reduction (a power of two up to the workgroup) whose rows
    are ``n_red`` positions of ``lanes`` elements: enough that each folds about 16
    elements, more while the whole launch would be too few threads to fill the GPU (a
    handful of long rows gets whole workgroups)."""
    longest = min(workgroup, _pow2_at_least(n_red))
    tpr = min(longest, _pow2_at_least(-(-n_red * lanes // _PER_THREAD)))
    while tpr < longest and n_out * tpr < _FILL:
        tpr *= 2
    return tpr


# Registers per thread a held row may take: its elements (at most _SLOTS each) times
# the bytes held per element. 32 slots of 256 threads hold a row of 8,192.
_SLOTS = 32
_HELD_BYTES = 256


def row_slots(kernel: Kernel, n_red: int, tpr: int, lanes: int = 1) -> int:
    """Positions (of ``lanes`` elements) of a row each thread holds between a reduction
    kernel's passes (a power of two), or 0: the kernel has one pass, or the row does not
    fit in registers and each pass reads it again."""
    held = held_bytes(kernel) * lanes
    if not held:
        return 0
    slots = _pow2_at_least(-(-n_red // tpr))
    return slots if slots * lanes <= _SLOTS and slots * held <= _HELD_BYTES else 0


def row_words(kernel: Kernel, args: LaunchArgs) -> RowWords | None:
    """How a reduction launch reads its rows in vec4 words, or None: the last folded
    dimension must be a multiple of 4 long, the element loads plain (no gather, no
    arange, 32 bits or less) and at least one of them contiguous along it and aligned
    to 4 elements in every row (that one is read a word at a time)."""
    shape = args.shape
    last = max((d for d, r in enumerate(kernel.reduced) if r), default=None)
    if last is None:
        return None
    wide = any(d.itemsize == 8 for ins in kernel.body for d in (ins.compute, ins.out))
    wide |= any(d.itemsize == 8 for red in kernel.reduces for d in (red.src, red.acc))
    if shape[last] % 4 or wide or any(ld.dtype.itemsize == 8 for ld in kernel.loads):
        return None
    written = {st.inplace for st in kernel.stores}
    maps = iter(args.maps)

    def aligned(level: Level, dense: bool) -> bool | None:
        """Is the next element access's map word-aligned (None: a per-row or dense one)?"""
        if dense:
            return None
        offset, strides = next(maps)
        if level is Level.OUT:
            return None
        return strides[last] == 1 and offset % 4 == 0 and all(
            s % 4 == 0 for d, s in enumerate(strides) if d != last and shape[d] > 1)

    loads: set[int] = set()
    for i, ld in enumerate(kernel.loads):
        ok = aligned(ld.level, ld.dense)
        if ld.level is not Level.OUT and (ld.dense or ld.gather is not None or
                                          ld.iota is not None):
            return None
        if ok and i not in written:
            loads.add(i)
    stores = {j for j, st in enumerate(kernel.stores) if aligned(st.level, st.dense)}
    return RowWords(frozenset(loads), frozenset(stores)) if loads else None


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


class WgpuBackend:
    name = "wgpu"
    fuses = True

    def __init__(self, counters: Counters, *, max_storage_bindings: int | None = None,
                 workgroup: int | None = None, cache_bytes: int | None = None,
                 adapter: int | None = None, matmul_tune: bool | None = None,
                 tune_dir: str | os.PathLike[str] | None = None) -> None:
        self.rt: Runtime = get_runtime(max_storage_bindings, workgroup, adapter=adapter)
        self.counters = counters
        self.faults = FaultInjector()
        self.max_storage_bindings = self.rt.max_storage_bindings
        self.max_buffer_size = self.rt.max_buffer_size
        self.max_binding = self.rt.max_binding  # larger buffers: see bindings.py
        self.storage_align = self.rt.storage_align
        env = os.environ.get("ASYNCFUSION_CACHE_BYTES")
        chosen = cache_bytes is not None or bool(env)  # a budget asked for is a hard cap
        if cache_bytes is None:
            cache_bytes = int(env) if env else self.rt.pool_budget
        self.pool = BufferPool(self.rt.create_storage, self.faults, self.rt.forget_buffer,
                               cache_bytes, to_peak=not chosen)
        self.staging = BufferPool(self.rt.create_staging, self.faults, self.rt.forget_buffer,
                                  min(cache_bytes, STAGING_CACHE))
        self.batch = self.rt.new_batch()
        self._reads: list[_Read] = []  # staged, copied at the next flush
        # (kernel, its matmul tiles or its reduction's slots and words) -> WGSL
        self._kernels: OrderedDict[tuple[Kernel, _Variant], str] = OrderedDict()
        # (kernel, launch arguments) -> what its launch dispatches
        self._launches: OrderedDict[tuple[Kernel, LaunchArgs], _Prepared] = OrderedDict()
        self._matmuls: OrderedDict[tuple[Kernel, LaunchArgs], MatmulLaunch] = OrderedDict()
        self.gpu = self.rt.adapter_info.get("adapter_type") != "CPU"
        self.limits = dict(self.rt.device.limits)
        self.subgroups = self.rt.subgroups  # reductions combine rows with subgroup shuffles
        self.dtypes = frozenset(d for d in DType
                                if set(NEEDS.get(d, ((), d))[0]) <= self.rt.features)
        cache = None
        if tune_enabled(matmul_tune, self.gpu):
            cache = TuneCache(tuning_dir(tune_dir), device_key(
                self.rt.adapter_info, self.limits, _wgpu_native_version()))
        self.tuner = MatmulTuner(cache, self.limits)
        self.matmul = MatmulLauncher(self.rt, self._wgsl, self.tuner, self.limits, self.gpu)

    @property
    def adapter_summary(self) -> str:
        info = self.rt.adapter_info
        return f"{info.get('device', '?')} ({info.get('backend_type', '?')})"

    # -- memory --------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> Buffer:
        self.rt.check_alive()
        return self.pool.acquire(nbytes, ordered=True)

    def free(self, buffer: Buffer) -> None:
        # Once this batch has encoded commands, a freed buffer may still be read by them, and
        # an upload (queue.write_buffer) into it would run first: retire it until submit.
        if self.batch.encoder is None:
            self.pool.release(buffer)
        else:
            self.pool.retire(buffer)

    def upload(self, data: np.ndarray) -> Buffer:
        self.rt.check_alive()
        raw = to_storage(data)
        buf = self.pool.acquire(raw.nbytes)
        if raw.size:  # writes are whole 4-byte words: an odd count of float16 is padded
            payload = raw.tobytes()
            self.rt.queue.write_buffer(buf.gpu, 0, payload + bytes(-len(payload) % 4))
        return buf

    def sub(self, buffer: Buffer, offset: int, nbytes: int) -> Buffer:
        size = -(-nbytes // self.storage_align) * self.storage_align
        return Buffer(buffer.gpu, size, nbytes, buffer.offset + offset)

    def copy(self, src: Buffer, dst: Buffer, nbytes: int, dst_offset: int) -> None:
        self.rt.check_alive()
        self.rt.copy(self.batch, src.gpu, dst.gpu, -(-nbytes // 4) * 4, src.offset,
                     dst.offset + dst_offset)

    # -- kernels -------------------------------------------------------------------------
    def _wgsl(self, kernel: Kernel, variant: _Variant = (0, None, 1)) -> str:
        key = (kernel, variant)
        text = self._kernels.get(key)
        if text is None:
            text = self._kernels[key] = (
                render_matmul(kernel, variant) if isinstance(variant, MatmulShader)
                else render(kernel, self.rt.workgroup, self.subgroups, *variant,
                            folds=self.rt.folds_cancellation, fma=self.rt.fused_fma))
            self.counters.kernels_generated += 1
            if len(self._kernels) > _MAX_KERNELS:
                self._kernels.popitem(last=False)
        else:
            self._kernels.move_to_end(key)
        return text

    def launch(self, kernel: Kernel, args: LaunchArgs, loads: list[Buffer],
               stores: list[Buffer]) -> None:
        self.rt.check_alive()
        if oversized(loads + stores, self.max_binding):
            for p in pieces(kernel, args, loads, stores, self.max_binding,
                            self.max_buffer_size, self.storage_align):
                self.launch(p.kernel, p.args, p.loads, p.stores)
            return
        if kernel.matmul:
            self._launch_matmul(kernel, args, self._storage(kernel, loads, stores))
            return
        key = (kernel, args)
        prepared = self._launches.get(key)
        if prepared is None:
            prepared = self._launches[key] = self._prepare(kernel, args)
            if len(self._launches) > _MAX_LAUNCHES:
                self._launches.popitem(last=False)
        self.faults.check("launch", kernel.names)
        wgsl, params, threads = prepared
        if not threads:  # an empty index space: nothing to launch
            return
        self.rt.dispatch(self.batch, wgsl, self._storage(kernel, loads, stores), params,
                         threads)
        self.counters.launch(kernel.title)
        self._maybe_flush()

    def _prepare(self, kernel: Kernel, args: LaunchArgs) -> _Prepared:
        """What a launch of ``kernel`` under ``args`` dispatches (its WGSL, uniform bytes
        and threads), made once per (kernel, args): no threads where the space is empty."""
        n = numel(args.shape)
        wg = self.rt.workgroup
        variant: _Variant = (0, None, 1)
        if kernel.reduces:
            n_out = numel(tuple(s for s, r in zip(args.shape, kernel.reduced, strict=True)
                                if not r))
            n_red = n // n_out if n_out else 0
            vec = row_words(kernel, args) if n_red else None
            lanes = 1 if vec is None else 4
            tpr = threads_per_row(n_out, n_red // lanes, wg, lanes)
            variant = (row_slots(kernel, n_red // lanes, tpr, lanes), vec, tpr)
        wgsl = self._wgsl(kernel, variant)
        if not kernel.reduces:
            if not n:
                return wgsl, b"", 0
            count = n // 4 if kernel.vec4 else n
            head = (count, 0, 0, 0)
            threads = count
        else:
            if not n_out:
                return wgsl, b"", 0
            rows = wg // tpr
            head = (n_out, n_red, tpr, rows)
            threads = -(-n_out // rows) * wg
        return wgsl, param_bytes(kernel, args, head), threads

    def _maybe_flush(self) -> None:
        batch, rt = self.batch, self.rt
        if batch.dispatches >= rt.dispatches_per_submit or batch.bound >= rt.bytes_per_submit:
            # Submit long or large rounds in pieces: the GPU starts while we encode the
            # rest, and lavapipe slows down for good after a submission of ~10k dispatches.
            self.flush()

    @staticmethod
    def _storage(kernel: Kernel, loads: list[Buffer],
                 stores: list[Buffer]) -> list[tuple[Buffer, str]]:
        """A launch's buffers in binding order with their access: loads (read-write where
        a store writes in place), then the stores of their own."""
        lent = {st.inplace for st in kernel.stores if st.inplace is not None}
        storage = [(b, "read_write" if k in lent else "read") for k, b in enumerate(loads)]
        storage += [(b, "read_write") for b, st in zip(stores, kernel.stores, strict=True)
                    if st.inplace is None]
        return storage

    def _launch_matmul(self, kernel: Kernel, args: LaunchArgs,
                       storage: list[tuple[Buffer, str]]) -> None:
        """One matmul launch of its plan (tuned first where its shape class is new): one
        dispatch, or a split-K pair (two launches)."""
        self.faults.check("launch", kernel.names)
        key = (kernel, args)
        launch = self._matmuls.get(key)
        if launch is None:
            plan = self.matmul.plan(kernel, args, storage)
            launch = self._matmuls[key] = self.matmul.lay_out(kernel, args, plan)
            if len(self._matmuls) > _MAX_LAUNCHES:
                self._matmuls.popitem(last=False)
        done = self.matmul.encode(self.batch, launch, storage,
                                  lambda nbytes: self.pool.acquire(nbytes, ordered=True),
                                  self.pool.retire)
        for title in (kernel.title, f"{kernel.title} (split-K sum)")[:done]:
            self.counters.launch(title)
        self._maybe_flush()

    def launch_wgsl(self, wgsl: str, title: str, loads: list[Buffer], stores: list[Buffer],
                    params: np.ndarray, groups: tuple[int, int, int]) -> None:
        """Dispatch a user's compute kernel (``af.custom_kernel``): ``groups`` workgroups,
        ``params`` at binding 0, ``loads`` (read-only) then ``stores`` from binding 1."""
        self.rt.check_alive()
        self.faults.check("launch", (title,))
        big = oversized(loads + stores, self.max_binding)
        if big:
            raise refuse(f"custom kernel {title!r}", big, self.max_binding,
                         self.max_buffer_size, "a custom kernel binds its buffers whole; "
                         "give it tensors of at most that many bytes (slices) and combine")
        storage = [(b, "read") for b in loads] + [(b, "read_write") for b in stores]
        if numel(groups):
            self.rt.dispatch(self.batch, wgsl, storage, params.astype(np.uint32).tobytes(), 0,
                             groups, checked=True)
            self.counters.launch(title)
            self._maybe_flush()

    def flush(self) -> None:
        assert_off_loop("queue.submit")
        with self.rt.lock:  # lose() takes it too: never submit to a destroyed device
            self.rt.check_alive()
            if self._reads:
                self._copy_reads()
            if self.rt.submit(self.batch):
                self.counters.submissions += 1
        self.pool.submitted()

    # -- reads ---------------------------------------------------------------------------
    def stage_read(self, buffer: Buffer, layout: Layout, dtype: DType) -> _Read:
        """Note a read; the next flush copies every read noted since the last one into one
        staging buffer (ranges that follow each other in a buffer in one copy)."""
        first, end = layout.span()
        read = _Read(buffer, first, end, layout, dtype)
        if end > first:
            self._reads.append(read)
        return read

    def _copy_reads(self) -> None:
        reads, self._reads = self._reads, []
        reads.sort(key=lambda r: (id(r.buffer.gpu), r.src))
        total = sum(r.nbytes for r in reads)
        try:
            staging = self.staging.acquire(total)
        except Exception as exc:  # noqa: BLE001 - these reads fail; the round goes on
            for r in reads:
                r.error = exc
            return
        group = _ReadGroup(self.rt, staging, len(reads))
        gpu = group.staging.gpu
        run: list[_Read] = []
        at = 0
        for r in reads:
            r.group, r.dst = group, at
            at += r.nbytes
            if run and (r.buffer.gpu is not run[-1].buffer.gpu or
                        r.src != run[-1].src + run[-1].nbytes):
                self.rt.copy(self.batch, run[0].buffer.gpu, gpu, r.dst - run[0].dst,
                             run[0].src, run[0].dst)
                run = []
            run.append(r)
        self.rt.copy(self.batch, run[0].buffer.gpu, gpu, at - run[0].dst, run[0].src,
                     run[0].dst)

    def finish_read(self, token: _Read) -> np.ndarray:
        group = token.group
        if token.error is not None:
            raise token.error
        if group is None:  # an empty read
            return np.zeros(token.layout.shape, dtype=token.dtype.np)
        try:
            self.rt.check_alive()
            raw = group.host()
        finally:
            self._done(group)
        at = token.dst + token.skip
        size = (token.end - token.first) * token.dtype.itemsize
        words = raw[at:at + size].view(token.dtype.storage_np)
        return host_view(words, token.first, token.layout, token.dtype)

    def discard_read(self, token: _Read) -> None:
        if token.group is not None:
            self._done(token.group)
        elif token in self._reads:  # never copied (the submission failed first)
            self._reads.remove(token)

    def _done(self, group: _ReadGroup) -> None:
        group.left -= 1
        if group.left == 0:
            self.staging.release(group.staging)

    def wait_idle(self) -> None:
        """Submit what is encoded and block until the GPU has finished all of it."""
        fence = self.staging.acquire(4)
        try:
            src = self.pool.acquire(4)
            self.rt.copy(self.batch, src.gpu, fence.gpu, 4)
            self.pool.retire(src)
            self.flush()
            self.rt.read_staging(fence.gpu, 4)
        finally:
            self.staging.release(fence)

    def prepare(self) -> None:
        """Begin the next round's encoder and pass (:meth:`Runtime.prepare`)."""
        with self.rt.lock:  # lose() takes it too: never encode on a destroyed device
            self.rt.prepare(self.batch)

    def empty_cache(self) -> None:
        """Destroy every pooled buffer (executor thread, between rounds: the bind groups
        cached for them go too)."""
        self.pool.empty()
        self.staging.empty()

    def memory_stats(self) -> MemoryStats:
        a, b = self.pool.stats(), self.staging.stats()
        return MemoryStats(a.live_buffers + b.live_buffers, a.live_bytes + b.live_bytes,
                           a.pooled_buffers + b.pooled_buffers, a.pooled_bytes + b.pooled_bytes,
                           a.allocations + b.allocations)

    def close(self) -> None:
        """Give every pooled buffer back to the driver (live ones were released first),
        then this device's share of the wgpu device: the last one lets it go."""
        try:
            if self.batch.encoder is not None and self.rt.lost is None:
                self.flush()
            if self.batch.spare is not None:  # begun, never used: ended, never submitted
                self.batch.spare[1].end()
                self.batch.spare = None
            self.pool.clear()
            self.staging.clear()
            for arena, _ in self.batch.arenas:
                self.rt.forget_buffer(arena)
                arena.destroy()
            self.batch = self.rt.new_batch()
        finally:
            detach(self.rt)

    @property
    def lost(self) -> str | None:
        return self.rt.lost

    def lose(self, reason: str) -> None:
        self.rt.lose(reason)


def _wgpu_native_version() -> str:
    from wgpu.backends import wgpu_native  # noqa: PLC0415

    return ".".join(map(str, wgpu_native.version_info))


class _ReadGroup:
    """One staging buffer that the reads of one flush share: mapped once, by whichever
    read finishes first (executor thread), copied to the host and unmapped at once."""

    __slots__ = ("rt", "staging", "left", "_raw", "_error")

    def __init__(self, rt: Runtime, staging: Buffer, reads: int) -> None:
        self.rt = rt
        self.staging = staging
        self.left = reads  # reads not finished or discarded yet
        self._raw: np.ndarray | None = None
        self._error: BaseException | None = None

    def host(self) -> np.ndarray:
        if self._error is not None:
            raise self._error
        if self._raw is None:
            try:
                assert_off_loop("buffer.map_async")
                self._raw = self.rt.read_staging(self.staging.gpu, self.staging.nbytes)
            except Exception as exc:  # noqa: BLE001 - every read of the group fails alike
                self._error = exc
                raise
        return self._raw


class _Read:
    """One staged read: words ``first:end`` of ``buffer``; ``dst`` in its group's
    staging buffer once copied."""

    __slots__ = ("buffer", "first", "end", "layout", "dtype", "group", "dst", "error")

    def __init__(self, buffer: Buffer, first: int, end: int, layout: Layout,
                 dtype: DType) -> None:
        self.buffer = buffer
        self.first = first
        self.end = end
        self.layout = layout
        self.dtype = dtype
        self.group: _ReadGroup | None = None
        self.dst = 0
        self.error: Exception | None = None  # no staging buffer could be had

    @property
    def skip(self) -> int:
        """Bytes before the first element in the copied words (copies are of whole 4-byte
        words; a float16 read may start mid-word)."""
        return self.first * self.dtype.itemsize % 4

    @property
    def src(self) -> int:
        return self.buffer.offset + self.first * self.dtype.itemsize - self.skip

    @property
    def nbytes(self) -> int:
        """The bytes copied: the elements' words, whole."""
        return -(-(self.skip + (self.end - self.first) * self.dtype.itemsize) // 4) * 4
