"""Host cost of many small tasks: 1000 tasks each awaiting a cheap 8-op chain's read.

Prints, per repetition, the wall time, the event-loop thread's CPU time and the executor
thread's CPU time (``time.thread_time`` around each of the server's worker jobs), then
their medians. The chain has no transcendental math, so the device work is negligible
even on a CPU Vulkan: what is measured is Python host overhead. Writes nothing.

Usage: python bench/many_tasks_cpu.py [--tasks 1000] [--reps 7] [--heap N]
[--no-freeze] [--backend wgpu|numpy] [--profile]
(``--heap N``: N small objects made before the device opens, as imported libraries leave
behind, for the collector to walk; ``--no-freeze``: the device leaves the collector alone
(``freeze_gc=False``); ``--profile``: a yappi CPU profile per thread of one more
repetition, top entries.)
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio
import numpy as np

import asyncfusion as af
from asyncfusion.runtime import worker as server

ELEMS = 64
worker_cpu = [0.0]


def _timed_jobs() -> None:
    """Accumulate the CPU time of every job the server's worker thread runs."""
    def _next(self: server.Worker) -> bool:
        job = self.jobs.get()
        if job is None:
            return False
        fn, done = job
        t0 = time.thread_time()
        result = fn()
        worker_cpu[0] += time.thread_time() - t0
        try:
            self.call(done, result)
        except RuntimeError:
            pass
        return True

    server.Worker._next = _next  # type: ignore[method-assign]


def chain(x: Any) -> Any:
    y = x * 0.5 + 1.0
    y = y * y - 0.25
    y = y * 2.0 + x
    return y * 0.125 - 3.0


async def rep(xs: list[Any]) -> None:
    async def one(x: Any) -> None:
        await chain(x).to_data()

    async with anyio.create_task_group() as tg:
        for x in xs:
            tg.start_soon(one, x)


async def main(tasks: int, reps: int, profile: bool, backend: str, freeze: bool) -> None:
    async with af.open_device(backend, freeze_gc=freeze) as dev:
        rng = np.random.default_rng(0)
        xs = [af.tensor(rng.standard_normal(ELEMS).astype(np.float32), device=dev)
              for _ in range(tasks)]
        await rep(xs)  # warm up: compile, cache the plan
        walls, loops, workers = [], [], []
        for _ in range(reps):
            worker_cpu[0] = 0.0
            t0, c0 = time.perf_counter(), time.thread_time()
            await rep(xs)
            walls.append(1e3 * (time.perf_counter() - t0))
            loops.append(1e3 * (time.thread_time() - c0))
            workers.append(1e3 * worker_cpu[0])
            print(f"wall {walls[-1]:7.1f} ms   loop cpu {loops[-1]:7.1f} ms   "
                  f"executor cpu {workers[-1]:7.1f} ms")
        print(f"median over {reps}: wall {statistics.median(walls):.1f} ms, loop cpu "
              f"{statistics.median(loops):.1f} ms, executor cpu "
              f"{statistics.median(workers):.1f} ms ({tasks} tasks)")
        if profile:
            import yappi

            yappi.set_clock_type("cpu")
            yappi.start()
            await rep(xs)
            yappi.stop()
            for th in yappi.get_thread_stats():
                print(f"--- thread {th.name} ({th.ttot * 1e3:.1f} ms)")
                stats = yappi.get_func_stats(ctx_id=th.id)
                stats.sort("tsub").print_all(columns={0: ("name", 60), 1: ("ncall", 9),
                                                      2: ("tsub", 8), 3: ("ttot", 8)})


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", type=int, default=1000)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--heap", type=int, default=0)
    p.add_argument("--no-freeze", action="store_true")
    p.add_argument("--backend", default="wgpu", choices=("wgpu", "numpy"))
    a = p.parse_args()
    heap = [{"i": [i]} for i in range(a.heap)]  # noqa: F841 - alive for the whole run
    _timed_jobs()
    anyio.run(main, a.tasks, a.reps, a.profile, a.backend, not a.no_freeze)
