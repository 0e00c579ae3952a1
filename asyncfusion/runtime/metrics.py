"""What a service watches: rounds, their size and latency, queues, reads and admission.

``dev.metrics()`` returns a :class:`Metrics` snapshot. Counters count since the device
opened; histograms are cumulative (Prometheus' shape: per bucket, the number of
observations at or below its upper bound, plus their sum and count).
``asyncfusion.contrib.prometheus`` exposes them to a Prometheus scrape.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

__all__ = ["Histogram", "HistogramSnapshot", "Metrics", "ServerMetrics",
           "ROUND_SIZE_BUCKETS", "ROUND_SECONDS_BUCKETS"]

ROUND_SIZE_BUCKETS: tuple[float, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
ROUND_SECONDS_BUCKETS: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0)


@dataclass(frozen=True, slots=True)
class HistogramSnapshot:
    """``buckets``: (upper bound, observations at or below it), ending with +inf."""

    buckets: tuple[tuple[float, int], ...]
    sum: float
    count: int


class Histogram:
    """A fixed-bucket histogram; written by one thread (the server's event loop)."""

    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def snapshot(self) -> HistogramSnapshot:
        total = 0
        out = []
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            total += n
            out.append((bound, total))
        return HistogramSnapshot(tuple(out), self.sum, self.count)


class ServerMetrics:
    """The server's live counts (event-loop thread only)."""

    def __init__(self) -> None:
        self.rounds = 0
        self.requests = 0
        self.round_size = Histogram(ROUND_SIZE_BUCKETS)
        self.round_seconds = Histogram(ROUND_SECONDS_BUCKETS)
        self.running = 0  # requests in the round on the executor now

    def round(self, size: int, seconds: float) -> None:
        self.rounds += 1
        self.requests += size
        self.round_size.observe(size)
        self.round_seconds.observe(seconds)


@dataclass(frozen=True, slots=True)
class Metrics:
    """One device's service metrics (``dev.metrics()``).

    :ivar rounds: executor rounds run.
    :ivar requests: requests (reads, syncs) those rounds served.
    :ivar round_size: requests per round.
    :ivar round_seconds: time from a round's start to its readers' wake-up.
    :ivar queued_requests: requests waiting for the next round now.
    :ivar reads_in_flight: requests posted and not yet answered (queued and running).
    :ivar queued_ops: ops registered on streams and not yet taken by a round.
    :ivar streams: streams with queued ops.
    :ivar admitted: ``admit()`` calls let in; ``rejected``: those refused (Overloaded).
    :ivar admitted_now: requests inside ``admit()`` now; ``max_pending``: the cap (None:
        no cap).
    :ivar launches, submissions: the device's counters (as in ``dev.stats()``).
    :ivar batched_instances: tasks' kernels that ran inside another task's launch
        (cross-stream batching; as in ``dev.stats()``).
    """

    rounds: int
    requests: int
    round_size: HistogramSnapshot
    round_seconds: HistogramSnapshot
    queued_requests: int
    reads_in_flight: int
    queued_ops: int
    streams: int
    admitted: int
    rejected: int
    admitted_now: int
    max_pending: int | None
    launches: int
    submissions: int
    batched_instances: int
