"""Where one small await's time goes: ``await (x * 2).to_data()`` of 16 floats, cut into
phases by timestamps at the seams of the host path, beside the raw wgpu-py round trip of
the same run (``floors.roundtrip_floor``: what no runtime on wgpu-py can beat).

Each phase is the median over the trips of the time between two marks (perf_counter_ns):
the front end records the op and queues the read; the worker thread takes the round;
the executor plans and launches (parameters, bind group, encoding); the batch is flushed
and submitted; the map waits for the GPU; the result is copied out; the loop is told.
The marks wrap methods of the runtime in this process only (a profiling tool, not an API);
they add about 1 µs each. Writes ``bench/results/roundtrip_phases-<host>.json``.

    python bench/roundtrip_phases.py [--quick]
"""

from __future__ import annotations

import functools
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import anyio
import numpy as np

import _common as C
import floors
from board import sm_clock_mhz

import asyncfusion as af
from asyncfusion.backends.wgpu import backend as wgpu_backend
from asyncfusion.backends.wgpu import runtime as wgpu_runtime
from asyncfusion.engine import executor
from asyncfusion.runtime import device, worker

_marks: list[tuple[str, int]] = []
_mark = _marks.append
_ns = time.perf_counter_ns

# (class, method, label): the seams of one round trip, in the order a trip passes them
SEAMS = [(device.Device, "read", "request"), (executor.Executor, "round", "round"),
         (wgpu_backend.WgpuBackend, "launch", "launch"),
         (wgpu_runtime.Runtime, "submit", "submit"),
         (wgpu_runtime.Runtime, "read_staging", "map_and_read")]
# what the gap between two marks is called (start mark, end mark) -> phase
PHASES = {("user>", "request>"): "front end: record the op, make the request",
          ("request>", "request<"): "front end: queue the read",
          ("request<", "job>"): "loop -> executor thread (hop)",
          ("job>", "round>"): "worker: take the job",
          ("round>", "launch>"): "executor: absorb, plan lookup, allocate",
          ("launch>", "launch<"): "launch: parameters, bind group, encode",
          ("launch<", "submit>"): "flush: copies for the read, arena",
          ("submit>", "submit<"): "submit (encoder.finish + queue.submit)",
          ("submit<", "map_and_read>"): "executor: to the read",
          ("map_and_read>", "map_and_read<"): "map (GPU done) + copy out + unmap",
          ("map_and_read<", "round<"): "executor: results to the requests",
          ("round<", "job<"): "worker: end the job",
          ("job<", "done>"): "executor thread -> loop (hop)",
          ("done>", "done<"): "loop: resolve the readers",
          ("done<", "user<"): "loop: wake the awaiting task"}


def _wrap(cls: type, name: str, label: str) -> None:
    fn = getattr(cls, name)

    @functools.wraps(fn)
    def marked(*a: Any, **k: Any) -> Any:
        _mark((label + ">", _ns()))
        try:
            return fn(*a, **k)
        finally:
            _mark((label + "<", _ns()))

    setattr(cls, name, marked)


def _wrap_worker() -> None:
    submit = worker.Worker.submit

    def marked(self: worker.Worker, fn: Callable[[], Any], done: Callable[[Any], object]
               ) -> None:
        def job() -> Any:
            _mark(("job>", _ns()))
            out = fn()
            _mark(("job<", _ns()))
            return out

        def told(result: Any) -> None:
            _mark(("done>", _ns()))
            done(result)
            _mark(("done<", _ns()))

        submit(self, job, told)

    worker.Worker.submit = marked  # type: ignore[method-assign]


async def trips(n: int, warm_s: float) -> tuple[list[list[tuple[str, int]]], float]:
    async with af.open_device("wgpu") as dev:
        x = af.tensor(np.arange(16, dtype=np.float32), device=dev)
        t0 = C.perf()
        while C.perf() - t0 < warm_s:
            await (x * 2).to_data()
        out = []
        for _ in range(n):
            _marks.clear()
            _mark(("user>", _ns()))
            await (x * 2).to_data()
            _mark(("user<", _ns()))
            out.append(list(_marks))
        return out, C.perf() - t0


def phases(recorded: list[list[tuple[str, int]]]) -> tuple[list[dict[str, Any]], float]:
    gaps: dict[tuple[str, str], list[float]] = defaultdict(list)
    for tr in recorded:
        for (a, ta), (b, tb) in zip(tr, tr[1:], strict=False):
            gaps[(a, b)].append((tb - ta) / 1e3)
    total = statistics.median((tr[-1][1] - tr[0][1]) / 1e3 for tr in recorded)
    order = [(a, b) for (a, _), (b, _) in zip(recorded[-1], recorded[-1][1:], strict=False)]
    rows = [{"phase": PHASES.get(k, f"{k[0]} -> {k[1]}"), "from": k[0], "to": k[1],
             "median_us": statistics.median(gaps[k]), "p90_us": C.percentile(gaps[k], 90),
             "trips": len(gaps[k])} for k in order]
    return rows, total


def main() -> None:
    args = C.base_parser(__doc__.splitlines()[0]).parse_args()
    C.apply_common(args)
    warm_s, n = (0.2, 200) if args.quick else (1.5, 2000)
    raw = floors.RawGpu()
    floor = floors.roundtrip_floor(raw, warm_s, 100 if args.quick else 400)
    info = dict(raw.info)
    raw.close()
    for cls, name, label in SEAMS:
        _wrap(cls, name, label)
    _wrap_worker()
    recorded, _ = anyio.run(trips, n, warm_s)
    rows, total = phases(recorded)
    _, raw_us = floors.best_trip_us(floor)
    print(C.table(["phase", "median µs", "p90 µs"],
                  [(r["phase"], r["median_us"], r["p90_us"]) for r in rows],
                  title=f"one await of (x * 2).to_data(), 16 floats: {total:.1f} µs median "
                        f"(raw wgpu-py trip, same run: {raw_us:.1f} µs; "
                        f"{total / raw_us:.2f}x); SM clock {sm_clock_mhz()} MHz"))
    path = C.write_json("roundtrip_phases", C.host_tag(info), {
        **C.meta(info, args), "trip_median_us": total, "raw_floor": floor,
        "ratio_to_floor": total / raw_us, "sm_clock_mhz": sm_clock_mhz(), "phases": rows},
        args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
