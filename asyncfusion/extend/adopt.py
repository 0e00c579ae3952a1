"""Device buffers in and out: ``af.resolve(t)`` hands a tensor's buffer to other wgpu code,
``af.adopt(buffer, shape, dtype)`` makes a tensor of a wgpu buffer, neither copying.

``resolve`` records a hidden alias of the tensor (a view: one more reference to its
storage) and waits for the round that computes it to be *submitted*; work that other code
submits afterwards to the same wgpu device's queue runs after it. The returned
:class:`DeviceBuffer` holds the alias: until it is released (``release()``, or leaving
``async with af.resolve(t) as buf``) the memory owner keeps the buffer, even once the
tensor itself is gone. Treat its contents as read-only: a tensor is a value, and other
tensors may share the buffer.

``adopt`` does **not** take ownership: asyncfusion never destroys or reuses an adopted
buffer (it is not pooled, and no kernel writes into it in place). The caller keeps it
alive until the tensor and the queued work that reads it are done — drop the tensor and
``await dev.sync()`` — and destroys it when it likes.
"""

from __future__ import annotations

from types import TracebackType
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._core.dtype import DType, DTypeSpec, as_dtype
from .._core.errors import DataError, LimitError, ShapeError
from ..engine.memory import Storage
from ..ir import ExternOp, Layout, ViewOp, numel
from ..lazy.tensor import Tensor
from ..runtime import Device, as_device, default_device

if TYPE_CHECKING:
    import wgpu

    from ..backends.base import Buffer
    from ..backends.wgpu.backend import WgpuBackend

__all__ = ["resolve", "adopt", "DeviceBuffer"]

_STORAGE, _COPY_SRC = 0x80, 0x04  # wgpu.BufferUsage.STORAGE, COPY_SRC


class DeviceBuffer:
    """A resolved tensor's storage, kept alive until :meth:`release`.

    ``buffer`` is the wgpu ``GPUBuffer`` (a numpy ``uint8`` array on numpy devices);
    element ``[0, ..., 0]`` sits at byte ``offset`` and the elements at ``strides``
    (in elements) from it; ``nbytes`` bytes from ``offset`` cover them all (for a
    dense tensor). ``gpu_device`` is the ``GPUDevice`` whose queue to submit to.
    """

    def __init__(self, pin: Tensor, storage: Storage) -> None:
        self._pin: Tensor | None = pin
        lay = pin.view_layout
        buf = storage.buffer
        native = getattr(buf, "gpu", None)
        self.buffer: wgpu.GPUBuffer | np.ndarray = (
            native if native is not None else getattr(buf, "data"))
        self.offset = getattr(buf, "offset", 0) + lay.offset * pin.dtype.itemsize
        self.shape = pin.shape
        self.strides = lay.strides
        self.dtype = pin.dtype
        self.contiguous = Layout(lay.shape, lay.strides).is_dense  # from ``offset`` on
        self.nbytes = numel(pin.shape) * pin.dtype.itemsize
        rt = getattr(pin.device.backend, "rt", None)
        self.gpu_device: wgpu.GPUDevice | None = rt.device if rt is not None else None

    @property
    def released(self) -> bool:
        return self._pin is None

    def release(self) -> None:
        """Let the memory owner free the buffer (at its next round) once nothing else
        holds it. Idempotent."""
        self._pin = None

    def __enter__(self) -> DeviceBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._pin is None else "held"
        return (f"<DeviceBuffer {self.dtype.label}{list(self.shape)} at byte {self.offset} "
                f"of {self.buffer!r}, {state}>")


