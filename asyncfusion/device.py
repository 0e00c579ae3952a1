"""Devices: ``open_device()`` (structured, inside your task group) and ``default_device()``.

A :class:`Device` joins the parts: the streams that ops are registered on, the executor
that runs them on a backend (wrapped in ``Fusion`` unless ``fusion=False``), and the
server task. The server lives in the event loop that opened the device; other threads,
and other event loops, reach it through an anyio blocking portal.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import threading
import weakref
from typing import Any
from collections.abc import AsyncIterator, Iterator

import anyio
import numpy as np
from anyio.from_thread import BlockingPortal

from ._debug import in_event_loop
from ._tracebacks import clear_read_frames
from .admission import Admission
from .backends.base import MemoryStats
from .backends.numpy_backend import NumpyBackend
from .errors import BlockingCallError, DeviceClosedError, DeviceMismatchError
from .engine import Fusion, Plain
from .ir import OperationIr, TensorIr
from .metrics import Metrics
from .server import Executor, Request, Server
from .stream import StreamId, Streams, current_stream
from .trace import Counters, CounterSnapshot

__all__ = ["Device", "open_device", "default_device", "as_device", "to_data"]


_numbers = itertools.count(1)


class Device:
    """One backend device with its op streams, executor thread and server task."""

    def __init__(self, backend: str = "wgpu", *, fusion: bool = True,
                 max_storage_bindings: int | None = None, workgroup: int | None = None,
                 flush_threshold: int = 512, max_pending: int | None = None,
                 max_round: int | None = None, retry_after: float = 1.0,
                 max_batch: int | None = None, max_wait_ms: float = 0.0,
                 cache_bytes: int | None = None) -> None:
        _check_options(backend, fusion, max_storage_bindings, workgroup, flush_threshold)
        _check_cache(cache_bytes)
        _check_serving(max_pending, max_round, retry_after, max_batch, max_wait_ms)
        self.counters = Counters()
        if backend == "wgpu":
            from .backends.wgpu.backend import WgpuBackend

            self.backend: Any = WgpuBackend(
                self.counters, max_storage_bindings=max_storage_bindings, workgroup=workgroup,
                cache_bytes=cache_bytes)
        elif backend == "numpy":
            self.backend = NumpyBackend()
        else:
            raise ValueError(f"unknown backend {backend!r}; use 'wgpu' or 'numpy'")
        self.fusion = fusion and self.backend.fuses
        runner = (Fusion(self.backend, self.counters) if self.fusion
                  else Plain(self.backend, self.counters))
        self.streams = Streams(flush_threshold)
        self._server = Server(
            Executor(self.streams, runner, self.backend, self.counters, max_batch),
            max_round, max_batch, max_wait_ms / 1000)
        self._admission = Admission(max_pending, retry_after)
        self._kept = self._server.executor.kept  # debug mode: notes where tensors are made
        self._portal: BlockingPortal | None = None
        self._closed = False
        self.number = next(_numbers)
        _DEVICES.add(self)

    def __repr__(self) -> str:
        mode = "fusion" if self.fusion else "plain"
        state = "closed" if self._closed else "open"
        return f"<asyncfusion.Device #{self.number} {self.backend.name} {mode} {state}>"

    # -- facts ---------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def lost(self) -> bool:
        """True once the underlying GPU device is gone (open a new device)."""
        rt = getattr(self.backend, "rt", None)
        return rt is not None and rt.lost is not None

    @property
    def max_buffer_size(self) -> int:
        return int(self.backend.max_buffer_size)

    def stats(self) -> CounterSnapshot:
        """Launches, blocks, plan-cache hits/misses and kernels generated so far."""
        return self.counters.snapshot()

    def metrics(self) -> Metrics:
        """Rounds (count, size and latency histograms), queues, reads in flight and
        admission (see :class:`asyncfusion.metrics.Metrics`); for Prometheus, see
        ``asyncfusion.contrib.prometheus``."""
        server, streams, adm = self._server, self.streams, self._admission
        m = server.metrics
        with streams.lock:
            queued_ops = sum(len(q) for q in streams.queues.values())
            n_streams = len(streams.queues)
        return Metrics(
            rounds=m.rounds, requests=m.requests, round_size=m.round_size.snapshot(),
            round_seconds=m.round_seconds.snapshot(), queued_requests=len(server.inbox),
            reads_in_flight=len(server.inbox) + m.running, queued_ops=queued_ops,
            streams=n_streams, admitted=adm.admitted, rejected=adm.rejected,
            admitted_now=adm.active, max_pending=adm.limit,
            launches=self.counters.launches, submissions=self.counters.submissions,
            batched_instances=self.counters.batched_instances)

    def admit(self, timeout: float = 0.0) -> contextlib.AbstractAsyncContextManager[None]:
        """Back pressure: ``async with dev.admit():`` around a request's device work.

        Takes one of ``max_pending`` slots (``open_device(max_pending=...)``; no limit by
        default), waiting up to ``timeout`` seconds for one to free, else raises
        :class:`~asyncfusion.Overloaded` (answer 503 with ``Retry-After:
        exc.retry_after``). Enter it before making tensors, so a refused request queues
        no work. Use it from the event loop that opened the device."""
        if self._closed:
            raise self._server._dead_error()
        return self._admission(timeout)

    def reset_stats(self) -> None:
        self.counters.reset()

    def memory_stats(self) -> MemoryStats:
        """Buffers held by live tensors (``live_*``) and the cache (``pooled_*``): freed
        buffers kept for reuse, up to a budget sized from the device, so that a repeated
        round allocates nothing. ``await empty_cache()`` gives the cache back."""
        stats: MemoryStats = self.backend.memory_stats()
        return stats

    # -- registration (hot path) -----------------------------------------------------------
    def register(self, op: OperationIr, inputs: tuple[int, ...] | list[int],
                 out: TensorIr) -> None:
        """Queue ``op`` (reading tensor ids ``inputs``, producing ``out``) on the caller's
        stream."""
        if self._closed:
            raise self._server._dead_error()
        key, owner = current_stream()
        streams = self.streams
        n = streams.register(key, op, inputs, out, owner)
        if self._kept is not None:
            self._kept.note(out, key)
        if n == streams.flush_threshold or (n == 1 and streams.crowded()):
            self._poke()  # a long queue to run, or many streams, some maybe ended

    def _poke(self) -> None:
        server = self._server
        if threading.get_ident() == server.thread:
            server.poke()
        elif self._portal is not None:
            with contextlib.suppress(Exception):
                self._portal.start_task_soon(self._apoke)

    async def _apoke(self) -> None:
        self._server.poke()

    # -- requests ------------------------------------------------------------------------
    async def _request(self, tensor: Any, sync: bool, empty: bool = False
                       ) -> np.ndarray | None:
        if self.closed:
            raise self._server._dead_error()
        stream = StreamId.current()
        if threading.get_ident() == self._server.thread:
            return await self._in_loop(stream, tensor, sync, empty)
        portal = self._require_portal()
        call = functools.partial(portal.call, self._in_loop, stream, tensor, sync, empty)
        return await anyio.to_thread.run_sync(call)

    async def _in_loop(self, stream: Any, tensor: Any, sync: bool, empty: bool = False
                       ) -> np.ndarray | None:
        return await self._server.request(Request(stream, tensor, empty), sync)

    def _blocking(self, tensor: Any, sync: bool, what: str) -> np.ndarray | None:
        if in_event_loop():
            raise BlockingCallError(
                f"{what} blocks, and this code runs inside an event loop, where it would stall "
                f"every other task; use 'await {what.replace('_sync', '').replace('_blocking', '')}"
                f"()' instead")
        if self.closed:
            raise self._server._dead_error()
        out: np.ndarray | None = self._require_portal().call(
            self._in_loop, StreamId.current(), tensor, sync)
        return out

    def _require_portal(self) -> BlockingPortal:
        if self._portal is None:
            raise DeviceClosedError(f"{self!r} has no running server; use it inside open_device()")
        return self._portal

    async def read_many(self, tensors: tuple[Any, ...]) -> list[np.ndarray]:
        """Read every tensor in one round (see :func:`to_data`)."""
        if self.closed:
            raise self._server._dead_error()
        stream = StreamId.current()
        if threading.get_ident() == self._server.thread:
            return await self._many_in_loop(stream, tensors)
        portal = self._require_portal()
        call = functools.partial(portal.call, self._many_in_loop, stream, tensors)
        out: list[np.ndarray] = await anyio.to_thread.run_sync(call)
        return out

    async def _many_in_loop(self, stream: Any, tensors: tuple[Any, ...]) -> list[np.ndarray]:
        got = await self._server.request_many([Request(stream, t) for t in tensors])
        out: list[np.ndarray] = []
        for d in got:
            assert d is not None  # a read that did not fail has data
            out.append(d)
        return out

    async def read(self, tensor: Any) -> np.ndarray:
        out = await self._request(tensor, False)
        assert out is not None
        return out

    async def sync(self) -> None:
        """Run every stream's pending work and wait until the device has finished it."""
        await self._request(None, True)

    async def empty_cache(self) -> None:
        """Give every pooled buffer back to the driver (``memory_stats().pooled_*`` drop to
        0), as torch's ``empty_cache`` does. It runs on the executor thread, between
        rounds; buffers of live tensors stay. Allocation failures empty the cache on their
        own before they give up, so this is for handing memory to other programs."""
        await self._request(None, False, empty=True)

    def sync_blocking(self) -> None:
        """``sync()`` for plain threads and scripts; refuses to run inside an event loop."""
        self._blocking(None, True, "device.sync_blocking")

    # -- testing hooks -------------------------------------------------------------------
    @contextlib.contextmanager
    def inject_fault(self, kind: str = "launch", op: str | None = None,
                     count: int | None = None) -> Iterator[None]:
        """Inside this block, launches of kernels that contain ``op`` (or any launch), or
        allocations (``kind="alloc"``), fail — every time, or the next ``count`` times."""
        rule = self.backend.faults.add(kind, op, count)
        try:
            yield
        finally:
            self.backend.faults.remove(rule)

    def lose_device(self, reason: str = "lost on purpose by lose_device()") -> None:
        """Destroy the underlying GPU device, as a driver reset would (tests only).

        Devices opened with the same limits share one wgpu device, so all of them see the
        loss, as they would a real one; devices opened afterwards get a fresh GPU device.
        """
        rt = getattr(self.backend, "rt", None)
        if rt is None:
            raise TypeError("only the wgpu backend has a GPU device to lose")
        rt.lose(reason)

    # -- lifecycle -----------------------------------------------------------------------
    async def _serve(self, portal: BlockingPortal, *, task_status: Any = anyio.TASK_STATUS_IGNORED
                     ) -> None:
        self._portal = portal
        self._server.on_stop = self._mark_closed
        await self._server.serve(task_status=task_status)

    def _mark_closed(self) -> None:
        self._closed = True


