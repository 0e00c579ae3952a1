"""Fused reductions: the search-service scoring expression, softmax and layer_norm.

Workloads (issue 10, item 7), each over rows of 256 float32 values:

* score: ``(-((db - q) ** 2).sum(axis=1)).exp()`` with ``db`` (N, 256) and ``q`` (256,),
  at N = 4096 and N = 1048576 (``--quick``: 4096 and 65536). ``db`` and ``q`` are
  0.05 * N(0, 1), so the scores spread over (0, 1) instead of underflowing to 0 (which
  would make the numpy check vacuous; the device's work does not depend on the values).
* softmax: ``af.softmax(x, axis=-1)`` with ``x`` (N, 256) of N(0, 1), N = 1048576
  (``--quick``: 65536).
* layer_norm: ``af.layer_norm(x, weight, bias, axis=-1, eps=1e-5)``, weight and bias of
  shape (256,), same ``x``.

Peers, side by side in one run: asyncfusion fused (``open_device()``), asyncfusion plain
(``open_device(fusion=False)``), numpy float32, torch eager and ``torch.compile`` (CUDA
when available, else CPU) where torch is installed.

Device-resident timing: inputs are uploaded once; each peer warms up for at least
``WARMUP_S`` (the H200 clocks down under light Vulkan load), then one repetition is
"build the expression + ``await dev.sync()``" (the result stays alive through the sync
and is dropped after; torch: the call + ``torch.cuda.synchronize()``; numpy: the call).
Each asyncfusion and torch result is checked once against numpy (``np.allclose``, rtol
1e-3, atol 1e-4). asyncfusion's launches per evaluation come from ``dev.stats()``. An
asyncfusion error is recorded (with its traceback) in the JSON and the table, not raised.

Usage: python bench/reduce.py [--quick] [--large N] [--no-torch]
Writes bench/results/reduce-<host-tag>.json.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import traceback
from typing import Any, Callable

import anyio
import numpy as np

import _common as C
import asyncfusion as af

NAME = "reduce"
D = 256
SMALL_N = 4096
LARGE_N = 1 << 20
QUICK_LARGE_N = 1 << 16
EPS = 1e-5
RTOL, ATOL = 1e-3, 1e-4
WARMUP_S = 1.0
NUMPY_CAP_S = 10.0  # skip numpy's repetitions where they would take longer than this
WORKLOADS = ("score", "softmax", "layer_norm")


class Plan:
    """Repetition settings for one run."""

    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.warmup_s = WARMUP_S
        # asyncfusion and torch: repetitions while the budget lasts (fast peers get many,
        # slow ones min_reps)
        self.min_reps = 3 if quick else 5
        self.max_reps = 50 if quick else 2000
        self.budget_s = 1.0
        # numpy: fewer, and none where min_reps would run past NUMPY_CAP_S
        self.np_min_reps = 3 if quick else 2
        self.np_max_reps = 20
        self.np_budget_s = 1.0 if quick else 2.0


# -- the workloads, per engine --------------------------------------------------------------
def score_af(db: Any, q: Any) -> Any:
    return (-((db - q) ** 2).sum(axis=1)).exp()


def score_np(db: np.ndarray, q: np.ndarray) -> np.ndarray:
    return np.exp(-((db - q) ** 2).sum(axis=1))


def score_torch(db: Any, q: Any) -> Any:
    return (-((db - q) ** 2).sum(dim=1)).exp()


def softmax_np(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm_np(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = x - x.mean(axis=-1, keepdims=True)
    var = (d * d).mean(axis=-1, keepdims=True)
    return d / np.sqrt(var + np.float32(EPS)) * w + b


def af_fn(workload: str) -> Callable[[dict[str, Any]], Any]:
    if workload == "score":
        return lambda t: score_af(t["db"], t["q"])
    if workload == "softmax":
        return lambda t: af.softmax(t["x"], axis=-1)
    return lambda t: af.layer_norm(t["x"], t["w"], t["b"], axis=-1, eps=EPS)


def np_fn(workload: str) -> Callable[[dict[str, Any]], np.ndarray]:
    if workload == "score":
        return lambda t: score_np(t["db"], t["q"])
    if workload == "softmax":
        return lambda t: softmax_np(t["x"])
    return lambda t: layer_norm_np(t["x"], t["w"], t["b"])


def torch_fns(torch: Any, workload: str) -> tuple[Callable[..., Any], tuple[str, ...]]:
    """(function of tensors, names of its arguments) for torch eager / torch.compile."""
    if workload == "score":
        return score_torch, ("db", "q")
    if workload == "softmax":
        return (lambda x: torch.softmax(x, dim=-1)), ("x",)

    def layer_norm(x: Any, w: Any, b: Any) -> Any:
        return torch.nn.functional.layer_norm(x, (D,), w, b, eps=EPS)

    return layer_norm, ("x", "w", "b")


def floor_bytes(workload: str, n: int) -> int:
    """Bytes a perfect kernel moves: read the (n, 256) input once, write the output once."""
    out = n if workload == "score" else n * D
    return (n * D + out) * 4


# -- helpers --------------------------------------------------------------------------------
def check(got: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    got = np.asarray(got)
    if got.shape != ref.shape:
        return {"allclose": False, "max_abs_err": None,
                "shape_mismatch": f"{got.shape} != {ref.shape}"}
    diff = np.abs(got - ref)
    return {"allclose": bool(np.allclose(got, ref, rtol=RTOL, atol=ATOL)),
            "max_abs_err": float(np.nanmax(diff)) if diff.size else 0.0,
            "nan": int(np.isnan(got).sum())}


def error_text(exc: BaseException) -> str:
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"


def gpu_clocks() -> str | None:
    """``nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv`` output, where it exists."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        return subprocess.run([exe, "--query-gpu=clocks.sm,clocks.mem", "--format=csv"],
                              text=True, capture_output=True, timeout=20).stdout.strip()
    except Exception as exc:  # noqa: BLE001
        return f"failed: {error_text(exc)}"


