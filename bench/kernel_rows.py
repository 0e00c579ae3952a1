"""The scoreboard's kernel rows (issue 22): matmul, softmax, layer_norm, scoring, the
row-sum bandwidth, the seed chain at 64M, top-5, a search query.

Timing, asyncfusion and torch alike: K evaluations, each on an input of its own (inputs
``x + i`` made on the device before timing, so no evaluation can share another's work),
kept alive and awaited with one sync (torch: one ``synchronize``); a repetition's time
over K is the row's time, after ``plan.warm_s`` of repetitions. GPU time: asyncfusion's
from wgpu timestamp queries (``Runtime.gpu_timer``), torch's from CUDA events, over
three more repetitions. Every result is checked once against numpy (the first
``plan.check_rows`` rows); a wrong result makes the row an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import anyio
import numpy as np

import _common as C
import board as B
import floors
import fusion_chain
import matmul as M
import reduce as R
import search as S
import asyncfusion as af

GPU_REPS = 3  # repetitions timed by timestamp queries / CUDA events
FULL = B.Plan()
MATMUL_TARGET = B.ratio_at_most(1 / 0.85, "time <= 1.18x torch (>= 0.85x TFLOP/s)")


@dataclass(frozen=True, slots=True)
class Timing:
    ms: float  # wall per evaluation
    gpu_ms: float | None
    launches: float | None  # asyncfusion launches per evaluation
    reps: int
    k: int


class WrongResult(AssertionError):
    """A benchmarked result differs from numpy's."""


# -- timing ---------------------------------------------------------------------------------
async def af_queued(dev: af.Device, build: Callable[[int], Any], k: int,
                    plan: B.Plan) -> Timing:
    """``build(i)`` for i < k, all kept, one ``await dev.sync()``; per evaluation."""
    async def rep() -> None:
        kept = [build(i) for i in range(k)]
        await dev.sync()
        del kept

    await R.awarm(rep, plan.warm_s, min_calls=1)
    dev.reset_stats()
    st = await C.ameasure(rep, warmup=0, min_reps=plan.min_reps, max_reps=plan.max_reps,
                          budget_s=plan.budget_s)
    launches = dev.stats().launches / (st.n * k)
    gpu = await af_gpu_ms(dev, rep)
    return Timing(st.median * 1e3 / k, None if gpu is None else gpu / k, launches, st.n, k)


async def af_gpu_ms(dev: af.Device, rep: Callable[[], Any]) -> float | None:
    """GPU ms of one ``rep()`` (mean of GPU_REPS) from timestamp queries; None where
    the device has no wgpu runtime or its adapter no timestamp queries."""
    timer_of = getattr(getattr(dev.backend, "rt", None), "gpu_timer", None)
    if timer_of is None:
        return None
    with timer_of() as timer:
        for _ in range(GPU_REPS):
            await rep()
    ns = await anyio.to_thread.run_sync(timer.total_ns)
    return None if ns is None or not timer.passes else ns / 1e6 / GPU_REPS


def torch_queued(torch: Any, tdev: str, fn: Callable[..., Any], args: Sequence[tuple[Any, ...]],
                 plan: B.Plan) -> Timing:
    """``fn(*a)`` for each ``a`` in ``args``, then one synchronize; per call."""
    def calls() -> list[Any]:
        return [fn(*a) for a in args]

    def rep() -> None:
        kept = calls()
        C.torch_sync(torch, tdev)
        del kept

    R.warm(rep, plan.warm_s, min_calls=1)
    st = C.measure(rep, warmup=0, min_reps=plan.min_reps, max_reps=plan.max_reps,
                   budget_s=plan.budget_s)
    gpu = None
    if tdev == "cuda":
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        for _ in range(GPU_REPS):
            kept = calls()
        end.record()
        end.synchronize()
        del kept
        gpu = start.elapsed_time(end) / GPU_REPS / len(args)
    return Timing(st.median * 1e3 / len(args), gpu, None, st.n, len(args))