def _check_options(backend: Any, fusion: Any, max_storage_bindings: Any, workgroup: Any,
                   flush_threshold: Any) -> None:
    """Refuse bad device options when the device opens, naming the option."""
    if backend not in ("wgpu", "numpy"):
        raise ValueError(f"unknown backend {backend!r}; use 'wgpu' or 'numpy'")
    if not isinstance(fusion, bool):
        raise TypeError(f"fusion must be True or False, not {fusion!r}")
    for name, value, low in (("max_storage_bindings", max_storage_bindings, 4),
                             ("workgroup", workgroup, 1),
                             ("flush_threshold", flush_threshold, 1)):
        if value is None and name != "flush_threshold":
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, not {value!r}")
        if value < low:
            raise ValueError(f"{name} must be at least {low}, not {value}")


def _check_cache(cache_bytes: Any) -> None:
    if cache_bytes is None:
        return
    if not isinstance(cache_bytes, int) or isinstance(cache_bytes, bool):
        raise TypeError(f"cache_bytes must be an int (bytes) or None, not {cache_bytes!r}")
    if cache_bytes < 0:
        raise ValueError(f"cache_bytes must be 0 or more (0: free buffers at once), not "
                         f"{cache_bytes}")


def _check_serving(max_pending: Any, max_round: Any, retry_after: Any, max_batch: Any,
                   max_wait_ms: Any) -> None:
    for name, value in (("max_pending", max_pending), ("max_round", max_round),
                        ("max_batch", max_batch)):
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int or None, not {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be at least 1 (or None: no limit), not {value}")
    if not isinstance(retry_after, (int, float)) or isinstance(retry_after, bool) \
            or not retry_after > 0:
        raise ValueError(f"retry_after must be a positive number of seconds, not {retry_after!r}")
    if not isinstance(max_wait_ms, (int, float)) or isinstance(max_wait_ms, bool) \
            or not 0 <= max_wait_ms < float("inf"):
        raise ValueError(f"max_wait_ms must be a number of milliseconds, 0 or more (0: rounds "
                         f"start at once), not {max_wait_ms!r}")


async def to_data(*tensors: Any) -> tuple[np.ndarray, ...]:
    """Read several tensors with one await: ``v, i = await af.to_data(values, indices)``.

    All of them are read in one device round (one submission, one wait), instead of one
    round trip each. They must live on one device. Raises the first failure in argument
    order; a cancelled call withdraws every read."""
    from .tensor import Tensor

    if not tensors:
        raise TypeError("to_data() needs at least one tensor: await af.to_data(a, b, ...)")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"to_data() reads asyncfusion Tensors, not {type(t).__name__}")
    dev = tensors[0].device
    if any(t.device is not dev for t in tensors):
        raise DeviceMismatchError(
            "to_data() got tensors of different devices; read each device's tensors with "
            "its own to_data() call (they may run concurrently in a task group)")
    try:
        out = await dev.read_many(tensors)
    except BaseException as exc:  # cancelled or failed: the traceback keeps no tensor
        clear_read_frames(exc)
        del tensors, t
        raise
    for t, values in zip(tensors, out, strict=True):
        t._keep_host(values)
    return tuple(out)


