"""The wgpu runtime: one adapter and device, buffer pools, a pipeline cache, batched submits.

All methods here run on a device's executor thread, never on the event loop: on lavapipe ``queue.submit`` and buffer maps block while the GPU works.
A batch collects the dispatches of one server round into one command encoder; ``flush``
writes the round's uniforms and submits it as one submission.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from collections.abc import Hashable
from typing import TypedDict

import numpy as np
import wgpu

from ..._core.errors import DeviceClosedError, DeviceLostError, NoAdapterError
from .adapters import request as request_adapter
from .native import (NativePass, TrustedModules, native_map, native_pass,
                     trusted_modules)
from .timing import GpuTimer, TimedSlot, timestamp_period

__all__ = ["Runtime", "Buffer", "get_runtime", "detach", "MAX_PIPELINES", "MAX_PIPELINES_CPU"]

_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_STAGING = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
_UNIFORM = wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
_ARENA = 1 << 16
MAP_READ_NOSYNC = "READ_NOSYNC"  # wgpu-py's map mode: READ without an empty submit first
_MAX_GROUPS = 4096
# A round's encoded dispatches are submitted as soon as they bind this many bytes: the
# GPU starts on large work (~0.1 ms of it at 3 TB/s) while the round encodes the rest,
# instead of idling until the whole round is encoded. Small rounds submit once.
BYTES_PER_SUBMIT = 256 << 20
# requested where the adapter offers them
_FEATURES = ("subgroup", "shader-f16", "shader-f64", "shader-int64", "timestamp-query")


def size_class(nbytes: int) -> int:
    """Pool size class: powers of two up to 1 MiB, then multiples of 1 MiB."""
    n = max(nbytes, 16)
    if n <= 1 << 20:
        return 1 << (n - 1).bit_length()
    return ((n + (1 << 20) - 1) >> 20) << 20


@dataclass(eq=False, slots=True)
class Buffer:
    """A pooled storage buffer; ``nbytes`` is what the tensor uses of it. A range of a
    buffer (``offset`` > 0, a batched kernel's instance) is bound from ``offset``."""

    gpu: wgpu.GPUBuffer
    capacity: int
    nbytes: int
    offset: int = 0


@dataclass(slots=True)
class _Batch:
    """The commands of one round: an encoder, an open compute pass, and uniform arenas.

    Arenas (64 KiB uniform buffers) are kept across rounds, rewritten at a submit where
    what the round wrote differs from what they hold;
    every dispatch reads its parameters at a dynamic offset in one of them, so a bind
    group depends only on the buffers it binds and is cached.
    """

    encoder: wgpu.GPUCommandEncoder | None = None
    cpass: wgpu.GPUComputePassEncoder | None = None
    arenas: list[tuple[wgpu.GPUBuffer, bytearray]] = field(default_factory=list)
    written: list[bytes] = field(default_factory=list)  # what each arena holds on the GPU
    arena: int = -1
    used: int = _ARENA
    dispatches: int = 0
    bound: int = 0  # bytes its dispatches bind (loads and stores), a measure of GPU work
    timed: TimedSlot | None = None  # the timestamp queries of its passes (a GpuTimer's)
    offset: object = None  # its dispatches' dynamic-offset cell (native.NativePass)
    # an encoder with its compute pass begun between rounds (Runtime.prepare), taken by
    # the next round's first command: off the path of the round that waits for it
    spare: tuple[wgpu.GPUCommandEncoder, wgpu.GPUComputePassEncoder] | None = None


class Runtime:
    """Owns one wgpu device. Shared by every asyncfusion Device with the same adapter and
    limits."""

    def __init__(self, max_storage_bindings: int | None, workgroup: int | None,
                 adapter_index: int | None = None) -> None:
        if _FORK["child"]:
            raise DeviceClosedError(
                "this process was forked after asyncfusion used the GPU, and wgpu does not "
                "survive a fork (a new device would hang). Start workers with "
                "multiprocessing's 'spawn' or 'forkserver' start method, fork before the "
                "first GPU use, or use open_device('numpy') in the child")
        try:
            adapter = (wgpu.gpu.request_adapter_sync(power_preference="high-performance")
                       if adapter_index is None else request_adapter(adapter_index))
        except RuntimeError as exc:  # wgpu-native: "Request adapter failed"
            raise NoAdapterError(f"{_NO_ADAPTER} (wgpu: {exc})") from exc
        if adapter is None:
            raise NoAdapterError(_NO_ADAPTER)
        _FORK["used"] = True
        lim = adapter.limits
        want = lim["max-storage-buffers-per-shader-stage"]
        if max_storage_bindings is not None:
            if max_storage_bindings < 4:
                raise ValueError("max_storage_bindings must be at least 4 (one op binds up to 4)")
            want = min(want, max_storage_bindings)
        invocations = min(lim["max-compute-invocations-per-workgroup"],
                          lim["max-compute-workgroup-size-x"])
        if workgroup is not None and workgroup > invocations:
            raise ValueError(f"workgroup={workgroup} is larger than this adapter allows "
                             f"({invocations} invocations); pass at most {invocations}")
        cpu = adapter.info["adapter_type"] == "CPU"
        self.workgroup = workgroup or min(256 if cpu else 512, invocations)
        # A real GPU runs submitted work while we encode more: submit early and often.
        # On lavapipe a submit blocks while earlier work runs, so batch more per submit.
        self.dispatches_per_submit = 256 if cpu else 16
        self.bytes_per_submit = BYTES_PER_SUBMIT
        self.max_storage_bindings = want
        self.max_binding = lim["max-storage-buffer-binding-size"]
        self.max_buffer_size = lim["max-buffer-size"]  # kernels bind max_binding of it
        self.max_workgroups = lim["max-compute-workgroups-per-dimension"]
        self.uniform_align = max(lim["min-uniform-buffer-offset-alignment"], 16)
        self.adapter_info = dict(adapter.info)
        # Freed buffers stay pooled up to this budget (WebGPU does not report the device's
        # memory): 8 GiB on a GPU, a quarter of the host's memory (at most 4 GiB) on a CPU
        # adapter, whose "device memory" is the host's.
        host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        self.pool_budget = min(host // 4, 4 << 30) if cpu else 8 << 30
        # Subgroup operations let a reduction combine a row's partials in registers.
        self.subgroups = "subgroup" in adapter.features
        # float16/float64/int64/uint64 where the adapter offers shader-f16/-f64/-int64.
        # The 8- and 16-bit integers need none: naga (wgpu 0.32) parses no i8 or i16 (not
        # even with shader-i16), so they live in 32-bit lanes (see dtype.py).
        self.features = frozenset(f for f in _FEATURES if f in adapter.features)
        self.device = adapter.request_device_sync(
            required_features=sorted(self.features), required_limits={
            "max-storage-buffers-per-shader-stage": want,
            "max-compute-invocations-per-workgroup": max(self.workgroup, 256),
            "max-compute-workgroup-size-x": max(self.workgroup, 256),
            "max-buffer-size": lim["max-buffer-size"],
            "max-storage-buffer-binding-size": lim["max-storage-buffer-binding-size"],
            "min-storage-buffer-offset-alignment": lim["min-storage-buffer-offset-alignment"],
        })
        self.storage_align = max(lim["min-storage-buffer-offset-alignment"], 4)
        self.queue = self.device.queue
        self.lock = threading.RLock()  # serializes encoding/submission across devices
        self.lost: str | None = None
        self.key: RuntimeKey = (max_storage_bindings, workgroup, adapter_index)
        self.users = 0  # asyncfusion devices on this runtime (see get_runtime / detach)
        self._pipelines: collections.OrderedDict[
            str, tuple[wgpu.GPUComputePipeline, wgpu.GPUBindGroupLayout]] = (
            collections.OrderedDict())
        self.max_pipelines = MAX_PIPELINES_CPU if cpu else MAX_PIPELINES
        self._groups: dict[tuple[Hashable, ...], wgpu.GPUBindGroup] = {}
        self.pipelines_created = 0
        self._native = native_map(self.device)  # None: reads map through wgpu-py
        self._pass: NativePass | None = native_pass()  # None: wgpu-py encodes dispatches
        # None: generated kernels are compiled with naga's checks, as a user's are
        self._trusted: TrustedModules | None = trusted_modules(self.device)
        self.folds_cancellation = self._folds_cancellation()
        self.fused_fma = self._fused_fma()
        self.timestamp_period = timestamp_period(self.queue)
        self._timer: GpuTimer | None = None

    def _folds_cancellation(self) -> bool:
        """Whether this adapter's shader compiler folds ``x - x`` (and ``x + (-x)``) to 0
        even for inf and NaN, as lavapipe's does: one tiny kernel on inf and NaN read
        from memory, run once when the runtime starts. Where it folds, float add/sub
        keep IEEE special values by bits (``codegen.wgsl.lowering._ieee``); where not, they are the
        plain operators. Assumes it folds when the probe cannot run."""
        code = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(1) fn main() {
  let x = a[0]; let y = a[1]; let v = vec4<f32>(x, y, x, y);
  let w = v - v;
  b[0] = x - x; b[1] = x + (-x); b[2] = y - y; b[3] = w.x; b[4] = w.y; b[5] = (x * 1.0) - x;
}"""
        try:
            got = self._probe(code, np.array([np.inf, np.nan], np.float32), 6)
        except Exception:  # noqa: BLE001 - no answer: keep the guard, which is always right
            return True
        return not bool(np.isnan(got).all())

    def _fused_fma(self) -> bool:
        """Whether this adapter's ``fma`` rounds once (WGSL lets it round a * b first): one
        tiny kernel, run once when the runtime starts, on pairs (a, b) read from memory
        with c = -(a * b rounded), for which the fused result is the product's rounding
        error (exact and nonzero) and the unfused one 0; scalar and vec4 ``fma`` both. Where
        every case comes out fused, the float32 math helpers reduce and evaluate with fma
        (``codegen.wgsl.math_f32``, ``render(..., fma=True)``). Assumes unfused (the text
        that is right either way) when the probe cannot run."""
        code = """
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>, 6>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(1) fn main() {
  for (var i = 0u; i < 4u; i = i + 1u) { b[i] = fma(a[0][i], a[2][i], a[4][i]); }
  let v = fma(a[1], a[3], a[5]);
  b[4] = v.x; b[5] = v.y; b[6] = v.z; b[7] = v.w;
}"""
        x, y = _FMA_CASES
        c = -(x * y)  # float32: the rounded product
        want = (x.astype(np.float64) * y - (x * y)).astype(np.float32)  # exact
        try:
            got = self._probe(code, np.stack([x[:4], x[4:], y[:4], y[4:], c[:4], c[4:]]), 8)
        except Exception:  # noqa: BLE001 - no answer: the unfused text is always right
            return False
        return bool(np.array_equal(got.view(np.uint32), want.view(np.uint32)))

    def _probe(self, code: str, data: np.ndarray, words: int) -> np.ndarray:
        """Run ``code``'s ``main`` once on ``data`` (binding 0, read) and return the first
        ``words`` float32 words it wrote to binding 1 (the start-up probes of the
        compiler)."""
        dev = self.device
        raw = np.ascontiguousarray(data, np.float32).tobytes()
        size = -(-words * 4 // 16) * 16
        src = dev.create_buffer_with_data(data=raw, usage=_STORAGE)
        out = dev.create_buffer(size=size, usage=_STORAGE)
        stage = self.create_staging(size)
        try:
            pipe = dev.create_compute_pipeline(layout="auto", compute={
                "module": dev.create_shader_module(code=code), "entry_point": "main"})
            group = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": {"buffer": src, "offset": 0, "size": len(raw)}},
                {"binding": 1, "resource": {"buffer": out, "offset": 0, "size": size}}])
            enc = dev.create_command_encoder()
            cp = enc.begin_compute_pass()
            cp.set_pipeline(pipe)
            cp.set_bind_group(0, group)
            cp.dispatch_workgroups(1)
            cp.end()
            enc.copy_buffer_to_buffer(out, 0, stage, 0, size)
            self.queue.submit([enc.finish()])
            return self.read_staging(stage, words * 4).view(np.float32)
        finally:
            for buf in (src, out, stage):
                buf.destroy()

    def release(self) -> None:
        """Give the wgpu device back (no asyncfusion device uses it any more)."""
        with self.lock:
            self._pipelines.clear()
            self._groups.clear()
            if self.lost is None:
                self.lost = "released: every device that used it has closed"
                self.device.destroy()

    def lose(self, reason: str) -> None:
        """Destroy the GPU device (tests), between submissions: wgpu-native aborts the
        process on a submit to a destroyed device."""
        with self.lock:
            self.lost = reason
            self.device.destroy()

    def check_alive(self) -> None:
        if self.lost is not None:
            raise DeviceLostError(f"the GPU device was lost ({self.lost}); open a new device")

    # -- pipelines ---------------------------------------------------------------------
    def check_shader(self, wgsl: str) -> None:
        """Compile ``wgsl`` to a shader module (no pipeline): raises wgpu's validation
        error, with the compiler's text, where the shader does not compile."""
        self.device.create_shader_module(code=wgsl)

    def pipeline(self, wgsl: str, storage: list[str], checked: bool = False
                 ) -> tuple[wgpu.GPUComputePipeline, wgpu.GPUBindGroupLayout]:
        """(pipeline, bind group layout) for a kernel text, compiled once per text.

        ``storage`` lists the access ("read" / "read_write") of bindings 1..n; binding 0
        is the uniform params block. Layouts are explicit: "auto" drops unused bindings.
        ``checked``: a user's kernel, compiled with naga's checks; asyncfusion's own
        kernels are compiled without them where wgpu-native allows (``TrustedModules``).
        """
        hit = self._pipelines.get(wgsl)
        if hit is not None:
            self._pipelines.move_to_end(wgsl)
            return hit
        entries = [{"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": wgpu.BufferBindingType.uniform,
                               "has_dynamic_offset": True}}]
        for b, access in enumerate(storage, start=1):
            kind = (wgpu.BufferBindingType.storage if access == "read_write"
                    else wgpu.BufferBindingType.read_only_storage)
            entries.append({"binding": b, "visibility": wgpu.ShaderStage.COMPUTE,
                            "buffer": {"type": kind}})
        bgl = self.device.create_bind_group_layout(entries=entries)
        layout = self.device.create_pipeline_layout(bind_group_layouts=[bgl])
        trusted = None if checked else self._trusted
        module = (self.device.create_shader_module(code=wgsl) if trusted is None
                  else trusted.create(wgsl))
        pipe = self.device.create_compute_pipeline(
            layout=layout, compute={"module": module, "entry_point": "main"})
        self.pipelines_created += 1
        self._pipelines[wgsl] = (pipe, bgl)
        while len(self._pipelines) > self.max_pipelines:  # least recently used goes
            _, (_, old_bgl) = self._pipelines.popitem(last=False)
            for key in [k for k in self._groups if k[0] is old_bgl]:
                del self._groups[key]
        return pipe, bgl

    @property
    def pipelines_alive(self) -> int:
        return len(self._pipelines)

    # -- dispatch ----------------------------------------------------------------------
    def grid(self, threads: int) -> tuple[int, int]:
        groups = max(1, -(-threads // self.workgroup))
        gx = min(groups, self.max_workgroups)
        return gx, -(-groups // gx)

    def dispatch(self, batch: _Batch, wgsl: str, storage: list[tuple[Buffer, str]],
                 data: bytes, threads: int,
                 groups: tuple[int, int, int] | None = None, checked: bool = False) -> None:
        """Encode one dispatch of ``threads`` (in workgroups of the runtime's size), or of
        ``groups`` workgroups as given (a user's kernel, of its own workgroup size);
        ``data`` is the uniform block (binding 0); ``checked``: see :meth:`pipeline`."""
        hit = self._pipelines.get(wgsl)  # the hit path of pipeline(), inlined: a launch's
        if hit is None:                  # hot path (the accesses list only for a miss)
            hit = self.pipeline(wgsl, [access for _, access in storage], checked)
        else:
            self._pipelines.move_to_end(wgsl)
        pipe, bgl = hit
        size = -(-len(data) // 16) * 16
        if batch.used + size > _ARENA:
            batch.arena += 1
            if batch.arena == len(batch.arenas):
                buf = self.device.create_buffer(size=_ARENA, usage=_UNIFORM)
                batch.arenas.append((buf, bytearray(_ARENA)))
                batch.written.append(b"")
            batch.used = 0
        arena, host = batch.arenas[batch.arena]
        off = batch.used
        host[off:off + len(data)] = data
        batch.used = -(-(off + size) // self.uniform_align) * self.uniform_align
        key = (bgl, arena, size,
               *[x for b, _ in storage for x in (b.gpu, b.offset, b.capacity)])
        group = self._groups.get(key)
        if group is None:
            entries = [{"binding": 0, "resource": {"buffer": arena, "offset": 0, "size": size}}]
            for b, (buf, _) in enumerate(storage, start=1):
                bsize = min(buf.capacity, self.max_binding)  # cached: bind it all
                entries.append({"binding": b, "resource": {"buffer": buf.gpu,
                                                            "offset": buf.offset,
                                                            "size": bsize}})
            group = self.device.create_bind_group(layout=bgl, entries=entries)
            if len(self._groups) >= _MAX_GROUPS:
                self._groups.pop(next(iter(self._groups)))
            self._groups[key] = group
        if batch.cpass is None:
            enc = self.encoder(batch)  # a spare comes with its pass begun
            if batch.cpass is None:
                batch.cpass = self._begin_pass(batch, enc)
        cp = batch.cpass
        x, y, z = groups or (*self.grid(threads), 1)
        native = self._pass
        if native is not None:
            if batch.offset is None:
                batch.offset = native.offset_cell()
            native.dispatch(cp, pipe, group, batch.offset, off, x, y, z)
        else:
            cp.set_pipeline(pipe)
            cp.set_bind_group(0, group, [off])
            cp.dispatch_workgroups(x, y, z)
        batch.dispatches += 1
        batch.bound += sum([b.nbytes for b, _ in storage])

    def copy(self, batch: _Batch, src: wgpu.GPUBuffer, dst: wgpu.GPUBuffer, nbytes: int,
             src_offset: int = 0, dst_offset: int = 0) -> None:
        """Encode a buffer copy after everything encoded so far (ends the open pass)."""
        enc = self.encoder(batch)
        self._end_pass(batch)
        enc.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, nbytes)

    def _begin_pass(self, batch: _Batch, enc: wgpu.GPUCommandEncoder
                    ) -> wgpu.GPUComputePassEncoder:
        timer = self._timer
        if timer is None:
            return enc.begin_compute_pass()
        batch.timed, writes = timer.pass_writes(batch.timed)
        return enc.begin_compute_pass(**writes)

    def prepare(self, batch: _Batch) -> None:
        """Begin the next round's encoder and compute pass now, between rounds (executor
        thread, nothing waiting), so that the round does not: wgpu-py takes ~10 µs for
        each. Not while a GPU timer runs (its passes carry timestamp writes)."""
        if batch.encoder is None and batch.spare is None and self._timer is None \
                and self.lost is None:
            enc = self.device.create_command_encoder()
            batch.spare = (enc, enc.begin_compute_pass())

    @contextlib.contextmanager
    def gpu_timer(self) -> Iterator[GpuTimer]:
        """Time the compute passes this runtime begins inside the ``with`` block (every
        device on it) with timestamp queries: ``timer.total_ns()``, once the work has
        finished, is their GPU time (None where the adapter has no "timestamp-query")."""
        timer = GpuTimer(self.device, self.timestamp_period,
                         "timestamp-query" in self.features)
        self._timer = timer if timer.available else None
        try:
            yield timer
        finally:
            self._timer = None

    def _end_pass(self, batch: _Batch) -> None:
        if batch.cpass is not None:
            batch.cpass.end()
            batch.cpass = None

    def encoder(self, batch: _Batch) -> wgpu.GPUCommandEncoder:
        """The batch's encoder: the spare (its pass begun, now the batch's) or a new one."""
        if batch.encoder is None:
            spare, batch.spare = batch.spare, None
            if spare is None:
                batch.encoder = self.device.create_command_encoder()
            else:
                batch.encoder, batch.cpass = spare
                if self._timer is not None:  # begun untimed: the timed passes follow it
                    self._end_pass(batch)
        return batch.encoder

    def submit(self, batch: _Batch) -> bool:
        """Submit what the batch encoded; False when there was nothing to submit."""
        if batch.encoder is None:
            return False
        self._end_pass(batch)
        last = batch.arena
        written = batch.written
        for k, (buf, host) in enumerate(batch.arenas[:last + 1]):
            data = bytes(host[:min(batch.used, _ARENA) if k == last else _ARENA])
            if written[k] != data:  # a repeated round rewrites nothing
                self.queue.write_buffer(buf, 0, data)
                written[k] = data
        if batch.timed is not None:
            batch.timed.timer.resolve(batch.encoder, batch.timed)
            batch.timed = None
        self.queue.submit([batch.encoder.finish()])
        batch.encoder = None
        batch.arena = -1
        batch.used = _ARENA
        batch.dispatches = 0
        batch.bound = 0
        return True

    def forget_buffer(self, gpu: wgpu.GPUBuffer) -> None:
        """Drop cached bind groups that bind ``gpu`` (about to be destroyed). Devices that
        share this runtime have executor threads of their own: work on a snapshot."""
        for key in [k for k in list(self._groups) if gpu in k]:
            self._groups.pop(key, None)

    def new_batch(self) -> _Batch:
        return _Batch()

    # -- reading back ------------------------------------------------------------------
    def read_staging(self, gpu: wgpu.GPUBuffer, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` of a staging buffer, as a fresh host array, once the work
        submitted so far (which wrote it) is done. Blocks: executor thread only.

        Where one asyncfusion device uses this runtime, the read maps, waits and unmaps
        through wgpu-native's C API on this thread (``native.NativeMap``): no empty
        submission first, the wait in ``wgpuDevicePoll`` itself (the map's callback runs
        there), no wake-up of wgpu-py's poller thread. That wait covers everything
        submitted so far, so where several devices share the runtime (whose later
        submissions it would wait for too) the map goes through wgpu-py's
        ``map_async("READ_NOSYNC")`` and its poller instead. Both use wgpu-py 0.32
        internals; ``tests/test_host_path.py`` fails loudly if a release changes them."""
        size = max(4, -(-nbytes // 4) * 4)
        if self.users <= 1 and self._native is not None:
            return self._native.read(gpu, size)
        promise = gpu.map_async(MAP_READ_NOSYNC, 0, size)
        promise.sync_wait()
        try:
            return np.frombuffer(gpu.read_mapped(0, size), dtype=np.uint8)
        finally:
            gpu.unmap()

    # -- buffers -----------------------------------------------------------------------
    def create_storage(self, capacity: int) -> wgpu.GPUBuffer:
        return self.device.create_buffer(size=capacity, usage=_STORAGE)

    def create_staging(self, capacity: int) -> wgpu.GPUBuffer:
        return self.device.create_buffer(size=capacity, usage=_STAGING)


# The fma probe's (a, b): products whose rounding error is nonzero (c = -(a * b) rounded),
# among them (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24, a tie that rounds to 1 + 2^-11.
_FMA_CASES = (
    np.array([1 + 2**-12, 1 + 2**-23, 3.1415927, -1.4142135, 0.1, 1e10, -7.0e-3, 65537.0],
             np.float32),
    np.array([1 + 2**-12, 1 + 2**-23, 2.7182817, 1.7320508, 0.3, 3.3e-7, -1.23e5,
              65539.0], np.float32))

# (max_storage_bindings, workgroup, adapter index or None: wgpu's default adapter)
RuntimeKey = tuple[int | None, int | None, int | None]
_RUNTIMES: dict[RuntimeKey, Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()
_IDLE: dict[str, Runtime] = {}  # at most one runtime that no device uses
# Compiled pipelines kept per runtime; the least recently used go first. On a GPU a
# pipeline costs this process little. A CPU adapter keeps its machine code here: lavapipe
# (Mesa 22.3, LLVM) holds 0.16 MB for a 4-op elementwise chain, 0.9 MB for exp x4 and
# 8-13 MB for chains with sin or cos, so 1,024 of those would take ~10 GB. wgpu-native
# (29.0) frees a released pipeline at the next queue submission (every round submits).
MAX_PIPELINES = 1024
MAX_PIPELINES_CPU = 128
_NO_ADAPTER = ("wgpu found no GPU adapter. On Debian/Ubuntu install a CPU Vulkan driver with "
               "'apt-get install mesa-vulkan-drivers', or use open_device(backend='numpy').")
# "used": this process set up wgpu; "child": it is a fork of one that had. The parent's
# runtimes are kept in "kept", never released: releasing wgpu objects in the child hangs.
class _ForkState(TypedDict):
    used: bool
    child: bool
    kept: list[Runtime]


_FORK: _ForkState = {"used": False, "child": False, "kept": []}


def _after_fork_in_child() -> None:
    global _RUNTIMES_LOCK
    _RUNTIMES_LOCK = threading.Lock()
    if _FORK["used"]:
        _FORK["child"] = True
        _FORK["kept"].extend(_RUNTIMES.values())
    _RUNTIMES.clear()
    _IDLE.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def get_runtime(max_storage_bindings: int | None = None,
                workgroup: int | None = None, *, adapter: int | None = None) -> Runtime:
    """The process-wide runtime for these limits on ``adapter`` (an index into
    ``af.adapters()``; None: wgpu's default), shared by every device open with them.

    Each caller must :func:`detach` once done. When the last one does, the runtime is kept
    idle for the next device (compiled pipelines and all), but only one idle runtime is
    kept: opening devices with many distinct limits does not pile up wgpu devices.
    """
    key = (max_storage_bindings, workgroup, adapter)
    with _RUNTIMES_LOCK:
        rt = _RUNTIMES.get(key)
        if rt is None or rt.lost is not None:
            rt = _RUNTIMES[key] = Runtime(max_storage_bindings, workgroup, adapter)
        if _IDLE.get("rt") is rt:
            del _IDLE["rt"]
        rt.users += 1
        return rt


def live_runtime() -> Runtime | None:
    """A runtime already set up in this process (one a device uses, or the idle one), or
    None: nothing here creates an adapter."""
    with _RUNTIMES_LOCK:
        for rt in _RUNTIMES.values():
            if rt.lost is None:
                return rt
    return None


def detach(rt: Runtime) -> None:
    """One device of ``rt`` closed; the last one parks it idle, evicting the idle one."""
    with _RUNTIMES_LOCK:
        rt.users -= 1
        if rt.users > 0:
            return
        if _RUNTIMES.get(rt.key) is rt and rt.lost is None:
            old = _IDLE.pop("rt", None)
            _IDLE["rt"] = rt
            if old is None:
                return
            rt = old
        if _RUNTIMES.get(rt.key) is rt:
            del _RUNTIMES[rt.key]
    rt.release()
