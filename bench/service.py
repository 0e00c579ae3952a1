"""Open-loop load against examples/service.py under uvicorn: asyncfusion beside numpy and
torch (where installed) in a worker thread, the same endpoints and server settings.

Requests are sent at a fixed rate whatever the answers do (open loop), and each latency
is measured from its *scheduled* send time, so queueing shows (no coordinated omission).
Percentiles come from an HdrHistogram. Reports per variant and offered rate: achieved
req/s, p50/p99/p999, the server's event-loop lag, launches and submissions per request;
writes JSON and a PNG (latency against offered load, one line per variant).

    python bench/service.py --quick            # this box: small rates, ~1 minute
    python bench/service.py --rates 500,1000,2000,4000 --seconds 10

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
BODIES = {"/search": lambda i: {"query": _QUERIES[i % 64], "k": 5},
          "/mlp": lambda i: {"x": _XS[i % 64]}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(variant: str, rows: int, port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, SERVICE_VARIANT=variant, SERVICE_ROWS=str(rows))
    cmd = [sys.executable, "-m", "uvicorn", "--factory", "examples.service:create_app",
           "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
           "--no-access-log"]
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
    counts = {"ok": 0, "rejected": 0, "failed": 0}
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
    url, path, rate, seconds, timeout, part, parts = args
    return anyio.run(_load, url, path, BODIES[path], rate, seconds, timeout, part, parts)


async def run_rate(url: str, path: str, rate: float, seconds: float, timeout: float,
                   clients: int = 1) -> dict[str, float]:
    """Offer ``rate`` req/s for ``seconds``, from ``clients`` load-generator processes
    (one Python client tops out at a few thousand requests a second)."""
    if clients == 1:
        parts = [await _load(url, path, BODIES[path], rate, seconds, timeout, 0, 1)]
    else:
        ctx = multiprocessing.get_context("spawn")
        jobs = [(url, path, rate, seconds, timeout, k, clients) for k in range(clients)]
        with ctx.Pool(clients) as pool:
            parts = await anyio.to_thread.run_sync(pool.map, _load_process, jobs)
    hist = HdrHistogram(1, 60_000_000, 3)  # microseconds
    counts = {"ok": 0, "rejected": 0, "failed": 0}
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


async def stats(url: str) -> dict[str, float | None]:
    async with httpx.AsyncClient(base_url=url) as client:
        out: dict[str, float | None] = (await client.get("/stats")).json()
        return out


async def bench_variant(variant: str, args: argparse.Namespace) -> list[dict[str, object]]:
    port = free_port()
    proc = start_server(variant, args.rows, port)
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        for path in args.paths:
            await run_rate(url, path, args.rates[0], 1.0, args.timeout)  # warm
            for rate in args.rates:
                before = await stats(url)
                row = await run_rate(url, path, rate, args.seconds, args.timeout, args.clients)
                after = await stats(url)
                served = max(1, int(after["served"] or 0) - int(before["served"] or 0))
                for key in ("launches", "submissions"):
                    a, b = after.get(key), before.get(key)
                    row[f"{key}_per_request"] = None if a is None or b is None else (
                        (a - b) / served)
                row.update({"variant": variant, "path": path,
                            "loop_lag_p99_ms": after.get("lag_p99_ms")})
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return rows


def plot(rows: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--variants", default="af,numpy,torch")
    ap.add_argument("--clients", type=int, default=1,
                    help="load-generator processes (more for rates past ~2,000 req/s)")
    ap.add_argument("--paths", default="/search,/mlp")
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
    variants = [v for v in args.variants.split(",")
                if v != "torch" or importlib.util.find_spec("torch") is not None]
    rows: list[dict[str, object]] = []
    for v in variants:
        rows += anyio.run(bench_variant, v, args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"argv": sys.argv[1:], "rows": rows},
                                                   indent=1))
    print(f"wrote {out.with_suffix('.json')}")
    if importlib.util.find_spec("matplotlib") is not None:
        plot(rows, out.with_suffix(".png"))
        print(f"wrote {out.with_suffix('.png')}")
    else:
        print("no plot: matplotlib is not installed (pip install matplotlib)")


if __name__ == "__main__":
    main()
