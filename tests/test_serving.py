"""What a service needs from a device: errors split into the caller's (4xx) and the
server's (5xx), several reads in one await, back pressure, cancellation that withdraws
queued work, and metrics. Every assertion is about counts and decisions, never time."""

from __future__ import annotations

import gc
import threading

import anyio
import numpy as np
import pytest

import asyncfusion as af
from asyncfusion._core import errors
from asyncfusion.pytest_plugin import device_for_test
from tests.conftest import assert_close


# -- errors for services ------------------------------------------------------------------
@pytest.mark.parametrize("cls", [af.ShapeError, af.DTypeError, af.AxisError, af.IndexingError,
                                 af.LimitError, af.DataError, af.DeviceMismatchError])
def test_caller_mistakes_are_input_errors_and_4xx(cls):
    assert issubclass(cls, af.InputError) and issubclass(cls, af.AsyncFusionError)
    assert 400 <= af.http_status(cls("x")) < 500


@pytest.mark.parametrize("cls", [af.ExecutionError, af.DeviceLostError, af.DeviceClosedError,
                                 af.Overloaded, af.NoAdapterError, RuntimeError])
def test_server_failures_are_not_input_errors_and_5xx(cls):
    assert not issubclass(cls, af.InputError)
    assert 500 <= af.http_status(cls("x")) < 600


def test_ops_raise_input_errors_at_the_call_site():
    bad = [lambda: af.tensor([[1.0], [2.0, 3.0]]),
           lambda: af.zeros((2, 3)) + af.zeros((4,)),
           lambda: af.zeros((2, 3)).sum(axis=5),
           lambda: af.zeros((2, 3))[7]]
    for make in bad:
        with pytest.raises(af.InputError) as info:
            make()
        assert af.http_status(info.value) == 400


async def test_a_raw_failure_inside_a_round_reaches_the_reader_as_an_execution_error(dev):
    x = af.ones((16,), device=dev)
    await x.to_data()
    real = dev.backend.flush

    def broken() -> None:
        raise RuntimeError("Cannot use PollThread because it has stopped.")

    dev.backend.flush = broken
    try:
        with pytest.raises(af.ExecutionError) as info:
            await (x * 2.0).to_data()
    finally:
        dev.backend.flush = real
    assert "PollThread" in str(info.value) and af.http_status(info.value) == 500
    assert_close(await (x * 3.0).to_data(), np.full(16, 3.0))  # the device keeps working


# -- several reads in one await -------------------------------------------------------------
async def test_to_data_reads_several_tensors_in_one_round(dev):
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = af.tensor(h, device=dev)
    await x.to_data()
    before = dev.metrics().rounds
    s, m, v = await af.to_data(x.sum(axis=1), x.max(axis=0), x * 2.0)
    assert dev.metrics().rounds == before + 1
    assert_close(s, h.sum(1))
    assert_close(m, h.max(0))
    assert_close(v, h * 2)


async def test_to_data_raises_the_first_failure_and_refuses_mixed_devices(dev, ref):
    x = af.ones((8,), device=dev)
    with dev.inject_fault("launch", op="exp"):
        with pytest.raises(af.ExecutionError):
            await af.to_data(x * 2.0, x.exp())
    assert_close((await af.to_data(x * 2.0))[0], np.full(8, 2.0))
    with pytest.raises(af.DeviceMismatchError):
        await af.to_data(x, af.ones((8,), device=ref))
    with pytest.raises(TypeError, match="at least one tensor"):
        await af.to_data()


# -- back pressure ------------------------------------------------------------------------
async def test_admission_refuses_past_max_pending_and_counts(request):
    async with device_for_test(request, max_pending=2, retry_after=2.5) as dev:
        async with dev.admit(), dev.admit():
            with pytest.raises(af.Overloaded) as info:
                async with dev.admit():
                    pass
            assert info.value.retry_after == 2.5 and af.http_status(info.value) == 503
            m = dev.metrics()
            assert (m.admitted, m.rejected, m.admitted_now, m.max_pending) == (2, 1, 2, 2)
        async with dev.admit():  # slots came back
            assert dev.metrics().admitted_now == 1
        assert dev.metrics().admitted_now == 0


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _hold(adm, clock: _Clock, seconds: float) -> None:
    async with adm():
        clock.now += seconds


