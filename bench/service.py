"""Open-loop load against examples/service.py under uvicorn: asyncfusion beside numpy and
torch (where installed) in a worker thread, the same endpoints and server settings.

Requests are sent at a fixed rate whatever the answers do (open loop), and each latency
is measured from its *scheduled* send time, so queueing shows (no coordinated omission).
Percentiles come from an HdrHistogram. Reports per variant and offered rate: achieved
req/s, p50/p99/p999, the server's event-loop lag, launches and submissions per request;
writes JSON and a PNG (latency against offered load, one line per variant).

With ``--ladder START,FACTOR,MAX`` each path climbs offered rates until a step does not
*hold* (>= 95% achieved, no failures or 503s, p99 <= 100 ms): the last step that held is
the variant's held rate, and asyncfusion's is compared with torch-in-a-thread's (target
2x). ``--workers 1,2,4,8`` repeats everything on that many uvicorn worker processes (each
opens its own device on the same GPU; the GPU memory each server takes is recorded).
``--overload 3`` offers asyncfusion 3x its held rate (goodput, 503s with Retry-After,
p99 of the admitted, event-loop lag); ``--profile S`` records an S-second py-spy flame
graph of the loaded server.

    python bench/service.py --quick            # this box: small rates, ~1 minute
    python bench/service.py --ladder 200,1.41,20000 --seconds 3 --clients 4 \
        --overload 3 --profile 5 --workers 1,2,4,8

Loopback only (127.0.0.1); every run is bounded in requests and time.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import numpy as np
from hdrh.histogram import HdrHistogram

ROOT = Path(__file__).resolve().parent.parent
_RNG = np.random.default_rng(0)
_QUERIES = _RNG.standard_normal((64, 256)).astype(np.float32).tolist()
_XS = _RNG.standard_normal((64, 4, 64)).astype(np.float32).tolist()
_NEAR = (_RNG.standard_normal((64, 256)) * 0.05).astype(np.float32)


def _score_queries(rows: int) -> list[list[float]]:
    """Queries near resident rows of the example's matrix (its scores do not underflow)."""
    sys.path.insert(0, str(ROOT))
    from examples.service import host_weights

    db = host_weights(rows)["db"]
    return (db[np.arange(64) * 7 % rows] + _NEAR).tolist()


BODIES = {"/search": lambda i: {"query": _QUERIES[i % 64], "k": 5},
          "/mlp": lambda i: {"x": _XS[i % 64]},
          "/score": lambda i: {"query": _SCORE[i % 64], "k": 5}}
_SCORE: list[list[float]] = []
_ROWS = [4096]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(variant: str, rows: int, port: int, workers: int = 1
                 ) -> subprocess.Popen[bytes]:
    """uvicorn serving the example, ``workers`` processes (each opens its own device)."""
    env = dict(os.environ, SERVICE_VARIANT=variant, SERVICE_ROWS=str(rows))
    cmd = [sys.executable, "-m", "uvicorn", "--factory", "examples.service:create_app",
           "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
           "--no-access-log", *(["--workers", str(workers)] if workers > 1 else [])]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
    for _ in range(300):  # up to 30 s for the device (and, for torch, CUDA) to open
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"the {variant} service did not start on port {port}")


async def _load(url: str, path: str, make_body, rate: float, seconds: float, timeout: float,
                part: int, parts: int) -> tuple[list[int], dict[str, int], float]:
    """One load generator's share: requests ``part, part + parts, ...`` of the schedule,
    each sent at its scheduled time; latencies (µs) from the scheduled send time."""
    lat: list[int] = []
    counts = {"ok": 0, "rejected": 0, "failed": 0, "rejected_without_retry_after": 0}
    n = int(rate * seconds)
    limits = httpx.Limits(max_connections=512, max_keepalive_connections=512)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as client:
        start = time.perf_counter()

        async def one(i: int) -> None:
            scheduled = start + i / rate
            try:
                r = await client.post(path, json=make_body(i))
                key = "ok" if r.status_code == 200 else (
                    "rejected" if r.status_code == 503 else "failed")
                if key == "rejected" and "retry-after" not in r.headers:
                    counts["rejected_without_retry_after"] += 1
            except httpx.HTTPError:
                key = "failed"
            counts[key] += 1
            if key == "ok":
                lat.append(max(1, int((time.perf_counter() - scheduled) * 1e6)))

        async with anyio.create_task_group() as tg:
            for i in range(part, n, parts):
                delay = start + i / rate - time.perf_counter()
                if delay > 0:
                    await anyio.sleep(delay)
                tg.start_soon(one, i)
        elapsed = time.perf_counter() - start
    return lat, counts, elapsed


