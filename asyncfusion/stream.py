"""Streams: one ordered op queue per asyncio/trio task (or per thread outside any task).

Registration is synchronous and takes a few microseconds. A finalizer (``Tensor.__del__``)
may run on any thread at any moment, even in the middle of a registration, so it only
appends the tensor id to a lock-free deque; drops are applied under the lock when the
executor takes work (off the registering thread: a dropped tensor can never be used by a
later op, so applying its drop late changes nothing).

A drop becomes, in order of preference:
1. the ``ReadWrite`` status of the tensor's last queued use, when every untaken use is in
   one queue (this is what lets fusion skip writing dead intermediates);
2. a :class:`DropOp` in the queue of its still-pending producer (so a block whose outputs
   are all dropped launches nothing);
3. a deferred free, once its last untaken use has been taken (uses spread over streams);
4. an immediate free at the executor's next step (nothing pending refers to it).
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
from collections.abc import Hashable

from .ir import DropOp, OperationIr, TensorIr

__all__ = ["StreamId", "StreamQueue", "Streams"]


class StreamId:
    """Identifies the stream of the caller: the current task, or the current thread."""

    __slots__ = ()

    @staticmethod
    def current() -> Hashable:
        loop = asyncio._get_running_loop()
        if loop is not None:
            task = asyncio.current_task(loop)
            if task is not None:
                return ("task", id(task))
        trio = sys.modules.get("trio")
        if trio is not None:
            try:
                return ("task", id(trio.lowlevel.current_task()))
            except RuntimeError:
                pass
        return ("thread", threading.get_ident())


class StreamQueue:
    """Pending ops of one stream. ``base`` is the sequence number of ``ops[0]``."""

    __slots__ = ("key", "ops", "base", "uses", "last")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self.ops: list[OperationIr] = []
        self.base = 0
        self.uses: dict[int, int] = {}  # tensor id -> untaken reads in this queue
        self.last: dict[int, int] = {}  # tensor id -> sequence number of its latest read

    def __len__(self) -> int:
        return len(self.ops)


class Streams:
    """All streams of one device, and the bookkeeping that turns drops into liveness."""

    def __init__(self, flush_threshold: int = 512) -> None:
        self.lock = threading.RLock()  # RLock: debug mode asks whether it is held
        self.queues: dict[Hashable, StreamQueue] = {}
        # Tensor.__del__ appends here directly: deque.append is atomic, re-entrant and
        # never blocks, so it is safe on any thread, at any moment.
        self.drops: collections.deque[int] = collections.deque()
        self.pending_uses: dict[int, int] = {}
        self.use_queue: dict[int, StreamQueue] = {}
        self.producer: dict[int, tuple[StreamQueue, int, TensorIr]] = {}
        self.freeable: list[int] = []
        self.deferred: set[int] = set()
        self.flush_threshold = flush_threshold

    # -- registration (any thread) -------------------------------------------------------
    def register(self, key: Hashable, op: OperationIr, inputs: tuple[int, ...] | list[int],
                 out: TensorIr) -> int:
        """Queue ``op`` (reading ``inputs``, producing ``out``) on stream ``key``; returns
        the queue's length."""
        with self.lock:
            q = self.queues.get(key)
            if q is None:
                q = self.queues[key] = StreamQueue(key)
            seq = q.base + len(q.ops)
            q.ops.append(op)
            pending, uses, last, use_queue = self.pending_uses, q.uses, q.last, self.use_queue
            for tid in inputs:
                pending[tid] = pending.get(tid, 0) + 1
                uses[tid] = uses.get(tid, 0) + 1
                last[tid] = seq
                use_queue[tid] = q
            self.producer[out.id] = (q, seq, out)
            return len(q.ops)

    def _apply_drops(self) -> None:
        drops = self.drops
        while drops:
            tid = drops.popleft()
            n = self.pending_uses.get(tid, 0)
            if n:
                q = self.use_queue[tid]
                if q.uses.get(tid, 0) == n:
                    i = q.last[tid] - q.base
                    q.ops[i] = q.ops[i].with_last_use(tid)
                else:
                    self.deferred.add(tid)
                continue
            prod = self.producer.get(tid)
            if prod is not None:
                prod[0].ops.append(DropOp(prod[2]))
            else:
                self.freeable.append(tid)

    # -- the executor's side -------------------------------------------------------------
    def take(self, key: Hashable, upto: int | None = None) -> tuple[list[OperationIr], list[int]]:
        """Remove the first ``upto`` ops (all by default) of a stream.

        Returns the ops and the ids that become free once they ran (deferred drops whose
        last untaken use was among them).
        """
        with self.lock:
            if self.drops:
                self._apply_drops()
            q = self.queues.get(key)
            if q is None or not q.ops:
                return [], []
            k = len(q.ops) if upto is None else max(0, min(upto - q.base, len(q.ops)))
            ops = q.ops[:k]
            del q.ops[:k]
            q.base += k
            frees: list[int] = []
            pending, uses = self.pending_uses, q.uses
            for op in ops:
                for t in op.outputs():
                    if self.producer.get(t.id, (None,))[0] is q:
                        del self.producer[t.id]
                if type(op) is DropOp:
                    continue
                for t in op.inputs():
                    tid = t.id
                    left = pending[tid] - 1
                    if left:
                        pending[tid] = left
                    else:
                        del pending[tid]
                        self.use_queue.pop(tid, None)
                        if tid in self.deferred:
                            self.deferred.discard(tid)
                            frees.append(tid)
                    u = uses[tid] - 1
                    if u:
                        uses[tid] = u
                    else:
                        del uses[tid]
                        q.last.pop(tid, None)
            if not q.ops:
                del self.queues[key]
            return ops, frees

    def take_freeable(self) -> list[int]:
        with self.lock:
            if self.drops:
                self._apply_drops()
            out, self.freeable = self.freeable, []
            return out

    def pending_producer(self, tid: int) -> tuple[Hashable, int] | None:
        """(stream, sequence + 1) of the untaken op that produces ``tid``, if any."""
        prod = self.producer.get(tid)
        if prod is None:
            return None
        q, seq, _ = prod
        return q.key, seq + 1

    def keys(self) -> list[Hashable]:
        with self.lock:
            if self.drops:
                self._apply_drops()
            return list(self.queues)

    def long_queues(self) -> list[Hashable]:
        with self.lock:
            return [k for k, q in self.queues.items() if len(q.ops) >= self.flush_threshold]
