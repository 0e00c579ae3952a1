"""Floors measured without asyncfusion's runtime, for the scoreboard's peers
(``bench/scoreboard.py``).

* ``RawGpu``: a wgpu device of its own (the adapter wgpu prefers, "timestamp-query"
  where offered, the adapter's largest buffers).
* ``roundtrip_floor``: the raw 16-byte round trip through wgpu-py that
  ``await (x * 2).to_data()`` cannot beat: upload 16 B, one tiny dispatch, a copy into a
  persistent staging buffer, submit, map with ``map_async("READ_NOSYNC")`` (wgpu-py's
  internal mode: no empty submit before the map; ``map_sync`` where that raises), read,
  unmap; once waited for by wgpu-py's poller thread, once by this thread polling the
  device itself, and once mapped, waited for and unmapped through wgpu-native's C API
  directly (``asyncfusion.backends.wgpu.native``: four C calls, nothing of the runtime),
  which is how asyncfusion's reads map; the floor is the fastest. Beside it the same
  trip with ``map_sync``, with a new staging buffer and bind group per trip, the
  dispatch + submit alone and an empty submit.
* ``copy_bandwidth``: a WGSL vec4 copy kernel (one read, one write per element), K
  dispatches in one compute pass, timed by wall clock and by timestamp queries.
* ``lag_beside_python``: the event loop's lateness (1 ms sleeps) beside a thread that runs
  pure Python for a given share of the time: the floor the GIL puts under any executor
  thread of Python, whatever it does.
* ``thread_hop``: one hop to a persistent worker thread and back, as asyncio sees it
  (``queue.SimpleQueue`` + ``loop.call_soon_threadsafe``); beside it ``anyio.to_thread``
  and ``asyncio.sleep(0)``.

    python bench/floors.py [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import queue
import sys
import threading
import time
from typing import Any, Callable

import anyio
import numpy as np
import wgpu

import _common as C
from asyncfusion.backends.wgpu.native import native_map

_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_STAGING = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
_DOUBLE = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&b)) { b[g.x] = a[g.x] * 2.0; }
}
"""
_COPY_WG = 256
_COPY = f"""
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size({_COPY_WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {{
    let i = g.x + g.y * n.x * {_COPY_WG}u;
    if (i < arrayLength(&dst)) {{ dst[i] = src[i]; }}
}}
"""


def _us(st: C.Stats) -> dict[str, float]:
    return {"median_us": st.median * 1e6, "p10_us": st.pct(10) * 1e6,
            "p90_us": st.pct(90) * 1e6, "n": st.n}


def _warm(fn: Callable[[], Any], seconds: float) -> None:
    t0 = C.perf()
    fn()
    while C.perf() - t0 < seconds:
        fn()


class RawGpu:
    """One wgpu adapter and device, nothing of asyncfusion."""

    def __init__(self) -> None:
        self.adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        lim = self.adapter.limits
        self.timestamps = "timestamp-query" in self.adapter.features
        self.max_binding = lim["max-storage-buffer-binding-size"]
        self.max_groups = lim["max-compute-workgroups-per-dimension"]
        self.device = self.adapter.request_device_sync(
            required_features=["timestamp-query"] if self.timestamps else [],
            required_limits={"max-buffer-size": lim["max-buffer-size"],
                             "max-storage-buffer-binding-size": self.max_binding})
        self.queue = self.device.queue
        self.info = dict(self.adapter.info)

    def pipeline(self, wgsl: str) -> Any:
        module = self.device.create_shader_module(code=wgsl)
        return self.device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": "main"})

    def bind(self, pipe: Any, a: Any, b: Any) -> Any:
        return self.device.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
            {"binding": 0, "resource": {"buffer": a, "offset": 0, "size": a.size}},
            {"binding": 1, "resource": {"buffer": b, "offset": 0, "size": b.size}}])

    def map_read(self, staging: Any, poll: bool = False) -> None:
        """Map ``staging`` for reading without wgpu-py's empty submit first, where its
        internal "READ_NOSYNC" mode exists; ``poll``: this thread waits for the GPU in
        ``wgpuDevicePoll`` itself (wgpu-py's ``_poll_wait``), so the map's callback needs
        no hand-over from wgpu-py's poller thread."""
        try:
            promise = staging.map_async("READ_NOSYNC")
            if poll:
                self.device._poll_wait()
            promise.sync_wait()
        except Exception:  # noqa: BLE001 - the internal mode went away: the public map
            staging.map_sync(wgpu.MapMode.READ)

    def fence(self, staging: Any) -> None:
        """Wait until everything submitted so far has finished (a map of a 4-byte copy)."""
        self.map_read(staging)
        staging.unmap()

    def close(self) -> None:
        self.device.destroy()


