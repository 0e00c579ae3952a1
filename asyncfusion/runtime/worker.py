"""The executor thread: one persistent thread per device that runs jobs in order and
hands each result back to the event loop with one thread-safe call.

Nothing that blocks (submission, buffer maps, compilation) runs on the event loop: it
runs here. A hop there and back costs one queue put and one ``call_soon_threadsafe``
(trio: the token's ``run_sync_soon``), never an ``anyio.to_thread`` round.
"""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

__all__ = ["Worker", "loop_caller"]

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

    def __init__(self, name: str, call: _Caller, idle: Callable[[], None] | None = None
                 ) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.call = call  # the event loop's thread-safe "call this soon"
        self.idle = idle  # run after a job when no other waits (must not raise)
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
        if self.idle is not None and self.jobs.empty():
            time.sleep(0)  # the GIL to the loop thread first, which the result just woke:
            self.idle()    # its readers wake before the idle work, not after
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


