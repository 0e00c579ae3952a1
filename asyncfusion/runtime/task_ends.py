"""Hearing that a task ended, so that the work it left unread is dropped.

A task (a request handler, say) that registers work, reads nothing and ends leaves a
queue whose uploads hold host data. Rounds reclaim the streams of ended tasks when the
streams are crowded (``Streams.reclaim``: each stream's task asked whether it is done),
but crowded means twice the streams the last reclaim left, so without more the queues of
tasks that were alive at the last reclaim and ended after it would wait for the number
of streams to double. So the device hears of each task's end:

* under asyncio, a done callback on the task of each new stream (added on the event-loop
  thread after each round, :meth:`TaskEnds.watch_new`);
* under trio, a trio instrument's ``task_exited`` hook.

Either notes the stream in ``Streams.ended``, which the next round prunes (as it prunes a
cancelled read's stream), and, where the task left work unread (its queue, or the newest
registration: a task that ends right after registering), asks for that round now, or at
the end of the round that runs. A task that read its work asks for nothing.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import weakref
from typing import Any, Protocol

from ..engine.streams import Streams

__all__ = ["TaskEnds"]


class _Server(Protocol):
    """What the hook reads and asks of the device's server."""

    running: bool  # a round runs
    stopped: bool
    ended_unread: bool  # set: the running round's end asks for one more

    def poke(self) -> None: ...


class TaskEnds:
    """The end-of-task hook of one device's server (event-loop thread)."""

    def __init__(self, server: _Server, streams: Streams, token: Any = None) -> None:
        self.server = server
        self.streams = streams
        self.token = token  # trio: the run's TrioToken (run_sync_soon works anywhere)
        self.asked = False  # trio: a poke is on its way

    @classmethod
    def install(cls, server: _Server, streams: Streams) -> TaskEnds:
        """The hook for the running loop: a trio instrument under trio, else done
        callbacks on asyncio tasks."""
        trio = sys.modules.get("trio")
        if trio is not None:
            with contextlib.suppress(RuntimeError):  # RuntimeError: not in a trio run
                trio.lowlevel.current_task()
                hook = cls(server, streams, trio.lowlevel.current_trio_token())
                trio.lowlevel.add_instrument(hook)
                return hook
        return cls(server, streams)

    def remove(self) -> None:
        if self.token is not None:
            with contextlib.suppress(KeyError, RuntimeError):
                sys.modules["trio"].lowlevel.remove_instrument(self)

    def watch_new(self) -> None:
        """asyncio: a done callback on the task of each stream made since the last call
        (the callback holds this hook weakly: a task that outlives the device keeps
        nothing of it); a task already done or gone has ended."""
        fresh = self.streams.fresh
        if not fresh:
            return
        done = functools.partial(_done, weakref.ref(self))
        while fresh:
            key, ref = fresh.popleft()
            task = ref()
            if task is None or task.done():
                self.ended(key)
            else:
                task.add_done_callback(done)

    def task_exited(self, task: object) -> None:
        """trio's instrument hook, and asyncio's done callback (through ``_done``).
        (Under trio this runs inside the scheduler: no Trio call but run_sync_soon.)"""
        self.ended(("task", id(task)))

    def ended(self, key: object) -> None:
        """Note the stream ``key`` of a task that ended while the device holds work, and
        ask for a round where the task left work unread."""
        streams = self.streams
        if not streams.holding():
            return
        streams.ended.append(key)
        try:
            unread = key in streams.queues_now() or streams.log[-1][0] == key
        except IndexError:  # the executor took the log in meanwhile
            unread = False
        if not unread:
            return
        server = self.server
        if server.running or server.stopped:
            server.ended_unread = True  # the round's end asks for one more
        elif self.token is None:
            server.poke()
        elif not self.asked:  # (a poke, not ``wanted``: that may be left from a poke
            # whose round a reader started before the server task ran)
            self.asked = True
            self.token.run_sync_soon(self._poke)

    def _poke(self) -> None:
        self.asked = False
        if not self.server.stopped:
            self.server.poke()


def _done(hook: weakref.ref[TaskEnds], task: object) -> None:
    ends = hook()
    if ends is not None:
        ends.task_exited(task)
