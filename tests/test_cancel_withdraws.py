"""Cancellation withdraws formed work: handlers whose reads wait behind a busy device and
are cancelled there launch nothing and keep no buffer, whether their reads still wait
in the server's inbox or were already taken into a round the executor has not run, and
whether the handler tasks end or live on after the cancel; live readers of the same
round still share one batched launch."""

from __future__ import annotations

import gc
import threading
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.pytest_plugin import device_for_test
from examples.seed_chain import chain as chain8
from examples.seed_chain import chain_np as chain8_np
from tests.conftest import assert_close

N = 50
SIZE = 1024


class Gate:
    """Holds the next round that reads anything on the executor thread, before it runs,
    until ``open()`` (the device is busy with it meanwhile)."""

    def __init__(self, dev: af.Device) -> None:
        self.executor = dev._server.executor
        self.entered, self.gate = threading.Event(), threading.Event()
        self.held: list[int] = []  # requests in the held round
        real = self.executor.round

        def gated(requests: list[Any], sync: bool) -> None:
            if not self.held and any(r.tensor is not None for r in requests):
                self.held.append(len(requests))
                self.entered.set()
                self.gate.wait()
            real(requests, sync)

        self.executor.round = gated

    async def wait_held(self) -> None:
        await anyio.to_thread.run_sync(self.entered.wait)

    def open(self) -> None:
        self.gate.set()
        del self.executor.round


async def wait_until(check: Any) -> None:
    with anyio.fail_after(60):
        while not check():
            await anyio.sleep(0.001)


@dataclass
class Served:
    results: dict[int, np.ndarray]
    stats: Any  # the device's counters once the handlers' work settled
    leaked: tuple[int, int]  # live buffers and bytes beyond those before the handlers
    queued: int  # ops still queued then


async def serve_and_cancel(dev: af.Device, where: str, lives_on: bool, cancel: set[int]
                           ) -> Served:
    """N handlers, each running the seed chain on its own input and reading it; those in
    ``cancel`` are cancelled while their reads wait. ``where`` is where they wait: in
    the inbox behind a busy round, or taken into a round that has not run yet. The
    device settles (collection, two syncs) before any handler that lives on ends."""
    xs = [np.full(SIZE, i / N, np.float32) for i in range(N)]
    scopes = [anyio.CancelScope() for _ in range(N)]
    results: dict[int, np.ndarray] = {}
    done = anyio.Event()
    gate = Gate(dev)

    async def handler(i: int) -> None:
        with scopes[i]:
            results[i] = await chain8(af.tensor(xs[i], device=dev)).to_data()
        if lives_on:
            await done.wait()  # the handler task lives on after its read was cancelled

    busy = af.tensor(np.ones(SIZE, np.float32), device=dev)
    await dev.sync()
    base = dev.memory_stats()
    dev.reset_stats()  # from here on: the handlers' work only (busy's read launches nothing)
    try:
        async with anyio.create_task_group() as tg:
            if where == "inbox":
                tg.start_soon(busy.to_data)  # the busy round: every handler waits behind it
                await gate.wait_held()
            for i in range(N):
                tg.start_soon(handler, i)
            if where == "inbox":
                await wait_until(lambda: dev.metrics().queued_requests == N)
            else:
                await gate.wait_held()  # one round formed of all N reads, not yet run
                assert gate.held == [N]
            for i in cancel:
                scopes[i].cancel()
            await wait_until(lambda: not any(s.cancel_called and i not in cancel
                                             for i, s in enumerate(scopes)))
            await anyio.sleep(0.01)  # the cancelled handlers see their cancels
            gate.open()
            await wait_until(lambda: len(results) == N - len(cancel))
            stats = dev.stats()
            gc.collect()
            await dev.sync()
            await dev.sync()
            settled, after = dev.stats(), dev.memory_stats()
            queued = sum(len(q) for q in dev._server.executor.streams.queues.values())
            assert (settled.launches, settled.blocks) == (stats.launches, stats.blocks)
            done.set()
    finally:
        if not gate.gate.is_set():
            gate.open()
    for i, out in results.items():
        assert_close(out, chain8_np(xs[i]), rtol=1e-5, atol=1e-6)
    return Served(results, stats, (after.live_buffers - base.live_buffers,
                                   after.live_bytes - base.live_bytes), queued)


@pytest.mark.parametrize("lives_on", [False, True], ids=["ended", "lives-on"])
@pytest.mark.parametrize("where", ["inbox", "formed"])
async def test_fifty_handlers_cancelled_behind_a_busy_device_launch_nothing(
        request, where, lives_on):
    options = {"max_batch": N, "max_wait_ms": 60_000} if where == "formed" else {}
    async with device_for_test(request, **options) as dev:
        served = await serve_and_cancel(dev, where, lives_on, set(range(N)))
        assert served.results == {}
        assert (served.stats.launches, served.stats.blocks) == (0, 0)  # none of it ran
        assert served.leaked == (0, 0)
        assert served.queued == 0  # nor does any of it wait


