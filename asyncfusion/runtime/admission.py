"""Back pressure: at most ``max_pending`` requests at work on a device at once.

``async with dev.admit():`` around a request's device work takes a slot, or waits up to
``timeout`` seconds for one, or raises :class:`~asyncfusion.errors.Overloaded` (answer 503
with ``Retry-After``). Slots go to waiters first come, first served. A refused request
registered nothing, so overload costs the device no work.
"""

from __future__ import annotations

import collections
import contextlib
import math
from collections.abc import AsyncIterator

import anyio

from .._core.errors import Overloaded

__all__ = ["Admission"]


class Admission:
    """A counted gate; used from the event loop that opened the device."""

    def __init__(self, limit: int | None, retry_after: float) -> None:
        self.limit = limit
        self.retry_after = retry_after
        self.active = 0
        self.waiters: collections.deque[anyio.Event] = collections.deque()
        self.admitted = 0
        self.rejected = 0

    @contextlib.asynccontextmanager
    async def __call__(self, timeout: float = 0.0) -> AsyncIterator[None]:
        await self._acquire(timeout)
        try:
            yield
        finally:
            self._release()

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
        raise Overloaded(
            f"the device is at its limit of {self.limit} pending requests "
            f"(open_device(max_pending=...)); retry in {math.ceil(self.retry_after)} s "
            "(answer 503 with Retry-After), or raise max_pending if the device keeps up",
            self.retry_after)

    def _leave(self, event: anyio.Event) -> None:
        """A waiter was cancelled: give back the slot it was handed, or stop waiting."""
        if event.is_set():
            self._release()
        else:
            self.waiters.remove(event)

    def _release(self) -> None:
        if self.waiters:
            self.waiters.popleft().set()  # the slot passes on; active stays
        else:
            self.active -= 1
