"""Row kernels alone, on one GPU, in one command: softmax, layer_norm (weight, bias) and
the scoring expression ``exp(-sum((db - q)**2, -1))`` at (1M, 256) and (4096, 4096),
GPU time per evaluation from timestamp queries (asyncfusion) and CUDA events (torch
eager and ``torch.compile``, where torch is present), beside the vec4 copy kernel over
the bytes each one must move (softmax and layer_norm: read and write the input's size;
scoring: read it, so half a copy of it), measured in the same run.

Timing is the scoreboard's (``kernel_rows.af_queued`` / ``torch_queued``): K evaluations,
each on an input of its own, one sync. ``--tpr 8,16,32`` also times each threads-per-row
forced (the row schedule the backend would otherwise choose from the sizes; 0 is its
own choice), to find the best per shape on the GPU at hand. Results are checked against
numpy on the first rows.

    .venv/bin/python bench/rows_probe.py                 # a GPU host, ~1-2 minutes
    .venv/bin/python bench/rows_probe.py --tpr 0,16,32,64 --no-torch
    .venv/bin/python bench/rows_probe.py --smoke         # lavapipe: small shapes
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Callable

import anyio
import numpy as np

import _common as C
import board as B
import floors
import kernel_rows as KR
import reduce as R
import asyncfusion as af
from asyncfusion.backends.wgpu import backend

WORKLOADS = ("softmax", "layer_norm", "score")
SHAPES = ((1 << 20, 256), (4096, 4096))
SMOKE_SHAPES = ((4096, 256), (64, 4096))


def _inputs(rows: int, d: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {"x": rng.standard_normal((rows, d), dtype=np.float32),
            "db": rng.random((rows, d), dtype=np.float32) * np.float32(0.1),
            "q": rng.random(d, dtype=np.float32) * np.float32(0.1),
            "w": (1.0 + 0.1 * rng.standard_normal(d, dtype=np.float32)).astype(np.float32),
            "b": (0.1 * rng.standard_normal(d, dtype=np.float32)).astype(np.float32)}


def _layer_norm_np(t: dict[str, np.ndarray]) -> np.ndarray:
    x = t["x"].astype(np.float64)
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + R.EPS)
    return (y * t["w"] + t["b"]).astype(np.float32)


def _torch_layer_norm(torch: Any, d: int) -> Callable[..., Any]:
    return lambda x, w, b: torch.nn.functional.layer_norm(x, (d,), w, b, eps=R.EPS)


class _Forced:
    """The threads per row the backend chooses (recorded), or a forced one."""

    def __init__(self) -> None:
        self.choose = backend.threads_per_row
        self.force = 0
        self.seen: set[int] = set()

    def __call__(self, n_out: int, n_red: int, workgroup: int, lanes: int = 1) -> int:
        tpr = self.choose(n_out, n_red, workgroup, lanes)
        if self.force:
            tpr = min(self.force, workgroup)
        self.seen.add(tpr)
        return tpr


async def _af_rows(plan: B.Plan, shape: tuple[int, int], tprs: list[int], forced: _Forced
                   ) -> list[dict[str, Any]]:
    rows, d = shape
    host = _inputs(rows, d)
    r = min(rows, plan.check_rows)
    out = []
    async with af.open_device() as dev:
        t = {k: af.tensor(v, device=dev) for k, v in host.items()}
        for w in WORKLOADS:
            key = "db" if w == "score" else "x"
            srcs = KR._variants(t[key], plan.row_k)
            await dev.sync()
            for tpr in tprs:
                forced.force, forced.seen = tpr, set()
                fn = R.af_fn(w)
                got = await fn(t)[:r].to_data()
                want = (_layer_norm_np if w == "layer_norm" else R.np_fn(w))(
                    {k: (v[:r] if v.ndim == 2 else v) for k, v in host.items()})
                KR._close(got, want, f"{w} {shape} tpr={tpr}")
                timing = await KR.af_queued(
                    dev, lambda i: fn({**t, key: srcs[i]}), plan.row_k, plan)
                out.append({"workload": w, "shape": list(shape), "tpr": sorted(forced.seen),
                            "forced": tpr, "gpu_ms": timing.gpu_ms, "wall_ms": timing.ms,
                            "launches": timing.launches})
                print(f"  {w:10} {rows}x{d} tpr={sorted(forced.seen)}: "
                      f"GPU {timing.gpu_ms} ms, launches {timing.launches}", flush=True)
            del srcs
        del t
    return out


def _torch_rows(plan: B.Plan, torch: Any, tdev: str, shape: tuple[int, int]
                ) -> dict[str, dict[str, float | None]]:
    rows, d = shape
    tt = {k: torch.from_numpy(v).to(tdev) for k, v in _inputs(rows, d).items()}
    out: dict[str, dict[str, float | None]] = {}
    for w in WORKLOADS:
        fn, names = R.torch_fns(torch, w)
        if w == "layer_norm":
            fn = _torch_layer_norm(torch, d)
        srcs = KR._variants(tt[names[0]], plan.row_k)
        args = [(v, *(tt[n] for n in names[1:])) for v in srcs]
        res: dict[str, float | None] = {"eager": KR.torch_queued(torch, tdev, fn, args,
                                                                  plan).gpu_ms}
        comp, _ = KR.compiled(torch, fn, args[0])
        res["compile"] = KR.torch_queued(torch, tdev, comp, args, plan).gpu_ms if comp else None
        out[w] = res
        del srcs, args
    del tt
    KR._free(torch, tdev)
    return out


def _floors(plan: B.Plan, shapes: tuple[tuple[int, int], ...]
            ) -> tuple[dict[tuple[int, int], float | None], dict[str, Any]]:
    """GPU ms of the vec4 copy kernel over each shape's float32 bytes (one read, one
    write of them), and the adapter's info."""
    raw = floors.RawGpu()
    try:
        return {s: floors.copy_bandwidth(raw, s[0] * s[1] * 4, 4 if plan.smoke else 10,
                                         plan.warm_s, 3 if plan.smoke else 10)["gpu_ms"]
                for s in shapes}, raw.info
    finally:
        raw.close()


