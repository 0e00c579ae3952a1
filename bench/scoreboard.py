"""The scoreboard: every speed target of the open issues, measured in one run, each beside
its peers in the same process.

Rows (``board.WORKLOADS``): the host path of issue 21 (round trips beside the raw wgpu-py
trip and a worker-thread hop of the same run, registration, 1000 and 100 tasks, the
executor's CPU per task at 10..10,000 streams, event-loop lag) and the kernels of issue
22 (matmul, softmax, layer_norm, scoring, the row sum against the copy kernel's bandwidth,
the seed chain at 64M, top-5 of 1M, a search query) beside torch eager / torch.compile
(where installed), numpy and the floors of ``bench/floors.py``. Each workload runs for at
least a second before it is timed (the H200 clocks down under light Vulkan load);
``nvidia-smi``'s SM clock is sampled after each row; kernel rows carry GPU time from
timestamp queries.

Usage: python bench/scoreboard.py [--smoke] [--only NAME,...] [--out-dir DIR] [--no-torch]

Writes ``scoreboard-<host tag>.json`` and ``.md`` to ``bench/results/`` (``--smoke``: a
temporary folder unless ``--out-dir``) and prints the table. Exits 1 when a row crashed,
is missing or the JSON breaks the schema (``board.schema_errors``); nothing timed is
judged by the exit status.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import tempfile
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio

import _common as C
import board as B
import floors
import host_rows as H
import kernel_rows as K
import asyncfusion as af

Step = tuple[tuple[str, ...], Callable[[], Awaitable[list[dict[str, Any]]]]]
FULL_RUN_S = 360  # the H200 run's budget


def steps(plan: B.Plan, raw: floors.RawGpu, torch: Any, tdev: str) -> list[Step]:
    """The run, in order: round trips first (on lavapipe a submission of thousands of
    dispatches, as registration's drains make, slows the rest of the process)."""
    copy: dict[str, Any] = {}

    def copy_floor() -> dict[str, Any]:
        if not copy:
            copy.update(K.copy_floor(plan, raw))
        return copy

    executor = tuple(f"executor_per_task_{n}" for n in B.EXECUTOR_STREAMS)
    return [
        (("roundtrip_wgpu", "roundtrip_numpy"), lambda: H.roundtrips(plan, raw, torch)),
        (("registration",), lambda: H.registration_row(plan, torch)),
        (("tasks_1000",), lambda: H.tasks(plan, 1000, torch)),
        (("tasks_100",), lambda: H.tasks(plan, 100, torch)),
        ((*executor, "executor_flatness"), lambda: H.executor(plan, B.EXECUTOR_STREAMS)),
        (("loop_lag_p99",), lambda: H.loop_lag(plan)),
        (tuple(f"matmul_{n}" for n in K.FULL.matmul), lambda: K.matmuls(plan, torch, tdev)),
        (("matmul_mlp",), lambda: K.mlp(plan, torch, tdev)),
        (("softmax", "layer_norm", "scoring", "reduce_sum_bandwidth"),
         lambda: K.row_kernels(plan, torch, tdev, copy_floor())),
        (("seed_chain_64M",), lambda: K.seed_chain(plan, torch, tdev, copy_floor())),
        (("topk5_1M",), lambda: K.topk(plan, torch, tdev)),
        (("search_query",), lambda: K.search_query(plan, torch, tdev)),
    ]


def selected(all_steps: list[Step], only: str | None) -> list[Step]:
    """The steps that make a row named in ``only``: comma-separated row names, or
    prefixes of names where no row has that exact name ("matmul": every matmul row)."""
    if not only:
        return all_steps
    names = {n for ns, _ in all_steps for n in ns}
    words = [w.strip() for w in only.split(",") if w.strip()]

    def wanted(n: str) -> bool:
        return any(n == w or (w not in names and n.startswith(w)) for w in words)
    return [s for s in all_steps if any(wanted(n) for n in s[0])]


def progress(t0: float, r: dict[str, Any]) -> str:
    unit = r.get("unit", "ms")
    head = f"[{C.perf() - t0:6.1f} s] {r['workload']}"
    if r.get("error"):
        return f"{head}: ERROR {r['error']}"
    met = {True: "met", False: "NOT met", None: "-"}[r["met"]]
    return (f"{head}: asyncfusion {B.fmt(r['af_ms'], unit)}, {r['peer']} "
            f"{B.fmt(r['peer_ms'], unit)}, ratio {B.fmt(r['ratio'], '')}, target "
            f"{r['target']}: {met}; GPU {B.fmt(r['gpu_ms'], unit)}, SM "
            f"{B.fmt(r['sm_clock_mhz'])} MHz")


async def run(plan: B.Plan, only: str | None, out_dir: Path
              ) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Every chosen row, in order; after each step the rows so far are written to
    ``out_dir`` as ``scoreboard-<tag>-partial.json`` (a run cut short keeps them)."""
    t0 = C.perf()
    torch = C.import_torch()
    tdev = C.torch_device(torch) if torch is not None else "cpu"
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    async with af.open_device() as probe:
        info = C.adapter_info(probe)
    raw = floors.RawGpu()
    chosen = selected(steps(plan, raw, torch, tdev), only)
    expected = tuple(n for names, _ in chosen for n in names)
    print(f"adapter: {info.get('summary')}  host tag: {C.host_tag(info)}  torch: "
          f"{getattr(torch, '__version__', 'not installed')} ({tdev})  "
          f"{'smoke run' if plan.smoke else 'full run'}: {len(expected)} rows", flush=True)
    rows: list[dict[str, Any]] = []
    for names, step in chosen:
        try:
            made = await step()
        except Exception as exc:  # noqa: BLE001 - record it, run the other rows
            tb = traceback.format_exc()
            print(tb, file=sys.stderr, flush=True)
            made = [B.error_row(n, f"{type(exc).__name__}: {exc}", tb) for n in names]
        rows += made
        for r in made:
            print(progress(t0, r), flush=True)
        B.write({**_payload(t0, plan, info, torch, tdev, rows), "partial": True},
                f"{C.host_tag(info)}-partial", out_dir)
    raw.close()
    for leftover in B.paths(f"{C.host_tag(info)}-partial", out_dir):
        leftover.unlink(missing_ok=True)
    return _payload(t0, plan, info, torch, tdev, rows), expected


def _payload(t0: float, plan: B.Plan, info: dict[str, Any], torch: Any, tdev: str,
             rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "commit": C.git_state(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": str(info.get("summary")),
        "host_tag": C.host_tag(info),
        "smoke": plan.smoke,
        "elapsed_s": C.perf() - t0,
        "python": platform.python_version(),
        "wgpu": C._pkg_version("wgpu"),
        "torch": getattr(torch, "__version__", None),
        "torch_device": (torch.cuda.get_device_name(0) if torch is not None
                         and tdev == "cuda" else tdev if torch is not None else None),
        "plan": asdict(plan),
        "rows": rows,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true",
                   help="small sizes and few repetitions (lavapipe CI): every row runs")
    p.add_argument("--only", default=None,
                   help="comma-separated row names or prefixes, e.g. matmul,softmax")
    p.add_argument("--out-dir", default=None,
                   help="where the JSON and Markdown go (default bench/results; --smoke: a "
                        "temporary folder)")
    p.add_argument("--no-torch", action="store_true", help="skip the torch peers")
    args = p.parse_args()
    C.apply_common(args)
    plan = B.Plan.for_smoke() if args.smoke else B.Plan()
    out_dir = Path(args.out_dir) if args.out_dir else (
        Path(tempfile.gettempdir()) / "asyncfusion-scoreboard" if args.smoke
        else C.RESULTS_DIR)
    payload, expected = anyio.run(run, plan, args.only, out_dir)
    paths = B.write(payload, payload["host_tag"], out_dir)
    print()
    print(B.markdown(payload))
    print(f"wrote {paths[0]} and {paths[1]} ({payload['elapsed_s']:.0f} s)")
    if not plan.smoke and not args.only and payload["elapsed_s"] > FULL_RUN_S:
        print(f"warning: the run took {payload['elapsed_s']:.0f} s, over its "
              f"{FULL_RUN_S} s budget", file=sys.stderr)
    errs = B.schema_errors(payload, expected)
    for e in errs:
        print(f"scoreboard: {e}", file=sys.stderr)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
