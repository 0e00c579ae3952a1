"""The device: a backend, the streams ops are registered on, the executor that runs them
(wrapped in ``Fusion`` unless ``fusion=False``), and the server that takes requests.

The server lives in the event loop that opened the device (``lifecycle.py``); other
threads, and other event loops, reach it through an anyio blocking portal.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading
import weakref
from collections.abc import Hashable, Iterator
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np
from anyio.abc import TaskStatus
from anyio.from_thread import BlockingPortal

from .._debug import in_event_loop
from ..backends.base import Backend, MemoryStats
from ..backends.numpy_backend import NumpyBackend
from ..engine import Fusion, Plain
from ..engine.executor import Executor, Request
from ..engine.request import Readable
from ..engine.streams import StreamId, Streams, current_stream
from .._core.errors import BlockingCallError, DeviceClosedError, DeviceMismatchError
from ..fusers.base import APART_AT
from ..ir import OperationIr, ReduceOp, TensorIr, numel
from ..trace import Counters, CounterSnapshot
from .admission import Admission
from .collector import freeze_survivors, space_young_collections
from .metrics import Metrics
from .options import DeviceOptions
from .server import Server
from .transfer import CopyWork, Transfers

if TYPE_CHECKING:
    from ..backends.wgpu.adapters import Adapter

__all__ = ["Device", "as_device", "DEVICES"]

_LARGE_STREAMS = 1024  # streams early_start follows at once, at most


class _Large(dict[tuple[int, ...], bool]):
    """shape -> whether it holds :data:`APART_AT` elements or more, learned on lookup."""

    def __missing__(self, shape: tuple[int, ...]) -> bool:
        if len(self) >= 4096:
            self.clear()
        large = self[shape] = numel(shape) >= APART_AT
        return large


_LARGE = _Large()


def _large_space(op: OperationIr, out: TensorIr) -> bool:
    """Whether ``op`` works over :data:`APART_AT` elements or more (a reduction: its
    input's; any other op: its output's)."""
    return _LARGE[op.input.shape if type(op) is ReduceOp else out.shape]


_numbers = itertools.count(1)
DEVICES: weakref.WeakSet[Device] = weakref.WeakSet()  # every device of this process


class Device:
    """One backend device with its op streams, executor thread and server task."""

    def __init__(self, backend: str = "wgpu", **options: Any) -> None:
        """A device of ``backend`` with :class:`DeviceOptions` ``options`` (keywords);
        its server runs once ``open_device`` (or ``default_device``) starts it."""
        self.options = opts = DeviceOptions.of(backend, options)
        if opts.freeze_gc:
            freeze_survivors()
            space_young_collections()
        self.counters = Counters()
        self.backend: Backend
        if opts.backend == "wgpu":
            from ..backends.wgpu.backend import WgpuBackend

            self.backend = WgpuBackend(
                self.counters, max_storage_bindings=opts.max_storage_bindings,
                workgroup=opts.workgroup, cache_bytes=opts.cache_bytes,
                adapter=opts.adapter_index(), matmul_tune=opts.matmul_tune,
                tune_dir=opts.tune_dir)
        else:
            self.backend = NumpyBackend()
        self.fusion = opts.fusion and self.backend.fuses
        runner = (Fusion(self.backend, self.counters) if self.fusion
                  else Plain(self.backend, self.counters))
        self.streams = Streams(opts.flush_threshold)
        self._server = Server(
            Executor(self.streams, runner, self.backend, self.counters, opts.max_batch),
            opts.max_round, opts.max_batch, opts.max_wait_ms / 1000)
        self._admission = Admission(
            opts.max_pending, opts.retry_after,
            None if opts.target_latency_ms is None else opts.target_latency_ms / 1000)
        self.transfers = Transfers()  # copies from other devices, settled before reads
        self.copy_work = CopyWork(weakref.ref(self))
        self._kept = self._server.executor.kept  # debug mode: notes where tensors are made
        # early_start: per stream, the tensors its queued ops touched since it began large
        # work (none: no large work queued since its last read or early start)
        self._large: dict[Hashable, set[int]] | None = {} if opts.early_start else None
        self._portal: BlockingPortal | None = None
        self._closed = False
        self.number = next(_numbers)
        DEVICES.add(self)

    def __repr__(self) -> str:
        mode = "fusion" if self.fusion else "plain"
        state = "closed" if self._closed else "open"
        where = getattr(self.backend, "adapter_summary", None)
        on = f" on {where}" if where else ""
        return f"<asyncfusion.Device #{self.number} {self.backend.name}{on} {mode} {state}>"

    # -- facts ---------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def lost(self) -> bool:
        """True once the underlying GPU device is gone (open a new device)."""
        return self.backend.lost is not None

    @property
    def adapter(self) -> Adapter | None:
        """The adapter this wgpu device runs on (its entry in ``af.adapters()``); None for
        the numpy backend."""
        rt = getattr(self.backend, "rt", None)
        if rt is None:
            return None
        from ..backends.wgpu.adapters import adapters

        listed = adapters()
        index: int | None = rt.key[2]
        if index is not None:
            return listed[index]
        info = rt.adapter_info
        return next((a for a in listed if (a.name, a.backend, a.device_type) == (
            info.get("device"), info.get("backend_type"), info.get("adapter_type"))), None)

    @property
    def max_buffer_size(self) -> int:
        """Bytes of the largest buffer, and so of the largest tensor (the adapter's
        max-buffer-size)."""
        return int(self.backend.max_buffer_size)

    @property
    def max_binding(self) -> int:
        """Bytes of a buffer one kernel binding reaches (max-storage-buffer-binding-size):
        element-wise ops over larger tensors split their bindings; other ops refuse."""
        return int(self.backend.max_binding)

    def stats(self) -> CounterSnapshot:
        """Launches, blocks, plan-cache hits/misses and kernels generated so far."""
        return self.counters.snapshot()

    def metrics(self) -> Metrics:
        """Rounds (count, size and latency histograms), queues, reads in flight and
        admission (see :class:`asyncfusion.runtime.metrics.Metrics`); for Prometheus, see
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
        large = self._large
        if large is not None:
            touched = large.get(key) if large else None
            if touched is not None or _LARGE[  # _large_space, inlined: every op comes here
                    op.input.shape if type(op) is ReduceOp else out.shape]:
                self._start_apart(key, owner, touched, op, inputs, out)
        n = streams.register(key, op, inputs, out, owner)
        if self._kept is not None:
            self._kept.note(out, key)
        if n % streams.flush_threshold == 0:
            self._poke()  # maybe a long queue to run, or many streams, some ended

    def _start_apart(self, key: Hashable, owner: object, touched: set[int] | None,
                     op: OperationIr, inputs: tuple[int, ...] | list[int],
                     out: TensorIr) -> None:
        """Before ``op`` queues on stream ``key``: where the stream holds large work that
        ``op``, itself large, shares no tensor with (the fuser's :data:`APART_AT` rule:
        ``op`` would start a kernel of its own), mark the stream and have the executor run
        what came before now (``early_start``; the server's loop thread only). Then note
        the tensors ``op`` touches. An upload (no input, not fusible) touches nothing: no
        kernel of the fuser's holds it."""
        large = self._large
        assert large is not None
        if not inputs and not op.fusible:
            return
        if touched is None:
            if len(large) >= _LARGE_STREAMS:  # streams that ended with large work queued
                large.clear()
            touched = large[key] = set()
        elif inputs and touched.isdisjoint(inputs) and _large_space(op, out) \
                and threading.get_ident() == self._server.thread:
            self.streams.mark(key, owner)
            self._server.advance(key)
            touched.clear()
        touched.update(inputs)
        touched.update(t.id for t in op.outputs())

    def register_on(self, key: tuple[str, int], op: OperationIr, out: TensorIr) -> None:
        """Queue ``op`` (which reads no tensor of this device) on a stream of its own,
        owned by the caller's task; a read of ``out`` runs it."""
        if self._closed:
            raise self._server._dead_error()
        self.streams.register(key, op, (), out, current_stream()[1])
        self._poke()

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
    async def _request(self, tensor: Readable | None, sync: bool, empty: bool = False
                       ) -> np.ndarray | None:
        if self.closed:
            raise self._server._dead_error()
        stream = StreamId.current()
        self._read_whole(stream, sync)
        if threading.get_ident() == self._server.thread:
            return await self._in_loop(stream, tensor, sync, empty)
        portal = self._require_portal()
        call = functools.partial(portal.call, self._in_loop, stream, tensor, sync, empty)
        return await anyio.to_thread.run_sync(call)

    async def _in_loop(self, stream: Hashable, tensor: Readable | None, sync: bool,
                       empty: bool = False,
                       settle: bool = True) -> np.ndarray | None:
        if settle and self.transfers.pending:
            await self.transfers.settle()
        return await self._server.request(Request(stream, tensor, empty), sync)

    def _read_whole(self, stream: Hashable, every: bool) -> None:
        """A read runs its stream's queue whole (a sync, ``every``: every stream's): the
        large work early_start follows there starts afresh."""
        large = self._large
        if large:
            if every:
                large.clear()
            else:
                large.pop(stream, None)

    def _blocking(self, tensor: Readable | None, sync: bool, what: str, settle: bool = True
                  ) -> np.ndarray | None:
        instead = f"await {what.replace('_sync', '').replace('_blocking', '')}()"
        stream = self._blocking_stream(what, instead, sync)
        out: np.ndarray | None = self._require_portal().call(
            self._in_loop, stream, tensor, sync, False, settle)
        return out

    def read_many_sync(self, tensors: tuple[Readable, ...], what: str) -> list[np.ndarray]:
        """:meth:`read_many` through the blocking door (plain scripts and threads): every
        tensor in one round."""
        stream = self._blocking_stream(what, "await af.to_data(...)", False)
        out: list[np.ndarray] = self._require_portal().call(self._many_in_loop, stream,
                                                            tensors)
        return out

    def _blocking_stream(self, what: str, instead: str, sync: bool) -> Hashable:
        """The caller's stream, for a read through the blocking door: refused inside an
        event loop (naming the awaitable ``instead``) and on a closed device."""
        if in_event_loop():
            raise BlockingCallError(
                f"{what} blocks, and this code runs inside an event loop, where it would stall "
                f"every other task; use '{instead}' instead")
        if self.closed:
            raise self._server._dead_error()
        stream = StreamId.current()
        self._read_whole(stream, sync)
        return stream

    def _require_portal(self) -> BlockingPortal:
        if self._portal is None:
            raise DeviceClosedError(f"{self!r} has no running server; use it inside open_device()")
        return self._portal

    async def read_many(self, tensors: tuple[Readable, ...]) -> list[np.ndarray]:
        """Read every tensor in one round (see :func:`to_data`)."""
        if self.closed:
            raise self._server._dead_error()
        stream = StreamId.current()
        self._read_whole(stream, False)
        if threading.get_ident() == self._server.thread:
            return await self._many_in_loop(stream, tensors)
        portal = self._require_portal()
        call = functools.partial(portal.call, self._many_in_loop, stream, tensors)
        out: list[np.ndarray] = await anyio.to_thread.run_sync(call)
        return out

    async def _many_in_loop(self, stream: Hashable, tensors: tuple[Readable, ...]
                            ) -> list[np.ndarray]:
        await self.transfers.settle()
        got = await self._server.request_many([Request(stream, t) for t in tensors])
        out: list[np.ndarray] = []
        for d in got:
            assert d is not None  # a read that did not fail has data
            out.append(d)
        return out

    async def read(self, tensor: Readable) -> np.ndarray:
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
        self.backend.lose(reason)

    # -- lifecycle -----------------------------------------------------------------------
    async def _serve(self, portal: BlockingPortal, *,
                     task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self._portal = portal
        self._server.on_stop = self._mark_closed
        await self._server.serve(task_status=task_status)

    def _mark_closed(self) -> None:
        self._closed = True


def as_device(device: object) -> Device:
    """``device`` if it is a Device, else a TypeError that says what to pass."""
    if isinstance(device, Device):
        return device
    if isinstance(device, contextlib.AbstractAsyncContextManager):
        raise TypeError("device= got open_device() itself; enter it first: "
                        "'async with asyncfusion.open_device() as dev:' and pass dev")
    raise TypeError(f"device must be an asyncfusion Device (from open_device() or "
                    f"default_device()), not {device!r}")



