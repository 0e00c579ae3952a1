"""What a task posts to the executor: a read, a sync of every stream, or an empty_cache."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .._core.dtype import DType
from ..ir import Layout

__all__ = ["Done", "Readable", "Request"]


class Readable(Protocol):
    """What a read names: a tensor's id, shape, dtype and layout (None: dense)."""

    @property
    def id(self) -> int: ...

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> DType: ...

    @property
    def layout(self) -> Layout | None: ...


class _Event(Protocol):
    """trio's Event, as far as a request uses it."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    async def wait(self) -> None: ...


class Done:
    """A request's one-shot completion, on the running loop's own primitive: an asyncio
    future, or a trio Event (an ``anyio.Event`` costs ~4.5 µs to make, set and await on
    asyncio; a future 0.25). Made, set and awaited on the event-loop thread only."""

    __slots__ = ("_fut", "_event")

    def __init__(self) -> None:
        loop = asyncio._get_running_loop()
        self._fut: asyncio.Future[None] | None = None
        self._event: _Event | None = None
        if loop is not None:
            self._fut = loop.create_future()
        else:  # trio: a request is only made inside a running event loop
            self._event = sys.modules["trio"].Event()

    def set(self) -> None:
        fut = self._fut
        if fut is None:
            assert self._event is not None
            self._event.set()
        elif not fut.done():  # cancelled with its waiter: nothing left to tell
            fut.set_result(None)

    def is_set(self) -> bool:
        fut = self._fut
        if fut is None:
            assert self._event is not None
            return self._event.is_set()
        return fut.done()

    async def wait(self) -> None:
        fut = self._fut
        if fut is None:
            assert self._event is not None
            await self._event.wait()
        else:
            await fut


@dataclass(eq=False, slots=True)
class Request:
    """A read (``tensor`` set), a sync of every stream, or an ``empty_cache``, posted by
    one task. ``data`` and ``error`` are written by the executor thread, before ``done``."""

    stream: Hashable
    tensor: Readable | None = None
    empty_cache: bool = False
    done: Done = field(default_factory=Done)
    data: np.ndarray | None = None
    error: BaseException | None = None
    cancelled: bool = False
    sync: bool = False
    posted: float = 0.0  # when it was posted (anyio's clock), if rounds may wait
    kept: list[tuple[str, str, int]] | None = None  # debug mode: warnings to issue