def main() -> None:
    p = C.base_parser(__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="small shapes (lavapipe)")
    p.add_argument("--tpr", default="0", help="threads per row to time, comma separated "
                   "(0: the backend's choice)")
    args = p.parse_args()
    C.apply_common(args)
    plan = B.Plan.for_smoke() if args.smoke else dataclasses.replace(B.Plan(), row_k=4)
    shapes = SMOKE_SHAPES if args.smoke else SHAPES
    tprs = [int(v) for v in args.tpr.split(",")]
    torch = None if args.no_torch else C.import_torch()
    tdev = C.torch_device(torch) if torch is not None else "cpu"
    forced = _Forced()
    backend.threads_per_row = forced  # type: ignore[assignment]
    floor, info = _floors(plan, shapes)
    rows: list[dict[str, Any]] = []
    for shape in shapes:
        print(f"{shape[0]}x{shape[1]}: copy floor {floor[shape]} ms (GPU)", flush=True)
        got = anyio.run(_af_rows, plan, shape, tprs, forced)
        peers = _torch_rows(plan, torch, tdev, shape) if torch is not None else {}
        for row in got:
            w = row["workload"]
            copy = floor[shape]
            row["floor_ms"] = None if copy is None else copy / 2 if w == "score" else copy
            row["torch_eager_gpu_ms"] = peers.get(w, {}).get("eager")
            row["torch_compile_gpu_ms"] = peers.get(w, {}).get("compile")
            best = [v for v in (row["torch_eager_gpu_ms"], row["torch_compile_gpu_ms"]) if v]
            row["ratio_best_torch"] = C.ratio(row["gpu_ms"], min(best)) if best else None
            row["ratio_floor"] = C.ratio(row["gpu_ms"], row["floor_ms"])
            rows.append(row)
    print(C.table(["workload", "shape", "tpr", "af GPU ms", "launches", "eager", "compile",
                   "floor", "/ best torch", "/ floor"],
                  [[r["workload"], "x".join(map(str, r["shape"])), r["tpr"], r["gpu_ms"],
                    r["launches"], r["torch_eager_gpu_ms"], r["torch_compile_gpu_ms"],
                    r["floor_ms"], r["ratio_best_torch"], r["ratio_floor"]] for r in rows],
                  title="row kernels, GPU ms per evaluation"))
    path = C.write_json("rows_probe", C.host_tag(info), C.meta(info, args, rows=rows),
                        args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
