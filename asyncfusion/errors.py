"""The exception hierarchy. Each error says what was wrong and what to do about it.

Errors about a call (shape, dtype, device, axis) derive from the built-in exception a
Python user would expect (ValueError, TypeError, IndexError), so ``except ValueError``
keeps working; all of them also derive from :class:`AsyncFusionError`.
"""

from __future__ import annotations

__all__ = [
    "AsyncFusionError",
    "ShapeError",
    "IndexingError",
    "DTypeError",
    "DeviceMismatchError",
    "AxisError",
    "LimitError",
    "DataError",
    "ExecutionError",
    "DeviceLostError",
    "DeviceClosedError",
    "BlockingCallError",
    "NoAdapterError",
]


class AsyncFusionError(Exception):
    """Raised when anything goes wrong in asyncfusion: the base of every error it raises."""


class ShapeError(AsyncFusionError, ValueError):
    """Raised when shapes do not broadcast, or a shape is invalid for the op."""


class DTypeError(AsyncFusionError, TypeError):
    """Raised when a dtype, or a combination of dtypes, is not supported by the op."""


class DeviceMismatchError(AsyncFusionError, ValueError):
    """Raised when one op is given tensors that live on two different devices."""


class AxisError(AsyncFusionError, IndexError):
    """Raised when an axis is out of range for a tensor's rank."""


class IndexingError(AsyncFusionError, IndexError):
    """Raised when an index is out of range, a slice step is zero, or an index is of a kind
    not supported (``t[...]`` takes ints, slices, ``None`` and ``...``)."""


class LimitError(AsyncFusionError, ValueError):
    """Raised when a tensor would exceed a limit of the device (buffer or binding size)."""


class DataError(AsyncFusionError, ValueError):
    """Raised when data given to ``tensor()`` is ragged, empty of meaning, or not numeric."""


class ExecutionError(AsyncFusionError, RuntimeError):
    """Raised when reading a tensor whose computation failed on the device.

    Only tensors that depend on the failed work raise it; the cause is chained
    (``__cause__``) and named in the message.
    """


class DeviceLostError(ExecutionError):
    """Raised when the underlying GPU device was lost; open a new device to continue."""


class DeviceClosedError(AsyncFusionError, RuntimeError):
    """Raised when using a device (or a tensor of one) after the device was closed."""


class BlockingCallError(AsyncFusionError, RuntimeError):
    """Raised when a blocking door (``to_data_sync``, ``sync_blocking``) runs in an event loop."""


class NoAdapterError(AsyncFusionError, RuntimeError):
    """Raised when wgpu finds no adapter at all."""
