"""The wgpu backend: each op as one WGSL kernel launch, plus fused element-wise blocks.

An unfused element-wise op is lowered as a one-op :class:`ElementwiseProgram`, so the
plain path and the fused path share one code generator and differ only in block size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._debug import assert_off_loop
from ...dtype import DType
from ...elementwise import BlockLayout, layout_block
from ...ir import CatOp, DropOp, ElementwiseOp, InitOp, OperationIr, ReduceOp, ReshapeOp, numel
from ...trace import Counters
from ..base import Handles, MemoryStats, bind_op_table
from ..faults import FaultInjector
from .codegen import render_elementwise, uniform_words
from .kernels import REDUCE_CHUNK, render_cat_slice, render_reduce
from .memory import BufferPool
from .runtime import Buffer, Runtime, get_runtime

__all__ = ["WgpuBackend"]


class WgpuBackend:
    name = "wgpu"
    fuses = True

    def __init__(self, counters: Counters, *, max_storage_bindings: int | None = None,
                 workgroup: int | None = None) -> None:
        self.rt: Runtime = get_runtime(max_storage_bindings, workgroup)
        self.counters = counters
        self.faults = FaultInjector()
        self.max_storage_bindings = self.rt.max_storage_bindings
        self.max_buffer_size = self.rt.max_buffer_size
        self.pool = BufferPool(self.rt.create_storage, self.faults, self.rt.forget_buffer)
        self.staging = BufferPool(self.rt.create_staging, self.faults, self.rt.forget_buffer)
        self.batch = self.rt.new_batch()
        self._wgsl: dict[Any, str] = {}
        self._kernels: dict[Any, tuple[str, tuple[str, ...], str]] = {}
        self._run = bind_op_table(self)

    @property
    def adapter_summary(self) -> str:
        info = self.rt.adapter_info
        return f"{info.get('device', '?')} ({info.get('backend_type', '?')})"

    # -- the Backend protocol ----------------------------------------------------------
    def upload(self, data: np.ndarray) -> Buffer:
        self.rt.check_alive()
        buf = self.pool.acquire(data.size * 4)
        if data.size:
            raw = np.ascontiguousarray(data)
            if raw.dtype == np.bool_:
                raw = raw.astype(np.uint32)
            self.rt.queue.write_buffer(buf.gpu, 0, raw.tobytes())
        return buf

    def run(self, op: OperationIr, handles: Handles) -> None:
        self.rt.check_alive()
        self._run[type(op)](op, handles)

    def run_elementwise(self, layout: BlockLayout, handles: Handles, scalars: list[Any]) -> None:
        self.rt.check_alive()
        prog = layout.program
        kernel = self._kernels.get(prog)
        if kernel is None:
            names = tuple(i.op for i in prog.body)
            kernel = self._kernels[prog] = (render_elementwise(prog, self.rt.workgroup), names,
                                            f"elementwise[{' '.join(names)}]")
            self.counters.kernels_generated += 1
        wgsl, names, title = kernel
        self.faults.check("launch", names)
        n = numel(layout.shape)
        inputs = [handles[tid] for tid in layout.inputs]
        outs = [inputs[slot] if slot is not None else self.pool.acquire(n * 4, ordered=True)
                for slot in prog.inplace]
        if n:
            params = np.zeros(uniform_words(prog), dtype=np.uint32)
            params[0] = n // 4 if prog.vec4 else n
            params[1:1 + prog.rank] = layout.shape
            for k, (dt, value) in enumerate(zip(prog.scalars, scalars, strict=True)):
                params[1 + prog.rank + k] = (int(bool(value)) if dt is DType.bool
                                             else np.array(value, dtype=dt.np).view(np.uint32))
            lent = {s for s in prog.inplace if s is not None}
            storage = [(b, "read_write" if k in lent else "read") for k, b in enumerate(inputs)]
            storage += [(b, "read_write") for b, s in zip(outs, prog.inplace, strict=True)
                        if s is None]
            self._dispatch(wgsl, storage, params, int(params[0]), title)
        for tid, buf in zip(layout.outputs, outs, strict=True):
            handles[tid] = buf
        for slot in prog.inplace:
            if slot is not None:
                handles.pop(layout.inputs[slot], None)

    def release(self, handle: Any) -> None:
        # Once this batch has encoded commands, a freed buffer may still be read by them, and
        # an upload (queue.write_buffer) into it would run first: retire it until submit.
        if isinstance(handle, Buffer):
            if self.batch.encoder is None:
                self.pool.release(handle)
            else:
                self.pool.retire(handle)

    def flush(self) -> None:
        assert_off_loop("queue.submit")
        with self.rt.lock:  # lose() takes it too: never submit to a destroyed device
            self.rt.check_alive()
            if self.rt.submit(self.batch):
                self.counters.submissions += 1
        self.pool.submitted()

    def stage_read(self, handle: Buffer, shape: tuple[int, ...], dtype: DType) -> Any:
        n = numel(shape)
        staging = self.staging.acquire(max(n * 4, 4))
        if n:
            self.rt.copy(self.batch, handle.gpu, staging.gpu, n * 4)
        return (staging, shape, dtype)

    def finish_read(self, token: Any) -> np.ndarray:
        staging, shape, dtype = token
        n = numel(shape)
        try:
            self.rt.check_alive()
            if not n:
                return np.zeros(shape, dtype=dtype.np)
            assert_off_loop("buffer.map_sync")
            staging.gpu.map_sync(1, 0, staging.capacity)  # wgpu.MapMode.READ
            try:
                raw = np.frombuffer(staging.gpu.read_mapped(0, n * 4), dtype=dtype.storage_np)
            finally:
                staging.gpu.unmap()
            out = raw.astype(np.bool_) if dtype is DType.bool else raw
            return out.reshape(shape)
        finally:
            self.staging.release(staging)

    def discard_read(self, token: Any) -> None:
        self.staging.release(token[0])

    def wait_idle(self) -> None:
        """Submit what is encoded and block until the GPU has finished all of it."""
        fence = self.staging.acquire(4)
        try:
            src = self.pool.acquire(4)
            self.rt.copy(self.batch, src.gpu, fence.gpu, 4)
            self.pool.retire(src)
            self.flush()
            fence.gpu.map_sync(1, 0, fence.capacity)
            fence.gpu.unmap()
        finally:
            self.staging.release(fence)

    def memory_stats(self) -> MemoryStats:
        a, b = self.pool.stats(), self.staging.stats()
        return MemoryStats(a.live_buffers + b.live_buffers, a.live_bytes + b.live_bytes,
                           a.pooled_buffers + b.pooled_buffers, a.pooled_bytes + b.pooled_bytes,
                           a.allocations + b.allocations)

    def close(self) -> None:
        """Give every pooled buffer back to the driver; live ones were released first."""
        if self.batch.encoder is not None and self.rt.lost is None:
            self.flush()
        self.pool.clear()
        self.staging.clear()
        for arena, _ in self.batch.arenas:
            self.rt.forget_buffer(arena)
            arena.destroy()
        self.batch = self.rt.new_batch()

    # -- unfused ops -------------------------------------------------------------------
    def _init(self, op: InitOp, handles: Handles) -> None:
        handles[op.out.id] = self.upload(op.data)

    def _elementwise(self, op: ElementwiseOp, handles: Handles) -> None:
        layout = layout_block([op], inplace=False)
        self.run_elementwise(layout, handles, list(op.scalars))

    def _simple(self, name: str, wgsl: str, src: Buffer, dst: Buffer, params: list[int]) -> None:
        self.faults.check("launch", (name,))
        if params[0] == 0:
            return
        words = np.zeros(-(-len(params) // 4) * 4, dtype=np.uint32)
        words[:len(params)] = params
        self._dispatch(wgsl, [(src, "read"), (dst, "read_write")], words, params[0], name)

    def _dispatch(self, wgsl: str, storage: list[tuple[Buffer, str]], params: np.ndarray,
                  threads: int, name: str) -> None:
        self.rt.dispatch(self.batch, wgsl, storage, params, threads)
        self.counters.launch(name)
        if self.batch.dispatches >= self.rt.dispatches_per_submit:
            # Submit long rounds in pieces: the GPU starts while we encode the rest, and
            # lavapipe slows down for good after a submission of ~10k dispatches.
            self.flush()

    def _reduce(self, op: ReduceOp, handles: Handles) -> None:
        shape = op.input.shape
        if op.axis is None:
            outer, r, inner = 1, numel(shape), 1
        else:
            outer = numel(shape[:op.axis])
            r, inner = shape[op.axis], numel(shape[op.axis + 1:])
        combine = "sum" if op.op in ("sum", "mean") else op.op
        src, src_dtype, total = handles[op.input.id], op.input.dtype, r
        acc = DType.float32 if op.op == "mean" else src_dtype
        while True:  # passes of REDUCE_CHUNK-element chunks until one chunk is left
            chunks = max(1, -(-r // REDUCE_CHUNK))
            final = chunks == 1
            out = self.pool.acquire(outer * chunks * inner * 4, ordered=True)
            divide = final and op.op == "mean"
            key = ("reduce", combine, src_dtype, acc, divide)
            wgsl = self._wgsl.get(key) or self._wgsl.setdefault(
                key, render_reduce(combine, src_dtype, acc, divide, self.rt.workgroup))
            self._simple(f"reduce_{op.op}", wgsl, src, out,
                         [outer * chunks * inner, r, inner, REDUCE_CHUNK, total, 0, 0, 0])
            if src is not handles[op.input.id]:
                self.pool.retire(src)
            if final:
                break
            src, src_dtype, r = out, acc, chunks
        handles[op.out.id] = out

    def _cat(self, op: CatOp, handles: Handles) -> None:
        out = self.pool.acquire(numel(op.out.shape) * 4, ordered=True)
        inner = numel(op.out.shape[op.axis + 1:])
        out_row = op.out.shape[op.axis] * inner
        wgsl = self._wgsl.get("cat") or self._wgsl.setdefault(
            "cat", render_cat_slice(self.rt.workgroup))
        offset = 0
        for t in op.tensors:
            row = t.shape[op.axis] * inner
            self._simple("cat", wgsl, handles[t.id], out, [numel(t.shape), max(row, 1),
                                                          out_row, offset])
            offset += row
        handles[op.out.id] = out

    def _reshape(self, op: ReshapeOp, handles: Handles) -> None:
        src: Buffer = handles[op.input.id]
        out = self.pool.acquire(src.nbytes, ordered=True)
        if src.nbytes:
            self.rt.copy(self.batch, src.gpu, out.gpu, src.nbytes)
        handles[op.out.id] = out

    def _drop(self, op: DropOp, handles: Handles) -> None:
        h = handles.pop(op.tensor.id, None)
        if isinstance(h, Buffer):
            self.release(h)
