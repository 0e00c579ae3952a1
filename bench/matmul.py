"""Matmul: TFLOP/s of ``a @ b`` and of ``relu(x @ w + b)`` fused vs separate, with peers.

Workloads:

* square: ``a @ b`` with a, b of N x N float32, N = 256, 512, ..., 8192 (``--quick``:
  128 and 256, for a CPU adapter).
* mlp: the layers of ``examples/mlp.py`` on a batch of 256: ``relu(x @ w + b)`` for
  (256 x 784) @ (784 x 512) and (256 x 512) @ (512 x 256), and (256 x 256) @ (256 x 10).
* epilogue: ``relu(x @ w + b)`` at the largest square size, fused (one launch) vs
  separate (``open_device(fusion=False)``: matmul, add, relu as three kernels) vs the
  bare matmul.
* queued (square sizes): QUEUE products of the same operands registered, then one sync,
  the time divided by QUEUE (torch: QUEUE calls, one synchronize): the kernel's
  throughput without the round trip of one ``await`` per product, which costs ~1 ms on
  the H200 and caps a 1024^3 product there at ~2 TFLOP/s whatever the kernel.

Peers in one run: asyncfusion, numpy float32, torch float32 with TF32 off (CUDA when
available, else CPU) where torch is installed. Device-resident timing: inputs uploaded
once; a repetition is "build the expression + ``await dev.sync()``" (torch: the call +
``torch.cuda.synchronize()``). Each result is checked once against numpy (rtol 1e-3 of
the output's scale). TFLOP/s counts 2 M N K per matmul.

Usage: python bench/matmul.py [--quick] [--sizes 256,1024] [--no-torch]
Writes bench/results/matmul-<host-tag>.json.
"""

from __future__ import annotations

from typing import Any, Callable

import anyio
import numpy as np

import _common as C
import asyncfusion as af

NAME = "matmul"
SQUARE = [256, 512, 1024, 2048, 4096, 8192]
QUICK_SQUARE = [128, 256]
MLP = [(256, 784, 512), (256, 512, 256), (256, 256, 10)]
QUEUE, QUICK_QUEUE = 8, 3
NUMPY_MAX = 4096  # numpy's float32 matmul on the host above this takes minutes


def tflops(m: int, k: int, n: int, seconds: float) -> float:
    return 2 * m * k * n / seconds / 1e12


def check(got: np.ndarray, want: np.ndarray) -> None:
    scale = float(np.abs(want).max()) or 1.0
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * scale)


async def time_af(dev: af.Device, make: Callable[[], af.Tensor], want: np.ndarray,
                  quick: bool) -> tuple[C.Stats, int]:
    check(await make().to_data(), want)
    await dev.sync()

    async def once() -> None:
        out = make()
        await dev.sync()
        del out
    st = await C.ameasure(once, warmup=1, min_reps=3, max_reps=10 if quick else 200,
                          budget_s=1.0 if quick else 3.0)
    dev.reset_stats()
    out = make()
    await out.to_data()
    return st, dev.stats().launches


def time_torch(torch: Any, fn: Callable[[], Any], device: str, quick: bool) -> C.Stats:
    def once() -> None:
        fn()
        C.torch_sync(torch, device)
    return C.measure(once, warmup=2, min_reps=3, max_reps=10 if quick else 200,
                     budget_s=1.0 if quick else 3.0)


async def queued(dev: af.Device, torch: Any, tdev: Any, x: np.ndarray, w: np.ndarray,
                 row: dict[str, Any], quick: bool) -> None:
    """``row``'s queued columns: QUEUE products per sync (outputs kept until it: a
    product dropped before it would never run)."""
    reps = QUICK_QUEUE if quick else QUEUE
    m, k = x.shape
    n = w.shape[1]
    tx, tw = af.tensor(x, device=dev), af.tensor(w, device=dev)

    async def once() -> None:
        outs = [tx @ tw for _ in range(reps)]
        await dev.sync()
        del outs
    st = await C.ameasure(once, warmup=1, min_reps=3, max_reps=10 if quick else 100,
                          budget_s=1.0 if quick else 3.0)
    row["af_queued_ms"] = st.median / reps * 1e3
    row["af_queued_tflops"] = tflops(m, k, n, st.median / reps)
    if torch is not None:
        px, pw = (torch.from_numpy(v).to(tdev) for v in (x, w))
        st = time_torch(torch, lambda: [px @ pw for _ in range(reps)], tdev, quick)
        row["torch_queued_tflops"] = tflops(m, k, n, st.median / reps)