def compiled(torch: Any, fn: Callable[..., Any], first: tuple[Any, ...]
             ) -> tuple[Callable[..., Any] | None, str | None]:
    """A fresh static-shape ``torch.compile`` of ``fn``, compiled by one call on
    ``first``; (None, why) where that fails."""
    comp, err = R.fresh_compile(torch, fn)
    if comp is None:
        return None, err
    try:
        comp(*first)
    except Exception as exc:  # noqa: BLE001 - e.g. no C compiler for inductor
        return None, R.error_text(exc)
    return comp, None


def tflops(m: int, k: int, n: int, ms: float | None) -> float | None:
    return None if not ms else M.tflops(m, k, n, ms * 1e-3)


def _close(got: np.ndarray, want: np.ndarray, what: str, rtol: float = R.RTOL,
           atol: float = R.ATOL) -> None:
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
        err = (float(np.nanmax(np.abs(got - want))) if got.shape == want.shape
               else f"shape {got.shape} != {want.shape}")
        raise WrongResult(f"{what}: asyncfusion differs from numpy (max |err| {err})")


def _base(t: Timing, tt: Timing | None) -> dict[str, Any]:
    """The extra keys every kernel row has: K, repetitions, launches per evaluation, the
    peer's GPU time and asyncfusion's over it (kernels alone)."""
    out: dict[str, Any] = {"k": t.k, "reps": t.reps, "launches": t.launches}
    if tt is not None:
        out["peer_gpu_ms"] = tt.gpu_ms
        out["gpu_ratio"] = (t.gpu_ms / tt.gpu_ms if t.gpu_ms is not None and tt.gpu_ms
                            else None)
    return out


def _variants(x: Any, k: int) -> list[Any]:
    """``x`` and k - 1 shifted copies (``x + 0.01 i``), made by the engine of ``x``."""
    return [x] + [x + 0.01 * i for i in range(1, k)]


# -- matmul ---------------------------------------------------------------------------------
async def matmuls(plan: B.Plan, torch: Any, tdev: str) -> list[dict[str, Any]]:
    """``a_i @ b`` (float32, square) at the plan's sizes; torch eager with TF32 off."""
    rows = []
    rng = np.random.default_rng(0)
    for size, k, name in zip(plan.matmul, plan.matmul_k, FULL.matmul):
        a = rng.standard_normal((size, size), dtype=np.float32)
        b = (rng.standard_normal((size, size), dtype=np.float32) / np.sqrt(size)).astype(
            np.float32)
        async with af.open_device() as dev:
            ta, tb = af.tensor(a, device=dev), af.tensor(b, device=dev)
            tas = _variants(ta, k)
            await dev.sync()
            got = await (ta @ tb)[:64].to_data()
            want = a[:64] @ b
            try:
                M.check(got, want)
            except AssertionError as exc:
                raise WrongResult(f"matmul {size}: {exc}") from exc
            t = await af_queued(dev, lambda i: tas[i] @ tb, k, plan)
            del tas, ta, tb
        clock = B.sm_clock_mhz()
        tt = None
        if torch is not None:
            pa, pb = torch.from_numpy(a).to(tdev), torch.from_numpy(b).to(tdev)
            pas = _variants(pa, k)
            tt = torch_queued(torch, tdev, lambda x: x @ pb, [(x,) for x in pas], plan)
            del pa, pb, pas
            _free(torch, tdev)
        rows.append(B.row(
            f"matmul_{name}", t.ms, B.peer_name(torch, "torch eager (TF32 off)"),
            tt.ms if tt else None,
            MATMUL_TARGET, gpu_ms=t.gpu_ms,
            sm_clock_mhz=clock, shape=[size, size, size], af_tflops=tflops(size, size, size,
                                                                          t.ms),
            torch_tflops=tflops(size, size, size, tt.ms if tt else None), **_base(t, tt)))
    return rows


