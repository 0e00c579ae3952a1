"""CPU time per request of examples/service.py, in process (no network, no uvicorn).

The Starlette app (``create_app``) is driven straight through ASGI: each request is one
call of the app with a prepared scope, a ``receive`` that hands over the JSON body and a
``send`` that keeps the response (a few µs of driver work, counted in the event-loop
thread). ``c`` tasks send requests back to back (concurrency ``c``) under asyncio, as
uvicorn runs the app. Per request it reports CPU time split by thread:

* ``loop_us``: the event-loop thread (parsing, tensors, the await, the response);
* ``executor_us``: asyncfusion's executor thread (fusion, plans, launches, reads) or,
  for the numpy variant, anyio's worker threads that compute;
* ``other_us``: every other thread of the process (on a CPU adapter: lavapipe's
  workers that run the kernels, i.e. the "GPU");
* ``host_us`` = loop + executor: the serialized host CPU a request costs;
* ``gc_us``: wall time in Python's garbage collector (included in the above).

    python bench/service_cpu.py [--quick] [--requests 400] [--concurrency 1,8,32]

The app runs with ``SERVICE_GC_FREEZE=1`` (startup objects frozen, as a deployment
would) unless ``--no-gc-freeze``.

Writes bench/results/service_cpu-<host-tag>.json.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

import _common as C

sys.path.insert(0, str(C.BENCH_DIR.parent))
from examples.service import create_app  # noqa: E402

NAME = "service_cpu"
_RNG = np.random.default_rng(0)
_QUERIES = _RNG.standard_normal((64, 256)).astype(np.float32).tolist()
_XS = _RNG.standard_normal((64, 4, 64)).astype(np.float32).tolist()
BODIES = {"/search": lambda i: {"query": _QUERIES[i % 64], "k": 5},
          "/mlp": lambda i: {"x": _XS[i % 64]}}


class GcClock:
    """Wall time spent in the garbage collector (any thread), through ``gc.callbacks``."""

    def __init__(self) -> None:
        self.total = 0.0
        self.collections = 0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start
            self.collections += 1


def thread_cpu() -> dict[str, float]:
    """CPU seconds of every live Python thread, by name (Linux: per-thread clocks)."""
    out: dict[str, float] = {}
    for t in threading.enumerate():
        if t.ident is None:
            continue
        try:
            clock = time.pthread_getcpuclockid(t.ident)
            out[t.name] = out.get(t.name, 0.0) + time.clock_gettime(clock)
        except (OSError, AttributeError):  # the thread just ended; no per-thread clock
            continue
    return out


async def call(app: Any, path: str, body: bytes) -> bytes:
    """One POST through the ASGI app; returns the response body (status 200 checked)."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "server": ("127.0.0.1", 8000),
             "client": ("127.0.0.1", 1), "app": app,
             "headers": [(b"content-type", b"application/json"),
                         (b"content-length", str(len(body)).encode())]}
    sent = False
    status: list[int] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    if status != [200]:
        raise RuntimeError(f"{path}: status {status}: {b''.join(chunks)[:300]!r}")
    return b"".join(chunks)


async def drive(app: Any, path: str, bodies: list[bytes], conc: int) -> None:
    """Send ``bodies`` with ``conc`` tasks, each sending its share back to back."""
    async def worker(k: int) -> None:
        for b in bodies[k::conc]:
            await call(app, path, b)

    async with anyio.create_task_group() as tg:
        for k in range(conc):
            tg.start_soon(worker, k)


async def bench_variant(variant: str, rows: int, n: int, concs: list[int],
                        profile: str | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    app = create_app(variant, rows)
    gc_clock = GcClock()
    gc.callbacks.append(gc_clock)
    rows_out: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    async with app.router.lifespan_context(app):
        if variant == "af":
            info = C.adapter_info(app.state.service.device())
        loop_name = threading.current_thread().name
        for path in ("/search", "/mlp"):
            bodies = [json.dumps(BODIES[path](i)).encode() for i in range(n)]
            await drive(app, path, bodies[:32], 4)  # warm-up: plans, kernels, pools
            for conc in concs:
                gc.collect()
                t0, p0, th0 = time.perf_counter(), time.process_time(), thread_cpu()
                g0, gn0 = gc_clock.total, gc_clock.collections
                if profile is not None:
                    import cProfile

                    prof = cProfile.Profile(time.thread_time)  # CPU, not GIL waits
                    prof.enable()
                await drive(app, path, bodies, conc)
                if profile is not None:
                    prof.disable()
                    out = Path(profile).with_suffix(f".{variant}{path.replace('/', '.')}"
                                                    f".c{conc}.prof")
                    prof.dump_stats(out)
                wall, proc = time.perf_counter() - t0, time.process_time() - p0
                th1 = thread_cpu()
                delta = {k: v - th0.get(k, 0.0) for k, v in th1.items()}
                loop = delta.get(loop_name, 0.0)
                execu = sum(v for k, v in delta.items()
                            if k.startswith("asyncfusion") or k.startswith("AnyIO worker"))
                row = {"variant": variant, "path": path, "concurrency": conc, "requests": n,
                       "cpu_us": proc / n * 1e6, "loop_us": loop / n * 1e6,
                       "executor_us": execu / n * 1e6,
                       "other_us": (proc - loop - execu) / n * 1e6,
                       "host_us": (loop + execu) / n * 1e6, "wall_us": wall / n * 1e6,
                       "gc_us": (gc_clock.total - g0) / n * 1e6,
                       "gc_per_request": (gc_clock.collections - gn0) / n}
                rows_out.append(row)
                print(json.dumps({k: round(v, 1) if isinstance(v, float) else v
                                  for k, v in row.items()}), flush=True)
    gc.callbacks.remove(gc_clock)
    return rows_out, info


def main() -> None:
    ap = C.base_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=400, help="requests per measurement")
    ap.add_argument("--concurrency", default="1,8,32")
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--variants", default="af,numpy")
    ap.add_argument("--no-gc-freeze", action="store_true",
                    help="leave SERVICE_GC_FREEZE unset (the app then skips gc.freeze())")
    ap.add_argument("--profile", default=None,
                    help="cProfile each measurement into PREFIX.<variant>.<path>.c<N>.prof")
    args = ap.parse_args()
    C.apply_common(args)
    if not args.no_gc_freeze:
        os.environ["SERVICE_GC_FREEZE"] = "1"
    if args.quick:
        args.requests = 120
    concs = [int(c) for c in args.concurrency.split(",")]
    rows: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    for v in args.variants.split(","):
        got, vinfo = anyio.run(bench_variant, v, args.rows, args.requests, concs, args.profile)
        rows += got
        info = vinfo or info
    print(C.table(["variant", "path", "c", "host µs", "loop µs", "executor µs", "other µs",
                   "gc µs", "wall µs"],
                  [[r["variant"], r["path"], r["concurrency"], r["host_us"], r["loop_us"],
                    r["executor_us"], r["other_us"], r["gc_us"], r["wall_us"]] for r in rows],
                  title="CPU per request"))
    tag = C.host_tag(info)
    path = C.write_json(NAME, tag, {"meta": C.meta(info, args, rows_n=args.rows,
                                                   clock="time.process_time + per-thread",
                                                   gc_freeze=not args.no_gc_freeze),
                                    "rows": rows}, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
