"""Copies between devices: ``x.to(other)``.

``x.to(other)`` registers one op on ``other`` whose input is a snapshot of ``x`` on ``x``'s device (a view registered there, so it comes
after ``x``'s producer and keeps ``x``'s value even if ``x`` is assigned to later). Nothing
runs until a read on ``other`` needs it. Before such a read (or a sync) posts its request,
the reader *settles* ``other``'s pending copies: it reads each snapshot on its own device,
an ordinary awaited read that blocks no event loop and no executor thread, and hands the
values to the copy op, which the next round uploads (one staging copy each way). A round
that reaches a copy no reader settled (a long queue run on its own) reads the snapshot
from the executor thread instead, unless that would wait on a device that waits on this
one (then the copy fails with an error that says so, rather than hanging). A copy op sits
on a stream of its own (owned by the caller's task), so that reading one copy's source
never runs another copy that is still being settled.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..backends.base import Backend, Buffer
from ..engine.memory import Storage
from ..engine.request import Readable
from .._core.errors import ExecutionError
from ..ir import ExternOp

__all__ = ["CopyWork", "Reader", "Source", "Transfer", "Transfers"]


class Reader(Protocol):
    """What a copy asks of a device (``Device``): a read, awaited or blocking."""

    async def read(self, tensor: Readable) -> np.ndarray: ...

    def _blocking(self, tensor: Readable, sync: bool, what: str, settle: bool = True
                  ) -> np.ndarray | None: ...


class Source(Readable, Protocol):
    """What a copy reads: a tensor (the front end's handle) on its own device."""

    id: int

    @property
    def device(self) -> Reader: ...


class Transfer:
    """One pending copy: the snapshot to read, then its values (or the read's error)."""

    __slots__ = ("src", "data", "error", "settling", "__weakref__")

    def __init__(self, src: Source) -> None:
        self.src: Source | None = src  # None once the copy op ran
        self.data: np.ndarray | None = None
        self.error: BaseException | None = None
        self.settling = False  # a reader is reading its source now

    @property
    def unsettled(self) -> bool:
        return (self.src is not None and self.data is None and self.error is None
                and not self.settling)


class Transfers:
    """The copies pending on one device (target side). Held weakly: a copy op that is
    run or withdrawn unqueued takes its Transfer, and its snapshot, with it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[int, weakref.ref[Transfer]] = {}

    def add(self, t: Transfer) -> None:
        with self._lock:
            self._pending[id(t)] = weakref.ref(t)

    @property
    def pending(self) -> bool:
        """Whether any copy may still wait to be settled (no lock: a hint for the fast
        path of every read)."""
        return bool(self._pending)

    def unsettled(self) -> list[Transfer]:
        if not self._pending:  # the common case, on every read: no lock
            return []
        with self._lock:
            live = [(k, r()) for k, r in self._pending.items()]
            out: list[Transfer] = []
            for k, t in live:
                if t is None or not t.unsettled:
                    self._pending.pop(k, None)
                else:
                    out.append(t)
            return out

    async def settle(self) -> None:
        """Read every unsettled copy's snapshot on its own device (the caller's task)."""
        for t in self.unsettled():
            src = t.src
            if src is None or t.settling:
                continue
            t.settling = True  # a read of the source that needs this device skips it
            try:
                data = await src.device.read(src)
            except Exception as exc:  # noqa: BLE001 - the copy op fails with it
                t.error = exc
            else:
                if t.src is not None:
                    t.data = data
            finally:
                t.settling = False
            del src


# device -> the device its executor thread waits on (a copy read from the executor)
_waiting: dict[int, Reader] = {}
_waiting_lock = threading.Lock()


def _fetch_blocking(t: Transfer, target: Reader) -> np.ndarray:
    """The snapshot's values, read from ``target``'s executor thread (blocks it)."""
    src = t.src
    assert src is not None
    source = src.device
    with _waiting_lock:
        d: Reader | None = source
        while d is not None:
            if d is target:
                raise ExecutionError(
                    f"copying t{src.id} from {source!r} to {target!r} would wait on a device "
                    "that waits on this one; read the copied tensor (a read settles its "
                    "copies first) instead of leaving it to a queue run on its own")
            d = _waiting.get(id(d))
        _waiting[id(target)] = source
    try:
        # No settling there: it could wait on this (blocked) executor through another copy;
        # a copy that the read reaches unsettled comes here too, seen by the check above.
        out: np.ndarray | None = source._blocking(src, False, "a copy between devices",
                                                  settle=False)
        assert out is not None
        return out
    finally:
        with _waiting_lock:
            _waiting.pop(id(target), None)


@dataclass(frozen=True, slots=True)
class CopyWork:
    """The work of a copy op on the target device: upload the snapshot's values."""

    target: weakref.ref[Reader]
    key: str = "copy-between-devices"
    title: str = "CopyIn"

    def run(self, backend: Backend, loads: list[Buffer], op: ExternOp) -> list[Storage]:
        t: Transfer = op.args[0]
        try:
            if t.error is not None:
                raise ExecutionError(f"reading the source of a copy between devices "
                                     f"failed: {t.error}") from t.error
            data = t.data
            if data is None:
                target = self.target()
                assert target is not None  # it runs this op
                data = _fetch_blocking(t, target)
            backend.faults.check("alloc")
            return [Storage(backend.upload(data))]
        finally:
            t.src = t.data = None