def _load_process(args: tuple) -> tuple[list[int], dict[str, int], float]:
    url, path, rate, seconds, timeout, part, parts, rows = args
    _SCORE[:] = _score_queries(rows)
    return anyio.run(_load, url, path, BODIES[path], rate, seconds, timeout, part, parts)


async def run_rate(url: str, path: str, rate: float, seconds: float, timeout: float,
                   clients: int = 1) -> dict[str, float]:
    """Offer ``rate`` req/s for ``seconds``, from ``clients`` load-generator processes
    (one Python client tops out at a few thousand requests a second)."""
    if clients == 1:
        parts = [await _load(url, path, BODIES[path], rate, seconds, timeout, 0, 1)]
    else:
        ctx = multiprocessing.get_context("spawn")
        jobs = [(url, path, rate, seconds, timeout, k, clients, _ROWS[0])
                for k in range(clients)]
        with ctx.Pool(clients) as pool:
            parts = await anyio.to_thread.run_sync(pool.map, _load_process, jobs)
    hist = HdrHistogram(1, 60_000_000, 3)  # microseconds
    counts = {"ok": 0, "rejected": 0, "failed": 0, "rejected_without_retry_after": 0}
    for lat, c, _ in parts:
        for v in lat:
            hist.record_value(v)
        for k, v in c.items():
            counts[k] += v
    elapsed = max(e for _, _, e in parts)
    return {"offered": rate, "achieved": counts["ok"] / elapsed, **counts, "clients": clients,
            "p50_ms": hist.get_value_at_percentile(50) / 1e3,
            "p99_ms": hist.get_value_at_percentile(99) / 1e3,
            "p999_ms": hist.get_value_at_percentile(99.9) / 1e3}


async def stats(url: str, since: int = 0) -> dict[str, float | None]:
    async with httpx.AsyncClient(base_url=url) as client:
        out: dict[str, float | None] = (await client.get(f"/stats?since={since}")).json()
        return out


def holds(row: dict[str, object]) -> bool:
    """The step held its offered rate: >= 95% achieved, nothing failed or refused, p99
    within 100 ms."""
    return (float(row["achieved"]) >= 0.95 * float(row["offered"])  # type: ignore[arg-type]
            and row["failed"] == 0 and row["rejected"] == 0
            and float(row["p99_ms"]) <= 100.0)  # type: ignore[arg-type]


