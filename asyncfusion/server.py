"""The device server: one task per device that turns requests into executor rounds.

The server task never touches the GPU itself. Each round — every request that arrived
since the last one, from any number of tasks — runs on the device's executor thread (one
persistent thread per device, fed by a queue): drain the streams involved, run their
plans (the equal plans of different streams as one launch per kernel: see
``engine/batch.py``), stage the reads, submit all of it as one submission, then map and
copy every read of the round (one staging buffer for all of them). The thread hands the round back to the event loop with one thread-safe call
(asyncio's ``call_soon_threadsafe``, trio's token), and the server wakes each reader with
its data. Staging buffers never leave the executor thread, so a cancelled reader can leak
none. No lock is held across any await, and nothing that blocks (submit, map, compile)
runs on the event loop.

A failing op poisons only its dependents (see ``fusion/plan.py``); a failing round fails
only its own requests; if the server itself dies, every waiter gets the error at once.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from collections.abc import Hashable

import anyio
import numpy as np

from . import _debug
from .engine import Memory, Poison, Storage
from .engine.batch import Deferred
from .engine.kept import KeptAlive
from .errors import DeviceClosedError, DeviceLostError, ExecutionError
from .engine.plan import Context, run_single
from .ir import DropOp, Layout, OperationIr
from .metrics import ServerMetrics
from .stream import Streams
from .trace import Counters, emit, trace_enabled

__all__ = ["Request", "Executor", "Server", "Worker"]

_dense_layout = functools.lru_cache(maxsize=1024)(Layout.dense)  # one per read otherwise


@dataclass(eq=False)
class Request:
    """A read (``tensor`` set), a sync of every stream, or an ``empty_cache``, posted by
    one task. ``data`` and ``error`` are written by the executor thread, before ``done``."""

    stream: Hashable
    tensor: Any = None
    empty_cache: bool = False
    done: anyio.Event = field(default_factory=anyio.Event)
    data: np.ndarray | None = None
    error: BaseException | None = None
    cancelled: bool = False
    sync: bool = False
    posted: float = 0.0  # when it was posted (anyio's clock), if rounds may wait
    kept: list[tuple[str, str, int]] = field(default_factory=list)  # debug warnings to issue


_T = TypeVar("_T")
_Caller = Callable[..., object]  # call(fn, *args) soon, on the loop, from any thread
_Job = tuple[Callable[[], Any], Callable[[Any], object]]


def loop_caller() -> _Caller:
    """The running event loop's thread-safe "call this soon" (asyncio or trio)."""
    loop = asyncio._get_running_loop()
    if loop is not None:
        return loop.call_soon_threadsafe
    trio = sys.modules["trio"]
    run: _Caller = trio.lowlevel.current_trio_token().run_sync_soon
    return run


