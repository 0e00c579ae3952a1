"""Many tasks reading at once, and how long the event loop stalls under device work.

1. Throughput: N = 1, 10, 100, 1000 tasks in one anyio task group, each building the
   seed's 8-op chain on its own 4096-element input (uploaded before timing) and awaiting
   ``to_data()``; versus the same N chains read one after another in one task; versus
   numpy doing the N chains in a thread pool (and serially, for reference); versus torch
   eager (CUDA where present) doing the N chains one after another, each read back with
   ``.cpu()``, and all N launched with one synchronize. The device
   server batches every request that arrived since its last round into one submission,
   and the equal chains of a round's tasks into one launch (cross-stream batching): the
   table shows submissions, launches and rounds per repetition, launches per round and
   the instances that ran batched.
2. Event-loop stall: a ticker task sleeps 1 ms in a loop and records how late each wake
   is, first alone (baseline), then beside heavy device work (1e6-element chains read in
   a loop, by one task and by 4 tasks), then beside numpy running the same chain on the
   loop thread (what blocking compute does to the loop, for contrast).

Usage: python bench/concurrency.py [--quick] [--loop asyncio|trio] [--tasks 100,1000]
Writes bench/results/concurrency-<host-tag>.json.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import numpy as np

import _common as C
import asyncfusion as af

NAME = "concurrency"
ELEMS = 4096
STALL_ELEMS = 10**6
TICK_S = 0.001


class Plan:
    def __init__(self, quick: bool, tasks: str | None = None) -> None:
        self.ns = ([int(n) for n in tasks.split(",")] if tasks
                   else [1, 10, 100] if quick else [1, 10, 100, 1000])
        self.budget_s = 0.5 if quick else 2.0
        self.min_reps = 3
        self.max_reps = 10 if quick else 30
        self.stall_s = 1.0 if quick else 3.0


def torch_rows(torch: Any, xs_np: list[np.ndarray], plan: Plan) -> dict[str, Any]:
    """The same N chains in torch eager, one after another, each read back with
    ``.cpu()`` (what a service that awaits its result per request does), and launched all
    at once with one synchronize at the end (the best case: no read per chain)."""
    device = C.torch_device(torch)
    xs = [torch.from_numpy(a).to(device) for a in xs_np]
    C.torch_sync(torch, device)

    def each_read() -> None:
        for x in xs:
            C.chain(x).cpu().numpy()

    def one_sync() -> None:
        ys = [C.chain(x) for x in xs]
        C.torch_sync(torch, device)
        del ys

    out: dict[str, Any] = {}
    for label, fn in (("torch_sequential_read", each_read), ("torch_one_sync", one_sync)):
        st = C.measure(fn, warmup=1, min_reps=plan.min_reps, max_reps=plan.max_reps,
                       budget_s=min(plan.budget_s, 1.0))
        out[label] = {"ms": st.summary(1e3), "chains_per_s": len(xs) / st.median,
                      "device": device}
    return out


async def throughput(dev: Any, n: int, plan: Plan, pool: ThreadPoolExecutor,
                     torch: Any) -> dict[str, Any]:
    rng = np.random.default_rng(n)
    xs_np = [rng.random(ELEMS, dtype=np.float32) for _ in range(n)]
    xs = [af.tensor(a, device=dev) for a in xs_np]
    await dev.sync()
    results: list[Any] = [None] * n

    async def worker(i: int) -> None:
        results[i] = await C.chain(xs[i]).to_data()

    async def concurrent() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(worker, i)

    async def sequential() -> None:
        for i in range(n):
            results[i] = await C.chain(xs[i]).to_data()

    out: dict[str, Any] = {"n": n}
    for label, fn in (("concurrent", concurrent), ("sequential", sequential)):
        await fn()  # warm-up (kernels, plan cache, staging buffers)
        err = max(float(np.max(np.abs(results[i] - C.chain_np(xs_np[i])))) for i in range(n))
        dev.reset_stats()
        st = await C.ameasure(fn, warmup=0, min_reps=plan.min_reps, max_reps=plan.max_reps,
                              budget_s=plan.budget_s)
        s = dev.stats()
        out[label] = {"ms": st.summary(1e3), "chains_per_s": n / st.median,
                      "submissions_per_rep": s.submissions / st.n,
                      "launches_per_rep": s.launches / st.n,
                      "rounds_per_rep": s.rounds / st.n,
                      "launches_per_round": s.launches / max(s.rounds, 1),
                      "batched_instances_per_rep": s.batched_instances / st.n,
                      "max_abs_err": err}

    def np_pool() -> None:
        list(pool.map(C.chain_np, xs_np))

    def np_serial() -> None:
        for a in xs_np:
            C.chain_np(a)

    for label, fn in (("numpy_threads", np_pool), ("numpy_serial", np_serial)):
        st = C.measure(fn, warmup=1, min_reps=plan.min_reps, max_reps=plan.max_reps,
                       budget_s=min(plan.budget_s, 1.0))
        out[label] = {"ms": st.summary(1e3), "chains_per_s": n / st.median}
    if torch is not None:
        out.update(torch_rows(torch, xs_np, plan))
    del xs
    await dev.sync()
    return out


SCENARIOS = {"idle": (0, False), "asyncfusion, 1 reader": (1, False),
             "asyncfusion, 4 readers": (4, False), "numpy on the loop thread": (0, True)}


async def stall(dev: Any, plan: Plan, scenario: str) -> dict[str, Any]:
    """Lateness of 1 ms sleeps while ``scenario`` runs beside the ticker."""
    readers, numpy_on_loop = SCENARIOS[scenario]
    return {"scenario": scenario, **await lag_beside(dev, plan.stall_s, readers, STALL_ELEMS,
                                                     numpy_on_loop)}


async def lag_beside(dev: Any, seconds: float, readers: int, elems: int,
                     numpy_on_loop: bool = False) -> dict[str, Any]:
    """Lateness of 1 ms sleeps for ``seconds`` beside ``readers`` tasks that each read
    the chain of one ``elems``-element input in a loop (and numpy running the chain on
    the loop thread, if ``numpy_on_loop``)."""
    lateness: list[float] = []
    work = {"chains": 0}
    x_np = np.random.default_rng(1).random(elems, dtype=np.float32)
    x = af.tensor(x_np, device=dev)
    await dev.sync()
    await C.chain(x).to_data()  # compile outside the measured window
    stop = anyio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            t0 = C.perf()
            await anyio.sleep(TICK_S)
            lateness.append(C.perf() - t0 - TICK_S)

    async def af_reader() -> None:
        while not stop.is_set():
            await C.chain(x).to_data()
            work["chains"] += 1

    async def np_on_loop() -> None:
        while not stop.is_set():
            C.chain_np(x_np)  # blocks the event loop for the whole chain
            work["chains"] += 1
            await anyio.sleep(0)

    workers = [af_reader] * readers + ([np_on_loop] if numpy_on_loop else [])
    t_start = C.perf()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        for w in workers:
            tg.start_soon(w)
        await anyio.sleep(seconds)
        stop.set()
    elapsed = C.perf() - t_start
    ms = [v * 1e3 for v in lateness]
    return {"ticks": len(ms), "p50_ms": C.percentile(ms, 50),
            "p99_ms": C.percentile(ms, 99), "max_ms": max(ms) if ms else None,
            "mean_ms": (sum(ms) / len(ms)) if ms else None,
            "work_chains_per_s": work["chains"] / elapsed, "seconds": elapsed}


async def run(plan: Plan, info_box: dict[str, Any], torch: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"throughput": [], "stall": []}
    workers = os.cpu_count() or 2
    with ThreadPoolExecutor(max_workers=workers) as pool:
        async with af.open_device(fusion=True) as dev:
            info_box["info"] = C.adapter_info(dev)
            print(f"adapter: {info_box['info'].get('summary')}  host tag: "
                  f"{C.host_tag(info_box['info'])}")
            for n in plan.ns:
                t0 = C.perf()
                out["throughput"].append(await throughput(dev, n, plan, pool, torch))
                print(f"  N={n}: done in {C.perf() - t0:.1f} s", flush=True)
            for scenario in SCENARIOS:
                out["stall"].append(await stall(dev, plan, scenario))
                print(f"  stall, {scenario}: done", flush=True)
    out["numpy_threads"] = workers
    return out


def main(args: Any) -> None:
    plan = Plan(args.quick, args.tasks)
    info_box: dict[str, Any] = {}
    torch = None if args.no_torch else C.import_torch()
    res = anyio.run(run, plan, info_box, torch, backend=args.loop)
    info = info_box["info"]
    tag = C.host_tag(info)

    rows = []
    for r in res["throughput"]:
        c, s, nt, ns = r["concurrent"], r["sequential"], r["numpy_threads"], r["numpy_serial"]
        tq = r.get("torch_sequential_read", {}).get("ms", {}).get("median")
        t1 = r.get("torch_one_sync", {}).get("ms", {}).get("median")
        rows.append([r["n"], c["ms"]["median"], c["chains_per_s"], s["ms"]["median"],
                     s["chains_per_s"], nt["ms"]["median"], nt["chains_per_s"],
                     ns["chains_per_s"], tq, t1,
                     C.ratio(s["ms"]["median"], c["ms"]["median"]),
                     C.ratio(nt["ms"]["median"], c["ms"]["median"]),
                     C.ratio(tq, c["ms"]["median"]),
                     c["submissions_per_rep"], s["submissions_per_rep"], c["launches_per_rep"],
                     c["rounds_per_rep"], c["launches_per_round"],
                     c["batched_instances_per_rep"]])
    print()
    print(C.table(["N", "conc ms", "conc ch/s", "seq ms", "seq ch/s", "np-pool ms",
                   "np-pool ch/s", "np-serial ch/s", "torch seq-read ms", "torch 1-sync ms",
                   "speedup vs seq", "speedup vs np-pool", "speedup vs torch seq",
                   "subm conc", "subm seq", "launch conc", "rounds conc", "launch/round",
                   "batched conc"], rows,
                  f"N tasks x (8-op chain on {ELEMS} elements + await to_data()), fused "
                  f"device, {args.loop}  (median wall time of all N; speedup > 1: "
                  "concurrent asyncfusion is faster)"))

    rows = [[r["scenario"], r["ticks"], r["p50_ms"], r["p99_ms"], r["max_ms"],
             r["work_chains_per_s"]] for r in res["stall"]]
    print()
    print(C.table(["beside", "ticks", "p50 ms", "p99 ms", "max ms", "work chains/s"], rows,
                  f"Event-loop stall: lateness of a {TICK_S * 1e3:.0f} ms sleep "
                  f"(work: {C.fmt_size(STALL_ELEMS)}-element chains read in a loop)"))

    payload = C.meta(info, args, loop=args.loop, elems=ELEMS, stall_elems=STALL_ELEMS,
                     tick_s=TICK_S)
    payload["results"] = res
    path = C.write_json(NAME, tag, payload, args.out)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    parser = C.base_parser(__doc__.splitlines()[0])
    parser.add_argument("--loop", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--tasks", default=None,
                        help="task counts N, comma-separated (default 1,10,100,1000; "
                             "--quick: 1,10,100)")
    a = parser.parse_args()
    C.apply_common(a)
    main(a)
