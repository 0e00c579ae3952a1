"""Fan-out: 20 chains of one input, all kept, one sync; and one chain + sync, repeated.

1. Fan-out: ``outs = [chain(x + i) for i in range(20)]`` (the seed's 8-op chain on one
   input of N floats, every result kept) then ``await dev.sync()``, repeated. Reports ms
   per chain and the buffer allocations of each repetition after the first (the caching
   allocator keeps them at 0), beside torch (CUDA where present; torch.compile of the
   chain and eager) doing the same 20 chains + synchronize.
2. One chain: ``chain(x)`` + ``await dev.sync()``, repeated, beside torch the same way.

Usage: python bench/fanout.py [--quick] [--no-torch] [--sizes 64M]
Writes bench/results/fanout-<host-tag>.json.
"""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np

import _common as C
import asyncfusion as af

NAME = "fanout"
CHAINS = 20


class Plan:
    def __init__(self, quick: bool, sizes: str | None) -> None:
        self.sizes = C.parse_sizes(sizes) if sizes else ([1 << 16] if quick else [1 << 26])
        self.budget_s = 1.0 if quick else 3.0
        self.min_reps = 3
        self.max_reps = 10 if quick else 30


async def asyncfusion_rows(dev: Any, n: int, plan: Plan) -> dict[str, Any]:
    x = af.rand(n, seed=1, device=dev)
    await dev.sync()
    allocations: list[int] = []

    async def fanout() -> None:
        outs = [C.chain(x + float(i)) for i in range(CHAINS)]  # noqa: F841 - all kept
        await dev.sync()
        allocations.append(dev.memory_stats().allocations)

    async def one() -> None:
        y = C.chain(x)  # noqa: F841 - kept until the sync
        await dev.sync()

    out: dict[str, Any] = {"n": n}
    st = await C.ameasure(fanout, warmup=1, min_reps=plan.min_reps, max_reps=plan.max_reps,
                          budget_s=plan.budget_s)
    grew = [b - a for a, b in zip(allocations, allocations[1:])]
    out["fanout"] = {"ms": st.summary(1e3), "ms_per_chain": st.median * 1e3 / CHAINS,
                     "allocations_after_first": sum(grew), "repetitions": len(allocations)}
    st = await C.ameasure(one, warmup=1, min_reps=plan.min_reps, max_reps=plan.max_reps,
                          budget_s=plan.budget_s)
    out["one_chain"] = {"ms": st.summary(1e3)}
    del x
    await dev.sync()
    return out


def torch_rows(torch: Any, n: int, plan: Plan) -> dict[str, Any]:
    device = C.torch_device(torch)
    x = torch.rand(n, device=device)

    def chain(t: Any) -> Any:
        return (((t * 0.5 + 1.0).sin().exp() * 0.25 + 2.0).cos()).abs()

    out: dict[str, Any] = {"device": device}
    compiled = torch.compile(chain)
    for label, fn in (("eager", chain), ("compile", compiled)):
        def fanout(fn: Any = fn) -> None:
            outs = [fn(x + float(i)) for i in range(CHAINS)]  # noqa: F841
            C.torch_sync(torch, device)

        def one(fn: Any = fn) -> None:
            fn(x)
            C.torch_sync(torch, device)

        st = C.measure(fanout, warmup=2, min_reps=plan.min_reps, max_reps=plan.max_reps,
                       budget_s=plan.budget_s)
        st1 = C.measure(one, warmup=2, min_reps=plan.min_reps, max_reps=plan.max_reps,
                        budget_s=plan.budget_s)
        out[label] = {"fanout_ms_per_chain": st.median * 1e3 / CHAINS,
                      "one_chain_ms": st1.summary(1e3)}
    return out


async def run(plan: Plan, info_box: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    async with af.open_device() as dev:
        info_box["info"] = C.adapter_info(dev)
        for n in plan.sizes:
            rows.append(await asyncfusion_rows(dev, n, plan))
    return rows


def main(args: Any) -> None:
    plan = Plan(args.quick, args.sizes)
    info_box: dict[str, Any] = {}
    res = anyio.run(run, plan, info_box)
    torch = None if args.no_torch else C.import_torch()
    peers = {r["n"]: torch_rows(torch, r["n"], plan) for r in res} if torch else {}
    info = info_box["info"]
    rows = []
    for r in res:
        p = peers.get(r["n"], {})
        rows.append([C.fmt_size(r["n"]), r["fanout"]["ms_per_chain"],
                     r["fanout"]["allocations_after_first"], r["fanout"]["repetitions"],
                     r["one_chain"]["ms"]["median"],
                     p.get("compile", {}).get("fanout_ms_per_chain"),
                     p.get("eager", {}).get("fanout_ms_per_chain"),
                     p.get("compile", {}).get("one_chain_ms", {}).get("median")])
    print(C.table(["N", "ms/chain", "allocs after 1st", "reps", "1 chain+sync ms",
                   "torch.compile ms/chain", "torch eager ms/chain",
                   "torch.compile 1 chain ms"], rows,
                  f"{CHAINS} chains of one input (all kept) + one sync, on "
                  f"{info.get('summary')}"))
    payload = C.meta(info, args, chains=CHAINS)
    payload["results"] = {"asyncfusion": res, "torch": peers}
    path = C.write_json(NAME, C.host_tag(info), payload, args.out)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    parser = C.base_parser(__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None,
                        help="input sizes, comma-separated (default 64M; --quick: 64K)")
    a = parser.parse_args()
    C.apply_common(a)
    main(a)
