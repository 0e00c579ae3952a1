"""The row schedule of a reduction kernel: what each phase computes, reads and holds.

A reduction kernel with reductions ``0 .. R-1`` runs phases ``0 .. R`` over each output
row. Phase ``p`` starts, for ``p >= 1``, with the row values that reduction ``p - 1``
makes available (its result and the ``OUT`` work on it, whose stores run once per row),
then makes one pass over the row's elements: the element work of phase ``p``, its
stores, and the fold of reduction ``p`` (all but the last phase fold).

A pass gets the element values it reads in one of two ways, the *variant*:

* *held*: each thread keeps the values a later pass reads in registers (a few per
  thread, one per element it owns), so every element is loaded and computed once;
* *streamed*: a pass loads what it reads again and recomputes the element work of
  earlier phases it depends on (a row of any length).

Row values are cheap (one per row): every pass computes the ones its work reads.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .ir import Arg, Kernel, Level

__all__ = ["RowValues", "RowWords", "Phase", "row_phases", "held_bytes"]


@dataclass(frozen=True, slots=True)
class RowWords:
    """A reduction launch whose passes take a row four elements at a time (one ``vec4``
    word: the row's last folded dimension is a multiple of 4 long). The element loads
    and stores in ``loads`` and ``stores`` are contiguous and aligned along it: bound as
    ``vec4`` words, one access each; the others take four scalar accesses."""

    loads: frozenset[int]
    stores: frozenset[int]


@dataclass(frozen=True, slots=True)
class RowValues:
    """Row values to compute, in this order: reductions' results, per-row loads, ``OUT``
    instructions (body order)."""

    results: tuple[int, ...]
    loads: tuple[int, ...]
    instrs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Phase:
    """Phase ``index``: its per-row stores (``out_stores``, reading ``out_rows``) and its
    pass over the row, if it has one. The pass reads ``loads`` from memory and ``held``
    from registers, computes ``instrs`` (reading ``rows``), runs ``stores``, keeps
    ``hold`` for later passes and, where ``fold``, feeds reduction ``index``."""

    index: int
    out_stores: tuple[int, ...]
    out_rows: RowValues
    has_pass: bool
    loads: tuple[int, ...]
    held: tuple[Arg, ...]
    instrs: tuple[int, ...]
    rows: RowValues
    stores: tuple[int, ...]
    hold: tuple[Arg, ...]
    fold: bool


def _phase_of(k: Kernel, a: Arg) -> int:
    if a.kind == "v":
        return k.body[a.index].phase
    return a.index + 1 if a.kind == "r" else 0


def _is_row(k: Kernel, a: Arg) -> bool:
    if a.kind == "in":
        return k.loads[a.index].level is Level.OUT
    if a.kind == "v":
        return k.body[a.index].level is Level.OUT
    return True  # a result or a scalar


def _element_args(k: Kernel, args: list[Arg]) -> list[Arg]:
    """``args`` and, for gather loads among them, their index loads."""
    out = []
    for a in args:
        if _is_row(k, a):
            continue
        out.append(a)
        g = k.loads[a.index].gather if a.kind == "in" else None
        if g is not None:
            out.append(Arg("in", g[0]))
    return out


def _rows(k: Kernel, args: list[Arg]) -> RowValues:
    """The row values behind ``args`` (through ``OUT`` instructions)."""
    results: set[int] = set()
    loads: set[int] = set()
    instrs: set[int] = set()
    todo = [a for a in args if _is_row(k, a)]
    while todo:
        a = todo.pop()
        if a.kind == "r":
            results.add(a.index)
        elif a.kind == "in":
            loads.add(a.index)
        elif a.kind == "v" and a.index not in instrs:
            instrs.add(a.index)
            todo += k.body[a.index].args
    return RowValues(tuple(sorted(results)), tuple(sorted(loads)), tuple(sorted(instrs)))


@functools.lru_cache(maxsize=256)
def row_phases(k: Kernel, held: bool) -> tuple[Phase, ...]:
    """The phases of reduction kernel ``k`` in the held or the streamed variant."""
    n = len(k.reduces)
    element = [j for j, ins in enumerate(k.body) if ins.level is not Level.OUT]
    direct: list[list[Arg]] = []  # per phase: element values its pass reads
    for p in range(n + 1):
        reads = [a for j in element if k.body[j].phase == p for a in k.body[j].args]
        reads += [st.value for st in k.stores if st.level is not Level.OUT
                  and _phase_of(k, st.value) == p]
        if p < n:
            reads.append(k.reduces[p].value)
        direct.append(_element_args(k, reads))
    home: dict[Arg, int] = {}  # where a value is loaded or computed (held variant)
    for p in range(n + 1):
        for a in direct[p]:
            home.setdefault(a, p if a.kind == "in" else _phase_of(k, a))
    iotas = {Arg("in", i) for i, ld in enumerate(k.loads) if ld.iota is not None}  # computed
    # from the index wherever they are read: never held
    phases = []
    for p in range(n + 1):
        own = [j for j in element if k.body[j].phase == p]
        stores = tuple(s for s, st in enumerate(k.stores) if st.level is not Level.OUT
                       and _phase_of(k, st.value) == p)
        if held:
            instrs = own
            here = set(direct[p])
            loads = sorted(a.index for a in here if a.kind == "in" and (
                home[a] == p or a in iotas))
            held_in = tuple(sorted((a for a in here - iotas if home[a] < p), key=_order))
            later = {a for q in range(p + 1, n + 1) for a in direct[q]}
            hold = tuple(sorted((a for a in later - iotas if home[a] == p), key=_order))
        else:
            need = set(direct[p]) | {Arg("v", j) for j in own}
            todo = list(need)
            while todo:  # recompute what earlier phases computed
                a = todo.pop()
                if a.kind == "v":
                    for b in _element_args(k, list(k.body[a.index].args)):
                        if b not in need:
                            need.add(b)
                            todo.append(b)
            instrs = [j for j in element if Arg("v", j) in need]
            loads = sorted(a.index for a in need if a.kind == "in")
            held_in, hold = (), ()
        out_stores = tuple(s for s, st in enumerate(k.stores) if st.level is Level.OUT
                           and max(1, _phase_of(k, st.value)) == p) if p else ()
        has_pass = p < n or bool(own) or bool(stores)
        folds = [k.reduces[p].value] if p < n else []  # a row value where rows have one element
        phases.append(Phase(
            p, out_stores, _rows(k, [k.stores[s].value for s in out_stores]), has_pass,
            tuple(loads), held_in, tuple(instrs),
            _rows(k, [a for j in instrs for a in k.body[j].args] + folds), stores, hold, p < n))
    return tuple(phases)


def _order(a: Arg) -> tuple[str, int]:
    return a.kind, a.index


@functools.lru_cache(maxsize=256)
def held_bytes(k: Kernel) -> int:
    """Bytes per element a thread holds between passes in the held variant."""
    total = 0
    for ph in row_phases(k, True):
        for a in ph.hold:
            dt = k.loads[a.index].dtype if a.kind == "in" else k.body[a.index].out
            total += dt.itemsize
    return total