class _Resolving:
    """``await af.resolve(t)`` or ``async with af.resolve(t) as buf``."""

    def __init__(self, t: Tensor) -> None:
        self.t = t
        self.handle: DeviceBuffer | None = None

    def __await__(self) -> Generator[object, None, DeviceBuffer]:
        return self._resolve().__await__()

    async def _resolve(self) -> DeviceBuffer:
        t = self.t
        dev = t.device
        pin = Tensor(t.shape, t.dtype, dev, t.layout)
        pin_ir = pin.out_ir()
        dev.register(ViewOp("resolve", t.ir(), pin_ir), (t.id,), pin_ir)
        # An empty view of the alias: reading it runs the alias's producers and submits
        # their round, and copies nothing; a poisoned tensor raises ExecutionError here.
        probe = Tensor((0,), t.dtype, dev, Layout((0,), (1,), pin.view_layout.offset))
        probe_ir = probe.out_ir()
        dev.register(ViewOp("resolve", pin.ir(), probe_ir), (pin.id,), probe_ir)
        await probe.to_data()
        del probe
        storage = dev._server.executor.memory.get(pin.id)
        assert isinstance(storage, Storage)  # the alias is held: it was computed and kept
        return DeviceBuffer(pin, storage)

    async def __aenter__(self) -> DeviceBuffer:
        self.handle = await self._resolve()
        return self.handle

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self.handle is not None:
            self.handle.release()


def resolve(t: Tensor) -> _Resolving:
    """Wait for ``t``'s producers and hand out its device buffer (a :class:`DeviceBuffer`),
    kept alive until released: ``buf = await af.resolve(t)`` ... ``buf.release()``, or
    ``async with af.resolve(t) as buf:``. Raises ``ExecutionError`` if ``t`` failed."""
    if type(t) is not Tensor:
        raise TypeError(f"resolve needs an asyncfusion Tensor, not {type(t).__name__}")
    return _Resolving(t)


@dataclass(frozen=True, slots=True)
class _Adopt:
    """The work of an adopted buffer: bind it, owned by its caller."""

    key: str = "adopt"
    title: str = "Adopt"

    def run(self, backend: WgpuBackend, loads: list[Buffer], op: ExternOp) -> list[Storage]:
        from ..backends.wgpu.runtime import Buffer as WgpuBuffer

        gpu, offset, nbytes = op.args
        backend.rt.check_alive()
        return [Storage(WgpuBuffer(gpu, gpu.size - offset, nbytes, offset), owned=False)]


_ADOPT = _Adopt()


def adopt(buffer: wgpu.GPUBuffer, shape: tuple[int, ...], dtype: DTypeSpec, *,
          device: Device | None = None, offset: int = 0) -> Tensor:
    """A tensor whose data is ``buffer`` (a wgpu ``GPUBuffer`` of ``device``'s GPU device,
    with STORAGE and COPY_SRC usage), dense from byte ``offset``; no copy is made, and the
    buffer stays the caller's (see the module docs: keep it alive while the tensor is)."""
    dev = default_device() if device is None else as_device(device)
    rt = getattr(dev.backend, "rt", None)
    if rt is None:
        raise TypeError(f"adopt takes wgpu buffers, and {dev!r} is not a wgpu device; "
                        "use asyncfusion.tensor(array, device=...) for host data")
    if not all(hasattr(buffer, a) for a in ("size", "usage", "destroy")):
        raise TypeError(f"adopt needs a wgpu GPUBuffer, not {type(buffer).__name__}")
    dt: DType = as_dtype(dtype)
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ShapeError(f"adopt: shape {shape} has a negative dimension")
    if not buffer.usage & _STORAGE or not buffer.usage & _COPY_SRC:
        raise DataError("adopt: the buffer needs STORAGE and COPY_SRC usage (kernels bind "
                         "it, reads copy from it); create it with usage=wgpu.BufferUsage."
                         "STORAGE | wgpu.BufferUsage.COPY_SRC | ...")
    if offset < 0 or offset % dev.backend.storage_align:
        raise DataError(f"adopt: offset {offset} must be a non-negative multiple of "
                         f"{dev.backend.storage_align} bytes (the device's storage alignment)")
    nbytes = numel(shape) * dt.itemsize
    if offset + nbytes > buffer.size:
        raise LimitError(f"adopt: {dt.label}{list(shape)} needs {nbytes} bytes from byte "
                         f"{offset}, and the buffer holds {buffer.size}")
    out = Tensor(shape, dt, dev)
    out_ir = out.out_ir()
    dev.register(ExternOp(_ADOPT, (), (out_ir,), (buffer, offset, nbytes)), (), out_ir)
    return out
