"""What the unchecked kernel code buys, measured in one process: GPU time of a matmul,
softmax and layer_norm with each of two kernel-code choices switched off in turn.

- ``checked``: the generated kernels compiled with naga's runtime checks (a clamp on
  every index into a workgroup or function-scope array, a counter in every loop), as a
  user's ``af.custom_kernel`` is, instead of through ``wgpuDeviceCreateShaderModuleTrusted``
  (``backends/wgpu/native.py::TrustedModules``).
- ``guarded``: the matmul's K-step reads keep their bounds tests where the tiles divide
  the product (``MatmulTiles.even`` off).

Each variant runs on a fresh device with a cleared pipeline cache, after a warm-up of at
least a second; ``K`` evaluations (each on its own input) per sync, GPU time from
timestamp queries (``kernel_rows.af_gpu_ms``), the SM clock beside each row. The matmul
plan comes from one tuning directory shared by the variants, so they run the same tiles.

Usage: python bench/checks_ab.py [--quick] [--n 4096] [--rows 1048576]
Writes bench/results/checks_ab-<host-tag>.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import numpy as np

import _common as C
import board as B
import reduce as R
from kernel_rows import af_gpu_ms
import asyncfusion as af
from asyncfusion.backends.wgpu import matmul_launch

NAME = "checks_ab"
VARIANTS = ("unchecked", "checked", "guarded")
K = 4  # evaluations per sync
WARM_S = 1.0


@contextmanager
def variant(dev: af.Device, name: str) -> Iterator[None]:
    """``dev`` compiles its kernels as variant ``name`` asks inside the block."""
    rt = dev.backend.rt
    trusted, lay_out = rt._trusted, matmul_launch.with_layout
    rt._pipelines.clear()
    rt._groups.clear()
    if name == "checked":
        rt._trusted = None
    if name == "guarded":
        def guarded(tiles: Any, args: Any) -> Any:
            return dataclasses.replace(lay_out(tiles, args), even=False)
        matmul_launch.with_layout = guarded  # type: ignore[assignment]
    try:
        yield
    finally:
        rt._trusted, matmul_launch.with_layout = trusted, lay_out
        rt._pipelines.clear()
        rt._groups.clear()


async def gpu_ms(dev: af.Device, build: Callable[[int], Any]) -> float | None:
    """GPU ms per evaluation of ``build(i)``, K per sync, after a warm-up."""
    async def rep() -> None:
        kept = [build(i) for i in range(K)]
        await dev.sync()
        del kept

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < WARM_S:
        await rep()
    ms = await af_gpu_ms(dev, rep)
    return None if ms is None else ms / K


async def run(args: argparse.Namespace) -> dict[str, Any]:
    n, rows = (256, 4096) if args.quick else (args.n, args.rows)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = (rng.standard_normal((n, n), dtype=np.float32) / np.sqrt(n)).astype(np.float32)
    x = rng.standard_normal((rows, R.D), dtype=np.float32)
    host = {"x": x, "w": np.ones(R.D, np.float32), "b": np.zeros(R.D, np.float32)}
    out: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tune_dir:
        for name in VARIANTS:
            async with af.open_device(tune_dir=tune_dir) as dev:
                info = info or C.adapter_info(dev)
                with variant(dev, name):
                    ta, tb = af.tensor(a, device=dev), af.tensor(b, device=dev)
                    tas = [ta + 0.01 * i for i in range(K)]
                    t = {k: af.tensor(v, device=dev) for k, v in host.items()}
                    xs = [t["x"] + 0.01 * i for i in range(K)]
                    await dev.sync()
                    got = await (ta @ tb)[:8].to_data()
                    np.testing.assert_allclose(got, a[:8] @ b, rtol=1e-3, atol=1e-3)
                    row = {"variant": name, "matmul_n": n, "rows": rows}
                    row["matmul_gpu_ms"] = await gpu_ms(dev, lambda i: tas[i] @ tb)
                    for w in ("softmax", "layer_norm"):
                        fn = R.af_fn(w)
                        row[f"{w}_gpu_ms"] = await gpu_ms(
                            dev, lambda i, fn=fn: fn({**t, "x": xs[i]}))
                    row["sm_clock_mhz"] = B.sm_clock_mhz()
                    del ta, tb, tas, t, xs
            out.append(row)
            print(row, flush=True)
    base = out[0]
    for row in out:
        for key in ("matmul_gpu_ms", "softmax_gpu_ms", "layer_norm_gpu_ms"):
            row[key.replace("_gpu_ms", "_vs_unchecked")] = C.ratio(row[key], base[key])
    return {"meta": C.meta(info, args), "rows": out}


def main() -> None:
    p = C.base_parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4096, help="the matmul's side")
    p.add_argument("--rows", type=int, default=1 << 20, help="rows of the (rows, 256) input")
    args = p.parse_args()
    C.apply_common(args)
    payload = anyio.run(run, args)
    cols = ["variant", "matmul_gpu_ms", "matmul_vs_unchecked", "softmax_gpu_ms",
            "softmax_vs_unchecked", "layer_norm_gpu_ms", "layer_norm_vs_unchecked",
            "sm_clock_mhz"]
    print(C.table(cols, [[r.get(c) for c in cols] for r in payload["rows"]],
                  title="\nGPU ms per evaluation (timestamp queries)"))
    print(f"wrote {C.write_json(NAME, payload['meta']['host_tag'], payload, args.out)}")


if __name__ == "__main__":
    main()