async def awarm(fn: Callable[[], Any], seconds: float, min_calls: int = 2) -> int:
    """Call ``fn`` until ``seconds`` have passed (and at least ``min_calls`` times)."""
    t0 = C.perf()
    calls = 0
    while calls < min_calls or C.perf() - t0 < seconds:
        await fn()
        calls += 1
    return calls


def warm(fn: Callable[[], Any], seconds: float, min_calls: int = 2) -> int:
    t0 = C.perf()
    calls = 0
    while calls < min_calls or C.perf() - t0 < seconds:
        fn()
        calls += 1
    return calls


# -- asyncfusion ----------------------------------------------------------------------------
async def bench_af(dev: Any, host: dict[str, np.ndarray], workloads: list[str],
                   refs: dict[str, np.ndarray], plan: Plan,
                   fused: bool) -> dict[str, dict[str, Any]]:
    """Each workload on one device: a checked first evaluation, warm-up, timed repetitions."""
    out: dict[str, dict[str, Any]] = {}
    try:
        t = {k: af.tensor(v, device=dev) for k, v in host.items()}
        await dev.sync()
    except Exception as exc:  # noqa: BLE001
        tb = traceback.format_exc()
        return {w: {"error": f"upload: {error_text(exc)}", "traceback": tb} for w in workloads}

    for w in workloads:
        build = af_fn(w)
        r: dict[str, Any] = {}
        stage = "first evaluation"
        try:
            y = build(t)
            got = await y.to_data()
            del y
            r.update(check(got, refs[w]))
            del got
            if not r["allclose"]:
                print(f"WARNING: asyncfusion {'fused' if fused else 'plain'} {w} differs from "
                      f"numpy (max |err| {r['max_abs_err']}, {r.get('nan')} NaN, "
                      f"{r.get('shape_mismatch', 'same shape')})", file=sys.stderr)
            box = {"build": 0.0}

            async def once() -> None:
                t0 = C.perf()
                y = build(t)
                box["build"] += C.perf() - t0
                await dev.sync()  # y stays alive through the sync ...
                del y  # ... and is dropped after it

            stage = "warm-up"
            r["warmup_calls"] = await awarm(once, plan.warmup_s)
            stage = "timed repetitions"
            dev.reset_stats()
            box["build"] = 0.0
            allocs = dev.memory_stats().allocations
            st = await C.ameasure(once, warmup=0, min_reps=plan.min_reps,
                                  max_reps=plan.max_reps, budget_s=plan.budget_s)
            s = dev.stats()
            r["ms"] = st.summary(1e3)
            r["build_ms"] = box["build"] / st.n * 1e3
            r["launches_per_eval"] = s.launches / st.n
            r["submissions_per_eval"] = s.submissions / st.n
            r["allocations_per_eval"] = (dev.memory_stats().allocations - allocs) / st.n
            r["kernels_per_eval"] = {k: v / st.n for k, v in sorted(s.kernels.items())}
            r["plan_cache"] = {"hits": s.plan_cache_hits, "misses": s.plan_cache_misses}
            if fused:
                r["gpu_clocks_after"] = gpu_clocks()
        except Exception as exc:  # noqa: BLE001 - record it, keep benchmarking the rest
            r["error"] = f"{stage}: {error_text(exc)}"
            r["traceback"] = traceback.format_exc()
            print(f"ERROR: asyncfusion {'fused' if fused else 'plain'} {w}: {r['error']}",
                  file=sys.stderr)
        out[w] = r
    del t
    try:
        await dev.sync()
    except Exception:  # noqa: BLE001 - already recorded above
        pass
    return out


