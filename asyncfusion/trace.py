"""Opt-in trace output and the counters tests assert on.

Turn the trace on with ``ASYNCFUSION_TRACE=1`` or ``with asyncfusion.tracing():``. It
prints the lines of Burn's fusion walkthrough: ``[registered] ...`` for each op as the
server takes it, ``[block] N op(s): ...`` for each block, ``[launch] ...`` per kernel.

The trace never writes to stdout, which belongs to the program: it goes to stderr (or the
file given to ``tracing``). Each line is also a DEBUG record of the ``logging`` logger
``asyncfusion.trace``; enabling that logger at DEBUG turns the trace on through logging
alone (``logging.getLogger("asyncfusion.trace").setLevel(logging.DEBUG)``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections import Counter as _Tally
from dataclasses import dataclass, field
from typing import TextIO, TypedDict
from collections.abc import Iterator

__all__ = ["Counters", "CounterSnapshot", "tracing", "trace_enabled", "emit", "take_launches"]

logger = logging.getLogger("asyncfusion.trace")


class _TraceState(TypedDict):
    on: bool
    out: TextIO | None  # None: stderr
    broken: TextIO | None  # a sink that failed: left alone from then on


_global: _TraceState = {"on": os.environ.get("ASYNCFUSION_TRACE", "") not in ("", "0"),
                        "out": None, "broken": None}
_lock = threading.Lock()
_launches_total = [0]


def trace_enabled() -> bool:
    return bool(_global["on"]) or logger.isEnabledFor(logging.DEBUG)


def emit(line: str) -> None:
    """Write one trace line. A sink that fails (closed, a broken pipe) is left alone from
    then on: the trace is a diagnostic and must never fail the work it describes."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(line)
    if not _global["on"]:
        return
    out: TextIO = _global["out"] or sys.stderr
    with _lock:
        if out is _global["broken"]:
            return
        try:
            print(f"  {line}", file=out, flush=True)
        except Exception:  # noqa: BLE001 - OSError, ValueError (closed file), anything
            _global["broken"] = out


@contextlib.contextmanager
def tracing(file: TextIO | None = None) -> Iterator[None]:
    """Print the trace (to ``file``, or stderr) inside this block."""
    prev = _global.copy()
    _global["on"] = True
    _global["out"] = file
    try:
        yield
    finally:
        _global.update(prev)


@dataclass(frozen=True, slots=True)
class CounterSnapshot:
    """Counts since a device opened (or since the last ``reset``)."""

    launches: int
    blocks: int
    fused_blocks: int
    plan_cache_hits: int
    plan_cache_misses: int
    kernels_generated: int
    submissions: int
    kernels: dict[str, int]
    batched_instances: int = 0  # kernel-step instances that ran in a launch shared by streams
    rounds: int = 0  # executor rounds (each: every request that arrived since the last)
    signed_ops: int = 0  # ops whose part of a segment's relative signature was built
    queues_scanned: int = 0  # stream queues looked at for dead work (reclaiming)
    early_starts: int = 0  # queued work run before its read, as large work apart began


@dataclass
class Counters:
    """Mutable counters of one device; written only by its executor thread."""

    launches: int = 0
    blocks: int = 0
    fused_blocks: int = 0
    plan_cache_hits: int = 0
    plan_cache_misses: int = 0
    kernels_generated: int = 0
    submissions: int = 0
    kernels: _Tally[str] = field(default_factory=_Tally)
    batched_instances: int = 0
    rounds: int = 0
    signed_ops: int = 0
    queues_scanned: int = 0
    early_starts: int = 0

    def launch(self, name: str) -> None:
        self.launches += 1
        self.kernels[name] += 1
        with _lock:
            _launches_total[0] += 1
        emit(f"[launch] {name}")

    def snapshot(self) -> CounterSnapshot:
        return CounterSnapshot(self.launches, self.blocks, self.fused_blocks,
                               self.plan_cache_hits, self.plan_cache_misses,
                               self.kernels_generated, self.submissions, dict(self.kernels),
                               self.batched_instances, self.rounds, self.signed_ops,
                               self.queues_scanned, self.early_starts)

    def reset(self) -> None:
        fresh = Counters()
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(fresh, name))


def take_launches() -> int:
    """Kernel launches on every device since the last call (the seed's ``take_launches()``)."""
    with _lock:
        n = _launches_total[0]
        _launches_total[0] = 0
    return n
