"""asyncfusion: an async-first lazy tensor runtime that fuses element-wise ops into WGSL.

Tensor ops are recorded, not run; a device server fuses chains of them into single
compute kernels and dispatches them through wgpu. Read results with
``await tensor.to_data()``.
"""

from ._env import ensure_runtime_dir as _ensure_runtime_dir

_ensure_runtime_dir()  # before any wgpu driver loads: silences Mesa's XDG_RUNTIME_DIR errors

from .custom import elementwise_op
from .creation import arange, full, ones, rand, randn, tensor, zeros
from .device import Device, default_device, open_device
from .dtype import DType, bool_, float32, int32, uint32
from .errors import (AsyncFusionError, AxisError, BlockingCallError, DataError,
                     DeviceClosedError, DeviceLostError, DeviceMismatchError, DTypeError,
                     ExecutionError, LimitError, NoAdapterError, ShapeError)
from .interop import asarray
from .stream import StreamId
from .tensor import Tensor, cat, maximum, minimum, where
from .trace import take_launches, tracing

__version__ = "0.1.0"

__all__ = [
    "Tensor", "Device", "DType", "StreamId",
    "open_device", "default_device",
    "tensor", "asarray", "zeros", "ones", "full", "arange", "rand", "randn",
    "where", "minimum", "maximum", "cat", "elementwise_op",
    "float32", "int32", "uint32", "bool_",
    "tracing", "take_launches",
    "AsyncFusionError", "ShapeError", "DTypeError", "DeviceMismatchError", "AxisError",
    "LimitError", "DataError", "ExecutionError", "DeviceLostError", "DeviceClosedError",
    "BlockingCallError", "NoAdapterError",
]