class Worker:
    """One persistent thread that runs jobs in order; each job's result is handed to one
    event loop (``call``: its thread-safe "call this soon") with one call."""

    def __init__(self, name: str, call: _Caller) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.call = call  # the event loop's thread-safe "call this soon"
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()

    def _main(self) -> None:
        while self._next():
            pass

    def _next(self) -> bool:
        """Run the next job; False once stopped. A job's references (its round's requests
        and tensors) die with this frame, not when the next job arrives."""
        job = self.jobs.get()
        if job is None:
            return False
        fn, done = job
        result = fn()
        try:
            self.call(done, result)
        except RuntimeError:  # the loop that waited is closed: nobody is left to tell
            pass
        return True

    def submit(self, fn: Callable[[], _T], done: Callable[[_T], object]) -> None:
        """Run ``fn`` on the thread, then ``done(result)`` on the event loop. ``fn`` must
        not raise (what it touches belongs to the thread until it returns)."""
        self.jobs.put((fn, done))

    async def run(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the thread and wait for it, uncancellably: it always ends, and
        what it touches belongs to the thread until it does. Raises what ``fn`` raised."""
        event = anyio.Event()

        def job() -> BaseException | None:
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
                return exc
            return None

        failed: list[BaseException | None] = []

        def done(exc: BaseException | None) -> None:
            failed.append(exc)
            event.set()

        self.submit(job, done)
        with anyio.CancelScope(shield=True):
            await event.wait()
        if failed[0] is not None:
            raise failed[0]

    def stop(self) -> None:
        """Let the thread end after the jobs already queued."""
        self.jobs.put(None)


class Executor:
    """Owns the memory table; runs on the device's executor thread only."""

    def __init__(self, streams: Streams, runner: Any, backend: Any, counters: Counters,
                 max_batch: int | None = None) -> None:
        self.streams = streams
        self.runner = runner
        self.backend = backend
        self.counters = counters
        self.memory = Memory(backend)
        self.deferred = Deferred(runner, self.memory, counters, max_batch)
        self.kept: KeptAlive | None = None  # debug mode: finds intermediates kept alive
        if _debug.DEBUG and runner.fuse:
            self.kept = KeptAlive()
            runner.observe = self.kept.check

    def round(self, requests: list[Request], sync: bool) -> None:
        """One round (executor thread): run what ``requests`` need, submit it, and fill
        in each read's ``data`` or ``error``."""
        self.counters.rounds += 1
        if sync or self.streams.crowded() or any(r.cancelled for r in requests):
            self.counters.queues_scanned += len(self.streams.queues)
            self.streams.reclaim()  # dead work of ended tasks goes without running
        for tid in self.streams.take_freeable():
            self._release(tid)
        keys = self.streams.keys() if sync else list(
            dict.fromkeys([r.stream for r in requests] + self.streams.long_queues()))
        for key in keys:
            self.drain(key, batch=True)
        self.deferred.flush(self._recover)
        reads = [r for r in requests if r.tensor is not None and not r.cancelled]
        tokens: list[tuple[Request, Any]] = []
        for r in reads:
            prod = self.streams.pending_producer(r.tensor.id)
            if prod is not None:
                self.drain(*prod)
            h = self.memory.get(r.tensor.id)
            if isinstance(h, Poison):
                r.error = self._error(f"tensor t{r.tensor.id} could not be computed", h.error)
            elif h is None:
                r.error = ExecutionError(
                    f"tensor t{r.tensor.id} has no data on the device: no op computes it (a "
                    "Tensor built by hand?); make tensors with asyncfusion.tensor(), zeros(), "
                    "ones(), full(), arange(), rand() or randn()")
            else:
                assert isinstance(h, Storage)
                layout = r.tensor.layout or _dense_layout(r.tensor.shape)
                try:
                    tokens.append((r, self.backend.stage_read(h.buffer, layout, r.tensor.dtype)))
                except Exception as exc:  # noqa: BLE001
                    r.error = self._error(f"staging the read of t{r.tensor.id} failed", exc)
        try:
            self.backend.flush()
            if sync:
                self.backend.wait_idle()
        except Exception as exc:  # noqa: BLE001 - the submission failed: fail its readers
            err = self._error("submitting work to the device failed", exc)
            for r, token in tokens:
                self.backend.discard_read(token)
            for r in requests:
                r.error = r.error or err
            return
        for r, token in tokens:
            if r.cancelled:  # its reader is gone: nothing to copy out
                self.backend.discard_read(token)
                continue
            try:
                r.data = self.backend.finish_read(token)
            except Exception as exc:  # noqa: BLE001
                r.error = self._error(f"reading t{r.tensor.id} back failed", exc)
        if any(r.empty_cache for r in requests):
            self.backend.empty_cache()

    def _error(self, what: str, cause: BaseException) -> ExecutionError:
        """The error a reader gets: DeviceLostError once the GPU is gone, else
        ExecutionError naming the failure, with the cause chained."""
        rt = getattr(self.backend, "rt", None)
        if isinstance(cause, DeviceLostError) or (rt is not None and rt.lost is not None):
            err: ExecutionError = DeviceLostError(
                f"{what}: the GPU device was lost ({rt.lost if rt else cause}); "
                "open a new device")
        else:
            err = ExecutionError(
                f"{what}: {type(cause).__name__}: {cause}. Only tensors that depend on the "
                "failed op are affected; the device keeps working.")
        err.__cause__ = cause
        return err

    def drain(self, key: Hashable, upto: int | None = None, batch: bool = False) -> None:
        """Run a stream's queued ops (the first ``upto``), producers in other streams first;
        ``batch``: they may wait for the round's other streams with the same plan."""
        ops, frees = self.streams.take(key, upto)
        if not ops:
            return
        if batch:
            if trace_enabled():
                for op in ops:
                    emit(f"[registered] {op.describe()}")
            if self.deferred.offer(ops, frees):
                return
        self.deferred.flush(self._recover)  # what waits goes first, as it was taken first
        start = 0
        memory = self.memory
        for i, op in enumerate(ops):
            for t in op.inputs():
                if t.id not in memory:
                    prod = self.streams.pending_producer(t.id)
                    if prod is not None:
                        self._run(ops[start:i], traced=batch)
                        start = i
                        self.drain(*prod)
        self._run(ops[start:], traced=batch)
        for tid in frees:
            self._release(tid)

    def _run(self, ops: list[OperationIr], traced: bool = False) -> None:
        if not ops:
            return
        if trace_enabled() and not traced:
            for op in ops:
                emit(f"[registered] {op.describe()}")
        try:
            self.runner.run(ops, self.memory)
        except Exception:  # noqa: BLE001 - a bug outside the steps' own isolation
            self._recover(ops)

    def _recover(self, ops: list[OperationIr]) -> None:
        """These ops have left their queue: if they are not run now, their outputs are
        lost for good. Run what did not run, op by op, each failure isolated."""
        memory = self.memory
        ctx = Context(memory, self.counters)
        for op in ops:
            outs = op.outputs()
            if type(op) is DropOp or not all(t.id in memory for t in outs):
                run_single(op, ctx)

    def _release(self, tid: int) -> None:
        self.memory.release(tid)

    def close(self) -> None:
        self.memory.release_all()
        try:
            self.backend.close()
        except Exception:  # noqa: BLE001 - a lost device has nothing left to give back
            pass
        rt = getattr(self.backend, "rt", None)
        if rt is not None:  # the last device on a wgpu device lets it go
            from .backends.wgpu.runtime import detach

            detach(rt)


class Server:
    """The async half of a device: collects requests and runs rounds on the executor.

    A read posted while no round runs starts one at once, from the reader's own call (no
    hop through the server task); reads posted while one runs form the next round, which
    the finished round's callback starts. The server task is there for what no reader
    starts: long queues and drops to run (``poke``), rounds that wait for more readers
    (``max_wait``), and closing.
    """

    def __init__(self, executor: Executor, max_round: int | None = None,
                 max_batch: int | None = None, max_wait: float = 0.0) -> None:
        self.executor = executor
        self.max_round = max_round  # requests per round at most (None: all that wait)
        self.max_batch = max_batch  # a round waits for reads of this many tasks,
        self.max_wait = max_wait  # for this many seconds at most (0: it never waits)
        self.metrics = ServerMetrics()
        self.inbox: list[Request] = []
        self.wake: anyio.Event | None = None
        self.thread: int | None = None
        self.error: BaseException | None = None
        self.crash: BaseException | None = None  # test hook: raise this in the server loop
        self.stopped = False
        self.forked = False  # this process is a fork of the one that opened the device
        self.on_stop: Any = None  # called as soon as the server stops taking requests
        self.worker: Worker | None = None
        self.running = False  # a round is on the executor thread
        self.idle: anyio.Event | None = None  # set when the running round ends (closing)

    def post(self, *reqs: Request, sync: bool = False) -> None:
        """Queue requests (event-loop thread of the server only): they start a round at
        once if none runs (and rounds never wait), else join the next one."""
        if self.error is not None or self.stopped:
            raise self._dead_error()
        for req in reqs:
            req.sync = sync
            if self.max_wait:
                req.posted = anyio.current_time()
        self.inbox.extend(reqs)
        if not (self.max_wait or self.running) and self.worker is not None:
            self._start()
        elif self.wake is not None:
            self.wake.set()

    def poke(self) -> None:
        if self.wake is not None:
            self.wake.set()

    def _dead_error(self) -> DeviceClosedError:
        if self.forked:
            return DeviceClosedError(
                "this device was opened before os.fork(), and a forked child cannot use it "
                "(its server thread and GPU state stay in the parent). Open devices in the "
                "child only, with multiprocessing's 'spawn' or 'forkserver' start method if "
                "the parent used the GPU, or use open_device('numpy') there")
        if self.error is not None:
            err = DeviceClosedError(f"the device server died ({self.error!r}); open a new device")
            err.__cause__ = self.error
            return err
        return DeviceClosedError("the device is closed; open a new one with open_device()")

    def _start(self) -> None:
        """Hand the waiting requests (``max_round`` at most) to the executor thread as one
        round (event-loop thread, no round running)."""
        assert self.worker is not None
        cap = self.max_round or len(self.inbox)
        batch, self.inbox = self.inbox[:cap], self.inbox[cap:]
        sync = any(r.sync for r in batch)
        self._forget_cancelled(batch)
        try:
            if self.crash is not None:
                raise self.crash
            self._check_unlocked()
        except Exception as exc:  # noqa: BLE001 - a bug: the server dies, telling everyone
            self.error = exc
            self._fail(batch + self.inbox, self._dead_error())
            self.poke()
            return
        self.running = True
        self.metrics.running = len(batch)
        self.worker.submit(functools.partial(self._round, batch, sync, time.perf_counter()),
                           self._finished)

    def _round(self, batch: list[Request], sync: bool, start: float
               ) -> tuple[list[Request], float, ExecutionError | None]:
        """The round itself (executor thread); a bug in it fails that round only."""
        try:
            self.executor.round(batch, sync)
        except Exception as exc:  # noqa: BLE001
            return batch, start, self.executor._error("device round failed", exc)
        return batch, start, None

    def _finished(self, result: tuple[list[Request], float, ExecutionError | None]) -> None:
        """A round ended (event-loop thread): wake its readers, start the next one."""
        batch, start, error = result
        self.running = False
        self.metrics.running = 0
        if error is None and self.executor.kept is not None:
            self.executor.kept.hand_out(batch)
        self._finish(batch, error)
        if batch:
            self.metrics.round(len(batch), time.perf_counter() - start)
        if self.stopped:
            if self.idle is not None:
                self.idle.set()
            return
        if self.inbox and not self.max_wait:
            self._start()
        elif self.inbox or self.executor.streams.long or (
                batch and self.executor.streams.drops):
            # Tensors that only the finished requests held (cancelled reads) are dropped
            # now: one more round gives their buffers back promptly.
            self.poke()

    async def serve(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        self.thread = threading.get_ident()
        self.wake = anyio.Event()
        self.worker = worker = Worker("asyncfusion-executor", loop_caller())
        if self.inbox or self.executor.streams.long:
            self.wake.set()
        task_status.started()
        try:
            while True:
                await self.wake.wait()
                self.wake = anyio.Event()
                if self.crash is not None:
                    raise self.crash
                if self.error is not None:
                    raise self.error
                if self.running:
                    continue  # its end starts the next round, or wakes this loop again
                await self._gather()
                if not self.running:
                    self._start()
        except Exception as exc:  # noqa: BLE001 - the server died: tell every waiter now
            self.error = exc
        finally:
            self.stopped = True
            if self.on_stop is not None:
                self.on_stop()
            self._fail(self.inbox, self._dead_error())
            with anyio.CancelScope(shield=True):
                if self.running:
                    self.idle = anyio.Event()
                    await self.idle.wait()
            await worker.run(self.executor.close)
            worker.stop()

    async def _gather(self) -> None:
        """``max_wait``: let a round of reads from fewer than ``max_batch`` tasks wait for
        more (so that they share launches), until its oldest read has waited ``max_wait``
        seconds. The wait is on the event loop (the wake event, under a deadline), so it
        blocks nothing and is cancelled with the server; a read cancelled meanwhile is
        withdrawn by the round as usual."""
        if not self.max_wait or not self.inbox:
            return
        with anyio.CancelScope(deadline=self.inbox[0].posted + self.max_wait):
            while self._short():
                self.wake = wake = anyio.Event()
                await wake.wait()

    def _short(self) -> bool:
        """Whether the waiting requests make less than a full batch (and a full round);
        a sync or an ``empty_cache`` never waits; cancelled reads do not count."""
        inbox = self.inbox
        if (self.max_round is not None and len(inbox) >= self.max_round) or any(
                r.sync or r.empty_cache for r in inbox):
            return False
        live = {r.stream for r in inbox if not r.cancelled}
        return bool(live) and (self.max_batch is None or len(live) < self.max_batch)

    @staticmethod
    def _forget_cancelled(batch: list[Request]) -> None:
        """A cancelled request's reader is gone: let its tensor's drop count now. (A
        method, not a loop in ``serve``: a loop variable there would keep the last
        request, and its tensor, alive until the next round.)

        A cancelled task's exception often sits in a reference cycle with its frames
        (anyio's task groups make one), which keeps the tensors it named alive, and their
        queued work scheduled, until the cycle collector happens to run. A young-generation
        collection (sub-millisecond) frees them now, so the round withdraws that work."""
        cancelled = False
        for r in batch:
            if r.cancelled:
                r.tensor = None
                cancelled = True
        if cancelled:
            gc.collect(1)

    def _check_unlocked(self) -> None:
        """Debug mode: the server must never await while it holds the stream lock."""
        if _debug.DEBUG and self.executor.streams.lock._is_owned():  # type: ignore[attr-defined]
            raise AssertionError("the device server is about to await while holding its lock")

    def _finish(self, batch: list[Request], error: ExecutionError | None = None) -> None:
        """Wake the round's readers (``error``: the round itself failed)."""
        for r in batch:
            if error is not None:
                r.error = r.error or error
            r.done.set()

    def _fail(self, reqs: list[Request], err: BaseException) -> None:
        for r in reqs:
            if not r.done.is_set():
                r.error = r.error or err
                r.done.set()
        self.inbox = []

    async def request_many(self, reqs: list[Request]) -> list[np.ndarray | None]:
        """Post every read of ``reqs`` at once (so one round serves them all) and wait for
        all of them; raises the first failure in ``reqs``' order."""
        self.post(*reqs)
        try:
            for req in reqs:
                await req.done.wait()
        except BaseException:
            for req in reqs:
                req.cancelled = True
            raise
        for req in reqs:
            if req.kept:
                _debug.warn_kept(req.kept)
        for req in reqs:
            if req.error is not None:
                error = req.error
                for r in reqs:
                    r.error = None
                try:
                    raise error
                finally:
                    del error
        return [req.data for req in reqs]

    async def request(self, req: Request, sync: bool = False) -> np.ndarray | None:
        """Post ``req`` and wait for it (server's event loop only); returns read data.

        A reader cancelled while it waits only marks its request: the executor thread
        gives its staging buffer back, whenever the round reaches it."""
        self.post(req, sync=sync)
        try:
            await req.done.wait()
        except BaseException:
            req.cancelled = True
            raise
        if req.kept:
            _debug.warn_kept(req.kept)
        if req.error is not None:
            # No reference cycle: the error's traceback holds this frame, so neither the
            # request nor a local may hold the error (the cycle would keep the request's
            # tensor alive until the cycle collector happens to run).
            error, req.error = req.error, None
            try:
                raise error
            finally:
                del error
        return req.data