async def mlp(plan: B.Plan, torch: Any, tdev: str) -> list[dict[str, Any]]:
    """``relu(x_i @ w + b)`` at the MLP layer's shape; torch eager (TF32 off)."""
    m, kk, n = plan.mlp
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, kk), dtype=np.float32)
    w = (rng.standard_normal((kk, n), dtype=np.float32) / np.sqrt(kk)).astype(np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    k = plan.mlp_k
    async with af.open_device() as dev:
        tx, tw, tb = (af.tensor(v, device=dev) for v in (x, w, b))
        txs = _variants(tx, k)
        await dev.sync()
        try:
            M.check(await (tx @ tw + tb).relu().to_data(), np.maximum(x @ w + b, 0))
        except AssertionError as exc:
            raise WrongResult(f"mlp: {exc}") from exc
        t = await af_queued(dev, lambda i: (txs[i] @ tw + tb).relu(), k, plan)
        del txs, tx, tw, tb
    clock = B.sm_clock_mhz()
    tt = None
    if torch is not None:
        px, pw, pb = (torch.from_numpy(v).to(tdev) for v in (x, w, b))
        tt = torch_queued(torch, tdev, lambda v: torch.relu(v @ pw + pb),
                          [(v,) for v in _variants(px, k)], plan)
        _free(torch, tdev)
    return [B.row("matmul_mlp", t.ms, B.peer_name(torch, "torch eager (TF32 off)"),
                  tt.ms if tt else None,
                  MATMUL_TARGET, gpu_ms=t.gpu_ms,
                  sm_clock_mhz=clock, shape=[m, kk, n], af_tflops=tflops(m, kk, n, t.ms),
                  torch_tflops=tflops(m, kk, n, tt.ms if tt else None), **_base(t, tt))]


def _free(torch: Any, tdev: str) -> None:
    if tdev == "cuda":
        torch.cuda.empty_cache()  # leave the GPU's memory to the next row's wgpu buffers


# -- rows of 256: softmax, layer_norm, scoring, the row sum ---------------------------------
def _rows_inputs(plan: B.Plan) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2)
    d = R.D
    return {"x": rng.standard_normal((plan.rows, d), dtype=np.float32),
            "db": rng.random((plan.rows, d), dtype=np.float32) * np.float32(0.1),
            "q": rng.random(d, dtype=np.float32) * np.float32(0.1),
            "w": (1.0 + 0.1 * rng.standard_normal(d, dtype=np.float32)).astype(np.float32),
            "b": (0.1 * rng.standard_normal(d, dtype=np.float32)).astype(np.float32)}


_ROW_WORKLOADS = {"softmax": "softmax", "layer_norm": "layer_norm", "scoring": "score"}


