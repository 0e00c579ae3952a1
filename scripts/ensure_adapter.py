"""Exit 0 if wgpu finds a compute-capable (non-GL) adapter; print what it found either way."""

import sys

import asyncfusion  # noqa: F401 - first: it gives Mesa a valid XDG_RUNTIME_DIR
import wgpu

try:
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
except Exception as exc:  # noqa: BLE001
    print(f"wgpu: no adapter ({exc})")
    sys.exit(1)
if adapter is None or adapter.info.get("backend_type") == "OpenGL":
    print("wgpu: no Vulkan/Metal/D3D12 adapter found")
    sys.exit(1)
print(f"wgpu adapter: {adapter.summary}")