async def run(args: Any) -> dict[str, Any]:
    sizes = C.parse_sizes(args.sizes) if args.sizes else (QUICK_SQUARE if args.quick
                                                           else SQUARE)
    torch = C.import_torch()
    tdev = C.torch_device(torch) if torch is not None else None
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    async with af.open_device() as dev, af.open_device(fusion=False) as plain:
        info = C.adapter_info(dev)
        shapes = [("square", n, n, n, False) for n in sizes]
        shapes += [("mlp", m, k, n, True) for m, k, n in MLP]
        big = max(sizes)
        shapes += [("epilogue", big, big, big, True)]
        for kind, m, k, n, epi in shapes:
            x = rng.standard_normal((m, k), dtype=np.float32)
            w = (rng.standard_normal((k, n), dtype=np.float32) / np.sqrt(k)).astype(np.float32)
            b = rng.standard_normal(n, dtype=np.float32)
            want = np.maximum(x @ w + b, 0) if epi else x @ w
            row: dict[str, Any] = {"kind": kind, "m": m, "k": k, "n": n}
            engines = [("fused", dev)] + ([("separate", plain)] if epi else [])
            for label, d in engines:
                tx, tw, tb = (af.tensor(v, device=d) for v in (x, w, b))

                def make(tx: Any = tx, tw: Any = tw, tb: Any = tb) -> af.Tensor:
                    return (tx @ tw + tb).relu() if epi else tx @ tw
                st, launches = await time_af(d, make, want, args.quick)
                row[f"af_{label}_ms"] = st.median * 1e3
                row[f"af_{label}_tflops"] = tflops(m, k, n, st.median)
                row[f"af_{label}_launches"] = launches
                del tx, tw, tb
            if kind == "epilogue":
                tx, tw = af.tensor(x, device=dev), af.tensor(w, device=dev)
                st, _ = await time_af(dev, lambda: tx @ tw, x @ w, args.quick)
                row["af_bare_ms"] = st.median * 1e3
                del tx, tw
            if kind == "square":
                await queued(dev, torch, tdev, x, w, row, args.quick)
            if max(m, n, k) <= NUMPY_MAX:
                f = (lambda: np.maximum(x @ w + b, 0)) if epi else (lambda: x @ w)
                row["numpy_ms"] = C.measure(f, min_reps=2, max_reps=10,
                                            budget_s=1.0).median * 1e3
            if torch is not None:
                tx, tw, tb = (torch.from_numpy(v).to(tdev) for v in (x, w, b))
                fn = (lambda: torch.relu(tx @ tw + tb)) if epi else (lambda: tx @ tw)
                check(fn().cpu().numpy(), want)
                st = time_torch(torch, fn, tdev, args.quick)
                row["torch_ms"] = st.median * 1e3
                row["torch_tflops"] = tflops(m, k, n, st.median)
                row["af_vs_torch"] = row["torch_ms"] / row["af_fused_ms"]
            rows.append(row)
            print(f"done: {kind} {m}x{k}x{n}", flush=True)
    return {"meta": C.meta(info, args, torch_device=tdev), "rows": rows}


def main() -> None:
    p = C.base_parser(__doc__.splitlines()[0])
    p.add_argument("--sizes", default=None, help="square sizes, e.g. 1024,4096")
    args = p.parse_args()
    C.apply_common(args)
    payload = anyio.run(run, args)
    keys = {k for r in payload["rows"] for k in r}
    cols = ["kind", "m", "k", "n", "af_fused_ms", "af_fused_tflops", "af_fused_launches",
            "af_separate_ms", "af_separate_launches", "af_bare_ms", "af_queued_tflops",
            "numpy_ms", "torch_ms", "torch_tflops", "torch_queued_tflops", "af_vs_torch"]
    cols = [c for c in cols if c in keys]
    print(C.table(cols, [[r.get(c, "") for c in cols] for r in payload["rows"]],
                  title="matmul (float32; torch with TF32 off)"))
    path = C.write_json(NAME, payload["meta"]["host_tag"], payload, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