async def row_kernels(plan: B.Plan, torch: Any, tdev: str, copy: dict[str, Any]
                      ) -> list[dict[str, Any]]:
    """softmax, layer_norm (weight, bias) and the scoring expression over (rows, 256),
    then ``x.sum(axis=-1)`` against the copy kernel's bandwidth (``copy``, from
    ``floors.copy_bandwidth`` in the same run)."""
    host = _rows_inputs(plan)
    r = plan.check_rows
    results: dict[str, Timing] = {}
    clocks: dict[str, int | None] = {}
    async with af.open_device() as dev:
        t = {name: af.tensor(v, device=dev) for name, v in host.items()}
        for row_name, w in (*_ROW_WORKLOADS.items(), ("reduce_sum_bandwidth", "sum")):
            key = "db" if w == "score" else "x"
            srcs = _variants(t[key], plan.row_k)
            await dev.sync()
            if w == "sum":
                _close(await t["x"].sum(axis=-1).to_data(), host["x"].sum(axis=-1), row_name,
                       rtol=1e-4, atol=1e-3)
            else:
                got = await R.af_fn(w)(t)[:r].to_data()
                _close(got, R.np_fn(w)({k: (v[:r] if v.ndim == 2 else v)
                                         for k, v in host.items()}), row_name)
            results[row_name] = await af_queued(dev, _af_build(w, t, srcs), plan.row_k, plan)
            clocks[row_name] = B.sm_clock_mhz()
            print(f"    {row_name}: asyncfusion {results[row_name].ms:.3f} ms", flush=True)
            del srcs
        del t
    peers = _torch_rows(plan, torch, tdev, host) if torch is not None else {}
    rows = []
    for row_name in _ROW_WORKLOADS:
        t_ = results[row_name]
        p = peers.get(row_name, {})
        eager, comp = p.get("eager"), p.get("compile")
        if row_name == "scoring":
            peer, best = ("torch.compile", comp) if comp else ("torch eager (no compile)", eager)
            target = B.ratio_at_most(1.2, "<= 1.2x torch.compile")
        else:
            peer, best = min((("torch.compile", comp), ("torch eager", eager)),
                             key=lambda kv: kv[1].ms if kv[1] else float("inf"))
            target = B.ratio_at_most(1.2, "<= 1.2x better torch")
        rows.append(B.row(
            row_name, t_.ms, B.peer_name(torch, peer), best.ms if best else None, target,
            gpu_ms=t_.gpu_ms, sm_clock_mhz=clocks[row_name], shape=[plan.rows, R.D],
            torch_eager_ms=eager.ms if eager else None,
            torch_compile_ms=comp.ms if comp else None,
            **({"torch_compile_error": p["compile_error"]} if p.get("compile_error") else {}),
            **_base(t_, best)))
    rows.append(_bandwidth_row(plan, results["reduce_sum_bandwidth"], copy,
                               clocks["reduce_sum_bandwidth"], peers.get("sum", {})))
    return rows


def _af_build(w: str, t: dict[str, Any], srcs: list[Any]) -> Callable[[int], Any]:
    """The i-th evaluation of workload ``w`` on its own input ``srcs[i]``."""
    if w == "sum":
        return lambda i: srcs[i].sum(axis=-1)
    if w == "score":
        return lambda i: R.score_af(srcs[i], t["q"])
    fn = R.af_fn(w)
    return lambda i: fn({**t, "x": srcs[i]})


def _torch_rows(plan: B.Plan, torch: Any, tdev: str, host: dict[str, np.ndarray]
                ) -> dict[str, dict[str, Any]]:
    tt = {k: torch.from_numpy(v).to(tdev) for k, v in host.items()}
    out: dict[str, dict[str, Any]] = {}
    for row_name, w in _ROW_WORKLOADS.items():
        fn, names = R.torch_fns(torch, w)
        srcs = _variants(tt[names[0]], plan.row_k)
        args = [(v, *(tt[n] for n in names[1:])) for v in srcs]
        res: dict[str, Any] = {"eager": torch_queued(torch, tdev, fn, args, plan)}
        comp, err = compiled(torch, fn, args[0])
        if comp is not None:
            res["compile"] = torch_queued(torch, tdev, comp, args, plan)
        else:
            res["compile_error"] = err
        out[row_name] = res
        del srcs, args
    srcs = _variants(tt["x"], plan.row_k)
    out["sum"] = {"eager": torch_queued(torch, tdev, lambda x: x.sum(dim=-1),
                                        [(x,) for x in srcs], plan)}
    del tt, srcs
    _free(torch, tdev)
    return out


