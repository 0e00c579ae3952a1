"""The seed's 8-op element-wise chain: asyncfusion fused vs plain vs numpy vs torch.

    t = x*0.5; t = t+1.0; t = sin(t); t = exp(t); t = t*0.25; t = t+2.0; t = cos(t); t = abs(t)

Two ways of timing each engine, per input size:

* end-to-end: the input lives on the device already; one iteration is "build the chain
  + ``await y.to_data()``" (for torch: ``chain(x).cpu().numpy()``), so it includes the
  readback to a numpy array.
* device-resident: K iterations of ``x = chain(x)`` (the output, in [0, 1], feeds the next
  iteration) followed by one ``await dev.sync()`` (torch: ``cuda.synchronize()``), so it
  leaves the readback out. asyncfusion would happily fuse *across* iterations (up to 64
  ops per kernel), which no peer does, so the main "fused" column puts a tiny non-fusible
  op (a 1-element reshape) between iterations to keep one kernel per chain; the
  "x-chain" column lets it fuse freely. Its time is split into "reg" (registering the
  ops, Python) and "exec" (the sync: encoding, submission and the device's work).

Usage: python bench/fusion_chain.py [--quick] [--sizes 1e3,1e6,64M] [--no-torch]
Writes bench/results/fusion_chain-<host-tag>.json.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import anyio
import numpy as np

import _common as C
import asyncfusion as af

NAME = "fusion_chain"
CPU_SIZES = [10**3, 10**4, 10**5, 10**6, 10**7]
GPU_EXTRA = [64 << 20]
QUICK_SIZES = [10**3, 10**5, 10**6]
REFERENCES_64M_MS = {"torch.compile (H-class GPU, reported)": 0.158,
                     "hand-written fused WGSL kernel (reported)": 0.133}
TOL = 1e-3


class Plan:
    """Repetition settings for one run."""

    def __init__(self, quick: bool, gpu: bool) -> None:
        self.quick = quick
        self.gpu = gpu
        self.budget_s = 0.3 if quick else 1.0
        self.min_reps = 3
        self.max_reps = 15 if quick else 50
        # total elements pushed through the resident loop per repetition
        self.resident_work = (4e9 if gpu else 4e7) / (4 if quick else 1)
        self.k_min, self.k_max = ((16, 256) if gpu else (4, 64)) if not quick else (2, 16)
        # a safety net for plain mode: if buffers freed during a round could not be reused
        # before the round is submitted (as before asyncfusion 94b2d05), a long round would
        # hold every intermediate at once; sync often enough to bound that to 4 GiB
        self.plain_mem_cap = 4 << 30

    def k_total(self, n: int) -> int:
        return int(min(self.k_max, max(self.k_min, self.resident_work // max(n, 1))))

    def plain_group(self, n: int, k: int) -> int:
        return int(max(1, min(k, self.plain_mem_cap // (C.CHAIN_OPS * n * 4))))


def _round_k(k: int, group: int) -> int:
    return max(group, k // group * group)


async def bench_af(dev: Any, x_np: np.ndarray, ref: np.ndarray, plan: Plan,
                   variants: tuple[str, ...]) -> dict[str, Any]:
    """End-to-end and resident timings of one asyncfusion device."""
    n = x_np.size
    out: dict[str, Any] = {}
    x = af.tensor(x_np, device=dev)
    await dev.sync()

    # correctness, and a first run that compiles the kernels
    y = await C.chain(x).to_data()
    out["max_abs_err"] = float(np.max(np.abs(y - ref))) if n else 0.0

    # -- end-to-end: build the chain + await to_data() ------------------------------------
    async def e2e() -> None:
        await C.chain(x).to_data()

    await e2e()
    dev.reset_stats()
    allocs = dev.memory_stats().allocations
    st = await C.ameasure(e2e, warmup=0, min_reps=plan.min_reps, max_reps=plan.max_reps,
                          budget_s=plan.budget_s)
    s = dev.stats()
    out["e2e_allocations_per_iter"] = (dev.memory_stats().allocations - allocs) / st.n
    out["e2e_ms"] = st.summary(1e3)
    out["e2e_launches_per_op"] = s.launches / (st.n * C.CHAIN_OPS)
    out["e2e_submissions_per_iter"] = s.submissions / st.n
    out["e2e_plan_cache"] = {"hits": s.plan_cache_hits, "misses": s.plan_cache_misses}
    del x

    # -- device-resident: K chains, one sync ------------------------------------------------
    k_base = plan.k_total(n)
    for variant in variants:
        split = variant != "xchain"
        group = plan.plain_group(n, k_base) if variant == "plain" else k_base
        k = _round_k(k_base, group)
        state = {"x": af.tensor(x_np, device=dev), "reg": 0.0}
        tiny = af.tensor(np.zeros(1, np.float32), device=dev)
        await dev.sync()

        async def resident() -> None:
            xr = state.pop("x")
            reg = 0.0
            t0 = C.perf()
            for i in range(k):
                xr = C.chain(xr)
                if split:
                    marker = tiny.reshape(-1)  # non-fusible: closes the fused block
                    del marker
                if (i + 1) % group == 0:
                    t1 = C.perf()
                    reg += t1 - t0
                    await dev.sync()
                    t0 = C.perf()
            state["x"] = xr
            state["reg"] += reg

        await resident()  # warm-up: explores the plan, compiles the kernels
        dev.reset_stats()
        state["reg"] = 0.0
        allocs = dev.memory_stats().allocations
        st = await C.ameasure(resident, warmup=0, min_reps=plan.min_reps,
                              max_reps=plan.max_reps, budget_s=plan.budget_s)
        s = dev.stats()
        allocs = (dev.memory_stats().allocations - allocs) / (st.n * k)
        res = await state["x"].to_data()
        ok = bool(np.all(np.isfinite(res)) and res.min() >= 0.0 and res.max() <= 1.0)
        per_iter = st.summary(1e3 / k)
        reg_ms = state["reg"] / (st.n * k) * 1e3
        out[f"resident_{variant}"] = {
            "k": k, "sync_every": group, "ms": per_iter,
            "reg_ms": reg_ms, "exec_ms": per_iter["mean"] - reg_ms,
            "launches_per_op": s.launches / (st.n * k * C.CHAIN_OPS),
            "submissions_per_iter": s.submissions / (st.n * k),
            "allocations_per_iter": allocs,
            "plan_cache": {"hits": s.plan_cache_hits, "misses": s.plan_cache_misses},
            "output_in_range": ok,
        }
        del state, tiny
    await dev.sync()
    return out


def bench_numpy(x_np: np.ndarray, plan: Plan) -> dict[str, Any]:
    st = C.measure(lambda: C.chain_np(x_np), warmup=1, min_reps=plan.min_reps,
                   max_reps=plan.max_reps, budget_s=plan.budget_s)
    return {"ms": st.summary(1e3)}


def bench_torch(torch: Any, x_np: np.ndarray, ref: np.ndarray, plan: Plan,
                compiled: Any) -> dict[str, Any]:
    device = C.torch_device(torch)
    n = x_np.size
    out: dict[str, Any] = {}
    x = torch.from_numpy(x_np).to(device)
    C.torch_sync(torch, device)
    for name, fn in (("eager", C.chain), ("compile", compiled)):
        if fn is None:
            continue
        r: dict[str, Any] = {}
        try:
            y = fn(x).cpu().numpy()  # the first call compiles
            r["max_abs_err"] = float(np.max(np.abs(y - ref))) if n else 0.0

            def e2e(fn: Any = fn) -> None:
                fn(x).cpu().numpy()

            r["e2e_ms"] = C.measure(e2e, warmup=1, min_reps=plan.min_reps,
                                    max_reps=plan.max_reps, budget_s=plan.budget_s).summary(1e3)
            k = plan.k_total(n)
            box = {"x": x.clone()}

            def resident(fn: Any = fn, k: int = k) -> None:
                xr = box["x"]
                for _ in range(k):
                    xr = fn(xr)
                C.torch_sync(torch, device)
                box["x"] = xr

            st = C.measure(resident, warmup=1, min_reps=plan.min_reps, max_reps=plan.max_reps,
                           budget_s=plan.budget_s)
            r["resident"] = {"k": k, "ms": st.summary(1e3 / k)}
        except Exception as exc:  # noqa: BLE001 - e.g. torch.compile without a compiler
            r["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        out[name] = r
    del x
    if device == "cuda":
        torch.cuda.empty_cache()  # leave the GPU's memory to the next size's wgpu buffers
    return out


def _med(d: dict[str, Any] | None, *path: str) -> float | None:
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d.get("median") if isinstance(d, dict) else d


def fresh_compile(torch: Any) -> Any:
    """A static-shape ``torch.compile`` of the chain, with dynamo's caches cleared, so each
    size gets its own specialized kernel (no automatic-dynamic recompile, no recompile
    limit)."""
    try:
        torch._dynamo.reset()
        return torch.compile(C.chain, dynamic=False)
    except Exception as exc:  # noqa: BLE001
        print(f"torch.compile unavailable: {exc}", file=sys.stderr)
        return None


async def main(args: Any) -> dict[str, Any]:
    torch = C.import_torch()
    # The adapter decides the default sizes; devices are opened fresh for every size
    # (below), so one size's pooled buffers never decide another's allocations.
    async with af.open_device(fusion=True) as probe:
        info = C.adapter_info(probe)
    gpu = not C.is_cpu_adapter(info)
    tag = C.host_tag(info)
    plan = Plan(args.quick, gpu)
    if args.sizes:
        sizes = C.parse_sizes(args.sizes)
    elif args.quick:
        sizes = QUICK_SIZES
    else:
        sizes = CPU_SIZES + (GPU_EXTRA if gpu else [])
    print(f"adapter: {info.get('summary')}  host tag: {tag}  "
          f"torch: {getattr(torch, '__version__', 'not installed')}"
          f"{' (' + C.torch_device(torch) + ')' if torch else ''}")
    print(f"sizes: {', '.join(C.fmt_size(s) for s in sizes)}"
          f"{'  (quick)' if args.quick else ''}\n")

    rng = np.random.default_rng(0)
    results = []
    for n in sizes:
        x_np = rng.random(n, dtype=np.float32)
        ref = C.chain_np(x_np)
        t0 = C.perf()
        row: dict[str, Any] = {"n": n}
        async with af.open_device(fusion=True) as fdev:
            row["fused"] = await bench_af(fdev, x_np, ref, plan, ("fused", "xchain"))
        async with af.open_device(fusion=False) as pdev:
            row["plain"] = await bench_af(pdev, x_np, ref, plan, ("plain",))
        row["numpy"] = bench_numpy(x_np, plan)
        if torch is not None:
            row["torch"] = bench_torch(torch, x_np, ref, plan, fresh_compile(torch))
        for eng in ("fused", "plain"):
            if row[eng]["max_abs_err"] > TOL:
                print(f"WARNING: {eng} differs from numpy by {row[eng]['max_abs_err']:.3g} "
                      f"at n={n}", file=sys.stderr)
        results.append(row)
        print(f"  {C.fmt_size(n):>5}: done in {C.perf() - t0:.1f} s", flush=True)

    payload = C.meta(info, args, sizes=sizes, chain_ops=C.CHAIN_OPS,
                     resident_note="fused: 1-element reshape between iterations keeps one "
                                   "kernel per chain; xchain: free fusion across iterations",
                     torch_compile="torch.compile(chain, dynamic=False), dynamo reset per size",
                     references_64M_ms=REFERENCES_64M_MS if gpu else None)
    payload["results"] = results
    report(results, gpu)
    path = C.write_json(NAME, tag, payload, args.out)
    print(f"\nwrote {path}")
    return payload


def report(results: list[dict[str, Any]], gpu: bool) -> None:
    rows = []
    for r in results:
        f, p, nu, t = r["fused"], r["plain"], r["numpy"], r.get("torch", {})
        fm, pm, nm = _med(f, "e2e_ms"), _med(p, "e2e_ms"), _med(nu, "ms")
        te, tc = _med(t, "eager", "e2e_ms"), _med(t, "compile", "e2e_ms")
        rows.append([C.fmt_size(r["n"]), fm, pm, nm, te, tc, C.ratio(fm, pm), C.ratio(fm, nm),
                     C.ratio(fm, tc), f["e2e_launches_per_op"], p["e2e_launches_per_op"]])
    print()
    print(C.table(["size", "fused", "plain", "numpy", "torch", "t.compile", "fused/plain",
                   "fused/numpy", "fused/t.comp", "launch/op F", "launch/op P"], rows,
                  "End-to-end: build chain + await to_data()  (ms/iter, median; ratio < 1: "
                  "fused is faster)"))

    rows = []
    for r in results:
        f, p, nu, t = r["fused"], r["plain"], r["numpy"], r.get("torch", {})
        rf, rx, rp = f["resident_fused"], f["resident_xchain"], p["resident_plain"]
        fm, xm, pm, nm = _med(rf, "ms"), _med(rx, "ms"), _med(rp, "ms"), _med(nu, "ms")
        te, tc = _med(t, "eager", "resident", "ms"), _med(t, "compile", "resident", "ms")
        gbs = (2 * r["n"] * 4 / (fm * 1e-3) / 1e9) if fm else None
        rows.append([C.fmt_size(r["n"]), rf["k"], fm, rf["reg_ms"], rf["exec_ms"], xm, pm,
                     rp["sync_every"], nm, te, tc, C.ratio(fm, pm), C.ratio(fm, nm),
                     C.ratio(fm, tc), gbs, rf["launches_per_op"], rx["launches_per_op"],
                     rp["launches_per_op"]])
    print()
    print(C.table(["size", "K", "fused", "reg", "exec", "x-chain", "plain", "P sync/", "numpy",
                   "torch", "t.compile", "fused/plain", "fused/numpy", "fused/t.comp",
                   "fused GB/s", "l/op F", "l/op X", "l/op P"], rows,
                  "Device-resident: K x (x = chain(x)) + one sync  (ms/iter, median; reg/exec "
                  "split of fused; GB/s counts 1 read + 1 write)"))
    print("fused: a 1-element reshape between iterations keeps one kernel per chain; x-chain: "
          "fusion across iterations allowed;\nplain syncs every 'P sync/' chains (a bound on "
          "a round's intermediates, 4 GiB)")

    errors = [(r["n"], eng, v["error"]) for r in results
              for eng, v in r.get("torch", {}).items() if "error" in v]
    for n, eng, err in errors:
        print(f"torch {eng} at n={n}: {err}")
    if gpu:
        for r in results:
            if r["n"] == 64 << 20:
                fm = _med(r["fused"]["resident_fused"], "ms")
                print("\nAt 64M: asyncfusion fused resident "
                      f"{fm:.3f} ms/iter; " + "; ".join(
                          f"{k}: {v} ms (fused/that = {fm / v:.2f})"
                          for k, v in REFERENCES_64M_MS.items()))
    if results and not math.isnan(results[0]["fused"]["max_abs_err"]):
        worst = max(max(r["fused"]["max_abs_err"], r["plain"]["max_abs_err"]) for r in results)
        print(f"\nmax |asyncfusion - numpy| over all sizes: {worst:.3g}")


if __name__ == "__main__":
    parser = C.base_parser(__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None,
                        help="comma-separated element counts (1e6, 4096, 64M = 64*2**20)")
    a = parser.parse_args()
    C.apply_common(a)
    anyio.run(main, a)