def best_trip_us(floor: dict[str, Any]) -> tuple[str, float]:
    """(variant, median µs) of the faster full raw trip of ``roundtrip_floor``."""
    name = min((k for k in ("persistent_nosync", "persistent_nosync_poll",
                            "persistent_native_map") if k in floor),
               key=lambda k: floor[k]["median_us"])
    return name, floor[name]["median_us"]


def roundtrip_floor(raw: RawGpu, warm_s: float, reps: int) -> dict[str, Any]:
    """µs of the raw 16-byte round trip variants (median, p10, p90)."""
    pipe = raw.pipeline(_DOUBLE)
    a = raw.device.create_buffer(size=16, usage=_STORAGE)
    b = raw.device.create_buffer(size=16, usage=_STORAGE)
    group = raw.bind(pipe, a, b)
    kept = raw.device.create_buffer(size=16, usage=_STAGING)
    x = np.arange(4, dtype=np.float32)

    def encode(staging: Any | None, bind_group: Any) -> None:
        raw.queue.write_buffer(a, 0, x)
        enc = raw.device.create_command_encoder()
        cp = enc.begin_compute_pass()
        cp.set_pipeline(pipe)
        cp.set_bind_group(0, bind_group)
        cp.dispatch_workgroups(1)
        cp.end()
        if staging is not None:
            enc.copy_buffer_to_buffer(b, 0, staging, 0, 16)
        raw.queue.submit([enc.finish()])

    native = native_map(raw.device)

    def trip(staging: Any, bind_group: Any, how: str) -> np.ndarray:
        """One trip; ``how`` the staging buffer is mapped: "sync" (``map_sync``), "nosync"
        (READ_NOSYNC, the poller waits), "poll" (READ_NOSYNC, this thread polls),
        "native" (wgpu-native's C API)."""
        encode(staging, bind_group)
        if how == "native":
            assert native is not None
            return native.read(staging, 16).view(np.float32)
        if how == "sync":
            staging.map_sync(wgpu.MapMode.READ)
        else:
            raw.map_read(staging, how == "poll")
        out = np.frombuffer(staging.read_mapped(copy=True), np.float32)
        staging.unmap()
        return out

    def fresh() -> None:
        staging = raw.device.create_buffer(size=16, usage=_STAGING)
        trip(staging, raw.bind(pipe, a, b), "sync")
        staging.destroy()

    got = trip(kept, group, "nosync")
    if got.tolist() != [0.0, 2.0, 4.0, 6.0]:
        raise AssertionError(f"raw round trip read {got.tolist()}, expected [0, 2, 4, 6]")
    variants: dict[str, Callable[[], Any]] = {
        "persistent_nosync": lambda: trip(kept, group, "nosync"),
        "persistent_nosync_poll": lambda: trip(kept, group, "poll"),
        **({"persistent_native_map": lambda: trip(kept, group, "native")}
           if native is not None else {}),
        "persistent_map_sync": lambda: trip(kept, group, "sync"),
        "new_staging_map_sync": fresh,
        "dispatch_submit": lambda: encode(None, group),
        "empty_submit": lambda: raw.queue.submit([raw.device.create_command_encoder().finish()]),
    }
    out: dict[str, Any] = {}
    _warm(variants["persistent_nosync"], warm_s)
    for name, fn in variants.items():
        out[name] = _us(C.measure(fn, warmup=10, min_reps=reps, max_reps=reps))
    raw.fence(kept)
    for buf in (a, b, kept):
        buf.destroy()
    return out


