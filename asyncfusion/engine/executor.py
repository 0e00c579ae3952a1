"""The executor: owns a device's memory table and runs its rounds (executor thread only).

A round is every request that arrived since the last one, from any number of tasks:
drain the streams of its live requests (dead work of ended tasks, and of cancelled reads
even where their task lives on, goes without running), run their plans — the equal
plans of different streams as one launch per kernel (``batch.py``) —, stage the reads,
submit all of it as one submission, then copy every read out of one shared staging
buffer. A failing op poisons only its dependents (``plan.py``); a failing
round fails only its own requests.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Hashable

from .. import _debug
from ..backends.base import Backend
from .._core.errors import DeviceLostError, ExecutionError
from ..ir import DropOp, Layout, OperationIr
from ..trace import Counters, emit, trace_enabled
from .batch import Deferred
from .kept import KeptAlive
from .memory import Memory, Poison, Storage
from .plan import Context, run_single
from .request import Readable, Request
from .runner import Runner
from .streams import Streams

__all__ = ["Request", "Executor"]

_dense_layout = functools.lru_cache(maxsize=1024)(Layout.dense)  # one per read otherwise


class Executor:
    """Owns the memory table; runs on the device's executor thread only."""

    def __init__(self, streams: Streams, runner: Runner, backend: Backend, counters: Counters,
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
        withdrawn = self._withdraw(requests)
        if self.streams.ended:
            self.streams.reclaim_ended()
        if sync or self.streams.crowded() or withdrawn:
            self.counters.queues_scanned += len(self.streams.queues)
            self.streams.reclaim()  # dead work of ended tasks goes without running
        for tid in self.streams.take_freeable():
            self._release(tid)
        keys = self.streams.keys() if sync else list(dict.fromkeys(
            [r.stream for r in requests if not r.cancelled] + self.streams.long_queues()))
        for key in keys:
            self.drain(key, batch=True)
        gone = self._gone(requests)
        self.deferred.flush(self._recover, gone)
        for tid in gone:
            self._release(tid)
        reads = [(r, t) for r in requests if (t := r.tensor) is not None and not r.cancelled]
        tokens: list[tuple[Request, Readable, object]] = []
        for r, t in reads:
            prod = self.streams.pending_producer(t.id)
            if prod is not None:
                self.drain(*prod)
            h = self.memory.get(t.id)
            if isinstance(h, Poison):
                r.error = self._error(f"tensor t{t.id} could not be computed", h.error)
            elif h is None:
                r.error = ExecutionError(
                    f"tensor t{t.id} has no data on the device: no op computes it (a "
                    "Tensor built by hand?); make tensors with asyncfusion.tensor(), zeros(), "
                    "ones(), full(), arange(), rand() or randn()")
            else:
                assert isinstance(h, Storage)
                layout = t.layout or _dense_layout(t.shape)
                try:
                    tokens.append((r, t, self.backend.stage_read(h.buffer, layout, t.dtype)))
                except Exception as exc:  # noqa: BLE001
                    r.error = self._error(f"staging the read of t{t.id} failed", exc)
        try:
            self.backend.flush()
            if sync:
                self.backend.wait_idle()
        except Exception as exc:  # noqa: BLE001 - the submission failed: fail its readers
            err = self._error("submitting work to the device failed", exc)
            for _, _, token in tokens:
                self.backend.discard_read(token)
            for r in requests:
                r.error = r.error or err
            return
        for r, t, token in tokens:
            if r.cancelled:  # its reader is gone: nothing to copy out
                self.backend.discard_read(token)
                continue
            try:
                r.data = self.backend.finish_read(token)
            except Exception as exc:  # noqa: BLE001
                r.error = self._error(f"reading t{t.id} back failed", exc)
        if any(r.empty_cache for r in requests):
            self.backend.empty_cache()

    def advance(self, key: Hashable) -> None:
        """Run stream ``key``'s ops up to its latest mark (:meth:`Streams.mark`) and submit
        them (executor thread, between rounds), so the device starts on them while the
        task records the work that follows."""
        upto = self.streams.marked(key)
        if upto is not None:
            self.counters.early_starts += 1
            self.drain(key, upto)
            self.backend.flush()

    def idle(self) -> None:
        """Between rounds (executor thread, no job waiting): the backend gets the next
        round ready. A failure here is the next round's to meet, not this thread's."""
        try:
            self.backend.prepare()
        except Exception:  # noqa: BLE001 - a lost device, say: the next round reports it
            pass

    def _withdraw(self, requests: list[Request]) -> bool:
        """The round's cancelled requests let go of their tensors (the server lets go of
        those cancelled before the round was formed; these were cancelled since), and
        their streams' dead work goes without running, even where the task lives on;
        whether any request was cancelled."""
        keys: list[Hashable] = []
        late = False
        for r in requests:
            if r.cancelled:
                keys.append(r.stream)
                if r.tensor is not None:
                    r.tensor = None
                    late = True
        if not keys:
            return False
        if late:
            gc.collect(1)  # a cancelled task's frames may hold its tensors in a cycle
        self.streams.withdraw(keys)
        return True

    def _gone(self, requests: list[Request]) -> set[int]:
        """Readers cancelled while the round drained let go of their tensors: the ids
        freed since the round began (nothing pending reads them, so the round's waiting
        segments that make them need not run; they are released once those ran)."""
        late = False
        for r in requests:
            if r.cancelled and r.tensor is not None:
                r.tensor = None
                late = True
        return set(self.streams.take_freeable()) if late else set()

    def _error(self, what: str, cause: BaseException) -> ExecutionError:
        """The error a reader gets: DeviceLostError once the GPU is gone, else
        ExecutionError naming the failure, with the cause chained."""
        lost = self.backend.lost
        if isinstance(cause, DeviceLostError) or lost is not None:
            err: ExecutionError = DeviceLostError(
                f"{what}: the GPU device was lost ({lost or cause}); "
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
        seg = self.streams.take_segment(key, upto)
        ops, frees = seg.ops, seg.frees
        if not ops:
            return
        if batch:
            if trace_enabled():
                for op in ops:
                    emit(f"[registered] {op.describe()}")
            if self.deferred.offer(seg):
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
