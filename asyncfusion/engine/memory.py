"""The one owner of device memory: tensor id -> reference-counted storage.

A storage is one backend buffer, or one instance's range of a *slab* (the packed output
of a batched kernel, freed once its last instance is). Kernel outputs and uploads create
one; a view binds its tensor id to the storage it views (one more reference), so a view
keeps its base's data alive after the base's handle is gone. Only :meth:`Memory.release` gives buffers back, and
only when the last tensor bound to a storage is released. Backends allocate, launch and
read; they never see this table.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable

from ..backends.base import Backend, Buffer

__all__ = ["Memory", "Poison", "Slab", "Storage"]


class Poison:
    """Stands in the table for a tensor whose computation failed.

    The error keeps its traceback as text (a note), not as frames: frames hold the round
    that failed — its requests and their tensors — for as long as the poison lives, and a
    poisoned tensor's own request would then keep it alive for good.
    """

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        seen: set[int] = set()
        exc: BaseException | None = error
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            if exc.__traceback__ is not None:
                exc.add_note("raised on the device's executor thread at:\n"
                             + "".join(traceback.format_tb(exc.__traceback__)).rstrip())
                exc.__traceback__ = None
            exc = exc.__cause__ or exc.__context__
        self.error = error


class Slab:
    """One backend buffer shared by the storages of a batched kernel's instances."""

    __slots__ = ("buffer", "live")

    def __init__(self, buffer: Buffer, live: int) -> None:
        self.buffer = buffer
        self.live = live  # storages carved from it that are not released yet


class Storage:
    """A buffer, or the range of ``slab`` from byte ``at`` that ``buffer`` stands for.

    A storage that is not ``owned`` (a buffer adopted from outside, ``af.adopt``) is
    never freed here: its last release only forgets it, and its owner destroys it."""

    __slots__ = ("buffer", "refs", "slab", "at", "owned")

    def __init__(self, buffer: Buffer, slab: Slab | None = None, at: int = 0,
                 owned: bool = True) -> None:
        self.buffer = buffer
        self.refs = 0
        self.slab = slab
        self.at = at
        self.owned = owned


class Memory:
    """Owned by the executor thread (one round at a time)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.table: dict[int, Storage | Poison] = {}

    def __contains__(self, tid: int) -> bool:
        return tid in self.table

    def get(self, tid: int) -> Storage | Poison | None:
        return self.table.get(tid)

    def storage(self, tid: int) -> Storage:
        s = self.table[tid]
        assert isinstance(s, Storage)
        return s

    def poisoned(self, ids: Iterable[int]) -> Poison | None:
        table = self.table
        for tid in ids:
            h = table.get(tid)
            if type(h) is Poison:
                return h
        return None

    def bind(self, tid: int, storage: Storage) -> None:
        """``tid`` now refers to ``storage`` (a new tensor or a view)."""
        self.release(tid)
        storage.refs += 1
        self.table[tid] = storage

    def allocate(self, tid: int, nbytes: int) -> Storage:
        storage = Storage(self.backend.alloc(nbytes))
        self.bind(tid, storage)
        return storage

    def poison(self, tid: int, poison: Poison) -> None:
        self.release(tid)
        self.table[tid] = poison

    def move(self, src: int, dst: int) -> None:
        """Hand ``src``'s storage to ``dst`` (an output written in place of its input)."""
        self.table[dst] = self.table.pop(src)

    def release(self, tid: int) -> None:
        h = self.table.pop(tid, None)
        if type(h) is Storage:
            h.refs -= 1
            if h.refs == 0 and h.owned:
                slab = h.slab
                if slab is None:
                    self.backend.free(h.buffer)
                else:
                    slab.live -= 1
                    if slab.live == 0:
                        self.backend.free(slab.buffer)

    def release_all(self) -> None:
        for tid in list(self.table):
            self.release(tid)
