"""Matmul autotuning on this adapter: each candidate plan's TFLOP/s as the tuner timed it,
the plan it chose, that plan end to end, and torch (TF32 off) side by side.

Shapes (M x K x N, float32): 1024^3, 2048^3, 4096^3, 8192^3, the MLP layer 256 x 784 x
512 as ``relu(x @ w + b)``, and 256 x 65536 x 256 (few output tiles, a long K: split-K
plans compete). ``--quick``: small shapes for a CPU adapter.

One device with tuning on, in a fresh tuning directory (``--keep-cache``: the user's, so
classes tuned before are read, not timed). Per shape: the first product tunes its shape
class (candidates timed on scratch buffers by timestamp queries, ~20 ms of GPU time each
after compiling; "tune s" is that first call's wall time, compiles included) and is
checked against numpy on 8 rows. Then QUEUE products of shifted copies of ``x`` per sync,
3 times: GPU time from timestamp queries around the passes, and wall time; torch: the
same calls between CUDA events. TFLOP/s counts 2 M N K per product.

Usage: python bench/matmul_tune.py [--quick] [--shapes 4096,256x784x512] [--keep-cache]
    [--no-torch]
Writes bench/results/matmul_tune-<host-tag>.json.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any, Callable

import anyio
import numpy as np

import _common as C
import asyncfusion as af
from asyncfusion.codegen.wgsl.matmul_plan import MatmulPlan

NAME = "matmul_tune"
SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
          (256, 784, 512), (256, 65536, 256)]
QUICK = [(96, 96, 96), (16, 784, 64), (32, 8192, 32)]
MLP = (256, 784, 512)
REPS = 3


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    """'4096,256x784x512' -> [(4096, 4096, 4096), (256, 784, 512)] (M x K x N)."""
    out = []
    for part in text.split(","):
        dims = [int(d) for d in part.lower().split("x")]
        out.append((dims[0],) * 3 if len(dims) == 1 else (dims[0], dims[1], dims[2]))
    return out


def tflops(m: int, k: int, n: int, seconds: float | None) -> float | None:
    return None if not seconds else 2 * m * k * n / seconds / 1e12


def queue_of(m: int, k: int, n: int) -> int:
    return 4 if m * n >= 8192 * 8192 else 8


async def af_times(dev: af.Device, xs: list[Any],
                   f: Callable[[Any], Any]) -> tuple[float, float | None]:
    """(wall seconds, GPU seconds or None) per product of ``f`` over ``xs``, one sync per
    round of ``len(xs)``; best wall round of REPS, GPU time of REPS rounds."""
    async def rnd() -> None:
        kept = [f(x) for x in xs]
        await dev.sync()
        del kept
    await rnd()
    wall = float("inf")
    for _ in range(REPS):
        t0 = time.perf_counter()
        await rnd()
        wall = min(wall, time.perf_counter() - t0)
    gpu = None
    with dev.backend.rt.gpu_timer() as timer:
        for _ in range(REPS):
            await rnd()
    ns = await anyio.to_thread.run_sync(timer.total_ns)
    if ns and timer.passes:
        gpu = ns * 1e-9 / (REPS * len(xs))
    return wall / len(xs), gpu


def torch_time(torch: Any, xs: list[Any], f: Callable[[Any], Any]) -> float:
    """GPU seconds per product between CUDA events (wall time on a CPU torch)."""
    kept = [f(x) for x in xs]
    cuda = xs[0].is_cuda
    if cuda:
        torch.cuda.synchronize()
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
    t0 = time.perf_counter()
    for _ in range(REPS):
        kept = [f(x) for x in xs]
    if cuda:
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1e3
    else:
        seconds = time.perf_counter() - t0
    del kept
    return seconds / (REPS * len(xs))


async def run(args: Any) -> dict[str, Any]:
    shapes = parse_shapes(args.shapes) if args.shapes else (QUICK if args.quick else SHAPES)
    torch = C.import_torch()
    tdev = C.torch_device(torch) if torch is not None else None
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    tmp = None if args.keep_cache else tempfile.mkdtemp(prefix="af-matmul-tune-")
    async with af.open_device(matmul_tune=True, tune_dir=tmp) as dev:
        info = C.adapter_info(dev)
        tuner = dev.backend.tuner
        for m, k, n in shapes:
            epi = (m, k, n) == MLP
            x = rng.standard_normal((m, k), dtype=np.float32)
            w = (rng.standard_normal((k, n), dtype=np.float32) / np.sqrt(k)).astype(np.float32)
            b = rng.standard_normal(n, dtype=np.float32)
            tx, tw, tb = (af.tensor(v, device=dev) for v in (x, w, b))

            def f(v: Any, tw: Any = tw, tb: Any = tb) -> Any:
                return (v @ tw + tb).relu() if epi else v @ tw
            t0 = time.perf_counter()
            got = await f(tx)[:8].to_data()
            tune_s = time.perf_counter() - t0
            want = np.maximum(x[:8] @ w + b, 0) if epi else x[:8] @ w
            np.testing.assert_allclose(got, want, rtol=1e-3,
                                       atol=1e-3 * float(np.abs(want).max()))
            record = tuner.records[tuner.last] if tuner.last else {}
            plan = MatmulPlan.from_json(record.get("plan"))
            us = record.get("us", {})
            assert isinstance(us, dict)
            cands = {name: tflops(m, k, n, t * 1e-6 if t else None) for name, t in us.items()}
            xs = [tx] + [tx + 0.01 * i for i in range(1, queue_of(m, k, n))]
            await dev.sync()
            wall, gpu = await af_times(dev, xs, f)
            del xs, tx, tw, tb
            row: dict[str, Any] = {
                "shape": f"{m}x{k}x{n}", "m": m, "k": k, "n": n, "epilogue": epi,
                "class": tuner.last, "tuned": plan.name if plan else None,
                "tune_s": tune_s, "candidates_tflops": cands,
                "af_gpu_tflops": tflops(m, k, n, gpu), "af_wall_tflops": tflops(m, k, n, wall)}
            if torch is not None:
                px, pw, pb = (torch.from_numpy(v).to(tdev) for v in (x, w, b))
                pxs = [px] + [px + 0.01 * i for i in range(1, queue_of(m, k, n))]

                def g(v: Any, pw: Any = pw, pb: Any = pb) -> Any:
                    return torch.relu(v @ pw + pb) if epi else v @ pw
                row["torch_tflops"] = tflops(m, k, n, torch_time(torch, pxs, g))
                del px, pw, pb, pxs
                if tdev == "cuda":
                    torch.cuda.empty_cache()
            best = row["af_gpu_tflops"] or row["af_wall_tflops"]
            row["af_vs_torch"] = C.ratio(best, row.get("torch_tflops"))
            rows.append(row)
            print(C.table(["candidate", "TFLOP/s", ""], sorted(
                ([name, t, "<- tuned" if plan and name == plan.name else ""]
                 for name, t in cands.items()), key=lambda r: -(r[1] or 0)),
                title=f"\n{m}x{k}x{n} ({tuner.last}): tuning took {tune_s:.1f} s"),
                flush=True)
    return {"meta": C.meta(info, args, tune_dir=tmp), "rows": rows}


def main() -> None:
    p = C.base_parser(__doc__.splitlines()[0])
    p.add_argument("--shapes", default=None, help="M x K x N shapes, e.g. 4096,256x784x512")
    p.add_argument("--keep-cache", action="store_true",
                   help="use the user's tuning directory (classes tuned before are read)")
    args = p.parse_args()
    C.apply_common(args)
    payload = anyio.run(run, args)
    cols = ["shape", "tuned", "tune_s", "af_gpu_tflops", "af_wall_tflops", "torch_tflops",
            "af_vs_torch"]
    print(C.table(cols, [[r.get(c) for c in cols] for r in payload["rows"]],
                  title="\nmatmul, tuned plan (float32; torch with TF32 off; af/torch from "
                        "GPU times where both have them)"))
    path = C.write_json(NAME, payload["meta"]["host_tag"], payload, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
