"""Opening and closing devices: ``open_device()`` (structured, inside your task group),
``default_device()`` (a process-wide device served from a thread of its own, for
scripts), and what a fork leaves of them (nothing usable: they fail fast).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

from .._core.errors import DeviceClosedError
from .device import DEVICES, Device

__all__ = ["open_device", "default_device"]


@contextlib.asynccontextmanager
async def open_device(backend: str = "wgpu", **options: Any) -> AsyncIterator[Device]:
    """Open a device whose server runs in a task group of the calling event loop.

    ``options`` are :class:`~asyncfusion.DeviceOptions` keywords (``fusion``,
    ``max_storage_bindings``, ``workgroup``, ``flush_threshold``, ``max_pending``,
    ``max_round``, ``retry_after``, ``max_batch``, ``max_wait_ms``, ``cache_bytes``,
    ``matmul_tune``, ``tune_dir``, ``freeze_gc``).
    """
    make = functools.partial(Device, backend, **options)
    dev = await anyio.to_thread.run_sync(make)  # adapter setup blocks for ~0.5 s
    body: BaseException | None = None
    try:
        async with BlockingPortal() as portal, anyio.create_task_group() as tg:
            await tg.start(dev._serve, portal)
            try:
                yield dev
            except BaseException as exc:
                body = exc
                raise
            finally:
                dev._mark_closed()
                tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # The portal's and the server's task groups each wrap what the body raised; a
        # single exception from the body comes out as itself, so 'except ValueError'
        # around the block works. Anything else that failed as well keeps the group.
        if body is None or _only_leaf(group) is not body:
            raise
    finally:
        dev._mark_closed()
    if body is not None:
        raise body


def _only_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one exception inside nested single-member groups, or None."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        if len(exc.exceptions) != 1:
            return None
        exc = exc.exceptions[0]
    return exc


class _DefaultServer:
    """The default device's server, on a daemon thread with its own event loop.

    Plain objects only (no generator context manager): a forked child, or a setup
    interrupted by Ctrl-C, drops them without running any clean-up that waits on a
    thread that is not there.
    """

    def __init__(self, dev: Device) -> None:
        self.dev = dev
        self.portal: BlockingPortal | None = None
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name="asyncfusion-default-device",
                                       daemon=True)

    def _main(self) -> None:
        try:
            anyio.run(self._serve)
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that waits
            self.error = exc
        finally:
            self.dev._mark_closed()
            self.ready.set()

    async def _serve(self) -> None:
        async with BlockingPortal() as portal, anyio.create_task_group() as tg:
            self.portal = portal
            await tg.start(self.dev._serve, portal)
            self.ready.set()
            await portal.sleep_until_stopped()
            tg.cancel_scope.cancel()

    def start(self) -> None:
        self.thread.start()
        self.ready.wait()
        if self.error is not None or self.portal is None:
            raise DeviceClosedError("the default device's server did not start") from self.error

    def stop(self) -> None:
        self.dev._mark_closed()
        portal = self.portal
        if portal is not None and self.thread.is_alive():
            with contextlib.suppress(Exception):
                portal.call(portal.stop, True)
            self.thread.join(timeout=10)


_default: dict[str, _DefaultServer] = {}
_default_lock = threading.Lock()


def default_device() -> Device:
    """A process-wide wgpu device whose server runs on its own thread; for quick scripts.

    Prefer ``async with open_device()`` in services: its server runs in your event loop,
    so reads need no thread hop.
    """
    with _default_lock:
        current = _default.get("server")
        if current is not None and not current.dev.closed and not current.dev.lost:
            return current.dev
        _close_default()
        dev = Device("wgpu")  # the adapter first: if there is none, no thread was started
        server = _DefaultServer(dev)
        try:
            server.start()
        except BaseException:  # Ctrl-C while it starts, too: leave no server behind
            server.stop()
            raise
        _default["server"] = server
        return dev


@atexit.register
def _close_default() -> None:
    server = _default.pop("server", None)
    if server is not None:
        server.stop()


def _after_fork_in_child() -> None:
    """In a forked child, every device of the parent is unusable (its server thread,
    executor and GPU state did not come along): fail fast instead of hanging."""
    global _default_lock
    _default_lock = threading.Lock()  # another thread may have held it at the fork
    _default.clear()  # no clean-up: it would wait on the parent's threads
    for dev in list(DEVICES):
        dev._server.forked = True
        dev._portal = None
        dev._closed = True


os.register_at_fork(after_in_child=_after_fork_in_child)