def _bandwidth_row(plan: B.Plan, t: Timing, copy: dict[str, Any], clock: int | None,
                   torch_sum: dict[str, Any]) -> dict[str, Any]:
    """The row sum's bandwidth as a fraction of the copy kernel's: GPU times where both
    have timestamp queries, else wall times."""
    moved = (plan.rows * R.D + plan.rows) * 4
    gpu = t.gpu_ms is not None and copy.get("gpu_GBps") is not None
    af_ms = t.gpu_ms if gpu else t.ms
    copy_gbps = copy["gpu_GBps"] if gpu else copy["GBps"]
    floor_ms = moved / (copy_gbps * 1e9) * 1e3
    eager = torch_sum.get("eager")
    return B.row("reduce_sum_bandwidth", af_ms, "vec4 copy kernel, same bytes", floor_ms,
                 B.ratio_at_least(0.7, ">= 0.7 of copy bandwidth"),
                 ratio=floor_ms / af_ms if af_ms else None, gpu_ms=t.gpu_ms,
                 sm_clock_mhz=clock, ratio_kind="fraction", basis="gpu" if gpu else "wall",
                 af_wall_ms=t.ms, af_GBps=moved / (af_ms * 1e-3) / 1e9 if af_ms else None,
                 copy=copy, torch_sum_ms=eager.ms if eager else None,
                 torch_sum_GBps=moved / (eager.ms * 1e-3) / 1e9 if eager else None,
                 shape=[plan.rows, R.D], **_base(t, None))


# -- the seed chain, top-k, search ----------------------------------------------------------
async def seed_chain(plan: B.Plan, torch: Any, tdev: str, copy: dict[str, Any]
                     ) -> list[dict[str, Any]]:
    """The seed's 8-op chain on ``chain_n`` floats, one kernel per evaluation, against
    ``torch.compile`` of it; the copy floor of the same bytes beside."""
    n = plan.chain_n
    host = np.random.default_rng(3).random(n, dtype=np.float32)
    async with af.open_device() as dev:
        x = af.tensor(host, device=dev)
        xs = _variants(x, plan.chain_k)
        await dev.sync()
        r = plan.check_rows * 16
        _close(await C.chain(x)[:r].to_data(), C.chain_np(host[:r]), "seed chain",
               rtol=0.0, atol=fusion_chain.TOL)
        t = await af_queued(dev, lambda i: C.chain(xs[i]), plan.chain_k, plan)
        del xs, x
    clock = B.sm_clock_mhz()
    eager = comp = None
    err = None
    if torch is not None:
        px = torch.from_numpy(host).to(tdev)
        args = [(v,) for v in _variants(px, plan.chain_k)]
        eager = torch_queued(torch, tdev, C.chain, args, plan)
        fn, err = compiled(torch, C.chain, args[0])
        comp = torch_queued(torch, tdev, fn, args, plan) if fn is not None else None
        del px, args
        _free(torch, tdev)
    best = comp or eager
    floor_ms = 2 * n * 4 / (copy["gpu_GBps"] or copy["GBps"]) / 1e6
    label = "torch.compile" if comp else "torch eager (no compile)"
    # the kernel alone: GPU times where both sides have them, else wall times
    gpu = t.gpu_ms is not None and best is not None and best.gpu_ms is not None
    af_ms, peer_ms = ((t.gpu_ms, best.gpu_ms) if gpu and best is not None
                      else (t.ms, best.ms if best else None))
    return [B.row("seed_chain_64M", af_ms, B.peer_name(torch, label), peer_ms,
                  B.ratio_at_most(1.2, "<= 1.2x torch.compile"), gpu_ms=t.gpu_ms,
                  sm_clock_mhz=clock, basis="gpu" if gpu else "wall", n=n, af_wall_ms=t.ms,
                  peer_wall_ms=best.ms if best else None, copy_floor_ms=floor_ms,
                  torch_eager_ms=eager.ms if eager else None,
                  **({"torch_compile_error": err} if err else {}), **_base(t, best))]


