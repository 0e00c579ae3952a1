"""What a task posts to the executor: a read, a sync of every stream, or an empty_cache."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Protocol

import anyio
import numpy as np

from .._core.dtype import DType
from ..ir import Layout

__all__ = ["Readable", "Request"]


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


@dataclass(eq=False)
class Request:
    """A read (``tensor`` set), a sync of every stream, or an ``empty_cache``, posted by
    one task. ``data`` and ``error`` are written by the executor thread, before ``done``."""

    stream: Hashable
    tensor: Readable | None = None
    empty_cache: bool = False
    done: anyio.Event = field(default_factory=anyio.Event)
    data: np.ndarray | None = None
    error: BaseException | None = None
    cancelled: bool = False
    sync: bool = False
    posted: float = 0.0  # when it was posted (anyio's clock), if rounds may wait
    kept: list[tuple[str, str, int]] = field(default_factory=list)  # debug warnings to issue
