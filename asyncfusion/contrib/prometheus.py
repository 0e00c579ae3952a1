"""``dev.metrics()`` for Prometheus (needs ``prometheus-client``: ``asyncfusion[serve]``).

    registry = CollectorRegistry()
    registry.register(DeviceCollector(lambda: dev))
    body = generate_latest(registry)       # or exposition(dev) for one device

The collector reads the device on every scrape, so it follows a reopened device when
given a function that returns the current one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily, Metric)
from prometheus_client.registry import Collector

from ..runtime import Device
from ..runtime.metrics import HistogramSnapshot

__all__ = ["DeviceCollector", "exposition"]


def _histogram(name: str, doc: str, h: HistogramSnapshot) -> HistogramMetricFamily:
    buckets = [("+Inf" if b == float("inf") else repr(float(b)), n) for b, n in h.buckets]
    return HistogramMetricFamily(name, doc, buckets=buckets, sum_value=h.sum)


class DeviceCollector(Collector):
    """Collects ``asyncfusion_*`` metrics from the device ``get_device()`` returns."""

    def __init__(self, get_device: Callable[[], Device | None]) -> None:
        self.get_device = get_device

    def collect(self) -> Iterator[Metric]:
        dev = self.get_device()
        if dev is None:
            return
        m = dev.metrics()
        yield CounterMetricFamily("asyncfusion_rounds", "Device rounds run", value=m.rounds)
        yield CounterMetricFamily("asyncfusion_requests", "Requests (reads, syncs) served",
                                  value=m.requests)
        yield CounterMetricFamily("asyncfusion_launches", "Kernel launches", value=m.launches)
        yield CounterMetricFamily("asyncfusion_submissions", "Queue submissions",
                                  value=m.submissions)
        yield CounterMetricFamily("asyncfusion_batched_instances",
                                  "Tasks' kernels run inside a launch shared with other tasks",
                                  value=m.batched_instances)
        yield CounterMetricFamily("asyncfusion_admitted", "Requests admitted by admit()",
                                  value=m.admitted)
        yield CounterMetricFamily("asyncfusion_rejected",
                                  "Requests refused with Overloaded", value=m.rejected)
        yield _histogram("asyncfusion_round_size", "Requests per round", m.round_size)
        yield _histogram("asyncfusion_round_seconds", "Round latency in seconds",
                         m.round_seconds)
        for name, doc, value in (
                ("queued_requests", "Requests waiting for the next round", m.queued_requests),
                ("reads_in_flight", "Requests posted and not yet answered", m.reads_in_flight),
                ("queued_ops", "Ops registered and not yet run", m.queued_ops),
                ("streams", "Streams with queued ops", m.streams),
                ("admitted_now", "Requests inside admit() now", m.admitted_now)):
            yield GaugeMetricFamily(f"asyncfusion_{name}", doc, value=value)


def exposition(dev: Device) -> bytes:
    """The Prometheus text exposition of one device's metrics (for a ``/metrics`` route)."""
    registry = CollectorRegistry()
    registry.register(DeviceCollector(lambda: dev))
    return bytes(generate_latest(registry))
