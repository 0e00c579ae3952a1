"""The exception hierarchy. Each error says what was wrong and what to do about it.

Errors about a call (shape, dtype, device, axis) derive from the built-in exception a
Python user would expect (ValueError, TypeError, IndexError), so ``except ValueError``
keeps working; all of them also derive from :class:`AsyncFusionError`.

For services there are two families. :class:`InputError` is the caller's mistake (a bad
shape, dtype, axis, index, value or size: the request was wrong, answer 4xx); every other
:class:`AsyncFusionError` is the server's (a failed kernel, a lost or closed device,
overload: answer 5xx). :func:`http_status` gives the status code for any exception.
"""

from __future__ import annotations

__all__ = [
    "AsyncFusionError",
    "InputError",
    "Overloaded",
    "http_status",
    "ShapeError",
    "IndexingError",
    "DTypeError",
    "DeviceMismatchError",
    "AxisError",
    "LimitError",
    "DataError",
    "OptionError",
    "ExecutionError",
    "DeviceLostError",
    "DeviceClosedError",
    "BlockingCallError",
    "NoAdapterError",
]


class AsyncFusionError(Exception):
    """Raised when anything goes wrong in asyncfusion: the base of every error it raises."""


class InputError(AsyncFusionError):
    """Raised when the caller made a mistake: the base of the errors about bad shapes,
    dtypes, axes, indices, data, sizes or devices given to an op. A service answers them with 4xx (the
    request was wrong; retrying it unchanged fails again); anything else asyncfusion
    raises is a 5xx."""


class ShapeError(InputError, ValueError):
    """Raised when shapes do not broadcast, or a shape is invalid for the op."""


class DTypeError(InputError, TypeError):
    """Raised when a dtype, or a combination of dtypes, is not supported by the op."""


class DeviceMismatchError(InputError, ValueError):
    """Raised when one op is given tensors that live on two different devices."""


def device_mismatch(what: str, here: object, there: object) -> DeviceMismatchError:
    """The error for ``what`` given a tensor of ``there`` where ``here``'s belong: it
    names both devices and the way out (``.to()``)."""
    return DeviceMismatchError(
        f"{what} is on another device: the op runs on {here!r}, and it lives on "
        f"{there!r}; move it first with '.to(device)' (a lazy copy between devices: "
        "'y = y.to(x.device)')")


class AxisError(InputError, IndexError):
    """Raised when an axis is out of range for a tensor's rank."""


class IndexingError(InputError, IndexError):
    """Raised when an index is out of range, a slice step is zero, or an index is of a kind
    not supported (``t[...]`` takes ints, slices, ``None``, ``...``, lists, numpy arrays
    and integer tensors; a boolean tensor needs ``await af.nonzero(mask)`` first)."""


class LimitError(InputError, ValueError):
    """Raised when a tensor would exceed a limit of the device (buffer or binding size)."""


class DataError(InputError, ValueError):
    """Raised when data given to ``tensor()`` is ragged, empty of meaning, or not numeric,
    or when an operand's value is one the op refuses (an integer tensor raised to a
    negative integer power, as numpy refuses it)."""


class OptionError(InputError, ValueError):
    """Raised when an option or argument names something asyncfusion does not have or
    take: an unknown backend, a device option out of its range, a custom op's WGSL
    template whose placeholders do not match its operands."""


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


class Overloaded(AsyncFusionError, RuntimeError):
    """Raised when :meth:`Device.admit` finds the device already holding ``max_pending``
    admitted requests and no slot frees in time. Answer 503 with a ``Retry-After`` header
    of :attr:`retry_after` seconds (rounded up); the request did no work on the device."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def http_status(exc: BaseException) -> int:
    """The HTTP status a service answers ``exc`` with: 413 for :class:`LimitError`, 400
    for any other :class:`InputError`, 503 for :class:`Overloaded`, a lost device and a
    closed one (the service is reopening it; retry), 500 for anything else."""
    if isinstance(exc, LimitError):
        return 413
    if isinstance(exc, InputError):
        return 400
    if isinstance(exc, (Overloaded, DeviceLostError, DeviceClosedError)):
        return 503
    return 500
