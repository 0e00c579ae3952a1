"""Layouts: how a tensor's elements sit in its storage (shape, strides, offset).

Every kernel writes its outputs dense (C order, offset 0); views — permute, expand,
slicing, flip, squeeze and reshape where strides allow — only make a new layout over the
same storage. A layout is plain data: kernels read it through their load index maps and
the host through ``numpy.lib.stride_tricks``. Strides and offsets count elements.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Layout", "IndexItem", "dense_strides"]


def dense_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """C-order strides of ``shape`` in elements."""
    strides = []
    acc = 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True, slots=True)
class Layout:
    """A strided view of a storage: element ``c`` is at ``offset + sum(c[d] * strides[d])``."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @staticmethod
    def dense(shape: tuple[int, ...]) -> Layout:
        return Layout(shape, dense_strides(shape), 0)

    @property
    def is_dense(self) -> bool:
        """C-contiguous from offset 0: element ``i`` is storage word ``i``."""
        if self.offset:
            return False
        acc = 1
        for d, s in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if d != 1 and s != acc:
                return False
            acc *= d
        return True

    def span(self) -> tuple[int, int]:
        """``(first, last + 1)`` storage words touched (``(offset, offset)`` when empty)."""
        if any(d == 0 for d in self.shape):
            return self.offset, self.offset
        lo = hi = self.offset
        for d, s in zip(self.shape, self.strides, strict=True):
            if s < 0:
                lo += (d - 1) * s
            else:
                hi += (d - 1) * s
        return lo, hi + 1

    # -- views: each returns the layout of the view over the same storage ----------------
    def permute(self, axes: tuple[int, ...]) -> Layout:
        return Layout(tuple(self.shape[a] for a in axes),
                      tuple(self.strides[a] for a in axes), self.offset)

    def expand(self, shape: tuple[int, ...]) -> Layout:
        """Broadcast to ``shape`` (numpy rules; the caller checked they hold)."""
        pad = len(shape) - len(self.shape)
        strides = []
        for d, size in enumerate(shape):
            if d < pad:
                strides.append(0)
            else:
                own = self.shape[d - pad]
                strides.append(self.strides[d - pad] if own == size else 0)
        return Layout(shape, tuple(strides), self.offset)

    def index(self, items: tuple[IndexItem, ...]) -> Layout:
        """Basic indexing by normalized items in output order; source axes no item
        names are kept whole, after the named ones (the caller names them in order)."""
        shape: list[int] = []
        strides: list[int] = []
        offset = self.offset
        used = 0
        for it in items:
            if it.kind == "new":
                shape.append(1)
                strides.append(0)
                continue
            s = self.strides[it.axis]
            used = it.axis + 1
            if it.kind == "int":
                offset += it.start * s
            else:
                if it.length:
                    offset += it.start * s
                shape.append(it.length)
                strides.append(s * it.step)
        shape.extend(self.shape[used:])
        strides.extend(self.strides[used:])
        return Layout(tuple(shape), tuple(strides), offset)

    def reshape(self, shape: tuple[int, ...]) -> Layout | None:
        """The layout of ``shape`` over the same storage, or ``None`` when strides cannot
        express it (the caller copies first). numpy's no-copy reshape rule: each group of
        source axes that merges or splits must be contiguous within itself."""
        if self.is_dense or 0 in shape:
            return Layout.dense(shape) if self.is_dense or not self.offset else None
        old = [(d, s) for d, s in zip(self.shape, self.strides, strict=True) if d != 1]
        new = list(shape)
        out = [0] * len(new)
        oi = ni = 0
        while ni < len(new) and oi < len(old):
            nj, oj = ni + 1, oi + 1
            np_, op = new[ni], old[oi][0]
            while np_ != op:
                if np_ < op:
                    np_ *= new[nj]
                    nj += 1
                else:
                    op *= old[oj][0]
                    oj += 1
            for k in range(oi, oj - 1):
                if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                    return None
            out[nj - 1] = old[oj - 1][1]
            for k in range(nj - 1, ni, -1):
                out[k - 1] = out[k] * new[k]
            ni, oi = nj, oj
        return Layout(tuple(new), tuple(out), self.offset)


@dataclass(frozen=True, slots=True)
class IndexItem:
    """One normalized item of a basic index: ``int`` picks ``start`` on ``axis``;
    ``slice`` keeps ``length`` elements from ``start`` by ``step``; ``new`` adds an axis."""

    kind: str
    axis: int = -1
    start: int = 0
    step: int = 1
    length: int = 0
