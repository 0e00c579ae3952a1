"""Launches over buffers larger than one storage binding.

WebGPU binds at most ``max-storage-buffer-binding-size`` bytes of a buffer to a kernel
(lavapipe: 128 MiB), while one buffer may hold more (``max-buffer-size``: 2 GiB there).
A launch whose buffers all fit binds them whole, as always. Otherwise :func:`pieces`
plans it:

* An element-wise kernel without gathers is split along the first dimension of its index
  space (of the whole index space, flattened, where every load and store is dense) into
  launches whose reads and writes each fit one binding. Each buffer is bound from the
  aligned start of the range the piece touches, and the piece's maps are shifted by as
  much; its dense loads and stores become strided ones, so that they may start anywhere.
* Every other kernel (a reduction, say) binds, of each buffer it reads through a map, only
  the range the map touches: a slice of a large tensor reduces where the slice fits.
* What neither covers raises :class:`~asyncfusion.LimitError` naming the binding limit,
  the adapter's numbers and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._core.errors import LimitError
from ...ir import numel
from ...kernel import Kernel, LaunchArgs, Load, Store
from .runtime import Buffer

__all__ = ["oversized", "pieces", "refuse", "Piece"]

_Map = tuple[int, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class Piece:
    """One launch of a planned kernel: its kernel, sizes and (windows of) buffers."""

    kernel: Kernel
    args: LaunchArgs
    loads: list[Buffer]
    stores: list[Buffer]


def oversized(buffers: list[Buffer], limit: int) -> int:
    """The most bytes any of ``buffers`` holds past ``limit`` (0: all fit)."""
    return max((b.nbytes for b in buffers if b.nbytes > limit), default=0)


def refuse(what: str, nbytes: int, limit: int, largest: int, remedy: str) -> LimitError:
    """The error for a launch that must bind ``nbytes`` of one buffer at once."""
    return LimitError(
        f"{what} binds {nbytes} bytes of one buffer at once, more than this adapter's "
        f"max-storage-buffer-binding-size ({limit} bytes; its max-buffer-size, the largest "
        f"tensor, is {largest} bytes). Element-wise ops split such bindings; this one "
        f"cannot: {remedy}")


def _dense(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def _reach(m: _Map, shape: tuple[int, ...], first: int) -> tuple[int, int]:
    """The lowest and highest element a map touches over ``shape`` (from dimension
    ``first`` on; the dimensions before count at coordinate 0)."""
    off, strides = m
    lo = hi = off
    for n, s in zip(shape[first:], strides[first:], strict=True):
        lo += min(0, s * (n - 1))
        hi += max(0, s * (n - 1))
    return lo, hi


def _window(buf: Buffer, maps: list[_Map], shape: tuple[int, ...], item: int,
            align: int) -> tuple[Buffer, int]:
    """The part of ``buf`` that ``maps`` touch over ``shape``, bound from an aligned
    byte, and the elements the maps' offsets move back by."""
    reach = [_reach(m, shape, 0) for m in maps]
    start = buf.offset + min(lo for lo, _ in reach) * item
    base = start - start % align
    end = buf.offset + (max(hi for _, hi in reach) + 1) * item
    size = -(-(end - base) // 4) * 4
    assert (base - buf.offset) % item == 0
    return Buffer(buf.gpu, size, size, base), (base - buf.offset) // item


def _bound(kernel: Kernel) -> int:
    """How many of the launch's buffers are loads' (iota loads, last, bind none)."""
    return sum(1 for ld in kernel.loads if ld.iota is None)


def _bindings(kernel: Kernel) -> list[tuple[int, list[int]]]:
    """Per bound buffer: its place among the launch's buffers (the bound loads', then
    one per store) and the maps (indices into loads' then stores') that address it."""
    out: list[tuple[int, list[int]]] = []
    for k, ld in enumerate(kernel.loads):
        if ld.iota is None:
            out.append((k, [k]))
    bound = len(out)
    for j, st in enumerate(kernel.stores):
        m = len(kernel.loads) + j
        if st.inplace is None:
            out.append((bound + j, [m]))
        else:
            out[st.inplace][1].append(m)
    return out


def _strided(kernel: Kernel, args: LaunchArgs) -> tuple[Kernel, LaunchArgs]:
    """``kernel`` with every load and store strided (over one flat dimension where all
    were dense), and its launch's maps to match."""
    loads = tuple(Load(ld.dtype, False, ld.level, ld.gather, ld.iota) for ld in kernel.loads)
    stores = tuple(Store(st.value, st.dtype, st.level, False, st.inplace)
                   for st in kernel.stores)
    dense = [ld.dense for ld in kernel.loads] + [st.dense for st in kernel.stores]
    if all(dense):
        shape: tuple[int, ...] = (numel(args.shape),)
        maps: list[_Map] = [(0, (1,))] * len(dense)
    else:
        shape = args.shape
        given = iter(args.maps)
        maps = [(0, _dense(shape)) if d else next(given) for d in dense]
    strided = Kernel(len(shape), loads, kernel.body, stores, kernel.scalars)
    return strided, LaunchArgs(shape, tuple(maps), args.scalars)


def _items(kernel: Kernel) -> list[int]:
    return [ld.dtype.itemsize for ld in kernel.loads] + [st.dtype.itemsize
                                                          for st in kernel.stores]


def _split(kernel: Kernel, args: LaunchArgs, buffers: list[Buffer], limit: int,
           align: int) -> list[Piece] | None:
    """An element-wise launch as pieces along its first dimension that each bind at most
    ``limit`` bytes of every buffer; None where even one row does not fit."""
    kernel, args = _strided(kernel, args)
    shape, maps, items = args.shape, list(args.maps), _items(kernel)
    for slack in (0, align + 4):  # windows that start aligned; else room to align them
        per_piece = shape[0]
        for _, ms in _bindings(kernel):
            step = {maps[m][1][0] for m in ms}
            if len(step) != 1:
                return None  # one buffer read at two paces: no row split keeps it in one
            s0 = abs(step.pop())
            reach = [_reach(maps[m], shape, 1) for m in ms]
            rest = (max(hi for _, hi in reach) - min(lo for lo, _ in reach) + 1) * items[ms[0]]
            room = limit - slack - rest  # bytes left for the rows after the first
            if room < 0:
                return None
            if s0:
                per_piece = min(per_piece, room // (s0 * items[ms[0]]) + 1)
        out = _pieces(kernel, args, buffers, per_piece, align)
        if all(b.nbytes <= limit for p in out for b in p.loads + p.stores):
            return out
    return None


def _pieces(kernel: Kernel, args: LaunchArgs, buffers: list[Buffer], per_piece: int,
            align: int) -> list[Piece]:
    """``per_piece`` rows of the (strided) launch at a time, each binding the windows of
    the buffers it touches."""
    shape, maps, items = args.shape, list(args.maps), _items(kernel)
    rows = shape[0]
    out = []
    n_loads = _bound(kernel)
    for r0 in range(0, rows, per_piece):
        part = (min(per_piece, rows - r0),) + shape[1:]
        moved = [(off + r0 * strides[0], strides) for off, strides in maps]
        bound = list(buffers)
        for place, ms in _bindings(kernel):
            window, shift = _window(buffers[place], [moved[m] for m in ms], part,
                                    items[ms[0]], align)
            bound[place] = window
            for m in ms:
                moved[m] = (moved[m][0] - shift, moved[m][1])
        _lend(kernel, bound, n_loads)
        out.append(Piece(kernel, LaunchArgs(part, tuple(moved), args.scalars),
                         bound[:n_loads], bound[n_loads:]))
    return out


def _lend(kernel: Kernel, bound: list[Buffer], n_loads: int) -> None:
    """A store written in place names its load's (window of the) buffer."""
    for j, st in enumerate(kernel.stores):
        if st.inplace is not None:
            bound[n_loads + j] = bound[st.inplace]


def _windowed(kernel: Kernel, args: LaunchArgs, buffers: list[Buffer], limit: int,
              align: int) -> Piece | None:
    """The launch binding, of each buffer read or written through a map, only the range
    the map touches; None where a buffer still binds more than ``limit`` bytes."""
    dense = [ld.dense for ld in kernel.loads] + [st.dense for st in kernel.stores]
    given = iter(args.maps)
    maps: list[_Map | None] = [None if d else next(given) for d in dense]
    gathers = {k for k, ld in enumerate(kernel.loads) if ld.gather is not None}
    items = _items(kernel)
    bound = list(buffers)
    for place, ms in _bindings(kernel):
        if buffers[place].nbytes <= limit:
            continue
        known = [maps[m] for m in ms]
        if any(m is None for m in known) or any(m in gathers for m in ms):
            return None  # read densely from its start, or at gathered coordinates
        window, shift = _window(buffers[place], [m for m in known if m is not None],
                                args.shape, items[ms[0]], align)
        if window.nbytes > limit:
            return None
        bound[place] = window
        for m in ms:
            off, strides = maps[m] or (0, ())
            maps[m] = (off - shift, strides)
    shifted = tuple(m for m in maps if m is not None)
    n_loads = _bound(kernel)
    _lend(kernel, bound, n_loads)
    return Piece(kernel, LaunchArgs(args.shape, shifted, args.scalars), bound[:n_loads],
                 bound[n_loads:])


def pieces(kernel: Kernel, args: LaunchArgs, loads: list[Buffer], stores: list[Buffer],
           limit: int, largest: int, align: int) -> list[Piece]:
    """The launches that run ``kernel`` over buffers of which one holds more than
    ``limit`` bytes (see the module's docstring), or a LimitError."""
    buffers = loads + stores
    elementwise = not kernel.reduces and not kernel.matmul and all(
        ld.gather is None for ld in kernel.loads)
    if elementwise:
        split = _split(kernel, args, buffers, limit, align)
        if split is not None:
            return split
        remedy = "one row of its index space alone is larger; reshape the tensors first"
    elif not kernel.matmul:
        one = _windowed(kernel, args, buffers, limit, align)
        if one is not None:
            return [one]
        remedy = ("reduce (or gather from) slices of at most that many bytes and combine "
                  "the results, for example t[:h].sum() + t[h:].sum()")
    else:
        remedy = ("multiply blocks of rows of at most that many bytes (a[:h] @ b, "
                  "a[h:] @ b) and concatenate them")
    raise refuse(kernel.title, oversized(buffers, limit), limit, largest, remedy)