async def test_a_latency_target_shrinks_the_limit_under_slow_requests_and_grows_it_back():
    from asyncfusion.runtime.admission import Admission

    clock = _Clock()
    adm = Admission(100, 1.0, target=0.020, clock=clock)
    assert adm.limit == 100
    for _ in range(3):  # slow requests back to back: one cut per target interval
        await _hold(adm, clock, 0.030)
    assert adm.limit == int(100 * 0.9 ** 3)
    clock.now -= 0.015  # a slow request ends within the interval of the last cut: no cut
    await _hold(adm, clock, 0.025)
    assert adm.limit == int(100 * 0.9 ** 3)
    for _ in range(40):
        await _hold(adm, clock, 0.030)
    assert adm.limit == 1  # it never goes below one slot
    for _ in range(200):  # requests within the target: about one slot per limit's worth
        await _hold(adm, clock, 0.005)
    assert 15 <= adm.limit <= 25
    for _ in range(20_000):
        await _hold(adm, clock, 0.005)
    assert adm.limit == 100  # capped by max_pending


async def test_a_latency_target_refuses_past_the_adapted_limit(request):
    async with device_for_test(request, max_pending=8, target_latency_ms=10) as dev:
        adm = dev._admission
        adm.window, adm.limit = 2.0, 2
        async with dev.admit(), dev.admit():
            with pytest.raises(af.Overloaded, match="latency target of 10 ms"):
                async with dev.admit():
                    pass
        assert dev.metrics().rejected == 1
    with pytest.raises(ValueError, match="target_latency_ms must be a positive"):
        af.DeviceOptions(backend="numpy", target_latency_ms=0)


async def test_a_waiting_admission_gets_the_next_free_slot(request):
    async with device_for_test(request, max_pending=1) as dev:
        order: list[str] = []
        release = anyio.Event()

        async def holder() -> None:
            async with dev.admit():
                order.append("holder in")
                await release.wait()
            order.append("holder out")

        async def waiter() -> None:
            async with dev.admit(timeout=60):
                order.append("waiter in")

        async with anyio.create_task_group() as tg:
            tg.start_soon(holder)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert order == ["holder in"] and len(dev._admission.waiters) == 1
            release.set()
        assert order == ["holder in", "holder out", "waiter in"]
        assert (dev.metrics().admitted, dev.metrics().rejected) == (2, 0)


async def test_a_cancelled_waiter_gives_its_place_back(request):
    async with device_for_test(request, max_pending=1) as dev:
        async with dev.admit():
            with anyio.CancelScope() as scope:
                async def cancel_soon() -> None:
                    await anyio.wait_all_tasks_blocked()
                    scope.cancel()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(cancel_soon)
                    async with dev.admit(timeout=60):
                        pytest.fail("admitted past the limit")
            assert scope.cancelled_caught and not dev._admission.waiters
        async with dev.admit():
            assert dev.metrics().admitted_now == 1


async def test_rounds_serve_at_most_max_round_requests(request):
    async with device_for_test(request, max_round=2) as dev:
        x = af.ones((8,), device=dev)
        await x.to_data()
        before = dev.metrics()
        got = await af.to_data(*[x * float(i) for i in range(5)])
        after = dev.metrics()
        assert after.rounds - before.rounds == 3  # 2 + 2 + 1
        assert after.requests - before.requests == 5
        for i, v in enumerate(got):
            assert_close(v, np.full(8, float(i)))
        del x  # before the leak check at the block's end


@pytest.mark.parametrize("opts", [{"max_pending": 0}, {"max_round": -1},
                                  {"retry_after": 0}, {"max_pending": 1.5}])
async def test_bad_serving_options_are_refused(opts):
    with pytest.raises((ValueError, TypeError)):
        async with af.open_device("numpy", **opts):
            pass


# -- cancellation withdraws work ------------------------------------------------------------
def hold_rounds(dev):
    """Make the device's rounds wait for the returned event; also returns the real round
    (put it back when done) and resets the counters."""
    gate = threading.Event()
    real_round = dev._server.executor.round

    def held_round(requests, sync):
        gate.wait()
        real_round(requests, sync)

    dev._server.executor.round = held_round
    dev.reset_stats()
    return gate, real_round