async def topk(plan: B.Plan, torch: Any, tdev: str) -> list[dict[str, Any]]:
    """``topk(s_i, 5)`` of ``topk_n`` floats against ``torch.topk``."""
    n = plan.topk_n
    host = np.random.default_rng(4).standard_normal(n, dtype=np.float32)
    async with af.open_device() as dev:
        s = af.tensor(host, device=dev)
        ss = _variants(s, plan.topk_k)
        await dev.sync()
        _, idx = af.topk(s, S.K)
        got = np.sort(await idx.to_data())
        if not np.array_equal(got, np.sort(np.argpartition(-host, S.K)[:S.K])):
            raise WrongResult(f"topk: indices {got.tolist()} are not numpy's")
        t = await af_queued(dev, lambda i: af.topk(ss[i], S.K), plan.topk_k, plan)
        del ss, s, idx
    clock = B.sm_clock_mhz()
    tt = None
    if torch is not None:
        ps = torch.from_numpy(host).to(tdev)
        tt = torch_queued(torch, tdev, lambda v: torch.topk(v, S.K),
                          [(v,) for v in _variants(ps, plan.topk_k)], plan)
        _free(torch, tdev)
    return [B.row("topk5_1M", t.ms, B.peer_name(torch, "torch.topk"), tt.ms if tt else None,
                  B.ratio_at_most(2.0, "<= 2x torch"), gpu_ms=t.gpu_ms, sm_clock_mhz=clock,
                  n=n, **_base(t, tt))]


async def search_query(plan: B.Plan, torch: Any, tdev: str) -> list[dict[str, Any]]:
    """One search query (``bench/search.py``'s per-query time): normalize the queries,
    matmul against the normalized database kept on the device, top-5, both read in one
    await (``af.to_data(values, indices)``, as the example service reads them)."""
    n, dim, nq = plan.search
    rng = np.random.default_rng(5)
    db_host = rng.random((n, dim), dtype=np.float32) - np.float32(0.5)
    q_host = rng.random((nq, dim), dtype=np.float32) - np.float32(0.5)
    want, _ = S.numpy_search(db_host, q_host)
    async with af.open_device() as dev:
        dbn = S.normalize(af.tensor(db_host, device=dev))
        q = af.tensor(q_host, device=dev)
        await dev.sync()

        async def query() -> np.ndarray:
            values, indices = af.topk(S.normalize(q) @ dbn.T, S.K, axis=-1)
            got, _ = await af.to_data(values, indices)  # one round, as the service reads
            return got

        try:
            S.check(await query(), want)
        except AssertionError as exc:
            raise WrongResult(f"search: {exc}") from exc
        await R.awarm(query, plan.warm_s, min_calls=1)
        dev.reset_stats()
        st = await C.ameasure(query, warmup=0, min_reps=plan.min_reps,
                              max_reps=plan.max_reps, budget_s=plan.budget_s)
        launches = dev.stats().launches / st.n
        gpu = await af_gpu_ms(dev, query)
        del dbn, q
    clock = B.sm_clock_mhz()
    torch_ms = None
    if torch is not None:
        tdbn = S.normalize(torch.from_numpy(db_host).to(tdev))
        tq = torch.from_numpy(q_host).to(tdev)

        def tquery() -> None:
            v, i = torch.topk(S.normalize(tq) @ tdbn.T, S.K)
            i.cpu()
            v.cpu()

        R.warm(tquery, plan.warm_s, min_calls=1)
        torch_ms = C.measure(tquery, warmup=0, min_reps=plan.min_reps,
                             max_reps=plan.max_reps, budget_s=plan.budget_s).median * 1e3
        del tdbn, tq
        _free(torch, tdev)
    return [B.row("search_query", st.median * 1e3,
                  B.peer_name(torch, "torch eager (TF32 off)"), torch_ms,
                  B.ratio_at_most(1.0, "<= torch"), gpu_ms=gpu, sm_clock_mhz=clock,
                  shape=[n, dim, nq], launches=launches, reps=st.n)]


def copy_floor(plan: B.Plan, raw: floors.RawGpu) -> dict[str, Any]:
    return floors.copy_bandwidth(raw, plan.copy_bytes, 4 if plan.smoke else 20, plan.warm_s,
                                 3 if plan.smoke else 10)
