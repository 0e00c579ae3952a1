"""Back pressure: at most ``max_pending`` requests at work on a device at once.

``async with dev.admit():`` around a request's device work takes a slot, or waits up to
``timeout`` seconds for one, or raises :class:`~asyncfusion.Overloaded` (answer 503
with ``Retry-After``). Slots go to waiters first come, first served. A refused request
registered nothing, so overload costs the device no work.

With a latency target the number of slots adapts (additive increase, multiplicative
decrease, as TCP's congestion window does): a request that held its slot longer than the
target cuts the limit by a tenth (at most once per target interval, so one slow burst is
one cut), and every request within it adds ``1 / limit`` (about one slot per limit's worth
of requests), between 1 and ``max_pending``. Under overload the device then keeps just the
requests it finishes within the target and refuses the rest at once, instead of queueing
them all behind a fixed limit sized for a different load.
"""

from __future__ import annotations

import collections
import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable

import anyio

from .._core.errors import Overloaded

__all__ = ["Admission"]


_UNBOUNDED = 4096  # the adaptive limit's ceiling when max_pending is None


class Admission:
    """A counted gate; used from the event loop that opened the device. ``target``: the
    latency target in seconds (None: a fixed limit); ``clock``: seconds, monotonic."""

    def __init__(self, limit: int | None, retry_after: float, target: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ceiling = limit
        self.limit = limit
        self.retry_after = retry_after
        self.target = target
        self.clock = clock
        self.window = float(limit or _UNBOUNDED)  # the adaptive limit, fractional
        if target is not None:
            self.limit = int(self.window)
        self.last_cut = -math.inf
        self.active = 0
        self.waiters: collections.deque[anyio.Event] = collections.deque()
        self.admitted = 0
        self.rejected = 0

    @contextlib.asynccontextmanager
    async def __call__(self, timeout: float = 0.0) -> AsyncIterator[None]:
        await self._acquire(timeout)
        start = self.clock()
        try:
            yield
        finally:
            self._release()
            if self.target is not None:
                self._adapt(self.clock() - start, self.target)

    def _adapt(self, held: float, target: float) -> None:
        """AIMD on the limit from one request's time in its slot."""
        now, top = self.clock(), float(self.ceiling or _UNBOUNDED)
        if held > target:
            if now - self.last_cut >= target:
                self.window = max(1.0, self.window * 0.9)
                self.last_cut = now
        else:
            self.window = min(top, self.window + 1.0 / self.window)
        self.limit = max(1, int(self.window))

    async def _acquire(self, timeout: float) -> None:
        if self.limit is None or (self.active < self.limit and not self.waiters):
            self.active += 1
            self.admitted += 1
            return
        if timeout > 0:
            event = anyio.Event()
            self.waiters.append(event)
            try:
                with anyio.move_on_after(timeout):
                    await event.wait()
            except BaseException:
                self._leave(event)
                raise
            if event.is_set():  # a leaving request handed its slot over
                self.admitted += 1
                return
            self.waiters.remove(event)
        self.rejected += 1
        why = (f"the device is at its limit of {self.limit} pending requests "
               "(open_device(max_pending=...))" if self.target is None else
               f"the device is at the {self.limit} pending requests it finishes within "
               f"its latency target of {self.target * 1e3:g} ms "
               "(open_device(target_latency_ms=...))")
        raise Overloaded(
            f"{why}; retry in {math.ceil(self.retry_after)} s (answer 503 with "
            "Retry-After), or raise the limit if the device keeps up", self.retry_after)

    def _leave(self, event: anyio.Event) -> None:
        """A waiter was cancelled: give back the slot it was handed, or stop waiting."""
        if event.is_set():
            self._release()
        else:
            self.waiters.remove(event)

    def _release(self) -> None:
        if self.waiters and self.active <= (self.limit or self.active):
            self.waiters.popleft().set()  # the slot passes on; active stays
        else:
            self.active -= 1
