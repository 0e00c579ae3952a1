"""``python -m asyncfusion``: what a bug report needs about this machine.

Prints the versions of asyncfusion, Python, numpy, wgpu (and wgpu-native), anyio and
trio; the adapter asyncfusion would use (name, driver, backend, type), the features that
matter to kernels (shader-f16, subgroups, ...) and the limits that shape them; every
adapter wgpu can see; and the environment variables asyncfusion reads. ``--json`` prints
the same as one JSON object. Exit status 1 when no adapter is found.

``python -m asyncfusion tune-matmul [--shapes 4096,256x784x512] [--dtype float16]
[--dir DIR]`` tunes the matmul shape classes of those shapes (M x K x N; default: the
scoreboard's and the serving ones) ahead of time into the tuning directory and prints
each class's plan and its candidates' TFLOP/s.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import sys
from typing import Any

from . import __version__

__all__ = ["report", "main"]

FEATURES = ("shader-f16", "subgroup", "subgroup-barrier", "timestamp-query", "shader-f64",
            "shader-int64", "float32-filterable")
LIMITS = ("max-storage-buffers-per-shader-stage", "max-storage-buffer-binding-size",
          "max-buffer-size", "max-compute-invocations-per-workgroup",
          "max-compute-workgroup-size-x", "max-compute-workgroups-per-dimension",
          "max-compute-workgroup-storage-size", "max-uniform-buffer-binding-size")
ENV = ("ASYNCFUSION_TRACE", "ASYNCFUSION_DEBUG", "ASYNCFUSION_MATMUL_TUNE",
       "ASYNCFUSION_TUNE_DIR", "XDG_RUNTIME_DIR", "WGPU_BACKEND_TYPE", "WGPU_ADAPTER_NAME",
       "VK_ICD_FILENAMES")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def report() -> dict[str, Any]:
    """Everything ``python -m asyncfusion`` prints, as plain data."""
    out: dict[str, Any] = {
        "asyncfusion": __version__,
        "python": f"{platform.python_version()} ({platform.python_implementation()})",
        "platform": platform.platform(),
        "versions": {name: _version(name) for name in ("numpy", "wgpu", "anyio", "trio")},
        "adapter": None,
        "adapters": [],
        "env": {name: os.environ.get(name) for name in ENV if os.environ.get(name)},
    }
    try:
        import wgpu
        from wgpu.backends import wgpu_native

        out["versions"]["wgpu-native"] = ".".join(map(str, wgpu_native.version_info))
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        out["adapters"] = [a.summary for a in wgpu.gpu.enumerate_adapters_sync()]
    except Exception as exc:  # noqa: BLE001 - a report must print whatever it can
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    if adapter is not None:
        info = dict(adapter.info)
        out["adapter"] = {
            "name": info.get("device"),
            "driver": info.get("description"),
            "vendor": info.get("vendor"),
            "backend": info.get("backend_type"),
            "type": info.get("adapter_type"),
            "features": {f: f in adapter.features for f in FEATURES},
            "limits": {k: adapter.limits.get(k) for k in LIMITS},
        }
    return out


def _print(data: dict[str, Any]) -> None:
    print(f"asyncfusion {data['asyncfusion']}")
    print(f"python      {data['python']} on {data['platform']}")
    print("versions    " + ", ".join(f"{k} {v}" for k, v in data["versions"].items()))
    if "error" in data:
        print(f"wgpu        failed: {data['error']}")
    a = data["adapter"]
    if a is None:
        print("adapter     none found: install a Vulkan/Metal/D3D12 driver (Debian/Ubuntu: "
              "apt-get install mesa-vulkan-drivers for lavapipe, a CPU driver), or use "
              "open_device('numpy')")
    else:
        print(f"adapter     {a['name']} ({a['type']}, {a['backend']})")
        print(f"driver      {a['driver']} (vendor {a['vendor']})")
        print("features    " + ", ".join(f"{k} {'yes' if v else 'no'}"
                                         for k, v in a["features"].items()))
        print("limits")
        for k, v in a["limits"].items():
            print(f"  {k:<40} {v}")
    print("adapters    " + ("; ".join(data["adapters"]) or "none"))
    env = data["env"]
    print("env         " + (", ".join(f"{k}={v}" for k, v in env.items()) or "(none set)"))


# M x K x N: squares, the MLP layer, a long K over few tiles, serving rows against it
TUNE_SHAPES = ("1024,2048,4096,8192,256x784x512,256x65536x256,1x784x512,32x784x512,"
               "64x784x512,128x784x512,256x4096x256")


def tune_matmul(argv: list[str]) -> int:
    """``tune-matmul``: one product per shape on a device with tuning on; prints the
    table of classes, plans and candidates."""
    import anyio

    import asyncfusion as af
    from asyncfusion.backends.wgpu.backend import WgpuBackend

    parser = argparse.ArgumentParser(prog="python -m asyncfusion tune-matmul",
                                     description="tune matmul shape classes ahead of time")
    parser.add_argument("--shapes", default=TUNE_SHAPES, help="M x K x N, comma-separated "
                        "(one number: a square)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float16"))
    parser.add_argument("--dir", default=None, help="the tuning directory (default: "
                        "ASYNCFUSION_TUNE_DIR, else ~/.cache/asyncfusion)")
    args = parser.parse_args(argv)
    shapes = []
    for part in args.shapes.split(","):
        dims = [int(d) for d in part.lower().split("x")]
        shapes.append((dims[0],) * 3 if len(dims) == 1 else (dims[0], dims[1], dims[2]))
    dtype = af.float16 if args.dtype == "float16" else af.float32

    async def run() -> None:
        async with af.open_device(matmul_tune=True, tune_dir=args.dir) as dev:
            backend = dev.backend
            assert isinstance(backend, WgpuBackend)
            tuner = backend.tuner
            print(f"tuning file: {tuner.cache.path if tuner.cache else None}")
            for m, k, n in shapes:
                a = af.zeros((m, k), dtype=dtype, device=dev)
                b = af.zeros((k, n), dtype=dtype, device=dev)
                runs = tuner.runs
                await (a @ b)[:1].to_data()
                cls = tuner.last or ""
                plan = tuner.chosen(cls)
                rates = sorted(((2 * m * n * k / us / 1e6, name)
                                for name, us in tuner.timings(cls).items() if us), reverse=True)
                print(f"{m}x{k}x{n}  [{cls}]  {plan.name if plan else '?'} "
                      f"({'timed now' if tuner.runs > runs else 'kept'}); TFLOP/s: "
                      + ", ".join(f"{name} {t:.2f}" for t, name in rates[:5]), flush=True)
    anyio.run(run)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["tune-matmul"]:
        return tune_matmul(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m asyncfusion", description=__doc__.split(
        "\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    data = report()
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        _print(data)
    return 0 if data["adapter"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