@pytest.mark.parametrize("lives_on", [False, True], ids=["ended", "lives-on"])
@pytest.mark.parametrize("where", ["inbox", "formed"])
async def test_half_cancelled_the_live_half_shares_one_launch(request, where, lives_on):
    options = {"max_batch": N, "max_wait_ms": 60_000} if where == "formed" else {}
    async with device_for_test(request, **options) as dev:
        served = await serve_and_cancel(dev, where, lives_on, set(range(0, N, 2)))
        assert sorted(served.results) == list(range(1, N, 2))
        # one batched launch over the live half only, whose inputs are one upload
        assert served.stats.launches == 1
        assert served.stats.batched_instances == N // 2
        assert served.leaked == (0, 0)
        assert served.queued == 0


async def test_work_a_cancelled_handler_still_holds_stays_queued_and_reads_right_later(dev):
    # The handler's read is cancelled, but it keeps a tensor of its chain: that work is
    # not dead, so it is neither dropped nor run for nobody; a later read runs it.
    xn = np.linspace(-1, 1, SIZE, dtype=np.float32)
    x = af.tensor(xn, device=dev)
    await dev.sync()
    gate = Gate(dev)
    kept: list[af.Tensor] = []
    scope = anyio.CancelScope()
    carry_on = anyio.Event()

    async def handler() -> None:
        y = chain8(x)
        kept.append(y)
        with scope:
            await (y * 3.0).to_data()
        await carry_on.wait()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(handler)
            await gate.wait_held()  # its read was taken into a round that has not run
            dev.reset_stats()
            scope.cancel()
            await anyio.sleep(0.01)
            gate.open()
            await wait_until(lambda: not dev._server.running)
            after_round = dev.stats().launches  # nobody waits for y: the round left it
            gc.collect()
            await dev.sync()  # a sync drains every stream, the handler's too
            synced = dev.stats().launches
            carry_on.set()
    finally:
        if not gate.gate.is_set():
            gate.open()
    assert after_round == 0
    assert synced == 1  # y's chain, once; the cancelled y * 3 was dropped unrun
    assert_close(await kept[0].to_data(), chain8_np(xn), rtol=1e-5, atol=1e-6)
    assert dev.stats().launches == 1


async def test_readers_cancelled_while_their_round_drains_are_left_out_of_its_launch(request):
    # The cancels land on the executor thread's round after it took every stream's work
    # (held for one batched launch) and before that launch: those instances are left out.
    async with device_for_test(request, max_batch=N, max_wait_ms=60_000) as dev:
        xs = [np.full(SIZE, i / N, np.float32) for i in range(N)]
        await dev.sync()
        base = dev.memory_stats()
        dev.reset_stats()
        cancel = set(range(0, N, 2))
        scopes = [anyio.CancelScope() for _ in range(N)]
        results: dict[int, np.ndarray] = {}
        withdrawn = threading.Event()
        executor = dev._server.executor
        real_gone = executor._gone

        def cancel_half() -> None:
            for i in cancel:
                scopes[i].cancel()

        def gone(requests: list[Any]) -> set[int]:  # the round has drained its streams
            if executor.deferred.groups and not withdrawn.is_set():
                dev._server.worker.call(cancel_half)  # on the event loop, soon
                assert withdrawn.wait(60)
            return real_gone(requests)

        async def handler(i: int) -> None:
            with scopes[i]:
                results[i] = await chain8(af.tensor(xs[i], device=dev)).to_data()
            if scopes[i].cancelled_caught and all(scopes[j].cancelled_caught for j in cancel):
                withdrawn.set()

        executor._gone = gone
        try:
            async with anyio.create_task_group() as tg:
                for i in range(N):
                    tg.start_soon(handler, i)
        finally:
            withdrawn.set()
            del executor._gone
        assert sorted(results) == sorted(set(range(N)) - cancel)
        for i, out in results.items():
            assert_close(out, chain8_np(xs[i]), rtol=1e-5, atol=1e-6)
        stats = dev.stats()
        assert stats.launches == 1 and stats.batched_instances == N // 2
        assert stats.blocks == N  # the live half's uploads and instances only
        del results
        gc.collect()
        await dev.sync()
        await dev.sync()
        after = dev.memory_stats()
        assert (after.live_buffers, after.live_bytes) == (base.live_buffers, base.live_bytes)
