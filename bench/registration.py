"""What one op costs to register, and what one small read costs end to end.

1. Registration (µs/op): a tight loop of ``y = x * 2.0`` (tensor-scalar) and ``y = x + z``
   (tensor-tensor) on 4-element tensors, inside an event-loop task, with no read. Ops are
   registered in chunks; each chunk is timed alone, then drained with an (untimed)
   ``await dev.sync()`` so the queue never grows past one chunk. Peers: the same
   statement on a 4-element float32 numpy array, and on a torch tensor (eager, CPU; and
   CUDA where present), in the same process.
2. Round trip (µs): ``await (x * 2.0).to_data()`` on a 4-element tensor, median of many,
   for the wgpu device fused and plain and the numpy reference backend, under asyncio
   and trio (``anyio.run(..., backend="trio")``).

Usage: python bench/registration.py [--quick] [--no-torch]
Writes bench/results/registration-<host-tag>.json.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any

import anyio
import numpy as np

import _common as C
import asyncfusion as af

NAME = "registration"


class Plan:
    def __init__(self, quick: bool) -> None:
        self.quick = quick
        # registration: total ops and chunk size per device kind (plain drains are slow on
        # a CPU adapter: every op is one launch, so it gets fewer ops; registration itself
        # is the same code whatever the device's mode)
        self.ops_fused = 20_000 if quick else 100_000
        self.ops_plain = 5_000 if quick else 20_000
        self.chunk = 5_000 if quick else 10_000
        self.peer_ops = 20_000 if quick else 100_000
        self.rt_reps = 150 if quick else 1000
        self.rt_budget_s = 0.7 if quick else 3.0
        self.rt_warmup = 10 if quick else 30


def _loop_per_op(fn: Any, n: int) -> float:
    """Seconds per op of ``fn(n)``, which runs ``n`` ops in a tight loop."""
    t0 = C.perf()
    fn(n)
    return (C.perf() - t0) / n


def op_loops(x: Any, z: Any) -> dict[str, Callable[[int], None]]:
    """The two timed loops, for asyncfusion and its peers alike: ``y = x * 2.0`` and
    ``y = x + z``, each run ``n`` times."""

    def scalar(n: int) -> None:
        for _ in range(n):
            y = x * 2.0  # noqa: F841

    def tensor_tensor(n: int) -> None:
        for _ in range(n):
            y = x + z  # noqa: F841

    return {"x * 2.0": scalar, "x + z": tensor_tensor}


async def registration(dev: Any, total: int, chunk: int, gc_off: bool = False
                       ) -> dict[str, Any]:
    x = af.tensor(np.ones(4, np.float32), device=dev)
    z = af.tensor(np.full(4, 3.0, np.float32), device=dev)
    await dev.sync()

    out: dict[str, Any] = {}
    for label, fn in op_loops(x, z).items():
        fn(min(chunk, 1000))  # warm-up
        await dev.sync()
        st = C.Stats()
        done = 0
        while done < total:
            k = min(chunk, total - done)
            gc.collect()
            if gc_off:
                gc.disable()
            try:
                st.samples.append(_loop_per_op(fn, k))
            finally:
                gc.enable()
            done += k
            await dev.sync()  # drain outside the timed part
        out[label] = {"us_per_op": st.summary(1e6), "ops": total, "chunk": chunk}
    return out


async def round_trip(dev: Any, plan: Plan) -> dict[str, Any]:
    x = af.tensor(np.ones(4, np.float32), device=dev)
    await dev.sync()
    got = await (x * 2.0).to_data()
    assert got.tolist() == [2.0] * 4, got

    async def once() -> None:
        await (x * 2.0).to_data()

    dev.reset_stats()
    st = await C.ameasure(once, warmup=plan.rt_warmup, min_reps=20, max_reps=plan.rt_reps,
                          budget_s=plan.rt_budget_s)
    s = dev.stats()
    reps = st.n + plan.rt_warmup
    return {"us": st.summary(1e6), "p10_us": st.pct(10) * 1e6, "p90_us": st.pct(90) * 1e6,
            "submissions_per_read": s.submissions / reps, "launches_per_read": s.launches / reps}


DEVICES = (("wgpu fused", {"fusion": True}), ("wgpu plain", {"fusion": False}),
           ("numpy backend", {"backend": "numpy"}))


async def round_trips(plan: Plan, loop_name: str, info_box: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, kwargs in DEVICES:
        async with af.open_device(**kwargs) as dev:
            if "info" not in info_box and label.startswith("wgpu"):
                info_box["info"] = C.adapter_info(dev)
            out[label] = await round_trip(dev, plan)
        print(f"  round trip, {loop_name}: {label} done", flush=True)
    return out


async def registrations(plan: Plan, loop_name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, kwargs in DEVICES[:2]:
        total = plan.ops_fused if kwargs["fusion"] else plan.ops_plain
        async with af.open_device(**kwargs) as dev:
            out[label] = await registration(dev, total, plan.chunk)
            if kwargs["fusion"]:
                out[label + ", gc disabled"] = await registration(dev, plan.ops_plain, plan.chunk,
                                                                  gc_off=True)
        print(f"  registration, {loop_name}: {label} done", flush=True)
    return out


def peers(plan: Plan) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = plan.peer_ops

    def per_op(mk: Any) -> dict[str, Any]:
        res = {}
        for label, fn in op_loops(*mk()).items():
            fn(1000)
            st = C.Stats([_loop_per_op(fn, n // 5) for _ in range(5)])
            res[label] = {"us_per_op": st.summary(1e6), "ops": n}
        return res

    out["numpy (4-elem float32)"] = per_op(
        lambda: (np.ones(4, np.float32), np.full(4, 3.0, np.float32)))

    def empty(k: int) -> None:
        for _ in range(k):
            pass

    out["python loop overhead"] = {"x * 2.0": {"us_per_op": {
        "median": _loop_per_op(empty, n) * 1e6}}}
    torch = C.import_torch()
    if torch is not None:
        out["torch eager cpu (4-elem)"] = per_op(
            lambda: (torch.ones(4), torch.full((4,), 3.0)))
        if torch.cuda.is_available():
            out["torch eager cuda (4-elem, async launch)"] = per_op(
                lambda: (torch.ones(4, device="cuda"), torch.full((4,), 3.0, device="cuda")))
            torch.cuda.synchronize()
    return out


def torch_round_trip(plan: Plan) -> dict[str, Any] | None:
    """``(x * 2.0).cpu().numpy()`` on a 4-element torch tensor (CUDA where present): the
    peer of the round trip above."""
    torch = C.import_torch()
    if torch is None:
        return None
    device = C.torch_device(torch)
    x = torch.ones(4, device=device)
    assert (x * 2.0).cpu().numpy().tolist() == [2.0] * 4
    st = C.measure(lambda: (x * 2.0).cpu().numpy(), warmup=plan.rt_warmup, min_reps=20,
                   max_reps=plan.rt_reps, budget_s=plan.rt_budget_s)
    return {"device": device, "us": st.summary(1e6), "p10_us": st.pct(10) * 1e6,
            "p90_us": st.pct(90) * 1e6}


def main(args: Any) -> dict[str, Any]:
    plan = Plan(args.quick)
    info_box: dict[str, Any] = {}
    loops: dict[str, Any] = {}
    # Round trips first: on lavapipe, a submission with thousands of dispatches (the
    # registration drains below, in plain mode) leaves every later round trip of the
    # process slower, and all devices of a process share one wgpu device.
    for loop_name in ("asyncio", "trio"):
        loops[loop_name] = {"round_trip": anyio.run(round_trips, plan, loop_name, info_box,
                                                    backend=loop_name)}
    for loop_name in ("asyncio", "trio"):
        loops[loop_name]["registration"] = anyio.run(registrations, plan, loop_name,
                                                     backend=loop_name)
    peer = peers(plan)
    torch_rt = torch_round_trip(plan)
    info = info_box["info"]
    tag = C.host_tag(info)
    print(f"\nadapter: {info.get('summary')}  host tag: {tag}"
          f"{'  (quick)' if args.quick else ''}\n")

    rows = []
    for loop_name, res in loops.items():
        for dev_label, ops in res["registration"].items():
            for op, r in ops.items():
                m = r["us_per_op"]["median"]
                np_m = peer["numpy (4-elem float32)"][op]["us_per_op"]["median"]
                rows.append([loop_name, dev_label, op, r["ops"], m, r["us_per_op"]["best"],
                             C.ratio(m, np_m)])
    for peer_label, ops in peer.items():
        for op, r in ops.items():
            m = r["us_per_op"]["median"]
            np_m = peer["numpy (4-elem float32)"][op]["us_per_op"]["median"]
            rows.append(["-", peer_label, op, r.get("ops"), m, r["us_per_op"].get("best"),
                         None if peer_label == "python loop overhead" else C.ratio(m, np_m)])
    print(C.table(["loop", "engine", "op", "ops", "us/op", "best", "x numpy"], rows,
                  "Registering one op (tight loop, no read; median of chunks)"))

    rows = []
    for loop_name, res in loops.items():
        for dev_label, r in res["round_trip"].items():
            rows.append([loop_name, dev_label, r["us"]["median"], r["p10_us"], r["p90_us"],
                         r["us"]["best"], r["us"]["n"], r["submissions_per_read"],
                         r["launches_per_read"]])
    if torch_rt is not None:
        rows.append(["-", f"torch eager {torch_rt['device']}, .cpu().numpy()",
                     torch_rt["us"]["median"], torch_rt["p10_us"], torch_rt["p90_us"],
                     torch_rt["us"]["best"], torch_rt["us"]["n"], None, None])
    print()
    print(C.table(["loop", "device", "median us", "p10", "p90", "best", "n", "subm/read",
                   "launch/read"], rows,
                  "Round trip: await (x * 2.0).to_data() on a 4-element tensor"))

    payload = C.meta(info, args)
    payload["results"] = {"loops": loops, "peers": peer, "torch_round_trip": torch_rt}
    path = C.write_json(NAME, tag, payload, args.out)
    print(f"\nwrote {path}")
    return payload


if __name__ == "__main__":
    a = C.base_parser(__doc__.splitlines()[0]).parse_args()
    C.apply_common(a)
    sys.exit(0 if main(a) else 1)
