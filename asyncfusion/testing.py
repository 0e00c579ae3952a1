"""Helpers for testing code that uses asyncfusion.

* ``await assert_close(actual, expected)`` reads tensors on either side and compares them
  like ``numpy.testing`` (count and indices of mismatches, worst absolute and relative
  error); :func:`assert_array_close` is the same check for host arrays.
* ``await assert_no_leaks(device)`` settles a device and fails when buffers or queued work
  are still alive.
* ``async with asgi_client(app) as client:`` runs an ASGI app's lifespan (its device
  opens) and gives an ``httpx.AsyncClient`` that calls the app without sockets.
* The pytest plugin (``asyncfusion.pytest_plugin``, active once asyncfusion is installed)
  adds the ``af_device`` and ``af_asgi_client`` fixtures and ``--af-fusion=on|off|both``.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .runtime import Device
from .lazy.tensor import Tensor

if TYPE_CHECKING:
    import httpx

__all__ = ["assert_close", "assert_array_close", "assert_no_leaks", "live_tensor_ids",
           "asgi_client", "ASGIApp"]

_Message = MutableMapping[str, Any]  # ASGI's scopes and messages: dicts of mixed values
ASGIApp = Callable[[_Message, Callable[[], Awaitable[_Message]],
                    Callable[[_Message], Awaitable[None]]], Awaitable[None]]

_SHOWN = 10  # mismatching elements listed in a report


async def assert_close(actual: Tensor | npt.ArrayLike, expected: Tensor | npt.ArrayLike, *,
                       rtol: float = 1e-5, atol: float = 1e-6, equal_nan: bool = True,
                       check_dtype: bool = True) -> None:
    """Read both sides (tensors, arrays, lists or scalars) and compare them.

    Passes when ``|actual - expected| <= atol + rtol * |expected|`` everywhere (floats;
    integers and bools must be equal), shapes are equal, and, when ``check_dtype`` and
    ``expected`` is a Tensor or numpy array, dtypes are equal (float64 ``expected`` is
    compared against float32 ``actual``, the dtype asyncfusion computes in, and
    complex128 against complex64, part by part). A Python
    scalar ``expected`` is compared with every element. Raises ``AssertionError``.
    """
    a = await actual.to_data() if isinstance(actual, Tensor) else actual
    e = await expected.to_data() if isinstance(expected, Tensor) else expected
    assert_array_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan,
                       check_dtype=check_dtype)


def assert_array_close(actual: npt.ArrayLike, expected: npt.ArrayLike, *, rtol: float = 1e-5, atol: float = 1e-6,
                       equal_nan: bool = True, check_dtype: bool = True) -> None:
    """:func:`assert_close` for values already on the host (no tensors: nothing to read)."""
    if isinstance(actual, Tensor) or isinstance(expected, Tensor):
        raise TypeError("assert_array_close compares host values; for tensors use "
                        "'await asyncfusion.testing.assert_close(actual, expected)'")
    a = np.asarray(actual)
    scalar = np.ndim(expected) == 0 and not isinstance(expected, np.ndarray)
    e = np.asarray(expected)
    if check_dtype and isinstance(expected, np.ndarray) and a.dtype != e.dtype:
        narrowed = {np.dtype(np.float64): np.float32, np.dtype(np.int64): np.int32,
                    np.dtype(np.complex128): np.complex64}
        if narrowed.get(e.dtype) != a.dtype:
            raise AssertionError(f"dtypes differ: actual {a.dtype}, expected {e.dtype}")
    if a.shape != e.shape and not scalar:
        raise AssertionError(f"shapes differ: actual {a.shape}, expected {e.shape}")
    e = np.broadcast_to(e, a.shape)
    bad = ~_close(a, e, rtol, atol, equal_nan)
    if bad.any():
        raise AssertionError(_report(a, e, bad, rtol, atol))


def _close(a: np.ndarray, e: np.ndarray, rtol: float, atol: float,
           equal_nan: bool) -> np.ndarray:
    if a.dtype.kind not in "fc" and e.dtype.kind not in "fc":
        return np.asarray(a == e)
    if "c" in (a.dtype.kind, e.dtype.kind):  # complex: each part alike
        return np.asarray(_close(a.real, e.real, rtol, atol, equal_nan) & _close(
            a.imag, e.imag, rtol, atol, equal_nan))
    x, y = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(all="ignore"):
        close = np.abs(x - y) <= atol + rtol * np.abs(y)
    close |= x == y  # equal infinities
    if equal_nan:
        close |= np.isnan(x) & np.isnan(y)
    return np.asarray(close)


def _report(a: np.ndarray, e: np.ndarray, bad: np.ndarray, rtol: float, atol: float) -> str:
    n = int(bad.sum())
    lines = [f"Not equal to tolerance rtol={rtol:g}, atol={atol:g}",
             f"Mismatched elements: {n} / {a.size} ({100.0 * n / a.size:.3g}%)"]
    idx = np.argwhere(bad) if a.ndim else np.zeros((1, 0), dtype=np.intp)
    for i in idx[:_SHOWN]:
        at = tuple(int(k) for k in i)
        lines.append(f"  at {at}: actual {a[at]!r}, expected {e[at]!r}")
    if n > _SHOWN:
        lines.append(f"  ... and {n - _SHOWN} more")
    x, y = a[bad].astype(np.float64), e[bad].astype(np.float64)
    with np.errstate(all="ignore"):
        diff = np.abs(x - y)
        rel = diff / np.abs(y)
    finite = np.isfinite(diff)
    if finite.any():
        lines.append(f"Max absolute difference among violations: {diff[finite].max():.6g}")
        rel = rel[finite & np.isfinite(rel)]
        if rel.size:
            lines.append(f"Max relative difference among violations: {rel.max():.6g}")
    return "\n".join(lines)


@contextlib.asynccontextmanager
async def asgi_client(app: ASGIApp, *, base_url: str = "http://test",
                      startup_timeout: float | None = 60.0,
                      shutdown_timeout: float | None = 60.0
                      ) -> AsyncIterator[httpx.AsyncClient]:
    """Start ``app`` (its lifespan's startup: a ``DeviceService`` opens its device), yield
    an ``httpx.AsyncClient`` that sends requests straight to it (``httpx.ASGITransport``,
    no sockets), and shut the app down on exit.

    httpx's transport alone does not run the lifespan, so a service's requests would all
    be 503 "no device is open"; this runs it with ``asgi-lifespan``'s ``LifespanManager``
    (state the lifespan yields reaches the requests). Startup or shutdown taking longer
    than its timeout (seconds; None waits for ever) raises ``TimeoutError``. Needs
    ``httpx`` and ``asgi-lifespan`` (both in the ``test`` extra).
    """
    import httpx
    from asgi_lifespan import LifespanManager

    async with LifespanManager(app, startup_timeout, shutdown_timeout) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
            yield client


def live_tensor_ids(device: Device) -> list[int]:
    """Ids of the tensors whose buffers the device still holds (sorted)."""
    return sorted(device._server.executor.memory.table)


async def assert_no_leaks(device: Device, what: str = "the test") -> None:
    """Settle ``device`` and fail when tensors or queued work are still alive.

    Runs every stream's pending work (which applies pending drops), collects reference
    cycles once if something is still held, and then raises ``AssertionError`` naming the
    tensors (id, shape, dtype) that still hold device buffers.
    """
    if device.closed:  # closing released every buffer; a dead server has nothing to sync
        return
    await device.sync()
    if _held(device):
        gc.collect()  # a cancelled task's frames hold tensors in a cycle until collected
        await device.sync()
    held = _held(device)
    if not held:
        return
    ids = live_tensor_ids(device)
    mem = device.memory_stats()
    alive = {t.id: t for t in gc.get_objects() if isinstance(t, Tensor) and t.id in ids}
    named = [f"t{i} {alive[i].shape} {alive[i].dtype.label}" if i in alive else f"t{i}"
             for i in ids[:_SHOWN]]
    more = f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else ""
    raise AssertionError(
        f"{held} outlived {what} on {device!r}: tensors {', '.join(named)}{more} "
        f"({mem.live_buffers} live buffer(s), {mem.live_bytes} bytes). Drop every reference "
        "to them before the test ends (module globals, caches, closures, or a task that "
        "is still running), or mark the test @pytest.mark.af_device(leak_check=False)")


def _held(device: Device) -> str:
    """What is still alive on ``device`` ('' when nothing), in words."""
    parts = []
    live = device.memory_stats().live_buffers
    if live:
        parts.append(f"{live} buffer(s)")
    queued = sum(len(q) for q in list(device.streams.queues.values()))
    if queued:
        parts.append(f"{queued} queued op(s)")
    return " and ".join(parts)
