"""The adapters wgpu can see on this host, listed once per process.

``adapters()`` gives each one's facts (:class:`Adapter`); ``open_device(adapter=...)``
picks one by its index in that list (``request(index)`` hands the runtime a fresh wgpu
adapter object for it: WebGPU lets an adapter make one device).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import wgpu

__all__ = ["Adapter", "adapters", "request"]

_FEATURES_F64 = ("shader-f64", "shader-int64")


@dataclass(frozen=True, slots=True)
class Adapter:
    """One adapter, as ``af.adapters()`` lists it.

    :param index: its place in ``af.adapters()``: ``open_device(adapter=index)``.
    :param name: the device's name (``"NVIDIA H200"``, ``"llvmpipe (LLVM 15.0.6, 256 bits)"``).
    :param backend: the graphics API wgpu reaches it through (``"Vulkan"``, ``"Metal"``,
        ``"D3D12"``, ``"OpenGL"``).
    :param device_type: ``"DiscreteGPU"``, ``"IntegratedGPU"``, ``"CPU"`` (a software
        driver such as lavapipe), ``"VirtualGPU"`` or ``"Unknown"``.
    :param max_buffer_size: the largest buffer, in bytes.
    :param max_storage_binding: the largest buffer one kernel may bind, in bytes (the
        largest tensor a kernel reads or writes).
    :param f16: float16 tensors (``shader-f16``).
    :param f64: float64 and int64 tensors (``shader-f64`` and ``shader-int64``).
    :param subgroups: subgroup operations (faster reductions).
    """

    index: int
    name: str
    backend: str
    device_type: str
    vendor: str
    max_buffer_size: int
    max_storage_binding: int
    f16: bool
    f64: bool
    subgroups: bool

    @property
    def gpu(self) -> bool:
        """A real GPU (not a CPU driver, nor one of unknown kind)."""
        return self.device_type in ("DiscreteGPU", "IntegratedGPU", "VirtualGPU")

    def __str__(self) -> str:
        return f"#{self.index} {self.name} ({self.backend}, {self.device_type})"


_cache: list[Adapter] = []
_lock = threading.Lock()


def _facts(index: int, a: wgpu.GPUAdapter) -> Adapter:
    info, feats, lim = a.info, a.features, a.limits
    return Adapter(index=index, name=str(info.get("device", "?")),
                   backend=str(info.get("backend_type", "?")),
                   device_type=str(info.get("adapter_type", "Unknown")),
                   vendor=str(info.get("vendor", "")),
                   max_buffer_size=int(lim["max-buffer-size"]),
                   max_storage_binding=int(lim["max-storage-buffer-binding-size"]),
                   f16="shader-f16" in feats, f64=all(f in feats for f in _FEATURES_F64),
                   subgroups="subgroup" in feats)


def adapters() -> list[Adapter]:
    """Every adapter wgpu can see, in wgpu's order (a fresh list; the facts are kept
    from the first call: adapters do not come and go while a process runs)."""
    with _lock:
        if not _cache:
            _cache.extend(_facts(i, a) for i, a in
                          enumerate(wgpu.gpu.enumerate_adapters_sync()))
        return list(_cache)


def request(index: int) -> wgpu.GPUAdapter:
    """A new wgpu adapter object for ``adapters()[index]`` (checked by DeviceOptions)."""
    listed = adapters()[index]
    for i, a in enumerate(wgpu.gpu.enumerate_adapters_sync()):
        if i == index and _facts(i, a) == listed:
            return a
    raise RuntimeError(f"adapter {listed} is no longer offered by wgpu")
