"""Debug mode: find large intermediates that a fused kernel writes out only because the
user still holds them.

Inside a fused block, a tensor that one op makes and a later op of the block reads lives
in registers, unless something may read it later: then the kernel stores it. When every
read of it in the segment is in that block and none is its last use (``ReadWrite``), the
only thing left that may read it is the user's reference — typically a local named
across an ``await``::

    y = x * 2.0                 # 1 GiB, named ...
    s = await (y + 1.0).sum().to_data()  # ... so the kernel writes y out

:class:`KeptAlive` notes where each large tensor was made (its user's source line, at
registration), checks every segment's plan (from :meth:`Runner.lookup`), and hands one
warning per call site to a reader of the round, who issues it
(:func:`asyncfusion._debug.warn_kept`). Tensors the round itself reads are exempt: the
user asked for them.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import TypeVar

from .. import _debug
from ..ir import DropOp, OperationIr, TensorIr, TensorStatus, numel
from .plan import KernelStep, PlanKey, Step
from .request import Request

__all__ = ["KeptAlive"]

_MAX_ENTRIES = 4096  # sites and analyses remembered at most (oldest go first)
_K = TypeVar("_K")
_V = TypeVar("_V")


class KeptAlive:
    """One device's debug check; ``note`` runs on registering threads, ``check`` on the
    executor thread, ``hand_out`` on the server's event loop between rounds."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # sites: written by any registering thread
        self.sites: dict[int, tuple[str, int, Hashable]] = {}  # tensor id -> (file, line, stream)
        self.plans: dict[PlanKey, tuple[int, ...]] = {}  # plan key -> kept relative ids
        self.found: list[tuple[TensorIr, tuple[str, int, Hashable]]] = []
        self.warned: set[tuple[str, int]] = set()

    def note(self, out: TensorIr, stream: Hashable) -> None:
        """Remember where ``out`` was made, if it is large enough to warn about."""
        if numel(out.shape) * out.dtype.itemsize >= _debug.KEPT_BYTES:
            site = (*_debug.user_site(), stream)
            with self.lock:
                _remember(self.sites, out.id, site)

    def check(self, key: PlanKey, plan: list[Step], ops: list[OperationIr],
              ids: list[int]) -> None:
        """Record the noted tensors of this segment that its plan stores only because
        they are still held."""
        kept = self.plans.get(key)
        if kept is None:
            kept = _remember(self.plans, key, _kept(plan, ops, ids))
        for r in kept:
            with self.lock:
                site = self.sites.pop(ids[r], None)
            if site is not None:
                out = next(t for op in ops for t in op.outputs() if t.id == ids[r])
                self.found.append((out, site))

    def hand_out(self, requests: list[Request]) -> None:
        """Give each new finding to a live reader of the round (one of its stream if
        there is one), unless the round reads that tensor itself."""
        found, self.found = self.found, []
        readers = [r for r in requests if r.tensor is not None and not r.cancelled]
        if not readers:
            return
        read = {t.id for r in readers if (t := r.tensor) is not None}
        for out, (filename, lineno, stream) in found:
            if out.id in read or (filename, lineno) in self.warned:
                continue
            self.warned.add((filename, lineno))
            to = next((r for r in readers if r.stream == stream), readers[0])
            if to.kept is None:
                to.kept = []
            to.kept.append((_message(out), filename, lineno))


def _remember(table: dict[_K, _V], key: _K, value: _V) -> _V:
    if len(table) >= _MAX_ENTRIES:
        del table[next(iter(table))]
    table[key] = value
    return value


def _kept(plan: list[Step], ops: list[OperationIr], ids: list[int]) -> tuple[int, ...]:
    """Relative ids of the fused blocks' stored outputs that are read only inside their
    block, never for the last time, and never dropped in the segment."""
    reads: dict[int, list[tuple[int, TensorStatus]]] = {}
    dropped: set[int] = set()
    for pos, op in enumerate(ops):
        if type(op) is DropOp:
            dropped.add(op.tensor.id)
            continue
        for t in op.inputs():
            reads.setdefault(t.id, []).append((pos, t.status))
    kept: list[int] = []
    for step in plan:
        if type(step) is not KernelStep or not step.fused:
            continue
        for r in step.outputs:
            uses = reads.get(ids[r])
            if uses and ids[r] not in dropped and all(
                    pos in step.positions and status is not TensorStatus.READ_WRITE
                    for pos, status in uses):
                kept.append(r)
    return tuple(kept)


def _message(t: TensorIr) -> str:
    return (f"a {_size(numel(t.shape) * t.dtype.itemsize)} intermediate (shape {t.shape}, "
            f"{t.dtype.label}) made here was "
            "written to device memory only because a reference to it (a local named across "
            "an await?) kept it alive; the fused kernel that reads it would otherwise keep "
            "it in registers. 'del' the name before the await, or compute the value inside "
            "a helper function, unless you read it later")


def _size(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.4g} {unit}"
    return f"{nbytes} bytes"
