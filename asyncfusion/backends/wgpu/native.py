"""Calls into wgpu-native's C API past wgpu-py's wrappers: the hot path's, and the one
that compiles generated kernels without naga's runtime checks.

wgpu-py wraps each C call in an error capture and builds Python objects around it: a few
microseconds each, several per launch and per read, which a small round trip pays in
full. Two places on the hot path call the C API directly.

Reads (:class:`NativeMap`). wgpu-py's ``GPUBuffer.map_async`` wakes its poller thread for
every map (a token and a ``threading.Event``), builds a promise and a callback per call,
and wraps each C call in its error capture: a third to a half of a raw 16-byte round
trip's time (on the H200 host 119 µs this way against 217 through ``map_async``). A
:class:`NativeMap` keeps one C callback and one callback-info struct for its device and
makes the four calls a read needs itself: ``wgpuBufferMapAsync`` (READ, no empty submit
first), ``wgpuDevicePoll`` with wait (the map's callback runs inside it, on this thread),
``wgpuBufferGetConstMappedRange`` and ``wgpuBufferUnmap``. Calls that can fail validation
go through wgpu-py's checked wrappers (``_api.libf``), so a bad map still raises.

Dispatches (:class:`NativePass`): a compute pass's ``set_pipeline``, ``set_bind_group``
(one dynamic offset) and ``dispatch_workgroups`` as three plain C calls (1.2 against
4.6 µs for the three through wgpu-py here). Pass commands report nothing when they are
encoded: wgpu-native records a bad one in the encoder, and ``encoder.finish()`` (through
wgpu-py, checked) raises it.

Kernels asyncfusion generates (:class:`TrustedModules`) are compiled through
``wgpuDeviceCreateShaderModuleTrusted``, which wgpu-py does not offer.

These are internals of wgpu-py 0.32 (``wgpu.backends.wgpu_native._api.libf`` and ``_ffi``)
and of wgpu-native's C API (``WGPUBufferMapCallbackInfo``); :func:`native_map`,
:func:`native_pass` and :func:`trusted_modules` return None where they are missing,
and the runtime then goes through wgpu-py's methods (modules: with naga's checks).
``tests/test_host_path.py`` fails loudly when a release changes them.
"""

from __future__ import annotations

import time
from typing import Protocol

import numpy as np
import wgpu

__all__ = ["NativeMap", "NativePass", "TrustedModules", "native_map", "native_pass",
           "trusted_modules"]

_SETTLE_S = 5.0  # how long a callback taken by another thread's poll may take to land


class _Native(Protocol):
    """A wgpu-py object with its wgpu-native handle (``GPUBuffer``, ``GPUDevice``)."""

    _internal: object


class NativeMap:
    """Maps, copies out and unmaps staging buffers of one device, on the caller's thread.

    One read at a time (the device's executor thread): the callback's status lives on the
    object. Where another thread polls the device too (wgpu-py's poller, for a promise of
    its own), the callback may run there; the read then waits for it to land.
    """

    def __init__(self, device: _Native) -> None:
        from wgpu.backends.wgpu_native import _api, _ffi  # noqa: PLC0415 - internals

        ffi, lib = _ffi.ffi, _ffi.lib
        self._ffi = ffi
        self._libf = _api.libf
        self._device = device._internal
        self._read_mode = lib.WGPUMapMode_Read
        self._success = lib.WGPUMapAsyncStatus_Success
        self._view_text = _api.from_c_string_view
        self._status: int | None = None
        self._message = ""
        self._seq = 0  # the current read's number, handed to its callback

        def mapped(status: int, message: object, seq: object, _u2: object) -> None:
            if int(ffi.cast("uintptr_t", seq)) != self._seq:
                return  # the late callback of a map that failed validation
            if status != self._success:
                self._message = self._view_text(message) or ""
            self._status = status

        # the C callback lives as long as this object
        self._mapped = ffi.callback(
            "void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")(mapped)
        self._info = ffi.new("WGPUBufferMapCallbackInfo *", {
            "mode": lib.WGPUCallbackMode_AllowProcessEvents, "callback": self._mapped})

    def read(self, gpu: wgpu.GPUBuffer, size: int) -> np.ndarray:
        """The first ``size`` bytes (a multiple of 4) of ``gpu``, a MAP_READ buffer that
        no one has mapped, as a fresh array, once the work submitted so far is done."""
        libf, handle = self._libf, gpu._internal
        self._status = None
        self._seq += 1
        self._info.userdata1 = self._ffi.cast("void *", self._seq)
        libf.wgpuBufferMapAsync(handle, self._read_mode, 0, size, self._info[0])
        libf.wgpuDevicePoll(self._device, True, self._ffi.NULL)
        if self._status is None:
            self._settle()
        if self._status != self._success:
            raise RuntimeError(f"could not map a staging buffer for reading (status "
                               f"{self._status}: {self._message})")
        try:
            ptr = libf.wgpuBufferGetConstMappedRange(handle, 0, size)
            if ptr == self._ffi.NULL:
                raise RuntimeError("wgpu-native gave no mapped range for a mapped buffer")
            return np.frombuffer(self._ffi.buffer(ptr, size), dtype=np.uint8).copy()
        finally:
            libf.wgpuBufferUnmap(handle)

    def _settle(self) -> None:
        """The map's callback ran, or is running, on a thread that polled before this
        one: wait until it has landed (polling too, in case no one else does)."""
        deadline = time.monotonic() + _SETTLE_S
        while self._status is None:
            if time.monotonic() > deadline:
                raise RuntimeError("a staging buffer's map never completed")
            self._libf.wgpuDevicePoll(self._device, False, self._ffi.NULL)
            time.sleep(0)


