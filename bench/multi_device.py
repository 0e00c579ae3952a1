"""1000 tasks over 1, 2 and 4 devices: a device pool in one process beside one worker
process per device, and torch in threads on the same GPUs.

Each task builds the seed's 8-op chain on its own 4096-element input (uploaded before
timing) and awaits ``to_data()``; a repetition is all of them at once. Variants, for each
device count N (capped at what the host has: one device per GPU, or ``--per-gpu`` devices
on each GPU, so that a host with one GPU, or lavapipe, still runs N > 1):

* ``pool``: one process, ``af.open_pool`` over N devices, each task on the least-loaded
  device (``async with pool.device() as dev``);
* ``processes``: N spawned worker processes, each with its own device on its own
  adapter, each running 1000 / N of the tasks; wall time from the first start to the
  last finish of a repetition;
* ``torch``: N threads, each running its share of the chains on ``cuda:i`` one after
  another with ``.cpu()`` per chain (where torch with CUDA is installed).

Throughput is chains per second; ``scaling`` divides it by the one-device figure of the
same variant. Usage: ``python bench/multi_device.py [--quick] [--devices 1,2,4]
[--per-gpu 1] [--tasks 1000]``; writes ``bench/results/multi_device-<host-tag>.json``.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
from typing import Any

import anyio
import numpy as np

import _common as C
import asyncfusion as af
from asyncfusion.runtime.pool import serving_adapters

NAME = "multi_device"
ELEMS = 4096


def _placements(n: int, per_gpu: int) -> list[int] | None:
    """The adapter of each of ``n`` devices (per_gpu on each serving adapter), or None
    where the host has fewer."""
    slots = [a for a in serving_adapters() for _ in range(per_gpu)]
    return slots[:n] if len(slots) >= n else None


async def _pool_rate(adapters: list[int], tasks: int, reps: int) -> dict[str, Any]:
    per = {a: adapters.count(a) for a in adapters}
    if len(set(per.values())) != 1:
        raise ValueError("a pool takes the same number of devices on every adapter")
    async with af.open_pool(adapters=sorted(per), per_adapter=next(iter(per.values()))
                            ) as pool:
        rng = np.random.default_rng(0)
        hosts = [rng.random(ELEMS, dtype=np.float32) for _ in range(tasks)]
        inputs: dict[Any, list[Any]] = {d: [af.tensor(h, device=d) for h in hosts]
                                        for d in pool.devices}  # each device's own copy
        for d in pool.devices:
            await d.sync()

        async def one(i: int) -> None:
            async with pool.device() as dev:
                await C.chain(inputs[dev][i]).to_data()

        async def rep() -> None:
            async with anyio.create_task_group() as tg:
                for i in range(tasks):
                    tg.start_soon(one, i)

        st = await C.ameasure(rep, warmup=1, min_reps=reps, max_reps=reps, budget_s=0)
    return {"ms": st.summary(1e3), "chains_per_s": tasks / st.median}


def _worker(adapter: int, tasks: int, ready: Any, start: Any, done: Any, out: Any) -> None:
    async def main() -> None:
        async with af.open_device(adapter=adapter) as dev:
            rng = np.random.default_rng(adapter)
            xs = [af.tensor(rng.random(ELEMS, dtype=np.float32), device=dev)
                  for _ in range(tasks)]
            await dev.sync()

            async def rep() -> None:
                async with anyio.create_task_group() as tg:
                    for x in xs:
                        tg.start_soon(dev_read, x)

            async def dev_read(x: Any) -> None:
                await C.chain(x).to_data()

            await rep()  # warm-up
            ready.put(adapter)
            await anyio.to_thread.run_sync(start.wait)
            await rep()
            done.put(C.perf())
    try:
        anyio.run(main)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        out.put(repr(exc))
        raise
    out.put("ok")


def _processes_rate(adapters: list[int], tasks: int) -> dict[str, Any]:
    """One timed repetition: every worker set up and warmed, then started at once."""
    ctx = mp.get_context("spawn")  # wgpu does not survive a fork
    share = tasks // len(adapters)
    start = ctx.Event()
    ready, done, out = ctx.Queue(), ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(a, share, ready, start, done, out))
             for a in adapters]
    for p in procs:
        p.start()
    for _ in procs:  # each has opened its device and warmed up
        ready.get(timeout=600)
    t0 = C.perf()  # perf_counter is the system's monotonic clock: the workers' too
    start.set()
    ends = [done.get(timeout=600) for _ in procs]
    status = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    if any(s != "ok" for s in status):
        raise RuntimeError(f"a worker failed: {status}")
    ms = (max(ends) - t0) * 1e3
    return {"ms": {"median": ms}, "chains_per_s": share * len(adapters) / (ms / 1e3),
            "note": "one repetition; start to last finish, worker set-up excluded"}


def _torch_rate(torch: Any, n: int, tasks: int) -> dict[str, Any] | None:
    if torch is None or not torch.cuda.is_available() or torch.cuda.device_count() < n:
        return None
    share = tasks // n
    xs = [[torch.rand(ELEMS, device=f"cuda:{g}") for _ in range(share)] for g in range(n)]
    torch.cuda.synchronize()

    def run(g: int) -> None:
        with torch.cuda.device(g):
            for x in xs[g]:
                C.chain(x).cpu().numpy()

    def rep() -> None:
        threads = [threading.Thread(target=run, args=(g,)) for g in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    st = C.measure(rep, warmup=1, min_reps=3, max_reps=5, budget_s=2.0)
    return {"ms": st.summary(1e3), "chains_per_s": share * n / st.median}


def main() -> None:
    p = C.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--devices", default="1,2,4")
    p.add_argument("--per-gpu", type=int, default=1,
                   help="devices per GPU (several on one GPU where the host has fewer GPUs)")
    p.add_argument("--tasks", type=int, default=1000)
    args = p.parse_args()
    C.apply_common(args)
    torch = C.import_torch()
    tasks = 100 if args.quick else args.tasks
    reps = 2 if args.quick else 5
    rows: list[dict[str, Any]] = []
    base: dict[str, float] = {}
    for n in C.parse_sizes(args.devices):
        adapters = _placements(n, args.per_gpu)
        if adapters is None:
            print(f"  {n} devices: the host has fewer (raise --per-gpu to share GPUs)")
            continue
        row: dict[str, Any] = {"devices": n, "adapters": adapters, "tasks": tasks}
        row["pool"] = anyio.run(_pool_rate, adapters, tasks, reps)
        row["processes"] = _processes_rate(adapters, tasks)
        row["torch"] = _torch_rate(torch, n, tasks)
        for variant in ("pool", "processes", "torch"):
            got = row[variant]
            if got is None:
                continue
            base.setdefault(variant, got["chains_per_s"])
            got["scaling"] = got["chains_per_s"] / base[variant]
        rows.append(row)
        print(C.table(["devices", "pool chains/s", "x", "processes chains/s", "x",
                       "torch chains/s", "x"],
                      [[n, row["pool"]["chains_per_s"], row["pool"]["scaling"],
                        row["processes"]["chains_per_s"], row["processes"]["scaling"],
                        row["torch"]["chains_per_s"] if row["torch"] else None,
                        row["torch"]["scaling"] if row["torch"] else None]]), flush=True)
    first = next(a for a in af.adapters() if a.index == serving_adapters()[0])
    info = {"device": first.name, "adapter_type": first.device_type, "summary": first.name}
    path = C.write_json(NAME, C.host_tag(info), {"meta": C.meta(info, args), "rows": rows},
                        args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
