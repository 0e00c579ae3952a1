"""The kernel IR: one backend-neutral description of every kernel fusers produce.

A :class:`Kernel` iterates over a canonical index space of ``rank`` dimensions (the
shape of its element-wise work, or the input shape of its reductions). It reads inputs
through :class:`Load` index maps, computes a straight-line body of :class:`Instr` on
registers, optionally folds values with a chain of :class:`Reduce` over the same axes,
and writes values through :class:`Store` index maps. Each instruction has a *level*:

* ``ROW`` — one value per element of the index space (element-wise work, and the
  prologue that feeds the first reduction: fused on read);
* ``OUT`` — one value per output row of the reductions (their epilogue: fused on write);
* ``POST`` — one value per element again, after a reduction, reading ``OUT`` values
  broadcast along the reduced axes (``x / x.sum(-1, keepdims=True)`` in one kernel).

and a *phase*: how many reductions precede it (``ROW`` work is phase 0). Reduction
``k`` folds a value of phase ``k`` or earlier, and its result (``Arg("r", k)``) is read
from phase ``k + 1`` on, so ``softmax`` — a max, then a sum of ``exp(x - max)``, then a
division — is one kernel of three phases: backends hold a row while its phases run
(registers) or read it again for each phase.

A *matmul* kernel (``matmul=True``) is a reduction too: its index space is the output's
shape plus K, its ROW body is the product of loads 0 and 1 and its reduction a sum over
K; backends schedule it as a tiled matmul, and its OUT work (bias, activation, residual)
runs in the tile's store. A *gather* load reads its input at a coordinate taken from
another load (``Load.gather``). An *iota* load (``Load.iota``) reads no buffer: its value
is ``start + word * step``, an arange computed from the word its index map gives, so
views of an arange (reshaped, broadcast, transposed, sliced, flipped) are read fused.

A kernel is pure structure — no sizes, strides or values — so equal kernels render to
the same WGSL and share one compiled pipeline. Sizes, strides, offsets and scalars come
with each launch as :class:`LaunchArgs`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .._core.dtype import DType

__all__ = ["Level", "Arg", "Load", "Instr", "Reduce", "Store", "Kernel", "LaunchArgs"]


class Level(enum.IntEnum):
    ROW = 0
    OUT = 1
    POST = 2


@dataclass(frozen=True, slots=True)
class Arg:
    """An operand: ``in`` (load k), ``v`` (body value k), ``s`` (scalar k) or ``r`` (the
    result of reduction k)."""

    kind: str
    index: int = 0


@dataclass(frozen=True, slots=True)
class Load:
    """One input read per element (``ROW``, in whichever phases read it) or per output
    row (``OUT``). ``dense``: element ``i`` of the index space is word ``i`` of the buffer
    (vec4-able); otherwise offset + sum(coord * stride)."""

    dtype: DType
    dense: bool
    level: Level = Level.ROW
    # (index load, index-space dimension, scalar holding the input's size there): that
    # dimension's coordinate is the index load's value, wrapped if negative and clamped.
    gather: tuple[int, int, int] | None = None
    # (scalar start, scalar step): no buffer is bound; word w reads ``start + w * step``,
    # computed in ``dtype``. Iota loads come after every bound load.
    iota: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Instr:
    """``v{k} = op(args)`` computed in ``compute``, giving ``out``, after ``phase``
    reductions (0 for ``ROW`` work)."""

    op: str
    compute: DType
    out: DType
    args: tuple[Arg, ...]
    level: Level = Level.ROW
    phase: int = 0


@dataclass(frozen=True, slots=True)
class Reduce:
    """Fold ``value`` (an element operand; a row value where rows have one element) over
    the reduced axes with a registered reduction."""

    op: str
    value: Arg
    src: DType
    acc: DType
    out: DType


@dataclass(frozen=True, slots=True)
class Store:
    """Write ``value`` (of ``level``) as ``dtype``. ``dense``: to word ``i`` of a fresh
    buffer (or of input ``inplace``'s buffer); otherwise through offset + strides."""

    value: Arg
    dtype: DType
    level: Level = Level.ROW
    dense: bool = True
    inplace: int | None = None


@dataclass(frozen=True, slots=True)
class Kernel:
    rank: int
    loads: tuple[Load, ...]
    body: tuple[Instr, ...]
    stores: tuple[Store, ...]
    scalars: tuple[DType, ...]
    reduces: tuple[Reduce, ...] = ()  # in phase order
    reduced: tuple[bool, ...] = ()  # per dimension of the index space: folded?
    vec4: bool = False
    matmul: bool = False
    _hash: int = field(init=False, repr=False, compare=False)
    names: tuple[str, ...] = field(init=False, repr=False, compare=False)
    title: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Kernels key the backend caches on every launch: hash the deep structure once,
        # and name the kernel once (launches are counted and traced by name).
        object.__setattr__(self, "_hash", hash((
            self.rank, self.loads, self.body, self.stores, self.scalars, self.reduces,
            self.reduced, self.vec4, self.matmul)))
        names = self._names()
        kind = "matmul" if self.matmul else "reduce" if self.reduces else "elementwise"
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "title", f"{kind}[{' '.join(names)}]")

    def __hash__(self) -> int:
        return self._hash

    @property
    def reduce(self) -> Reduce | None:
        """The first reduction (a matmul's sum over K), or None."""
        return self.reduces[0] if self.reduces else None

    @property
    def storage_bindings(self) -> int:
        return sum(1 for ld in self.loads if ld.iota is None) + sum(
            1 for s in self.stores if s.inplace is None)

    def _names(self) -> tuple[str, ...]:
        """The primitives it runs, in order (for launch names and fault injection)."""
        ops = ["matmul"] if self.matmul else []
        for phase in range(len(self.reduces) + 1):
            if self.matmul and not phase:
                continue  # its product
            if phase and not self.matmul:
                ops.append(self.reduces[phase - 1].op)
            ops += [i.op for i in self.body if i.phase == phase]
        if ops:
            return tuple(ops)
        return ("arange",) if self.loads and self.loads[0].iota is not None else ("copy",)

    def without_inplace(self) -> Kernel:
        """The same kernel writing every output to a fresh buffer."""
        stores = tuple(Store(s.value, s.dtype, s.level, s.dense, None) for s in self.stores)
        return Kernel(self.rank, self.loads, self.body, stores, self.scalars, self.reduces,
                      self.reduced, self.vec4, self.matmul)

    def over_instances(self, loads_dense: tuple[bool, ...],
                       stores_dense: tuple[bool, ...]) -> Kernel:
        """This kernel run over many instances at once (horizontal batching): a leading
        index-space dimension numbers the instance, and each instance's data sits at a
        stride of its own in every bound buffer (the dimension's stride in the maps).
        A load or store stays dense where the instances' data follow each other without
        gaps; outputs are never written in place."""
        loads = tuple(Load(ld.dtype, dense, ld.level,
                           None if ld.gather is None else (ld.gather[0], ld.gather[1] + 1,
                                                           ld.gather[2]), ld.iota)
                      for ld, dense in zip(self.loads, loads_dense, strict=True))
        stores = tuple(Store(st.value, st.dtype, st.level, dense, None)
                       for st, dense in zip(self.stores, stores_dense, strict=True))
        vec4 = self.vec4 and all(loads_dense) and all(stores_dense)
        reduced = (False,) + self.reduced if self.reduced else ()
        return Kernel(self.rank + 1, loads, self.body, stores, self.scalars, self.reduces,
                      reduced, vec4, self.matmul)


@dataclass(frozen=True, slots=True)
class LaunchArgs:
    """The sizes and values of one launch.

    ``shape`` is the index space; ``maps`` gives (offset, strides) per non-dense load and
    then per non-dense store, in order, each stride per index-space dimension (0 along
    broadcast dimensions and, for OUT loads, along reduced ones).
    """

    shape: tuple[int, ...]
    maps: tuple[tuple[int, tuple[int, ...]], ...]
    scalars: tuple[float | int | bool, ...]
