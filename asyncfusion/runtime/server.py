"""The device server: the async half of a device, on the event loop that opened it.

Requests — reads, syncs, ``empty_cache`` — from any number of tasks are posted here. A
read posted while no round runs starts one at once, from the reader's own call; reads
posted while a round runs form the next one, which the finished round's callback starts.
Each round runs on the device's executor thread (``worker.py``), which hands it back with
one thread-safe call; that call wakes ``WAKE_SLICE`` of the round's readers, and the
server task wakes the rest a slice per loop iteration. The server task is also there for
what no reader starts: long queues and drops to run (``poke``), rounds that wait for more
readers (``max_wait``), and closing. No lock is held across any await, and nothing that
blocks runs on the event loop; a cancelled reader only marks its request, and the
executor thread gives its staging buffer back. If the server itself dies, every waiter
gets the error at once.
"""

from __future__ import annotations

import collections
import functools
import gc
import sys
import threading
import time
from collections.abc import Callable, Hashable

import anyio
import numpy as np
from anyio.abc import TaskStatus

from .. import _debug
from ..engine.executor import Executor, Request
from .._core.errors import DeviceClosedError, ExecutionError
from .metrics import ServerMetrics
from .task_ends import TaskEnds
from .worker import Worker, loop_caller

__all__ = ["Server", "GIL_SWITCH_S", "WAKE_SLICE"]

# The executor thread's rounds are Python: while one runs, the event loop waits for the
# GIL, up to the interpreter's switch interval (5 ms by default). A device lowers it to
# this, so a round never holds the loop for longer (sys.setswitchinterval; never raised).
# On the H200 host, beside 100 readers looping: 0.5 ms gave the loop's lag a p99 of
# 1.8 ms (WAKE_SLICE 4), 0.2 ms gave 1.3 ms (WAKE_SLICE 2), and more chains per second.
GIL_SWITCH_S = 0.0002
# Readers a finished round wakes per event-loop iteration (see Server._finish): each runs
# its task's next step in the next iteration, 40-60 µs of recording on a server's host, so
# the slice bounds an iteration. On the H200 host, the loop's lag p99 beside 100 looping
# readers was 4.5 ms with 16, 1.8 ms with 4, 1.3 ms with 2; 1000 one-read tasks took ~8%
# longer on this 2-core box with 2 than with 16.
WAKE_SLICE = 2


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
        self.ended_unread = False  # a task ended with work unread during a round (TaskEnds)
        self.task_ends: TaskEnds | None = None
        self.thread: int | None = None
        self.error: BaseException | None = None
        self.crash: BaseException | None = None  # test hook: raise this in the server loop
        self.stopped = False
        self.forked = False  # this process is a fork of the one that opened the device
        # called as soon as the server stops taking requests
        self.on_stop: Callable[[], None] | None = None
        self.worker: Worker | None = None
        self.running = False  # a round is on the executor thread
        self.idle: anyio.Event | None = None  # set when the running round ends (closing)
        self.waking: collections.deque[list[Request]] = collections.deque()  # _finish's rest
        self.wanted = False  # a round was asked for (poke) since the server task last ran one

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

    def advance(self, key: Hashable) -> None:
        """Run stream ``key``'s ops up to its latest mark on the executor thread now, in
        order with rounds, with no request and no reply (event-loop thread of the server
        only): see :meth:`Executor.advance`."""
        if self.worker is not None and self.error is None and not self.stopped:
            self.worker.submit(functools.partial(self._advance, key), self._advanced)

    def _advance(self, key: Hashable) -> Exception | None:
        try:
            self.executor.advance(key)
        except Exception as exc:  # noqa: BLE001 - a bug: told on the loop, as _start's are
            return exc
        return None

    def _advanced(self, error: Exception | None) -> None:
        if error is not None and self.error is None:
            self.error = error
            self._fail(self.inbox, self._dead_error())
            self.poke()

    def poke(self) -> None:
        """Ask the server task for a round (long queues, drops, a stop)."""
        self.wanted = True
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
        for waiting in self.waking:  # readers gone before their turn to be woken: their
            for r in waiting:           # tensors' drops count in this round
                if r.cancelled:
                    r.tensor = r.data = None
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
        self.ended_unread = False  # the round takes in every ended stream noted so far
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
        if self.task_ends is not None:
            self.task_ends.watch_new()
        if batch:
            self.metrics.round(len(batch), time.perf_counter() - start)
        if self.stopped:
            if self.idle is not None:
                self.idle.set()
            return
        if self.inbox and not self.max_wait:
            self._start()
        elif self.inbox or self.executor.streams.long or self.ended_unread or (
                batch and self.executor.streams.drops):
            # Tensors that only the finished requests held (cancelled reads) are dropped
            # now: one more round gives their buffers back promptly (so is the work of
            # tasks that ended unread during the round: TaskEnds).
            self.poke()

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self.thread = threading.get_ident()
        if sys.getswitchinterval() > GIL_SWITCH_S:
            sys.setswitchinterval(GIL_SWITCH_S)
        self.wake = anyio.Event()
        self.worker = worker = Worker("asyncfusion-executor", loop_caller(),
                                      self.executor.idle)
        self.task_ends = task_ends = TaskEnds.install(self, self.executor.streams)
        if self.inbox or self.executor.streams.long:
            self.poke()
        task_status.started()
        try:
            while True:
                await self.wake.wait()
                self.wake = anyio.Event()
                if self.crash is not None:
                    raise self.crash
                if self.error is not None:
                    raise self.error
                await self._wake_the_rest()
                if self.running:
                    continue  # its end starts the next round, or wakes this loop again
                if not (self.wanted or self.inbox):
                    continue  # woken only to wake readers
                self.wanted = False
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
            while self.waking:  # their results are in: hand them over now
                for r in self.waking.popleft():
                    r.done.set()
            task_ends.remove()
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
        """A cancelled request's reader is gone: let its tensor's drop count now (one
        cancelled once the round is formed, the executor lets go of as the round starts).
        (A method, not a loop in ``serve``: a loop variable there would keep the last
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
        """Wake the round's readers (``error``: the round itself failed): ``WAKE_SLICE``
        of them now, the rest a slice per loop iteration from the server task. A woken
        reader runs its task's next step (often recording its next program) in the
        iteration that follows, so a round of hundreds of readers woken at once would
        hold the loop for all of them, and every timer and socket would wait that long."""
        if error is not None:
            for r in batch:
                r.error = r.error or error
        for r in batch[:WAKE_SLICE]:
            r.done.set()
        if len(batch) > WAKE_SLICE:
            self.waking.append(batch[WAKE_SLICE:])
            if self.wake is not None:
                self.wake.set()

    async def _wake_the_rest(self) -> None:
        """Wake the readers ``_finish`` left, a slice per loop iteration (server task)."""
        while self.waking:
            await anyio.sleep(0)  # the readers woken last take their turn first
            rest = self.waking.popleft()
            for r in rest[:WAKE_SLICE]:
                r.done.set()
            if len(rest) > WAKE_SLICE:
                self.waking.appendleft(rest[WAKE_SLICE:])

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
