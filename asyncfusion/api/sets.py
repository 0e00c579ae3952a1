"""The Array API's set functions: ``af.unique_values(x)`` and its three siblings.

How many distinct values a tensor holds depends on its data, so, as :func:`nonzero`, each
**waits** for that one number (blocking outside a running event loop, where it returns
the standard's result; returning an awaitable of it inside one:
``await af.unique_values(x)``) and then records lazy work:

1. a stable ``argsort`` of the flattened tensor and the sorted values (``take``);
2. a flag where a sorted value differs from the one before it (``!=``, true for NaN, so
   each NaN is a value of its own, as the standard and array-api-strict say; ``-0.0``
   and ``0.0`` are one value);
3. :func:`~asyncfusion.api.nonzero.with_positions`: a running count of the flags, the one
   read (the number of distinct values), and the compaction kernel that writes where each
   run of equal values starts.

A run's first sorted element is its first occurrence in ``x`` (the sort is stable), so
``indices`` is the sort order at the run starts and ``values`` ``x`` there; ``counts``
are the differences of the run starts; ``inverse_indices`` the running count scattered
back through the sort order by a small custom kernel. Values come out sorted, NaNs last in
the order they occur. Indices and counts are int32 (the index dtype). The sort ranks every
element of a 32-bit dtype through the sorting network (:mod:`asyncfusion.api.sorting`): any
size. 64-bit dtypes sort by rank (see :func:`~asyncfusion.argsort`), so ``x`` may hold up
to 8192 of them, and fewer where n * n 4-byte flags do not fit in one of the device's
buffers (5792 on lavapipe's 128 MiB).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import numpy as np

from .._core.dtype import DType
from .._core.errors import LimitError
from .._debug import in_event_loop
from ..extend.custom_kernel import Spec, custom_kernel
from ..lazy.tensor import Tensor, not_a_tensor
from .creation import full, zeros
from .indexing import argsort, rank_sort_limit, take
from .joining import cat
from .nonzero import OrAwaitable, groups_over_first, thread_wgsl, with_positions

__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values",
           "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult"]


class UniqueAllResult(NamedTuple):
    """What :func:`unique_all` returns."""

    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    """What :func:`unique_counts` returns."""

    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    """What :func:`unique_inverse` returns."""

    values: Tensor
    inverse_indices: Tensor


_SCATTER = thread_wgsl("n: u32", [("at", "i32"), ("count", "i32")], """
    if (i < p.n) {
        out[at[i]] = count[i] - 1;
    }""")


def _scatter_twin(at: np.ndarray, count: np.ndarray, n: int) -> np.ndarray:
    out = np.empty(n, np.int32)
    out[at] = count - 1
    return out


def _scatter_outputs(at: Spec, count: Spec, n: int) -> tuple[tuple[int, ...], str]:
    return at.shape, "int32"


# out[at[i]] = count[i] - 1: the run of sorted element i, written at its place in x
_scatter_runs = custom_kernel(
    "unique_inverse_scatter", wgsl=_SCATTER, inputs=2, outputs=_scatter_outputs,
    workgroups=groups_over_first, numpy=_scatter_twin)


R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class _Unique:
    values: Tensor
    indices: Tensor
    counts: Tensor | None
    inverse: Tensor | None


@dataclass(frozen=True, slots=True)
class _Runs:
    """The sorted flattened tensor, before its run starts are known."""

    flat: Tensor
    order: Tensor
    counts: bool
    inverse: bool
    shape: tuple[int, ...]

    def unique(self, starts: Tensor, run: Tensor) -> _Unique:
        n = self.flat.shape[0]
        device = self.flat.device
        first = take(self.order, starts)
        ends = cat([starts[1:], full((1,), n, DType.int32, device=device)])
        scattered = _scatter_runs(self.order, run, params=(n,)) if self.inverse else None
        assert scattered is None or isinstance(scattered, Tensor)
        return _Unique(take(self.flat, first), first, ends - starts if self.counts else None,
                       None if scattered is None else scattered.reshape(self.shape))


def _unique(x: Any, what: str, counts: bool, inverse: bool,
            then: Callable[[_Unique], R]) -> OrAwaitable[R]:
    """``then`` of ``x``'s distinct values and what else was asked for, once their number
    is read (see :func:`~asyncfusion.api.nonzero.with_positions`)."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, what)
    flat = x.reshape(-1)
    n = flat.shape[0]
    most = rank_sort_limit(x)
    if most is not None and n > most:
        raise LimitError(f"{what}: x has {n} {x.dtype.name} elements; the set functions "
                         f"sort them, which costs n^2 for 64-bit dtypes, and take at most "
                         f"{most} on {x.device!r}")
    if n == 0:
        none = zeros((0,), DType.int32, device=x.device)
        empty = _Unique(flat, none, none if counts else None,
                        zeros(x.shape, DType.int32, device=x.device) if inverse else None)
        return _ready(then(empty)) if in_event_loop() else then(empty)
    order = argsort(flat)
    ordered = take(flat, order)
    new = cat([full((1,), True, DType.bool, device=x.device), ordered[1:] != ordered[:-1]])
    runs = _Runs(flat, order, counts, inverse, x.shape)
    return with_positions(new, f"af.{what}(x)", lambda starts, run: then(runs.unique(starts, run)))


async def _ready(value: R) -> R:
    return value


def _values(u: _Unique) -> Tensor:
    return u.values


def _counts(u: _Unique) -> UniqueCountsResult:
    assert u.counts is not None
    return UniqueCountsResult(u.values, u.counts)


def _inverse(u: _Unique) -> UniqueInverseResult:
    assert u.inverse is not None
    return UniqueInverseResult(u.values, u.inverse)


def _all(u: _Unique) -> UniqueAllResult:
    assert u.counts is not None and u.inverse is not None
    return UniqueAllResult(u.values, u.indices, u.inverse, u.counts)


def unique_values(x: Tensor, /) -> OrAwaitable[Tensor]:
    """The distinct values of ``x`` (flattened), sorted; each NaN is distinct.

    Their number is read from the device first: outside a running event loop the call
    blocks for it and returns the tensor; inside a running asyncio or trio loop it returns
    an awaitable of it (``await af.unique_values(x)``)."""
    return _unique(x, "unique_values", counts=False, inverse=False, then=_values)


def unique_counts(x: Tensor, /) -> OrAwaitable[UniqueCountsResult]:
    """The distinct values of ``x`` and how often each occurs (int32). Blocks outside a
    running event loop, returns an awaitable inside one, as :func:`unique_values`."""
    return _unique(x, "unique_counts", counts=True, inverse=False, then=_counts)


def unique_inverse(x: Tensor, /) -> OrAwaitable[UniqueInverseResult]:
    """The distinct values of ``x`` and, for each element of ``x`` (in ``x``'s shape), the
    index of its value among them (int32). Blocks outside a running event loop, returns an
    awaitable inside one, as :func:`unique_values`."""
    return _unique(x, "unique_inverse", counts=False, inverse=True, then=_inverse)


def unique_all(x: Tensor, /) -> OrAwaitable[UniqueAllResult]:
    """The distinct values of ``x``, the index of each one's first occurrence in ``x``
    flattened, the inverse indices (``x``'s shape) and the counts, all int32 but the
    values. Blocks outside a running event loop, returns an awaitable inside one, as
    :func:`unique_values`."""
    return _unique(x, "unique_all", counts=True, inverse=True, then=_all)
