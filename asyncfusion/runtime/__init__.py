"""The runtime: devices, their options and lifecycle, the server on the event loop, the
executor thread, admission and metrics."""

from .device import Device, as_device
from .lifecycle import default_device, open_device
from .options import DeviceOptions
from .pool import DevicePool, open_pool

__all__ = ["Device", "DeviceOptions", "DevicePool", "as_device", "default_device",
           "open_device", "open_pool"]