def as_device(device: Any) -> Device:
    """``device`` if it is a Device, else a TypeError that says what to pass."""
    if isinstance(device, Device):
        return device
    if isinstance(device, contextlib.AbstractAsyncContextManager):
        raise TypeError("device= got open_device() itself; enter it first: "
                        "'async with asyncfusion.open_device() as dev:' and pass dev")
    raise TypeError(f"device must be an asyncfusion Device (from open_device() or "
                    f"default_device()), not {device!r}")


@contextlib.asynccontextmanager
async def open_device(backend: str = "wgpu", *, fusion: bool = True,
                      max_storage_bindings: int | None = None, workgroup: int | None = None,
                      flush_threshold: int = 512, max_pending: int | None = None,
                      max_round: int | None = None, retry_after: float = 1.0,
                      max_batch: int | None = None, max_wait_ms: float = 0.0,
                      cache_bytes: int | None = None) -> AsyncIterator[Device]:
    """Open a device whose server runs in a task group of the calling event loop.

    :param backend: ``"wgpu"`` (WebGPU through wgpu-native) or ``"numpy"`` (the reference).
    :param fusion: wrap the backend in the Fusion decorator (``False``: one launch per op).
    :param max_storage_bindings: cap on storage buffers per kernel (WebGPU's default is 8).
    :param max_pending: requests admitted at once by :meth:`Device.admit` (None: no limit);
        the rest wait or get :class:`~asyncfusion.Overloaded`.
    :param max_round: requests one round serves at most (None: all that wait), so a
        round's latency stays bounded under overload; the rest go in the next round.
    :param retry_after: the seconds an ``Overloaded`` error suggests to wait.
    :param max_batch: instances one batched launch takes at most (None: as many as fit):
        equal programs of more tasks than this run as several launches per kernel.
    :param max_wait_ms: how long a round whose reads come from fewer than ``max_batch``
        tasks (or ``max_round`` requests) may wait for more, counted from its oldest read
        (0, the default: it starts at once). Under light load this trades up to that much
        latency for batching: requests that arrive a little apart share one launch, as in
        Triton's dynamic batcher or Ray Serve's ``@serve.batch``. Syncs never wait.
    :param cache_bytes: how many bytes of freed buffers the caching allocator keeps for
        reuse (None: the ``ASYNCFUSION_CACHE_BYTES`` environment variable, else 8 GiB on a
        GPU and a quarter of the host's memory, at most 4 GiB, on a CPU adapter; WebGPU
        does not report a device's memory). Past it, freed buffers are released; under
        allocation pressure the cache is emptied and the allocation retried.
    """
    make = functools.partial(Device, backend, fusion=fusion,
                             max_storage_bindings=max_storage_bindings, workgroup=workgroup,
                             flush_threshold=flush_threshold, max_pending=max_pending,
                             max_round=max_round, retry_after=retry_after,
                             max_batch=max_batch, max_wait_ms=max_wait_ms,
                             cache_bytes=cache_bytes)
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


_DEVICES: weakref.WeakSet[Device] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """In a forked child, every device of the parent is unusable (its server thread,
    executor and GPU state did not come along): fail fast instead of hanging."""
    global _default_lock
    _default_lock = threading.Lock()  # another thread may have held it at the fork
    _default.clear()  # no clean-up: it would wait on the parent's threads
    for dev in list(_DEVICES):
        dev._server.forked = True
        dev._portal = None
        dev._closed = True


os.register_at_fork(after_in_child=_after_fork_in_child)
