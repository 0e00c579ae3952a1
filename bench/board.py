"""The scoreboard's rows, their targets, the JSON/Markdown writers and the schema check.

A row is a plain dict with ``ROW_KEYS`` first (``None`` where a value was not measured)
and any extra keys after. ``ratio`` is asyncfusion's time over the peer's unless the row
says otherwise; a :class:`Target` is a list of conditions on the row's own values, and
``met`` is None where one of them was not measured (no torch, a crashed row).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROW_KEYS = ("workload", "af_ms", "peer", "peer_ms", "ratio", "target", "met", "gpu_ms",
            "sm_clock_mhz")
TOP_KEYS = ("commit", "date", "device", "rows")
_OPS = {"<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b}

# every workload with a speed target in issues 21 and 22, in run order
EXECUTOR_STREAMS = (10, 100, 1000, 10000)
WORKLOADS = (
    "roundtrip_wgpu", "roundtrip_numpy", "registration", "tasks_1000", "tasks_100",
    *(f"executor_per_task_{n}" for n in EXECUTOR_STREAMS), "executor_flatness",
    "loop_lag_p99",
    "matmul_2048", "matmul_4096", "matmul_8192", "matmul_mlp", "softmax", "layer_norm",
    "scoring", "reduce_sum_bandwidth", "seed_chain_64M", "topk5_1M", "search_query",
)


@dataclass(frozen=True, slots=True)
class Plan:
    """Sizes and repetitions of one run: the H200 run, or ``smoke()`` for lavapipe CI."""

    smoke: bool = False
    warm_s: float = 1.0  # sustained work before each timing (the H200 clocks down idle)
    budget_s: float = 2.0  # timed repetitions continue while this lasts ...
    min_reps: int = 5  # ... after at least this many
    max_reps: int = 500
    rt_reps: int = 400  # round trips and thread hops
    reg_ops: int = 100_000  # registration: ops per loop, in chunks drained between
    reg_chunk: int = 10_000
    task_elems: int = 4096  # tasks_N: the seed chain on this many floats per task
    executor_elems: int = 64
    lag_s: float = 2.0
    lag_readers: int = 100
    matmul: tuple[int, ...] = (2048, 4096, 8192)
    matmul_k: tuple[int, ...] = (32, 8, 2)  # products per sync: the sync's share is small
    mlp: tuple[int, int, int] = (256, 784, 512)
    mlp_k: int = 64
    rows: int = 1 << 20  # softmax, layer_norm, scoring, reduce sum: rows of 256
    row_k: int = 8
    chain_n: int = 64 << 20
    chain_k: int = 16
    topk_n: int = 1 << 20
    topk_k: int = 64
    search: tuple[int, int, int] = (1_000_000, 256, 4)  # rows, dim, queries
    copy_bytes: int = 512 << 20  # the copy floor's buffer (one read + one write of it)
    check_rows: int = 4096  # rows checked against numpy

    @staticmethod
    def for_smoke() -> Plan:
        return Plan(smoke=True, warm_s=0.02, budget_s=0.05, min_reps=1, max_reps=3,
                    rt_reps=20, reg_ops=4000, reg_chunk=2000, lag_s=0.3, matmul=(64, 96, 128),
                    matmul_k=(2, 2, 2), mlp=(32, 784, 512), mlp_k=2, rows=2048, row_k=2,
                    chain_n=1 << 16, chain_k=2, topk_n=1 << 14, topk_k=2,
                    search=(8192, 64, 4), copy_bytes=1 << 20, check_rows=512)


@dataclass(frozen=True, slots=True)
class Cond:
    """``row[key] op value``."""

    key: str
    op: str
    value: float

    def holds(self, row: dict[str, Any]) -> bool | None:
        got = row.get(self.key)
        if not isinstance(got, (int, float)) or isinstance(got, bool) or math.isnan(got):
            return None
        return bool(_OPS[self.op](got, self.value))


@dataclass(frozen=True, slots=True)
class Target:
    text: str
    conds: tuple[Cond, ...]

    def met(self, row: dict[str, Any]) -> bool | None:
        results = [c.holds(row) for c in self.conds]
        if False in results:
            return False
        return None if None in results else True


def ratio_at_most(x: float, text: str | None = None) -> Target:
    return Target(text or f"<= {x:g}x", (Cond("ratio", "<=", x),))


def ratio_at_least(x: float, text: str | None = None) -> Target:
    return Target(text or f">= {x:g}", (Cond("ratio", ">=", x),))


def ms_at_most(ms: float, text: str) -> Target:
    return Target(text, (Cond("af_ms", "<=", ms),))


def row(workload: str, af_ms: float | None, peer: str | None, peer_ms: float | None,
        target: Target, *, ratio: float | None = None, gpu_ms: float | None = None,
        sm_clock_mhz: int | None = None, **extra: Any) -> dict[str, Any]:
    """A row; ``ratio`` defaults to af_ms / peer_ms."""
    if ratio is None:
        ratio = _div(af_ms, peer_ms)
    out: dict[str, Any] = {"workload": workload, "af_ms": _num(af_ms), "peer": peer,
                           "peer_ms": _num(peer_ms), "ratio": _num(ratio),
                           "target": target.text, "met": None, "gpu_ms": _num(gpu_ms),
                           "sm_clock_mhz": sm_clock_mhz}
    out.update(extra)
    out["met"] = target.met(out)
    return out


def peer_name(torch: Any, label: str) -> str:
    """``label``, or "torch (not installed)" where ``torch`` is None."""
    return label if torch is not None else "torch (not installed)"


def error_row(workload: str, error: str, traceback_text: str | None = None) -> dict[str, Any]:
    """The row of a workload that raised: nothing measured, ``error`` says what."""
    out = dict.fromkeys(ROW_KEYS)
    out["workload"] = workload
    out["error"] = error
    if traceback_text:
        out["traceback"] = traceback_text
    return out


def _num(v: float | None) -> float | None:
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) or math.isinf(v) else v


def _div(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b:
        return None
    return a / b


def sm_clock_mhz() -> int | None:
    """The SM clock of the first GPU ``nvidia-smi`` lists; None without nvidia-smi."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                             text=True, capture_output=True, timeout=10).stdout
        return int(out.split()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


# -- checks ---------------------------------------------------------------------------------
def schema_errors(payload: dict[str, Any], expected: tuple[str, ...] = WORKLOADS) -> list[str]:
    """What is wrong with a scoreboard payload: missing keys, wrong types, rows that
    crashed or are missing."""
    errs = [f"missing top-level key {k!r}" for k in TOP_KEYS if k not in payload]
    rows = payload.get("rows")
    if not isinstance(rows, list):
        return errs + ["'rows' is not a list"]
    seen = []
    for i, r in enumerate(rows):
        name = r.get("workload", f"row {i}") if isinstance(r, dict) else f"row {i}"
        if not isinstance(r, dict):
            errs.append(f"{name}: not an object")
            continue
        seen.append(name)
        errs += [f"{name}: missing key {k!r}" for k in ROW_KEYS if k not in r]
        for k in ("af_ms", "peer_ms", "ratio", "gpu_ms"):
            if r.get(k) is not None and not isinstance(r[k], (int, float)):
                errs.append(f"{name}: {k} is {type(r[k]).__name__}, not a number")
        if r.get("met") not in (None, True, False):
            errs.append(f"{name}: met is {r['met']!r}")
        if r.get("sm_clock_mhz") is not None and not isinstance(r["sm_clock_mhz"], int):
            errs.append(f"{name}: sm_clock_mhz is not an integer")
        if r.get("error"):
            errs.append(f"{name}: crashed: {r['error']}")
        elif r.get("af_ms") is None:
            errs.append(f"{name}: no asyncfusion time")
    errs += [f"{w}: row missing" for w in expected if w not in seen]
    return errs


# -- writers --------------------------------------------------------------------------------
def fmt(v: Any, unit: str = "ms") -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        x = v * 1e3 if unit == "us" else v
        a = abs(x)
        text = (f"{x:,.0f}" if a >= 1000 else f"{x:.1f}" if a >= 100 else f"{x:.2f}"
                if a >= 1 else f"{x:.3f}" if a >= 0.01 or a == 0 else f"{x:.2e}")
        return f"{text} {unit}" if unit in ("ms", "us") else text
    return str(v)


def markdown(payload: dict[str, Any]) -> str:
    lines = [f"# Scoreboard: {payload.get('device')}",
             "",
             f"commit `{payload.get('commit')}`, {payload.get('date')}"
             f"{', smoke run (nothing timed is meaningful)' if payload.get('smoke') else ''}",
             "",
             "| workload | asyncfusion | peer | peer time | ratio | target | met | GPU time "
             "| SM MHz |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in payload["rows"]:
        unit = r.get("unit", "ms")
        met = "ERROR" if r.get("error") else fmt(r.get("met"))
        ratio = r.get("ratio")
        lines.append("| " + " | ".join([
            r["workload"], fmt(r.get("af_ms"), unit), fmt(r.get("peer")),
            fmt(r.get("peer_ms"), unit),
            "-" if ratio is None else f"{fmt(float(ratio), '')}"
            + ("" if r.get("ratio_kind") == "fraction" else "x"),
            fmt(r.get("target")), met, fmt(r.get("gpu_ms"), unit),
            fmt(r.get("sm_clock_mhz"))]) + " |")
    notes = [(r["workload"], r["note"]) for r in payload["rows"] if r.get("note")]
    if notes:
        lines += ["", *(f"* `{w}`: {n}" for w, n in notes)]
    errors = [(r["workload"], r["error"]) for r in payload["rows"] if r.get("error")]
    if errors:
        lines += ["", "Errors:", *(f"* `{w}`: {e}" for w, e in errors)]
    return "\n".join(lines) + "\n"


def paths(tag: str, out_dir: Path) -> tuple[Path, Path]:
    """Where :func:`write` puts the JSON and the Markdown of ``tag``."""
    return out_dir / f"scoreboard-{tag}.json", out_dir / f"scoreboard-{tag}.md"


def write(payload: dict[str, Any], tag: str, out_dir: Path) -> tuple[Path, Path]:
    """``scoreboard-TAG.json`` and ``scoreboard-TAG.md`` in ``out_dir`` (atomically)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = paths(tag, out_dir)
    for path, text in zip(out, (json.dumps(payload, indent=2, default=str) + "\n",
                                markdown(payload))):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return out
