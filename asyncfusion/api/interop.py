"""``asarray``: tensors from anything that holds numbers on the host.

Accepts what :func:`asyncfusion.tensor` accepts (lists, scalars, numpy arrays), any object
with ``__array__`` (pandas, xarray, ...) and any object with ``__dlpack__`` whose data is
on the host (torch CPU tensors, JAX CPU arrays, ...). Device data of another library is
refused with what to do: asyncfusion cannot read another runtime's GPU memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.dtype import as_dtype
from .._core.errors import DataError, DeviceMismatchError
from ..api.creation import tensor
from ..lazy.tensor import Tensor

__all__ = ["asarray", "from_dlpack"]

_DLPACK_CPU = 1  # DLDeviceType kDLCPU
_DLPACK_DEVICES = {2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 10: "ROCm",
                   14: "oneAPI"}


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None,
            copy: bool | None = None) -> Tensor:
    """A tensor from ``obj`` (Array API ``asarray``).

    :param obj: a Tensor, nested lists or a scalar, or an object with ``__array__`` or a
        host ``__dlpack__``. float64/int64 data is narrowed as by :func:`tensor`.
    :param dtype: the tensor's dtype (default: inferred from the data).
    :param device: where to put it (default: :func:`default_device`).
    :param copy: ``False`` is refused for host data (an upload always copies); a Tensor is
        returned as is unless ``copy=True`` or another dtype is asked for.
    """
    if isinstance(obj, Tensor):
        return _from_tensor(obj, dtype, device, copy)
    if copy is False:
        raise ValueError("asarray(copy=False): host data must be copied to reach the device; "
                         "use copy=None (the default) or copy=True")
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        obj = _from_dlpack(obj)
    return tensor(obj, dtype, device=device)


def _from_tensor(t: Tensor, dtype: Any, device: Any, copy: bool | None) -> Tensor:
    if device is not None and device is not t.device:
        if copy is False:
            raise DeviceMismatchError(
                f"asarray(copy=False): t{t.id} lives on {t.device!r}, not {device!r}, and "
                "reaching another device copies; use copy=None, or t.to(device)")
        t = t.to(device)
    target = as_dtype(dtype) if dtype is not None else t.dtype
    if target is not t.dtype or copy:
        return t.astype(target)
    return t


def _from_dlpack(obj: Any) -> np.ndarray:
    kind = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else _DLPACK_CPU
    if kind != _DLPACK_CPU:
        where = _DLPACK_DEVICES.get(int(kind), f"DLPack device type {kind}")
        raise DataError(
            f"asarray: the {type(obj).__name__}'s data lives on a {where} device, and "
            "asyncfusion reads only host memory; move it to the host first (torch: .cpu(), "
            "jax: jax.device_get(x), cupy: .get())")
    try:
        return np.from_dlpack(obj)
    except (TypeError, BufferError, RuntimeError) as exc:
        if hasattr(obj, "__array__"):
            return np.asarray(obj)
        raise DataError(f"asarray: numpy could not import the {type(obj).__name__} through "
                        f"DLPack ({exc}); pass a numpy array instead") from exc


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A tensor from an object with a host ``__dlpack__`` (its data is copied to the
    device: ``copy=False`` is refused)."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} has no __dlpack__ method; use "
                        "asarray() for lists and arrays")
    return asarray(x, device=device, copy=copy)