def gpu_memory_mib() -> float | None:
    """GPU memory in use now (nvidia-smi), summed over GPUs; None without nvidia-smi."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used",
                              "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, timeout=10, check=True).stdout
        return float(sum(float(v) for v in out.split()))
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


async def step(url: str, path: str, rate: float, args: argparse.Namespace,
               workers: int) -> dict[str, object]:
    """One offered rate for ``args.seconds``, with the server's counters around it (one
    worker: its event-loop lag over the step; several: /stats answers from any one of
    them, so per-request counters and lag are left out)."""
    before = await stats(url)
    row: dict[str, object] = dict(await run_rate(url, path, rate, args.seconds, args.timeout,
                                                 args.clients))
    after = await stats(url, int(before.get("lag_taken") or 0))
    served = max(1, int(after["served"] or 0) - int(before["served"] or 0))
    for key in ("launches", "submissions"):
        x, y = after.get(key), before.get(key)
        row[f"{key}_per_request"] = None if x is None or y is None or workers > 1 else (
            (x - y) / served)
    row.update({"loop_lag_p99_ms": after.get("lag_p99_ms") if workers == 1 else None,
                "held": holds(row)})
    return row


def ladder(args: argparse.Namespace) -> list[float]:
    start, factor, top = (float(v) for v in args.ladder.split(","))
    rates = []
    while start <= top:
        rates.append(round(start))
        start *= factor
    return rates


async def profile(proc: subprocess.Popen[bytes], url: str, path: str, rate: float,
                  args: argparse.Namespace) -> str:
    """A py-spy flame graph of the server while it serves ``rate`` on ``path``."""
    svg = f"{args.out}-flame{path.replace('/', '-')}.svg"
    spy = subprocess.Popen(["py-spy", "record", "--pid", str(proc.pid), "--duration",
                            str(int(args.profile)), "--rate", "250", "--nonblocking",
                            "--format", "flamegraph", "--output", svg],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    await run_rate(url, path, rate, args.profile + 1.0, args.timeout, args.clients)
    out = spy.communicate(timeout=60)[0].decode(errors="replace")
    return svg if spy.returncode == 0 else f"py-spy failed: {out.strip()[-300:]}"


async def bench_variant(variant: str, args: argparse.Namespace, workers: int
                        ) -> list[dict[str, object]]:
    """Each path at the offered rates (or up the ladder until a step does not hold), on a
    server of ``workers`` processes; for asyncfusion on one worker, the overload step
    (``args.overload`` x the held rate) and the flame graph."""
    mem0 = gpu_memory_mib()
    port = free_port()
    proc = start_server(variant, args.rows, port, workers)
    url = f"http://127.0.0.1:{port}"
    rows: list[dict[str, object]] = []
    base = {"variant": variant, "workers": workers}
    try:
        for path in args.paths:  # warm every worker: compile, upload the weights
            await run_rate(url, path, 20.0 * workers, 2.0, args.timeout)
        mem1 = gpu_memory_mib()
        gpu_mib = None if mem0 is None or mem1 is None else mem1 - mem0
        for path in args.paths:
            held = 0.0
            for rate in (ladder(args) if args.ladder else args.rates):
                row = {**base, "path": path, "gpu_memory_mib": gpu_mib,
                       **await step(url, path, rate, args, workers)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if row["held"]:
                    held = rate
                elif args.ladder:
                    break
            rows.append({**base, "kind": "held", "path": path, "held_rate": held,
                         "gpu_memory_mib": gpu_mib})
            print(json.dumps(rows[-1]), flush=True)
            if variant == "af" and workers == 1 and held and args.overload:
                row = {**base, "kind": "overload", "path": path, "held_rate": held,
                       **await step(url, path, args.overload * held, args, workers)}
                row["met"] = (float(row["achieved"]) >= 0.8 * held  # type: ignore[arg-type]
                              and float(row["p99_ms"]) <= 50.0  # type: ignore[arg-type]
                              and (row["loop_lag_p99_ms"] or 0.0) <= 5.0  # type: ignore
                              and row["rejected_without_retry_after"] == 0)
                rows.append(row)
                print(json.dumps(row), flush=True)
            if variant == "af" and workers == 1 and held and args.profile:
                rows.append({**base, "kind": "profile", "path": path, "rate": held,
                             "flame": await profile(proc, url, path, held, args)})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return rows


def summary(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """asyncfusion's held rate against torch-in-a-thread's, per path and worker count."""
    held = {(r["variant"], r["path"], r["workers"]): float(r["held_rate"])  # type: ignore
            for r in rows if r.get("kind") == "held"}
    out = []
    for (v, path, w), rate in sorted(held.items(), key=str):
        if v != "af":
            continue
        peer = held.get(("torch", path, w))
        out.append({"kind": "ratio", "path": path, "workers": w, "af_held": rate,
                    "torch_held": peer, "numpy_held": held.get(("numpy", path, w)),
                    "ratio": rate / peer if peer else None, "target": ">= 2x torch",
                    "met": bool(peer) and rate >= 2 * peer})  # type: ignore[operator]
    return out


def plot(rows: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if "kind" not in r and r.get("workers", 1) == 1]
    paths = sorted({str(r["path"]) for r in rows})
    fig, axes = plt.subplots(1, len(paths), figsize=(6 * len(paths), 4), squeeze=False)
    for ax, p in zip(axes[0], paths, strict=True):
        for v in sorted({str(r["variant"]) for r in rows}):
            pts = [r for r in rows if r["path"] == p and r["variant"] == v]
            ax.plot([r["offered"] for r in pts], [r["p99_ms"] for r in pts], "o-",
                    label=f"{v} p99")
            ax.plot([r["offered"] for r in pts], [r["p50_ms"] for r in pts], "x--",
                    label=f"{v} p50")
        ax.set(title=p, xlabel="offered load (req/s)", ylabel="latency (ms)", yscale="log")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small rates for a 2-core box")
    ap.add_argument("--rates", default="50,100,200,400")
    ap.add_argument("--ladder", default="",
                    help="START,FACTOR,MAX: offer START, START*FACTOR, ... up to MAX and stop "
                         "at the first step that does not hold (instead of --rates)")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--variants", default="af,numpy,torch")
    ap.add_argument("--workers", default="1",
                    help="uvicorn worker processes, a list (1,2,4,8): each variant runs at each")
    ap.add_argument("--overload", type=float, default=0.0,
                    help="asyncfusion, one worker: offer this many times the held rate")
    ap.add_argument("--profile", type=float, default=0.0,
                    help="asyncfusion, one worker: seconds of py-spy flame graph at the held rate")
    ap.add_argument("--clients", type=int, default=1,
                    help="load-generator processes (more for rates past ~2,000 req/s)")
    ap.add_argument("--paths", default="/search,/mlp,/score")
    ap.add_argument("--per-gpu", type=int, default=0,
                    help="af variant: a device pool of N devices on each GPU "
                         "(SERVICE_PER_GPU); 0: one device, or one per GPU where there are "
                         "several")
    tag = os.environ.get("AF_BENCH_HOST_TAG", "cpu-lavapipe")  # the load side opens no device
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / f"service-{tag}"),
                    help="path without suffix (default: bench/results/service-$AF_BENCH_HOST_TAG,"
                         " cpu-lavapipe when unset); .json and .png are written")
    args = ap.parse_args()
    if args.per_gpu:
        os.environ["SERVICE_PER_GPU"] = str(args.per_gpu)  # the servers inherit it
    if args.quick:
        args.rates, args.seconds = "25,50,100", 3.0
    args.rates = [float(r) for r in args.rates.split(",")]
    args.paths = args.paths.split(",")
    _ROWS[0] = args.rows
    _SCORE[:] = _score_queries(args.rows)
    variants = [v for v in args.variants.split(",")
                if v != "torch" or importlib.util.find_spec("torch") is not None]
    rows: list[dict[str, object]] = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def write(done: bool) -> None:  # after every variant: a cut-short run keeps its rows
        out.with_suffix(".json").write_text(json.dumps(
            {"argv": sys.argv[1:], "complete": done, "rows": rows}, indent=1))

    for w in (int(x) for x in args.workers.split(",")):
        for v in variants:
            rows += anyio.run(bench_variant, v, args, w)
            write(False)
    rows += summary(rows)
    for r in rows:
        if r.get("kind") == "ratio":
            print(json.dumps(r), flush=True)
    write(True)
    print(f"wrote {out.with_suffix('.json')}")
    if importlib.util.find_spec("matplotlib") is not None:
        plot(rows, out.with_suffix(".png"))
        print(f"wrote {out.with_suffix('.png')}")
    else:
        print("no plot: matplotlib is not installed (pip install matplotlib)")


if __name__ == "__main__":
    main()