def native_map(device: wgpu.GPUDevice) -> NativeMap | None:
    """A :class:`NativeMap` for ``device``, or None where wgpu-py's internals it needs are
    not there (another wgpu-py release, another backend)."""
    try:
        return NativeMap(device)
    except Exception:  # noqa: BLE001 - internals moved: the caller maps through wgpu-py
        return None


class NativePass:
    """Encodes dispatches into wgpu-py compute passes through the C API. Each caller
    (a batch: one executor thread) keeps its own dynamic-offset cell (:meth:`offset_cell`),
    which the C call reads while the GIL is released."""

    def __init__(self) -> None:
        from wgpu.backends.wgpu_native import _ffi  # noqa: PLC0415 - internals

        lib = _ffi.lib
        self._new = _ffi.ffi.new
        self._set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        self._set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
        self._dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups

    def offset_cell(self) -> object:
        """A one-element ``uint32_t`` array for :meth:`dispatch`'s dynamic offset."""
        return self._new("uint32_t[1]")

    def dispatch(self, cpass: _Native, pipeline: _Native, group: _Native, cell: object,
                 offset: int, x: int, y: int, z: int) -> None:
        """``set_pipeline``, ``set_bind_group(0, group, [offset])`` (through ``cell``) and
        ``dispatch_workgroups(x, y, z)`` on ``cpass``."""
        handle = cpass._internal
        self._set_pipeline(handle, pipeline._internal)
        cell[0] = offset  # type: ignore[index]
        self._set_bind_group(handle, 0, group._internal, 1, cell)
        self._dispatch(handle, x, y, z)


def native_pass() -> NativePass | None:
    """A :class:`NativePass`, or None where wgpu-py's internals it needs are not there."""
    try:
        return NativePass()
    except Exception:  # noqa: BLE001 - internals moved: the runtime encodes through wgpu-py
        return None


class TrustedModules:
    """Compiles WGSL that asyncfusion generated into shader modules without the checks
    that naga adds for code it cannot trust (``wgpuDeviceCreateShaderModuleTrusted``,
    runtime checks none): no clamp of every index into a workgroup or function-scope
    array (the matmul's inner loop reads its workgroup tiles at indices the code keeps
    in range), no counter in every loop (each generated loop is bounded by its launch's
    sizes). Buffer accesses stay safe either way: Vulkan's robust buffer access bounds
    them in hardware. A user's kernel (``af.custom_kernel``) never comes here."""

    def __init__(self, device: _Native) -> None:
        from wgpu.backends.wgpu_native import _api, _ffi  # noqa: PLC0415 - internals

        self._api = _api
        self._ffi = _ffi.ffi
        self._wgsl_type = _ffi.lib.WGPUSType_ShaderSourceWGSL
        self._create = _api.libf.wgpuDeviceCreateShaderModuleTrusted  # checked: raises
        self._device = device

    def create(self, wgsl: str) -> wgpu.GPUShaderModule:
        """The shader module of ``wgsl``; raises wgpu's error where it does not compile."""
        api, ffi = self._api, self._ffi
        source = api.new_struct_p("WGPUShaderSourceWGSL *", code=api.to_c_string_view(wgsl))
        source[0].chain.next = ffi.NULL
        source[0].chain.sType = self._wgsl_type
        desc = api.new_struct_p("WGPUShaderModuleDescriptor *",
                                nextInChain=ffi.cast("WGPUChainedStruct *", source),
                                label=api.to_c_string_view(""))
        handle = self._create(self._device._internal, desc, 0)  # WGPUShaderRuntimeChecks_None
        if handle == ffi.NULL:
            raise RuntimeError("wgpu-native made no shader module")
        module: wgpu.GPUShaderModule = api.GPUShaderModule("", handle, self._device)
        return module


def trusted_modules(device: wgpu.GPUDevice) -> TrustedModules | None:
    """A :class:`TrustedModules` for ``device``, or None where wgpu-py's internals or
    wgpu-native's entry point it needs are not there."""
    try:
        return TrustedModules(device)
    except Exception:  # noqa: BLE001 - internals moved: modules are compiled with checks
        return None
