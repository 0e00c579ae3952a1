"""The scoreboard's host-path rows (issue 21): round trips, registration, many tasks, the
executor's CPU per task, event-loop lag. Each function times one workload after at least
``plan.warm_s`` of sustained work and returns its rows (``board.row``)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import numpy as np

import _common as C
import board as B
import concurrency
import floors
import registration
from reduce import awarm
import asyncfusion as af


def _reg_plan(plan: B.Plan) -> registration.Plan:
    rp = registration.Plan(plan.smoke)
    rp.rt_reps, rp.rt_warmup, rp.rt_budget_s = plan.rt_reps, 10, 2 * plan.budget_s
    rp.peer_ops = plan.reg_ops
    return rp


# -- round trips ----------------------------------------------------------------------------
async def roundtrips(plan: B.Plan, raw: floors.RawGpu, torch: Any) -> list[dict[str, Any]]:
    """``await (x * 2.0).to_data()`` of 4 floats (16 bytes), on the wgpu device beside the
    raw wgpu-py trip of the same process, and on the numpy backend beside one hop to a
    worker thread."""
    rp = _reg_plan(plan)
    floor = floors.roundtrip_floor(raw, plan.warm_s, plan.rt_reps)
    rows = []
    async with af.open_device() as dev:
        x = af.tensor(np.ones(4, np.float32), device=dev)
        await awarm(lambda: (x * 2.0).to_data(), plan.warm_s)
        got = await registration.round_trip(dev, rp)
    clock = B.sm_clock_mhz()
    raw_name, raw_us = floors.best_trip_us(floor)
    torch_rt = registration.torch_round_trip(rp) if torch is not None else None
    rows.append(B.row(
        "roundtrip_wgpu", got["us"]["median"] / 1e3, f"raw wgpu-py trip ({raw_name})",
        raw_us / 1e3, B.ratio_at_most(1.3, "<= 1.3x raw floor"), sm_clock_mhz=clock, unit="us",
        af_p10_us=got["p10_us"], af_p90_us=got["p90_us"],
        submissions_per_read=got["submissions_per_read"],
        launches_per_read=got["launches_per_read"], floors_us=floor,
        torch_us=torch_rt["us"]["median"] if torch_rt else None,
        torch_device=torch_rt["device"] if torch_rt else None))
    hop = await floors.thread_hop(plan.warm_s, plan.rt_reps)
    async with af.open_device(backend="numpy") as dev:
        x = af.tensor(np.ones(4, np.float32), device=dev)
        await awarm(lambda: (x * 2.0).to_data(), plan.warm_s)
        got = await registration.round_trip(dev, rp)
    rows.append(B.row(
        "roundtrip_numpy", got["us"]["median"] / 1e3, "worker-thread hop",
        hop["worker_hop"]["median_us"] / 1e3, B.ratio_at_most(1.5, "<= 1.5x one hop"),
        sm_clock_mhz=B.sm_clock_mhz(), unit="us", af_p10_us=got["p10_us"],
        af_p90_us=got["p90_us"], hops_us=hop))
    return rows


# -- registration ---------------------------------------------------------------------------
async def registration_row(plan: B.Plan, torch: Any) -> list[dict[str, Any]]:
    """µs to record one op (``x * 2.0`` and ``x + z`` on 4 floats; the row is the slower
    of the two medians) beside torch eager (CUDA where present) and numpy."""
    async with af.open_device() as dev:
        x = af.tensor(np.ones(4, np.float32), device=dev)

        async def loop() -> None:
            for _ in range(1000):
                y = x * 2.0  # noqa: F841
            await dev.sync()
        await awarm(loop, plan.warm_s)
        res = await registration.registration(dev, plan.reg_ops, plan.reg_chunk)
    clock = B.sm_clock_mhz()
    peers = registration.peers(_reg_plan(plan))
    us = {op: r["us_per_op"]["median"] for op, r in res.items()}
    label: str | None = next((k for k in peers if k.startswith("torch eager cuda")), None)
    label = label or next((k for k in peers if k.startswith("torch eager")), None)
    label = label or "numpy (4-elem float32)"
    worst = max(us, key=lambda op: us[op])
    peer_us = peers[label][worst]["us_per_op"]["median"]
    return [B.row("registration", us[worst] / 1e3, label, peer_us / 1e3,
                  B.ms_at_most(0.002, "<= 2 us/op"), sm_clock_mhz=clock,
                  unit="us", op=worst, af_us_per_op=us,
                  peers_us_per_op={k: {op: r["us_per_op"]["median"] for op, r in v.items()}
                                   for k, v in peers.items()})]


# -- many tasks -----------------------------------------------------------------------------
async def tasks(plan: B.Plan, n: int, torch: Any) -> list[dict[str, Any]]:
    """``n`` tasks in a task group, each ``await chain(x_i).to_data()`` (the seed's 8-op
    chain on its own ``task_elems`` floats), beside torch reading each chain with
    ``.cpu()`` one after another."""
    rng = np.random.default_rng(n)
    xs_np = [rng.random(plan.task_elems, dtype=np.float32) for _ in range(n)]
    async with af.open_device() as dev:
        xs = [af.tensor(a, device=dev) for a in xs_np]
        out: list[Any] = [None] * n

        async def one(i: int) -> None:
            out[i] = await C.chain(xs[i]).to_data()

        async def rep() -> None:
            async with anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(one, i)

        await awarm(rep, plan.warm_s)
        err = max(float(np.max(np.abs(out[i] - C.chain_np(xs_np[i])))) for i in range(n))
        dev.reset_stats()
        st = await C.ameasure(rep, warmup=0, min_reps=plan.min_reps, max_reps=plan.max_reps,
                              budget_s=plan.budget_s)
        s = dev.stats()
    clock = B.sm_clock_mhz()
    launches = s.launches / st.n
    with ThreadPoolExecutor() as pool:
        np_pool = C.measure(lambda: list(pool.map(C.chain_np, xs_np)), warmup=1,
                            min_reps=plan.min_reps, max_reps=plan.max_reps,
                            budget_s=plan.budget_s).median * 1e3
    peer_rows: dict[str, Any] = {}
    if torch is not None:
        cp = concurrency.Plan(plan.smoke)
        cp.min_reps, cp.max_reps, cp.budget_s = plan.min_reps, plan.max_reps, plan.budget_s
        peer_rows = concurrency.torch_rows(torch, xs_np, cp)
    seq = peer_rows.get("torch_sequential_read", {}).get("ms", {}).get("median")
    target = (B.Target("<= 50 ms and <= 2 launches", (B.Cond("af_ms", "<=", 50.0),
                                                      B.Cond("launches", "<=", 2)))
              if n == 1000 else B.ratio_at_most(1.0, "<= torch sequential"))
    note = None if err <= 1e-3 else f"max |asyncfusion - numpy| = {err:.3g}"
    return [B.row(f"tasks_{n}", st.median * 1e3,
                  B.peer_name(torch, "torch sequential .cpu()"), seq, target,
                  sm_clock_mhz=clock, launches=launches, rounds=s.rounds / st.n,
                  submissions=s.submissions / st.n, batched_instances=s.batched_instances
                  / st.n, max_abs_err=err, numpy_pool_ms=np_pool,
                  torch_one_sync_ms=peer_rows.get("torch_one_sync", {}).get("ms", {})
                  .get("median"), **({"note": note} if note else {}))]


# -- the executor's CPU per task ------------------------------------------------------------
def chain10(x: Any) -> Any:
    """A cheap 10-op element-wise chain (no transcendental math: the device's work is
    negligible, the host's cost is what shows)."""
    y = x * 0.5 + 1.0
    y = y * y - 0.25
    y = y * 2.0 + x
    y = y * 0.125 - 3.0
    return abs(y) * 0.5


def thread_cpu_s(threads: list[threading.Thread]) -> float:
    """CPU seconds of ``threads`` (alive ones) so far."""
    total = 0.0
    for th in threads:
        if th.is_alive() and th.ident is not None:
            total += time.clock_gettime(time.pthread_getcpuclockid(th.ident))
    return total


def device_threads(before: set[int]) -> list[threading.Thread]:
    """The device's executor: the threads named for asyncfusion that started since
    ``before`` (idents), else any named for it, else any that started since."""
    alive = threading.enumerate()
    new = [t for t in alive if t.ident not in before]
    found = ([t for t in new if "asyncfusion" in t.name]
             or [t for t in alive if "asyncfusion" in t.name] or new)
    if not found:
        raise RuntimeError("found no executor thread to measure: the device started no "
                           "Python thread and none is named for asyncfusion")
    return found


async def executor(plan: B.Plan, streams: tuple[int, ...]) -> list[dict[str, Any]]:
    """Executor-thread CPU per task: ``n`` tasks each reading ``chain10`` of its own
    ``executor_elems`` floats, for each ``n`` in ``streams``; beside numpy's time for the
    same chain on the same input; then the flatness (largest n / smallest)."""
    rows = []
    per_task: dict[int, float] = {}
    rng = np.random.default_rng(7)
    for n in streams:
        xs_np = [rng.standard_normal(plan.executor_elems).astype(np.float32)
                 for _ in range(n)]
        before = {t.ident for t in threading.enumerate() if t.ident is not None}
        async with af.open_device() as dev:
            xs = [af.tensor(a, device=dev) for a in xs_np]
            await dev.sync()
            threads = device_threads(before)

            async def rep() -> None:
                async def one(x: Any) -> None:
                    await chain10(x).to_data()

                async with anyio.create_task_group() as tg:
                    for x in xs:
                        tg.start_soon(one, x)

            if not plan.smoke:  # a smoke run times its first, cold repetition
                await awarm(rep, plan.warm_s, min_calls=1)
            cpu, loop, wall = [], [], []
            t_start = C.perf()
            while len(cpu) < max(plan.min_reps // 2, 1) or (
                    len(cpu) < plan.max_reps and C.perf() - t_start < plan.budget_s):
                c0, l0, w0 = thread_cpu_s(threads), time.thread_time(), C.perf()
                await rep()
                cpu.append(thread_cpu_s(threads) - c0)
                loop.append(time.thread_time() - l0)
                wall.append(C.perf() - w0)
            del xs
        clock = B.sm_clock_mhz()
        np_ms = C.measure(lambda: [chain10(a) for a in xs_np], warmup=1, min_reps=3,
                          max_reps=20, budget_s=min(plan.budget_s, 0.5)).median * 1e3 / n
        per_task[n] = float(np.median(cpu)) * 1e3 / n
        rows.append(B.row(
            f"executor_per_task_{n}", per_task[n], "numpy chain (per task)", np_ms,
            B.ms_at_most(0.020, "<= 20 us"), sm_clock_mhz=clock, unit="us", streams=n,
            reps=len(cpu), loop_cpu_ms_per_task=float(np.median(loop)) * 1e3 / n,
            wall_ms_per_task=float(np.median(wall)) * 1e3 / n,
            executor_threads=[t.name for t in threads]))
    lo, hi = min(per_task), max(per_task)
    rows.append(B.row("executor_flatness", per_task[hi], f"executor_per_task_{lo}",
                      per_task[lo], B.ratio_at_most(1.3, f"<= 1.3x ({lo} -> {hi} streams)"),
                      sm_clock_mhz=B.sm_clock_mhz(), unit="us"))
    return rows


# -- event-loop lag -------------------------------------------------------------------------
async def loop_lag(plan: B.Plan) -> list[dict[str, Any]]:
    """p99 lateness of 1 ms sleeps beside ``lag_readers`` tasks reading the seed chain of
    ``task_elems`` floats in a loop. The peer is the GIL's floor: the same ticker beside
    a thread running pure Python for the share of the time the executor thread was busy
    (its CPU time over the window); the ticker alone is in the row's details."""
    before = {t.ident for t in threading.enumerate() if t.ident is not None}
    async with af.open_device() as dev:
        x = af.tensor(np.ones(plan.task_elems, np.float32), device=dev)
        await awarm(lambda: C.chain(x).to_data(), plan.warm_s)
        threads = device_threads(before)
        idle = await concurrency.lag_beside(dev, plan.lag_s / 2, 0, plan.task_elems)
        cpu0 = thread_cpu_s(threads)
        busy = await concurrency.lag_beside(dev, plan.lag_s, plan.lag_readers,
                                            plan.task_elems)
        duty = (thread_cpu_s(threads) - cpu0) / busy["seconds"]
    gil = await floors.lag_beside_python(plan.lag_s, duty)
    return [B.row("loop_lag_p99", busy["p99_ms"], "beside a Python thread as busy as the "
                  "executor (GIL floor) p99", gil["p99_ms"], B.ms_at_most(1.0, "<= 1 ms"),
                  sm_clock_mhz=B.sm_clock_mhz(), readers=plan.lag_readers, busy=busy,
                  idle=idle, executor_duty=duty, gil_floor=gil)]