def copy_bandwidth(raw: RawGpu, nbytes: int, k: int, warm_s: float, reps: int
                   ) -> dict[str, Any]:
    """The vec4 copy kernel over ``nbytes`` (capped at the adapter's largest binding):
    ms per copy by wall clock (k dispatches, one submission, waited for) and by timestamp
    queries around the pass; GB/s counts one read and one write."""
    nbytes = min(nbytes, raw.max_binding) // 16 * 16
    pipe = raw.pipeline(_COPY)
    src = raw.device.create_buffer(size=nbytes, usage=_STORAGE)
    dst = raw.device.create_buffer(size=nbytes, usage=_STORAGE)
    raw.queue.write_buffer(src, 0, np.ones(nbytes // 4, np.float32))
    group = raw.bind(pipe, src, dst)
    groups = -(-(nbytes // 16) // _COPY_WG)
    gx = min(groups, raw.max_groups)
    gy = -(-groups // gx)
    fence = raw.device.create_buffer(size=16, usage=_STAGING)
    stamps = None
    if raw.timestamps:
        stamps = (raw.device.create_query_set(type="timestamp", count=2),
                  raw.device.create_buffer(size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE
                                           | wgpu.BufferUsage.COPY_SRC),
                  raw.device.create_buffer(size=16, usage=_STAGING))

    def run(count: int, timed: bool) -> int | None:
        enc = raw.device.create_command_encoder()
        writes = {} if not (timed and stamps) else {"timestamp_writes": {
            "query_set": stamps[0], "beginning_of_pass_write_index": 0,
            "end_of_pass_write_index": 1}}
        cp = enc.begin_compute_pass(**writes)
        cp.set_pipeline(pipe)
        cp.set_bind_group(0, group)
        for _ in range(count):
            cp.dispatch_workgroups(gx, gy)
        cp.end()
        enc.copy_buffer_to_buffer(dst, 0, fence, 0, 16)
        if timed and stamps:
            enc.resolve_query_set(stamps[0], 0, 2, stamps[1], 0)
            enc.copy_buffer_to_buffer(stamps[1], 0, stamps[2], 0, 16)
        raw.queue.submit([enc.finish()])
        raw.fence(fence)
        if not (timed and stamps):
            return None
        stamps[2].map_sync(wgpu.MapMode.READ)
        t = np.frombuffer(stamps[2].read_mapped(copy=True), np.uint64).astype(np.int64)
        stamps[2].unmap()
        return int(t[1] - t[0])

    _warm(lambda: run(k, False), warm_s)
    wall = C.measure(lambda: run(k, False), warmup=0, min_reps=reps, max_reps=reps)
    ms = wall.median / k * 1e3
    gpu_ms = None
    if stamps:
        ns = [run(k, True) for _ in range(reps)]
        gpu_ms = float(np.median([v for v in ns if v is not None])) / k / 1e6
    for buf in (src, dst, fence):
        buf.destroy()
    moved = 2 * nbytes
    return {"bytes": nbytes, "k": k, "ms": ms, "gpu_ms": gpu_ms,
            "GBps": moved / (ms * 1e-3) / 1e9,
            "gpu_GBps": moved / (gpu_ms * 1e-3) / 1e9 if gpu_ms else None}


async def thread_hop(warm_s: float, reps: int) -> dict[str, Any]:
    """µs of one hop to a persistent thread and back, awaited on asyncio; beside it
    ``anyio.to_thread.run_sync`` and ``asyncio.sleep(0)``."""
    loop = asyncio.get_running_loop()
    jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()

    def serve() -> None:
        while (job := jobs.get()) is not None:
            job()

    worker = threading.Thread(target=serve, name="floors-hop", daemon=True)
    worker.start()

    async def hop() -> None:
        done = loop.create_future()
        jobs.put(lambda: loop.call_soon_threadsafe(done.set_result, None))
        await done

    async def to_thread() -> None:
        await anyio.to_thread.run_sync(int)

    async def sleep0() -> None:
        await asyncio.sleep(0)

    out: dict[str, Any] = {}
    try:
        t0 = C.perf()
        while C.perf() - t0 < warm_s:
            await hop()
        for name, fn in (("worker_hop", hop), ("anyio_to_thread", to_thread),
                         ("asyncio_sleep0", sleep0)):
            out[name] = _us(await C.ameasure(fn, warmup=10, min_reps=reps, max_reps=reps))
    finally:
        jobs.put(None)
        worker.join()
    return out


async def lag_beside_python(seconds: float, duty: float, chunk_s: float = 0.002
                            ) -> dict[str, Any]:
    """p50/p99 lateness (ms) of 1 ms sleeps on the loop while another thread runs Python
    bytecode ``duty`` of the time (in ``chunk_s`` bursts, sleeping between), under the
    interpreter's switch interval as the caller left it."""
    duty = min(max(duty, 0.01), 1.0)
    stop = threading.Event()

    def burn() -> None:
        while not stop.is_set():
            t0 = C.perf()
            while C.perf() - t0 < chunk_s:
                sum(range(64))
            if duty < 1.0:
                time.sleep(chunk_s * (1 - duty) / duty)

    worker = threading.Thread(target=burn, name="floors-gil", daemon=True)
    worker.start()
    late: list[float] = []
    try:
        end = C.perf() + seconds
        while C.perf() < end:
            t0 = C.perf()
            await anyio.sleep(0.001)
            late.append((C.perf() - t0 - 0.001) * 1e3)
    finally:
        stop.set()
        worker.join()
    return {"duty": duty, "switch_interval_s": sys.getswitchinterval(), "ticks": len(late),
            "p50_ms": C.percentile(late, 50), "p99_ms": C.percentile(late, 99)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="small sizes, few repetitions")
    args = p.parse_args()
    warm_s, reps = (0.05, 20) if args.smoke else (1.0, 400)
    raw = RawGpu()
    print(f"adapter: {raw.adapter.summary}  timestamps: {raw.timestamps}")
    res = {"roundtrip": roundtrip_floor(raw, warm_s, reps),
           "copy": copy_bandwidth(raw, (4 if args.smoke else 512) << 20, 4 if args.smoke
                                  else 20, warm_s, 3 if args.smoke else 10),
           "hop": anyio.run(thread_hop, warm_s, reps)}
    raw.close()
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
