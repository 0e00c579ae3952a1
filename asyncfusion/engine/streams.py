"""Streams: one ordered op queue per asyncio/trio task (or per thread outside any task).

Registration is synchronous and lock-free: it appends the op to one log (an atomic
deque append). A finalizer (``Tensor.__del__``) may run on any thread at any moment, even
in the middle of a registration, so it only appends the tensor id to a second deque. The
executor takes both in, in order, under the lock, whenever it looks at the streams: the
logged ops into their streams' queues with their bookkeeping, then the drops logged
before it started (a dropped tensor can never be used by a later op, so applying its drop
late changes nothing).

A drop becomes, in order of preference:
1. the ``ReadWrite`` status of the tensor's last queued use, when every untaken use is in
   one queue (this is what lets fusion skip writing dead intermediates);
2. a :class:`DropOp` in the queue of its still-pending producer (so a block whose outputs
   are all dropped launches nothing);
3. a deferred free, once its last untaken use has been taken (uses spread over streams);
4. an immediate free at the executor's next step (nothing pending refers to it).

A stream whose task (or thread) has ended is *reclaimed* (:meth:`Streams.reclaim`, run
by the executor when many streams pile up, and :meth:`Streams.reclaim_ended` for the
streams whose tasks were heard to end, ``runtime/task_ends.py``): its dead work — ops
whose outputs nobody holds and nothing pending reads — is removed without running, so
the host data of its uploads is freed; ops that produce a tensor someone still holds stay
queued, and a read of that tensor runs them as before. The stream of a cancelled read is
*withdrawn* the same way (:meth:`Streams.withdraw`), whether or not its task has ended.

Each queue keeps its liveness as its ops arrive: the tensors it makes, those it reads
from outside (made before it), and those its ops free (last uses and drops). A round that
takes a queue whole hands that summary on (:class:`Segment`), so neither taking the ops
nor deciding whether they may wait for a batch walks them again.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from ..ir import DropOp, OperationIr, TensorIr, TensorStatus

__all__ = ["Segment", "StreamId", "StreamQueue", "Streams", "current_stream"]

_RECLAIM_AT = 64  # reclaim ended streams once this many queues exist (then twice the rest)
_NO_PRODUCER = (None,)


def _trio_task() -> object:
    """The current trio task, or None outside trio.

    ``trio`` may sit in ``sys.modules`` half imported (another thread is importing it);
    then this thread cannot be running trio, and its missing attributes mean "no".
    """
    trio = sys.modules.get("trio")
    if trio is None:
        return None
    try:
        return trio.lowlevel.current_task()
    except (RuntimeError, AttributeError):
        return None


_running_loop = asyncio._get_running_loop
# Python 3.11's asyncio.current_task is a Python function over this table (loop -> task);
# from 3.12 on it is C (and the table may no longer be what it reads).
_current_task: Callable[[asyncio.AbstractEventLoop], object] = (getattr(asyncio.tasks, "_current_tasks").get
                      if sys.version_info < (3, 12) else asyncio.current_task)


def current_stream() -> tuple[Hashable, object]:
    """(stream key, owner) of the caller: its asyncio or trio task, else its thread."""
    loop = _running_loop()
    if loop is not None:
        task = _current_task(loop)
        if task is not None:
            return ("task", id(task)), task
    task = _trio_task()
    if task is not None:
        return ("task", id(task)), task
    return ("thread", threading.get_ident()), threading.current_thread()


def _ended(owner: weakref.ref[object]) -> bool:
    """Whether the task or thread behind a stream has finished (or is gone)."""
    o = owner()
    if o is None:
        return True
    if isinstance(o, threading.Thread):
        return not o.is_alive()
    done = getattr(o, "done", None)
    if done is not None:  # asyncio
        return bool(done())
    return getattr(getattr(o, "coro", None), "cr_frame", True) is None  # trio


class StreamId:
    """Identifies the stream of the caller: the current task, or the current thread."""

    __slots__ = ()

    @staticmethod
    def current() -> Hashable:
        return current_stream()[0]


# A registration as the log holds it: (stream, owner, op, input ids, output); the op and
# output are None in a mark (Streams.mark).
_Entry = tuple[Hashable, object, "OperationIr | None", "tuple[int, ...] | list[int]",
               "TensorIr | None"]


class StreamQueue:
    """Pending ops of one stream. ``base`` is the sequence number of ``ops[0]``;
    ``owner`` is a weak reference to the task or thread that registers on it."""

    __slots__ = ("key", "ops", "base", "uses", "last", "owner", "pruned", "made", "reads",
                 "releases", "whole", "mark")

    def __init__(self, key: Hashable, owner: object) -> None:
        self.key = key
        self.ops: list[OperationIr] = []
        self.base = 0
        self.uses: dict[int, int] = {}  # tensor id -> untaken reads in this queue
        self.last: dict[int, int] = {}  # tensor id -> sequence number of its latest read
        self.owner: weakref.ref[object] = weakref.ref(owner)
        self.pruned = -1  # Streams.epoch when dead work was last removed
        # the liveness of ``ops``, kept as they arrive; ``whole`` while it holds (no op was
        # taken or pruned from the queue since it was made)
        self.made: set[int] = set()  # tensors its ops make
        self.reads: set[int] = set()  # tensors its ops read that were made before them
        self.releases: set[int] = set()  # tensors its ops free (last uses, drops)
        self.whole = True
        self.mark = 0  # sequence number of the latest op begun apart (Streams.mark)

    def mark_last_use(self, i: int, tid: int) -> None:
        """Op ``i`` is the last use of ``tid``: it may free or reuse its storage."""
        self.ops[i] = self.ops[i].with_last_use(tid)
        self.releases.add(tid)

    def drop(self, t: TensorIr) -> None:
        """``t``, made by an op of this queue, is dropped before that op was taken."""
        self.ops.append(DropOp(t))
        self.releases.add(t.id)

    def __len__(self) -> int:
        return len(self.ops)


@dataclass(slots=True)
class Segment:
    """Ops taken from a stream, the ids free once they ran (deferred drops whose last
    untaken use was among them), and — where the queue was taken whole — its liveness:
    the tensors the ops read that were made before them, and those they free."""

    ops: list[OperationIr]
    frees: list[int]
    reads: set[int] | None = None
    releases: set[int] | None = None



class Streams:
    """All streams of one device, and the bookkeeping that turns drops into liveness."""

    def __init__(self, flush_threshold: int = 512) -> None:
        self.lock = threading.RLock()  # RLock: debug mode asks whether it is held
        self._queues: dict[Hashable, StreamQueue] = {}
        # registrations; an entry of no op marks where large work apart began (mark())
        self.log: collections.deque[_Entry] = collections.deque()
        # Tensor.__del__ appends here directly: deque.append is atomic, re-entrant and
        # never blocks, so it is safe on any thread, at any moment.
        self.drops: collections.deque[int] = collections.deque()
        self.pending_uses: dict[int, int] = {}
        self.use_queue: dict[int, StreamQueue] = {}
        self.producer: dict[int, tuple[StreamQueue, int, TensorIr]] = {}
        self.freeable: list[int] = []
        self.deferred: set[int] = set()
        self.dropped: set[int] = set()  # dropped while their producer is still queued
        self.epoch = 0  # counts applications of drops (a reclaimed queue may shrink again)
        self.flush_threshold = flush_threshold
        self.long: set[Hashable] = set()  # queues of flush_threshold ops or more
        # streams whose tasks were seen to end (runtime/task_ends.py appends, any moment):
        # the next round removes their dead work (reclaim_ended)
        self.ended: collections.deque[Hashable] = collections.deque()
        # (key, asyncio task, weakly) of streams made since the server last looked
        # (TaskEnds.watch_new); weakly: a task that ended holds its frames, and so the
        # tensors they name, through its exception
        self.fresh: collections.deque[tuple[Hashable, weakref.ref[asyncio.Task[Any]]]] = (
            collections.deque())
        self.reclaim_at = _RECLAIM_AT

    # -- registration (any thread) -------------------------------------------------------
    def register(self, key: Hashable, op: OperationIr, inputs: tuple[int, ...] | list[int],
                 out: TensorIr, owner: object = None) -> int:
        """Queue ``op`` (reading ``inputs``, producing ``out``) on stream ``key``, whose
        task or thread is ``owner``; returns how many ops wait to be taken in.

        Registration only appends to one log (deque.append is atomic: no lock): the
        bookkeeping happens on the executor's side, in order, when it next looks."""
        log = self.log
        log.append((key, owner if owner is not None else current_stream()[1], op, inputs,
                    out))
        return len(log)

    def mark(self, key: Hashable, owner: object) -> None:
        """Note that stream ``key``'s next op begins work apart from what it queued so
        far: :meth:`marked` then names the ops before it (any thread, like ``register``)."""
        self.log.append((key, owner, None, (), None))

    def marked(self, key: Hashable) -> int | None:
        """The sequence number that ends stream ``key``'s ops before its latest mark, if
        any of them is still queued."""
        with self.lock:
            self._absorb()
            q = self._queues.get(key)
            return q.mark if q is not None and q.mark > q.base else None

    def _absorb(self) -> None:
        """Take in the logged registrations, then the drops that came before them (lock
        held). A drop is logged after every use of its tensor (a dropped tensor has no
        reference left to use), so the drops counted first never outrun their uses."""
        drops = len(self.drops)
        log = self.log
        if log:
            self._enqueue(log)
        if drops:
            self._apply_drops(drops)

    def _enqueue(self, log: collections.deque[_Entry]) -> None:
        """Every logged registration into its stream's queue, with the queue's liveness
        and the device's use counts (lock held; one loop, the state it touches at hand)."""
        queues, pending, use_queue, producer = (self._queues, self.pending_uses,
                                                self.use_queue, self.producer)
        threshold = self.flush_threshold
        q: StreamQueue | None = None
        qkey: Hashable = None
        pop = log.popleft
        while log:
            key, owner, op, inputs, out = pop()
            if op is None:  # a mark: the ops queued so far end before work apart
                marked = queues.get(key)
                if marked is not None:
                    marked.mark = marked.base + len(marked.ops)
                continue
            if q is None or key != qkey:
                qkey = key
                q = queues.get(key)
                if q is None:
                    q = queues[key] = StreamQueue(key, owner)
                    if isinstance(owner, asyncio.Task):
                        self.fresh.append((key, weakref.ref(owner)))
            ops = q.ops
            seq = q.base + len(ops)
            assert out is not None
            ops.append(op)
            uses, last, made = q.uses, q.last, q.made
            for tid in inputs:
                pending[tid] = pending.get(tid, 0) + 1
                uses[tid] = uses.get(tid, 0) + 1
                last[tid] = seq
                use_queue[tid] = q
                if tid not in made:
                    q.reads.add(tid)
            outs = op.outputs()
            if len(outs) == 1:
                made.add(out.id)
                producer[out.id] = (q, seq, out)
            else:  # an op of several outputs (af.custom_kernel's): each is produced here
                for t in outs:
                    made.add(t.id)
                    producer[t.id] = (q, seq, t)
            if len(ops) == threshold:
                self.long.add(key)

    @property
    def queues(self) -> dict[Hashable, StreamQueue]:
        """The streams' queues, every registration so far taken in."""
        with self.lock:
            self._absorb()
            return self._queues

    def queued(self, tid: int) -> bool:
        """Whether an untaken op produces ``tid``."""
        with self.lock:
            self._absorb()
            return tid in self.producer

    def crowded(self) -> bool:
        """Enough streams exist that ended ones should be reclaimed now."""
        return len(self.queues) >= self.reclaim_at

    def queues_now(self) -> dict[Hashable, StreamQueue]:
        """The queues as they are, registrations not yet taken in (any thread, no lock:
        for a membership test only)."""
        return self._queues

    def holding(self) -> bool:
        """Whether any stream holds ops or registrations wait (any thread, no lock)."""
        return bool(self._queues) or bool(self.log)

    def _apply_drops(self, count: int) -> None:
        drops = self.drops
        self.epoch += 1
        producer, pending = self.producer, self.pending_uses
        for _ in range(count):
            tid = drops.popleft()
            prod = producer.get(tid)
            if prod is not None:
                self.dropped.add(tid)
            n = pending.get(tid, 0)
            if n:
                q = self._sole_user(tid, n)
                if q is not None:
                    q.mark_last_use(q.last[tid] - q.base, tid)
                else:
                    self.deferred.add(tid)
                continue
            if prod is not None:
                prod[0].drop(prod[2])
            else:
                self.freeable.append(tid)

    def _sole_user(self, tid: int, n: int) -> StreamQueue | None:
        """The queue that holds all ``n`` untaken reads of ``tid``, if one does (lock held).
        ``use_queue`` names the queue of its latest read, which may since have been taken
        whole (its queue object gone, its counts kept): that one holds none of them."""
        q = self.use_queue.get(tid)
        if q is None or self._queues.get(q.key) is not q or q.uses.get(tid, 0) != n:
            return None
        return q

    # -- the executor's side -------------------------------------------------------------
    def take(self, key: Hashable, upto: int | None = None) -> tuple[list[OperationIr], list[int]]:
        """Remove the first ``upto`` ops (all by default) of a stream: (ops, the ids free
        once they ran); see :meth:`take_segment`."""
        seg = self.take_segment(key, upto)
        return seg.ops, seg.frees

    def take_segment(self, key: Hashable, upto: int | None = None) -> Segment:
        """Remove the first ``upto`` ops (all by default) of a stream, as a
        :class:`Segment` (with the queue's liveness where it is taken whole)."""
        with self.lock:
            self._absorb()
            q = self._queues.get(key)
            if q is None or not q.ops:
                return Segment([], [])
            k = len(q.ops) if upto is None else max(0, min(upto - q.base, len(q.ops)))
            if k == len(q.ops) and q.whole:
                return self._take_whole(q)
            ops = q.ops[:k]
            del q.ops[:k]
            q.base += k
            q.whole = False
            frees: list[int] = []
            uses, last, producer, dropped = q.uses, q.last, self.producer, self.dropped
            for op in ops:
                for t in op.outputs():
                    tid = t.id
                    if producer.get(tid, _NO_PRODUCER)[0] is q:
                        del producer[tid]
                        dropped.discard(tid)
                if type(op) is DropOp:
                    continue
                for t in op.inputs():
                    tid = t.id
                    self._taken_reads(tid, 1, frees)
                    u = uses[tid] - 1
                    if u:
                        uses[tid] = u
                    else:
                        del uses[tid]
                        last.pop(tid, None)
            if not q.ops:
                del self._queues[key]
            if len(q.ops) < self.flush_threshold:
                self.long.discard(key)
            return Segment(ops, frees)

    def _take_whole(self, q: StreamQueue) -> Segment:
        """Every op of ``q``, whose liveness is whole: the bookkeeping is undone per
        tensor, not per use (lock held)."""
        frees: list[int] = []
        producer, dropped = self.producer, self.dropped
        for tid in q.made:
            if producer.get(tid, _NO_PRODUCER)[0] is q:
                del producer[tid]
                dropped.discard(tid)
        for tid, n in q.uses.items():
            self._taken_reads(tid, n, frees)
        del self._queues[q.key]
        self.long.discard(q.key)
        return Segment(q.ops, frees, q.reads, q.releases)

    def _taken_reads(self, tid: int, n: int, frees: list[int]) -> None:
        """``n`` untaken reads of ``tid`` were taken; once none is left, a deferred drop
        of it is due: ``tid`` goes to ``frees`` (lock held)."""
        pending = self.pending_uses
        left = pending[tid] - n
        if left:
            pending[tid] = left
            return
        del pending[tid]
        self.use_queue.pop(tid, None)
        if tid in self.deferred:
            self.deferred.discard(tid)
            frees.append(tid)

    def take_freeable(self) -> list[int]:
        with self.lock:
            self._absorb()
            out, self.freeable = self.freeable, []
            return out

    def pending_producer(self, tid: int) -> tuple[Hashable, int] | None:
        """(stream, sequence + 1) of the untaken op that produces ``tid``, if any."""
        if self.log:
            with self.lock:
                self._absorb()
        prod = self.producer.get(tid)
        if prod is None:
            return None
        q, seq, _ = prod
        return q.key, seq + 1

    def keys(self) -> list[Hashable]:
        with self.lock:
            self._absorb()
            return list(self._queues)

    def long_queues(self) -> list[Hashable]:
        with self.lock:
            return list(self.long)

    # -- reclaiming the streams of ended tasks ----------------------------------------------
    def reclaim(self) -> int:
        """Remove the dead work of every stream whose task or thread has ended; returns
        the number of queued ops removed. Executor side."""
        with self.lock:
            self._absorb()
            removed = 0
            for q in list(self._queues.values()):
                if q.pruned != self.epoch and _ended(q.owner):
                    removed += self._prune(q)
            self.reclaim_at = max(_RECLAIM_AT, 2 * len(self._queues))
            return removed

    def reclaim_ended(self) -> int:
        """Remove the dead work of the streams in :attr:`ended`; returns the number of
        queued ops removed. Executor side."""
        ended = self.ended
        keys = [ended.popleft() for _ in range(len(ended))]
        return self.withdraw(keys) if keys else 0

    def withdraw(self, keys: list[Hashable]) -> int:
        """Remove the dead work of these streams, whose readers were cancelled, even while
        their tasks live on: what nobody holds and nothing pending reads can never be
        read again. Returns the number of queued ops removed. Executor side."""
        with self.lock:
            self._absorb()
            removed = 0
            for key in keys:
                q = self._queues.get(key)
                if q is not None and q.pruned != self.epoch:
                    removed += self._prune(q)
            return removed

    def _prune(self, q: StreamQueue) -> int:
        """Remove the ops of ``q`` that produce nothing anyone holds or reads (lock held)."""
        q.pruned = self.epoch
        ops = q.ops
        keep = [False] * len(ops)
        needed: set[int] = set()  # read by a kept op of q
        pending, uses, dropped = self.pending_uses, q.uses, self.dropped
        for i in range(len(ops) - 1, -1, -1):
            op = ops[i]
            if type(op) is DropOp:
                continue
            for t in op.outputs():
                tid = t.id
                if (tid in needed or tid not in dropped
                        or pending.get(tid, 0) > uses.get(tid, 0)):
                    keep[i] = True
                    needed.update(x.id for x in op.inputs())
                    break
        gone = {t.id for op, k in zip(ops, keep, strict=True) if not k
                for t in op.outputs()}
        for i, op in enumerate(ops):
            if type(op) is DropOp:
                keep[i] = op.tensor.id not in gone
        if all(keep):
            return 0
        last_reads: list[int] = []  # dropped tensors whose marked last read is removed
        for op, k in zip(ops, keep, strict=True):
            if k or type(op) is DropOp:
                continue
            for t in op.outputs():
                self.producer.pop(t.id, None)
                dropped.discard(t.id)
            for t in op.inputs():
                left = pending[t.id] - 1
                if left:
                    pending[t.id] = left
                else:
                    del pending[t.id]
                    self.use_queue.pop(t.id, None)
                if t.status is TensorStatus.READ_WRITE:
                    last_reads.append(t.id)
        q.ops = [op for op, k in zip(ops, keep, strict=True) if k]
        q.whole = False
        q.uses.clear()
        q.last.clear()
        for i, op in enumerate(q.ops):
            seq = q.base + i
            for t in op.outputs():
                if t.id in self.producer:
                    self.producer[t.id] = (q, seq, t)
            if type(op) is not DropOp:
                for t in op.inputs():
                    q.uses[t.id] = q.uses.get(t.id, 0) + 1
                    q.last[t.id] = seq
        for tid in set(last_reads) | {t for t in self.deferred if t not in pending}:
            self._redrop(tid, gone)
        if not q.ops:
            del self._queues[q.key]
        if len(q.ops) < self.flush_threshold:
            self.long.discard(q.key)
        return len(ops) - len(q.ops)

    def _redrop(self, tid: int, gone: set[int]) -> None:
        """``tid`` was dropped and the read that was to free it was removed: free it
        after its remaining reads, or now (lock held)."""
        self.deferred.discard(tid)
        n = self.pending_uses.get(tid, 0)
        if n:
            q = self._sole_user(tid, n)
            if q is not None:
                q.mark_last_use(q.last[tid] - q.base, tid)
            else:
                self.deferred.add(tid)
        elif tid not in gone:
            prod = self.producer.get(tid)
            if prod is not None:
                prod[0].drop(prod[2])
            else:
                self.freeable.append(tid)