# -- numpy ----------------------------------------------------------------------------------
def bench_numpy(host: dict[str, np.ndarray], w: str, plan: Plan) -> tuple[np.ndarray, dict]:
    """The reference result (its computation also times one cold evaluation), and the
    timed repetitions unless they would take longer than NUMPY_CAP_S."""
    fn = np_fn(w)
    t0 = C.perf()
    ref = fn(host)
    once_s = C.perf() - t0
    r: dict[str, Any] = {"first_ms": once_s * 1e3}
    if once_s * plan.np_min_reps > NUMPY_CAP_S:
        r["skipped"] = (f"one evaluation took {once_s:.1f} s; {plan.np_min_reps} "
                        f"repetitions would exceed {NUMPY_CAP_S:.0f} s")
        return ref, r
    st = C.measure(lambda: fn(host), warmup=0, min_reps=plan.np_min_reps,
                   max_reps=plan.np_max_reps, budget_s=plan.np_budget_s)
    r["ms"] = st.summary(1e3)
    return ref, r


# -- torch ----------------------------------------------------------------------------------
def fresh_compile(torch: Any, fn: Callable[..., Any]) -> tuple[Any, str | None]:
    """A static-shape ``torch.compile`` of ``fn`` with dynamo's caches cleared."""
    try:
        torch._dynamo.reset()
        return torch.compile(fn, dynamic=False), None
    except Exception as exc:  # noqa: BLE001
        return None, error_text(exc)


def bench_torch(torch: Any, host: dict[str, np.ndarray], workloads: list[str],
                refs: dict[str, np.ndarray], plan: Plan) -> dict[str, dict[str, Any]]:
    device = C.torch_device(torch)
    tt = {k: torch.from_numpy(v).to(device) for k, v in host.items()}
    C.torch_sync(torch, device)
    out: dict[str, dict[str, Any]] = {}
    for w in workloads:
        fn, names = torch_fns(torch, w)
        args = tuple(tt[k] for k in names)
        compiled, cerr = fresh_compile(torch, fn)
        res: dict[str, Any] = {}
        for name, f in (("eager", fn), ("compile", compiled)):
            r: dict[str, Any] = {}
            if f is None:
                r["error"] = f"torch.compile: {cerr}"
                res[name] = r
                continue
            try:
                t0 = C.perf()
                got = f(*args).cpu().numpy()  # the first call compiles
                r["first_call_s"] = C.perf() - t0
                r.update(check(got, refs[w]))
                del got

                def once(f: Any = f) -> None:
                    y = f(*args)
                    C.torch_sync(torch, device)
                    del y

                r["warmup_calls"] = warm(once, plan.warmup_s)
                st = C.measure(once, warmup=0, min_reps=plan.min_reps, max_reps=plan.max_reps,
                               budget_s=plan.budget_s)
                r["ms"] = st.summary(1e3)
            except Exception as exc:  # noqa: BLE001 - e.g. torch.compile without a compiler
                r["error"] = error_text(exc)
            res[name] = r
        out[w] = res
    del tt
    if device == "cuda":
        torch.cuda.empty_cache()  # leave the GPU's memory to the next size's wgpu buffers
    return out