async def test_cancelled_readers_launch_nothing(dev):
    # The executor is held busy by one read while 20 handlers post theirs; the handlers
    # are cancelled (a client disconnects) before the next round: it runs none of them.
    x = af.rand((4096,), seed=1, device=dev)
    await x.to_data()
    gate, real_round = hold_rounds(dev)

    async def handler() -> None:
        y = ((x - 0.5) ** 2.0).exp().sum()
        await y.to_data()

    gc.disable()  # the collector running by chance must not be what frees the tensors
    try:
        await _cancel_twenty_handlers_during_a_held_round(dev, x, handler, gate)
    finally:
        gc.enable()
    dev._server.executor.round = real_round
    await dev.sync()
    assert dev.stats().launches == 1  # x + 1.0 only
    assert dev.metrics().queued_ops == 0


async def _cancel_twenty_handlers_during_a_held_round(dev, x, handler, gate) -> None:
    async with anyio.create_task_group() as outer:
        outer.start_soon(dev.read, x + 1.0)
        await anyio.wait_all_tasks_blocked()  # the server waits for the held round
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                for _ in range(20):
                    tg.start_soon(handler)
                await anyio.wait_all_tasks_blocked()
                m = dev.metrics()
                assert (m.queued_requests, m.reads_in_flight) == (20, 21)
                scope.cancel()
        gate.set()


async def test_a_cancelled_read_of_a_live_task_runs_nothing_once_the_tensor_is_dropped(dev):
    # The task lives on after its read is cancelled (a timeout it handles) and lets go of
    # the tensor: the round after the cancel does not run the withdrawn read's work.
    x = af.rand((4096,), seed=1, device=dev)
    await x.to_data()
    gate, real_round = hold_rounds(dev)
    scopes: list[anyio.CancelScope] = []
    finish = anyio.Event()

    async def handler() -> None:
        y = ((x - 0.5) ** 2.0).exp().sum()
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            await y.to_data()
        del y
        await finish.wait()

    async with anyio.create_task_group() as outer:
        outer.start_soon(dev.read, x + 1.0)
        await anyio.wait_all_tasks_blocked()
        outer.start_soon(handler)
        await anyio.wait_all_tasks_blocked()
        assert dev.metrics().queued_requests == 1
        scopes[0].cancel()
        await anyio.wait_all_tasks_blocked()  # the handler let go of y and waits, alive
        gate.set()
        while dev.metrics().rounds < 2:  # the held round and the one with the cancelled read
            await anyio.sleep(0.001)
        assert dev.stats().launches == 1  # x + 1.0 only
        finish.set()
    dev._server.executor.round = real_round
    await dev.sync()
    assert dev.stats().launches == 1  # the dropped work never ran


async def test_a_task_that_raised_after_registering_releases_its_queue(dev):
    data = np.ones(1 << 16, np.float32)

    async def handler() -> None:
        t = af.tensor(data, device=dev)
        (t * 2.0).sum()
        raise KeyError("a bug after the ops were queued")

    with pytest.raises(BaseExceptionGroup):
        async with anyio.create_task_group() as tg:
            tg.start_soon(handler)
    gc.collect()
    dev.reset_stats()
    await dev.sync()
    assert dev.stats().launches == 0 and dev.metrics().queued_ops == 0
    assert dev.memory_stats().live_buffers == 0


# -- metrics --------------------------------------------------------------------------------
async def test_metrics_count_rounds_and_requests(dev):
    m0 = dev.metrics()
    assert (m0.rounds, m0.reads_in_flight, m0.queued_requests) == (0, 0, 0)
    x = af.ones((8,), device=dev)
    y = x + 1.0
    assert dev.metrics().queued_ops == 2 and dev.metrics().streams == 1
    await y.to_data()
    await af.to_data(x, y)
    m = dev.metrics()
    assert (m.rounds, m.requests) == (2, 3)
    assert m.round_size.count == 2 and m.round_size.sum == 3
    assert m.round_size.buckets[0] == (1, 1) and m.round_size.buckets[1] == (2, 2)
    assert m.round_size.buckets[-1] == (float("inf"), 2)
    assert m.round_seconds.count == 2 and m.round_seconds.buckets[-1][1] == 2
    assert m.launches == dev.stats().launches and m.submissions >= 1
    assert errors.Overloaded is af.Overloaded
