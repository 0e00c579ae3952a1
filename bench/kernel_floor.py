"""How close is the *generated* fused kernel to the memory-bandwidth floor?

This isolates kernel quality from the Python runtime around it: asyncfusion's code
generator renders the seed's 8-op chain as one WGSL kernel exactly as the fuser does, and
the kernel is timed alone — REPS dispatches in one submission — beside a copy kernel (the
floor: one read, one write) and the unfused chain, for workgroup sizes 256/512/1024;
torch eager, torch.compile and a CUDA clone run beside it where torch and CUDA exist.

    python bench/kernel_floor.py [--sizes 64M] [--reps 20]
"""

from __future__ import annotations

import sys
import time

import numpy as np

import _common as C

import asyncfusion as af
from asyncfusion.codegen.wgsl.params import param_words
from asyncfusion.codegen.wgsl.render import render
from asyncfusion.backends.wgpu.runtime import Buffer, get_runtime
from asyncfusion.kernel import LaunchArgs, Level, lower


def chain_kernels(n: int) -> tuple:
    """(fused kernel, [one kernel per op], the last op's kernel) of the chain on n elements."""
    dev = af.Device("numpy")  # records ops only; nothing runs
    x = af.tensor(np.zeros(n, np.float32), device=dev)
    y = C.chain(x)
    dev.streams.take_freeable()
    ops, _ = dev.streams.take(next(iter(dev.streams.queues)))
    ew = [op for op in ops if op.fusible]
    del y
    def one(block: list) -> object:
        return lower(block, [Level.ROW] * len(block), (n,), inplace=False).kernel

    singles = [one([op]) for op in ew]
    return one(ew), singles, singles[-1]


def time_kernels(rt, kernels, n: int, reps: int) -> float:
    """Seconds per pass over ``kernels`` (each a (wgsl, kernel, scalars)), best of 3."""
    nbytes = n * 4
    a = Buffer(rt.create_storage(nbytes), nbytes, nbytes)
    b = Buffer(rt.create_storage(nbytes), nbytes, nbytes)
    rt.queue.write_buffer(a.gpu, 0, np.random.default_rng(0).standard_normal(n, np.float32))
    fence = rt.create_staging(16)

    def run(count: int) -> float:
        batch = rt.new_batch()
        for _ in range(count):
            src, dst = a, b
            for wgsl, kernel, scalars in kernels:
                count = n // 4 if kernel.vec4 else n
                words = param_words(kernel, LaunchArgs((n,), (), tuple(scalars)),
                                    (count, 0, 0, 0))
                params = np.zeros(-(-len(words) // 4) * 4, np.uint32)
                params[:len(words)] = words
                rt.dispatch(batch, wgsl, [(src, "read"), (dst, "read_write")], params.tobytes(),
                            count)
                src, dst = dst, src
        rt.copy(batch, b.gpu, fence, 4)
        t0 = time.perf_counter()
        rt.submit(batch)
        fence.map_sync(1)
        fence.unmap()
        return time.perf_counter() - t0

    run(2)
    best = min(run(reps) for _ in range(3)) / reps
    a.gpu.destroy()
    b.gpu.destroy()
    return best


def main() -> None:
    p = C.base_parser(__doc__.splitlines()[0])
    p.add_argument("--sizes", default=None, help="e.g. 1e6,64M (default: 1e6 on CPU, 64M on GPU)")
    p.add_argument("--reps", type=int, default=20)
    args = p.parse_args()
    C.apply_common(args)
    probe = get_runtime()
    info = dict(probe.adapter_info)
    cpu = info.get("adapter_type") == "CPU"
    sizes = C.parse_sizes(args.sizes or ("1e6" if cpu else "64M"))
    scalars_chain = [0.5, 1.0, 0.25, 2.0]
    rows, results = [], []
    torch = None if args.no_torch else C.import_torch()
    for n in sizes:
        fused, singles, copy_like = chain_kernels(n)
        entry = {"n": n, "workgroups": {}}
        for wg in ([256] if cpu else [256, 512, 1024]):
            rt = get_runtime(None, wg)
            k_fused = [(render(fused, wg), fused, scalars_chain)]
            it = iter(scalars_chain)
            k_plain = [(render(s, wg), s, [next(it) for _ in s.scalars]) for s in singles]
            k_copy = [(render(copy_like, wg), copy_like, [])]
            t_f = time_kernels(rt, k_fused, n, args.reps)
            t_p = time_kernels(rt, k_plain, n, args.reps)
            t_c = time_kernels(rt, k_copy, n, args.reps)
            gbs = 2 * n * 4 / t_f / 1e9
            entry["workgroups"][wg] = {"fused_ms": t_f * 1e3, "unfused_ms": t_p * 1e3,
                                       "abs_copy_ms": t_c * 1e3, "fused_GBps": gbs,
                                       "vec4": fused.vec4}
            rows.append([C.fmt_size(n), wg, t_f * 1e3, t_p * 1e3, t_c * 1e3, gbs,
                         t_f / t_c])
        if torch is not None and C.torch_device(torch) == "cuda":
            xt = torch.randn(n, device="cuda")
            comp = torch.compile(C.chain, dynamic=False)

            def tb(fn):
                for _ in range(3):
                    fn(xt)
                torch.cuda.synchronize()
                best = 1e9
                for _ in range(3):
                    t0 = time.perf_counter()
                    for _ in range(args.reps):
                        fn(xt)
                    torch.cuda.synchronize()
                    best = min(best, (time.perf_counter() - t0) / args.reps)
                return best * 1e3
            entry["torch"] = {"eager_ms": tb(C.chain), "compile_ms": tb(comp),
                              "clone_ms": tb(lambda t: t.clone())}
        results.append(entry)
    print(C.table(["size", "wg", "fused ms", "8 kernels ms", "1-op (abs) ms", "fused GB/s",
                   "fused/1-op"], rows,
                  title=f"Generated kernels alone on {info.get('device')}: "
                        f"{args.reps} dispatches per submission"))
    for e in results:
        if "torch" in e:
            t = e["torch"]
            best = min(w["fused_ms"] for w in e["workgroups"].values())
            print(f"{C.fmt_size(e['n'])}: torch eager {t['eager_ms']:.3f} ms, torch.compile "
                  f"{t['compile_ms']:.3f} ms, CUDA clone {t['clone_ms']:.3f} ms; best generated "
                  f"fused kernel {best:.3f} ms (fused/torch.compile = "
                  f"{best / t['compile_ms']:.2f})")
    tag = C.host_tag({**info, "summary": info.get("device", "")})
    C.write_json("kernel_floor", tag, C.meta(info, args, results=results), args.out)


if __name__ == "__main__":
    sys.exit(main())