# -- the run --------------------------------------------------------------------------------
def make_inputs(n: int, workloads: list[str], rng: np.random.Generator) -> dict[str, np.ndarray]:
    host: dict[str, np.ndarray] = {}
    if "score" in workloads:
        host["db"] = rng.standard_normal((n, D), dtype=np.float32) * np.float32(0.05)
        host["q"] = rng.standard_normal(D, dtype=np.float32) * np.float32(0.05)
    if {"softmax", "layer_norm"} & set(workloads):
        host["x"] = rng.standard_normal((n, D), dtype=np.float32)
        host["w"] = (1.0 + 0.1 * rng.standard_normal(D, dtype=np.float32)).astype(np.float32)
        host["b"] = (0.1 * rng.standard_normal(D, dtype=np.float32)).astype(np.float32)
    return host


async def main(args: Any) -> dict[str, Any]:
    torch = C.import_torch()
    async with af.open_device(fusion=True) as probe:
        info = C.adapter_info(probe)
    tag = C.host_tag(info)
    plan = Plan(args.quick)
    large = C.parse_size(args.large) if args.large else (QUICK_LARGE_N if args.quick
                                                         else LARGE_N)
    groups = [(SMALL_N, ["score"]), (large, list(WORKLOADS))]
    clocks_before = gpu_clocks()
    print(f"adapter: {info.get('summary')}  host tag: {tag}  "
          f"torch: {getattr(torch, '__version__', 'not installed')}"
          f"{' (' + C.torch_device(torch) + ')' if torch else ''}")
    print(f"cases: score at N={SMALL_N}; score, softmax, layer_norm at N={large} "
          f"(rows of {D}){'  (quick)' if args.quick else ''}")
    if clocks_before:
        print(f"nvidia-smi clocks: {' | '.join(clocks_before.splitlines())}")
    print()

    rng = np.random.default_rng(0)
    results: list[dict[str, Any]] = []
    for n, workloads in groups:
        t_group = C.perf()
        host = make_inputs(n, workloads, rng)
        refs: dict[str, np.ndarray] = {}
        rows = {w: {"workload": w, "n": n, "d": D, "floor_bytes": floor_bytes(w, n)}
                for w in workloads}
        for w in workloads:
            refs[w], rows[w]["numpy"] = bench_numpy(host, w, plan)
        async with af.open_device(fusion=True) as fdev:
            for w, r in (await bench_af(fdev, host, workloads, refs, plan, True)).items():
                rows[w]["fused"] = r
        async with af.open_device(fusion=False) as pdev:
            for w, r in (await bench_af(pdev, host, workloads, refs, plan, False)).items():
                rows[w]["plain"] = r
        if torch is not None:
            try:
                for w, r in bench_torch(torch, host, workloads, refs, plan).items():
                    rows[w]["torch"] = r
            except Exception as exc:  # noqa: BLE001 - e.g. out of memory: skip the peer
                for w in workloads:
                    rows[w]["torch"] = {"eager": {"error": error_text(exc)},
                                        "compile": {"error": error_text(exc)}}
        results.extend(rows[w] for w in workloads)
        del host, refs
        print(f"  N={n}: {', '.join(workloads)} done in {C.perf() - t_group:.1f} s",
              flush=True)

    payload = C.meta(info, args, d=D, small_n=SMALL_N, large_n=large, eps=EPS,
                     tolerance={"rtol": RTOL, "atol": ATOL}, warmup_s=plan.warmup_s,
                     numpy_cap_s=NUMPY_CAP_S,
                     timing="device-resident: inputs uploaded once; one repetition = build "
                            "the expression + await dev.sync() (torch: call + "
                            "cuda.synchronize(); numpy: call)",
                     inputs="score: db, q = 0.05 * N(0,1); softmax/layer_norm: x = N(0,1), "
                            "weight = 1 + 0.1 N(0,1), bias = 0.1 N(0,1)",
                     torch_compile="torch.compile(fn, dynamic=False), dynamo reset per "
                                   "workload",
                     nvidia_smi_clocks={"before": clocks_before, "after": gpu_clocks()})
    payload["results"] = results
    report(results)
    path = C.write_json(NAME, tag, payload, args.out)
    print(f"\nwrote {path}")
    return payload


