"""Helpers shared by the benchmark scripts in bench/ (timing, host tag, tables, JSON).

Each script stays runnable on its own (``python bench/NAME.py [--quick]``); Python puts the
script's folder first on ``sys.path``, so ``import _common`` finds this file.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Sequence

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # silences a harmless wgpu/Vulkan warning

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
sys.path.insert(0, str(BENCH_DIR.parent))  # run from a checkout without installing

perf = time.perf_counter


# -- the seed's chain (one definition for examples, tests and bench) ---------------------
from examples.seed_chain import CHAIN_OPS, chain, chain_np  # noqa: E402,F401


# -- optional torch ---------------------------------------------------------------------
def import_torch() -> Any | None:
    """torch, or None where it is not installed (or broken)."""
    if os.environ.get("AF_BENCH_NO_TORCH"):
        return None
    try:
        import torch  # noqa: PLC0415
    except Exception:  # noqa: BLE001 - missing or broken install: just skip the peer
        return None
    try:
        # torch.compile's triton bundles LLVM; loaded after Mesa's lavapipe (which links
        # LLVM too) it crashes the process, loaded first it does not
        import triton  # noqa: F401, PLC0415
    except Exception:  # noqa: BLE001 - no triton: torch.compile's C++ path or none
        pass
    return torch


def torch_device(torch: Any) -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def torch_sync(torch: Any, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


# -- statistics -------------------------------------------------------------------------
@dataclass
class Stats:
    """Seconds of repeated runs of one measurement."""

    samples: list[float] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def best(self) -> float:
        return min(self.samples) if self.samples else float("nan")

    def pct(self, q: float) -> float:
        return percentile(self.samples, q)

    def summary(self, scale: float = 1.0) -> dict[str, Any]:
        s = sorted(self.samples)
        return {"median": self.median * scale, "best": self.best * scale,
                "mean": (sum(s) / len(s) * scale) if s else None,
                "max": (s[-1] * scale) if s else None, "n": self.n}


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    if not values:
        return float("nan")
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    k = (len(s) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def _keep_going(n: int, start: float, min_reps: int, max_reps: int, budget_s: float) -> bool:
    if n < min_reps:
        return True
    return n < max_reps and perf() - start < budget_s


def measure(fn: Callable[[], Any], *, warmup: int = 1, min_reps: int = 3, max_reps: int = 50,
            budget_s: float = 1.0) -> Stats:
    """Time ``fn()`` after ``warmup`` calls: at least ``min_reps`` runs, then more while
    ``budget_s`` lasts (``max_reps`` at most)."""
    for _ in range(warmup):
        fn()
    gc.collect()
    st = Stats()
    start = perf()
    while _keep_going(st.n, start, min_reps, max_reps, budget_s):
        t0 = perf()
        fn()
        st.samples.append(perf() - t0)
    return st


async def ameasure(fn: Callable[[], Awaitable[Any]], *, warmup: int = 1, min_reps: int = 3,
                   max_reps: int = 50, budget_s: float = 1.0) -> Stats:
    """``measure`` for a coroutine function."""
    for _ in range(warmup):
        await fn()
    gc.collect()
    st = Stats()
    start = perf()
    while _keep_going(st.n, start, min_reps, max_reps, budget_s):
        t0 = perf()
        await fn()
        st.samples.append(perf() - t0)
    return st


# -- sizes ------------------------------------------------------------------------------
_SUFFIX = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_size(text: str) -> int:
    """'1e6' -> 1000000, '4096' -> 4096, '64M' -> 67108864 (K/M/G are powers of 2)."""
    t = text.strip().lower()
    if t and t[-1] in _SUFFIX:
        return int(float(t[:-1]) * _SUFFIX[t[-1]])
    return int(float(t))


def parse_sizes(text: str) -> list[int]:
    return [parse_size(p) for p in text.split(",") if p.strip()]


def fmt_size(n: int) -> str:
    """1000000 -> '1e6', 67108864 -> '64M', 4096 -> '4K', else the plain number."""
    digits = str(n)
    if n >= 1000 and digits.rstrip("0") == "1":
        return f"1e{len(digits) - 1}"
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10}K"
    return digits


# -- the host ---------------------------------------------------------------------------
def adapter_info(dev: Any) -> dict[str, Any]:
    """The wgpu adapter's info dict (vendor, device, adapter_type, backend_type...).

    asyncfusion exposes only ``backend.adapter_summary`` publicly, so this reads the
    runtime's ``adapter_info`` and falls back to the summary.
    """
    rt = getattr(dev.backend, "rt", None)
    info = dict(getattr(rt, "adapter_info", {}) or {})
    info.setdefault("summary", getattr(dev.backend, "adapter_summary", dev.backend.name))
    return info


def is_cpu_adapter(info: dict[str, Any]) -> bool:
    text = f"{info.get('device', '')} {info.get('summary', '')}".lower()
    return (str(info.get("adapter_type", "")).upper() == "CPU" or "llvmpipe" in text
            or "lavapipe" in text or "swiftshader" in text)


_VENDOR_WORDS = {"nvidia", "amd", "ati", "intel", "apple", "geforce", "radeon", "tesla",
                 "quadro", "corporation", "(r)", "(tm)", "graphics"}


def host_tag(info: dict[str, Any]) -> str:
    """'cpu-lavapipe' for a CPU adapter, else a short slug of the GPU's name ('h100',
    'h200', 'a100', 'rtx4090', 'm2'). ``AF_BENCH_HOST_TAG`` overrides it."""
    forced = os.environ.get("AF_BENCH_HOST_TAG")
    if forced:
        return re.sub(r"[^a-z0-9._-]+", "-", forced.lower())
    if is_cpu_adapter(info):
        return "cpu-lavapipe"
    name = str(info.get("device") or info.get("summary") or "gpu").lower()
    name = re.sub(r"\(.*?\)", " ", name)
    words = [w for w in re.split(r"[^a-z0-9]+", name) if w and w not in _VENDOR_WORDS]
    if not words:
        return "gpu"
    if re.search(r"\d", words[0]) and re.search(r"[a-z]", words[0]):
        return words[0]  # h100, h200, a100, m2 ...
    if len(words) > 1:
        return f"{words[0]}{words[1]}"  # rtx 4090 -> rtx4090
    return words[0]


def meta(info: dict[str, Any], args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    torch = import_torch()
    import anyio  # noqa: PLC0415
    import wgpu  # noqa: PLC0415

    out = {
        "host_tag": host_tag(info),
        "adapter": {k: v for k, v in info.items() if isinstance(v, (str, int, float, bool))},
        "when": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "anyio": anyio.__version__ if hasattr(anyio, "__version__") else _pkg_version("anyio"),
        "wgpu": wgpu.__version__,
        "asyncfusion": _pkg_version("asyncfusion"),
        "torch": getattr(torch, "__version__", None),
        "git": git_state(),
        "quick": bool(getattr(args, "quick", False)),
        "argv": sys.argv[1:],
        "timer": "time.perf_counter",
    }
    if torch is not None:
        out["torch_device"] = torch_device(torch)
        if out["torch_device"] == "cuda":
            out["torch_cuda_device"] = torch.cuda.get_device_name(0)
    out.update(extra)
    return out


def git_state() -> str | None:
    """``AF_BENCH_GIT`` if set (a copied tree whose .git is not its own), else '<commit>'
    or '<commit>+dirty' (asyncfusion/ changed) of the checkout, or None."""
    import subprocess  # noqa: PLC0415

    if os.environ.get("AF_BENCH_GIT"):
        return os.environ["AF_BENCH_GIT"]

    root = BENCH_DIR.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                              capture_output=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "asyncfusion"],
                               cwd=root, text=True, capture_output=True, timeout=10,
                               check=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except Exception:  # noqa: BLE001 - no git, or not a checkout
        return None


def _pkg_version(name: str) -> str | None:
    try:
        from importlib.metadata import version  # noqa: PLC0415

        return version(name)
    except Exception:  # noqa: BLE001
        return None


def write_json(name: str, tag: str, payload: dict[str, Any], out: str | None = None) -> Path:
    """Write ``bench/results/NAME-TAG.json`` (atomically, through a .tmp file)."""
    path = Path(out) if out else RESULTS_DIR / f"{name}-{tag}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, default=_json_default) + "\n")
    os.replace(tmp, path)
    return path


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Stats):
        return o.summary()
    if hasattr(o, "__dataclass_fields__"):
        return asdict(o)
    return str(o)


def base_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="a ~20 s smoke run")
    p.add_argument("--out", default=None,
                   help="JSON path (default bench/results/NAME-<host-tag>.json)")
    p.add_argument("--no-torch", action="store_true", help="skip the torch peers")
    return p


def apply_common(args: argparse.Namespace) -> None:
    if getattr(args, "no_torch", False):
        os.environ["AF_BENCH_NO_TORCH"] = "1"
    if os.environ.get("ASYNCFUSION_TRACE", "") not in ("", "0"):
        print("warning: ASYNCFUSION_TRACE is on; the trace output slows every op down",
              file=sys.stderr)


# -- tables -----------------------------------------------------------------------------
def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> str:
    rows = [[_cell(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    lines = []
    if title:
        lines.append(title)
    lines.append("  ".join(h.rjust(w) for h, w in zip(headers, widths)))
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    return "\n".join(lines)


def _cell(c: Any) -> str:
    if c is None:
        return "-"
    if isinstance(c, float):
        if c != c:  # NaN
            return "-"
        a = abs(c)
        if a == 0:
            return "0"
        if a >= 1000:
            return f"{c:,.0f}"
        if a >= 100:
            return f"{c:.1f}"
        if a >= 1:
            return f"{c:.2f}"
        if a >= 0.01:
            return f"{c:.3f}"
        return f"{c:.2e}"
    return str(c)


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b or a != a or b != b:
        return None
    return a / b