def _med(d: Any, *path: str) -> float | None:
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d.get("median") if isinstance(d, dict) else d


def _ok(r: dict[str, Any]) -> str:
    if "error" in r:
        return "ERROR"
    if "allclose" not in r:
        return "-"
    return "yes" if r["allclose"] else "NO"


def report(results: list[dict[str, Any]]) -> None:
    rows = []
    for r in results:
        f, p, nu, t = r["fused"], r["plain"], r["numpy"], r.get("torch", {})
        fm, pm, nm = _med(f, "ms"), _med(p, "ms"), _med(nu, "ms")
        te, tc = _med(t, "eager", "ms"), _med(t, "compile", "ms")
        gbs = r["floor_bytes"] / (fm * 1e-3) / 1e9 if fm else None
        rows.append([r["workload"], f"{r['n']}x{r['d']}", fm, pm, nm, te, tc,
                     C.ratio(fm, pm), C.ratio(fm, tc), C.ratio(fm, te), C.ratio(fm, nm),
                     f.get("launches_per_eval"), p.get("launches_per_eval"),
                     f"{_ok(f)}/{_ok(p)}", gbs])
    print()
    print(C.table(["workload", "shape", "fused", "plain", "numpy", "torch", "t.compile",
                   "fused/plain", "fused/t.comp", "fused/torch", "fused/numpy", "launch F",
                   "launch P", "ok F/P", "fused GB/s"], rows,
                  "Device-resident: build + sync per evaluation  (ms/eval, median; ratio < 1: "
                  "fused is faster; GB/s counts 1 read of the input + 1 write of the output)"))

    for r in results:
        if "skipped" in r["numpy"]:
            print(f"numpy {r['workload']} at N={r['n']}: skipped ({r['numpy']['skipped']})")
        for eng in ("fused", "plain"):
            e = r[eng]
            if "error" in e:
                print(f"\nasyncfusion {eng} {r['workload']} at N={r['n']}: {e['error']}\n"
                      f"{e['traceback']}")
            elif not e.get("allclose", True):
                print(f"asyncfusion {eng} {r['workload']} at N={r['n']}: differs from numpy "
                      f"(max |err| {e.get('max_abs_err')}, {e.get('nan')} NaN"
                      f"{', ' + e['shape_mismatch'] if 'shape_mismatch' in e else ''})")
        for eng, v in r.get("torch", {}).items():
            if "error" in v:
                print(f"torch {eng} {r['workload']} at N={r['n']}: {v['error']}")
            elif not v.get("allclose", True):
                print(f"torch {eng} {r['workload']} at N={r['n']}: differs from numpy "
                      f"(max |err| {v.get('max_abs_err')})")
    errs = [max(r[e]["max_abs_err"] for e in ("fused", "plain")
                if r[e].get("max_abs_err") is not None)
            for r in results
            if any(r[e].get("max_abs_err") is not None for e in ("fused", "plain"))]
    if errs:
        print(f"\nmax |asyncfusion - numpy| over all cases: {max(errs):.3g} "
              f"(check: np.allclose rtol={RTOL}, atol={ATOL})")
    kern = [(r["workload"], r["n"], r["fused"]["kernels_per_eval"]) for r in results
            if "kernels_per_eval" in r["fused"]]
    for w, n, k in kern:
        print(f"fused kernels per eval, {w} N={n}: "
              + ", ".join(f"{name} x{c:g}" for name, c in k.items()))


if __name__ == "__main__":
    parser = C.base_parser(__doc__.splitlines()[0])
    parser.add_argument("--large", default=None,
                        help=f"rows of the large cases (default {LARGE_N}; --quick "
                             f"{QUICK_LARGE_N}); 1M = 1048576")
    a = parser.parse_args()
    C.apply_common(a)
    anyio.run(main, a)
