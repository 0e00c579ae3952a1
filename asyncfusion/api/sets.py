"""The Array API's set functions: ``await af.unique_values(x)`` and its three siblings.

How many distinct values a tensor holds depends on its data, so, as :func:`nonzero`, each
is a coroutine function that **waits** for that one number and then records lazy work:

1. a stable ``argsort`` of the flattened tensor and the sorted values (``take``);
2. a flag where a sorted value differs from the one before it (``!=``, true for NaN, so
   each NaN is a value of its own, as the standard and array-api-strict say; ``-0.0``
   and ``0.0`` are one value);
3. :func:`~asyncfusion.api.nonzero.flag_positions`: a running count of the flags, the one
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

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .._core.dtype import DType
from .._core.errors import LimitError
from ..extend.custom_kernel import Spec, custom_kernel
from ..lazy.tensor import Tensor
from .creation import full, zeros
from .indexing import argsort, rank_sort_limit, take
from .joining import cat
from .nonzero import flag_positions, groups_over_first, thread_wgsl

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


@dataclass(frozen=True, slots=True)
class _Unique:
    values: Tensor
    indices: Tensor
    counts: Tensor | None
    inverse: Tensor | None


async def _unique(x: Any, what: str, counts: bool, inverse: bool) -> _Unique:
    if type(x) is not Tensor:
        raise TypeError(f"{what} needs an asyncfusion Tensor, not {type(x).__name__}")
    flat = x.reshape(-1)
    n = flat.shape[0]
    most = rank_sort_limit(x)
    if most is not None and n > most:
        raise LimitError(f"{what}: x has {n} {x.dtype.name} elements; the set functions "
                         f"sort them, which costs n^2 for 64-bit dtypes, and take at most "
                         f"{most} on {x.device!r}")
    if n == 0:
        none = zeros((0,), DType.int32, device=x.device)
        return _Unique(flat, none, none if counts else None,
                       zeros(x.shape, DType.int32, device=x.device) if inverse else None)
    order = argsort(flat)
    ordered = take(flat, order)
    new = cat([full((1,), True, DType.bool, device=x.device), ordered[1:] != ordered[:-1]])
    starts, run = await flag_positions(new)
    first = take(order, starts)
    ends = cat([starts[1:], full((1,), n, DType.int32, device=x.device)])
    scattered = _scatter_runs(order, run, params=(n,)) if inverse else None
    assert scattered is None or isinstance(scattered, Tensor)
    return _Unique(take(flat, first), first, ends - starts if counts else None,
                   None if scattered is None else scattered.reshape(x.shape))


async def unique_values(x: Tensor, /) -> Tensor:
    """The distinct values of ``x`` (flattened), sorted; each NaN is distinct. Waits for
    their number (see the module)."""
    return (await _unique(x, "unique_values", counts=False, inverse=False)).values


async def unique_counts(x: Tensor, /) -> UniqueCountsResult:
    """The distinct values of ``x`` and how often each occurs (int32). Waits for their
    number."""
    u = await _unique(x, "unique_counts", counts=True, inverse=False)
    assert u.counts is not None
    return UniqueCountsResult(u.values, u.counts)


async def unique_inverse(x: Tensor, /) -> UniqueInverseResult:
    """The distinct values of ``x`` and, for each element of ``x`` (in ``x``'s shape), the
    index of its value among them (int32). Waits for their number."""
    u = await _unique(x, "unique_inverse", counts=False, inverse=True)
    assert u.inverse is not None
    return UniqueInverseResult(u.values, u.inverse)


async def unique_all(x: Tensor, /) -> UniqueAllResult:
    """The distinct values of ``x``, the index of each one's first occurrence in ``x``
    flattened, the inverse indices (``x``'s shape) and the counts, all int32 but the
    values. Waits for their number."""
    u = await _unique(x, "unique_all", counts=True, inverse=True)
    assert u.counts is not None and u.inverse is not None
    return UniqueAllResult(u.values, u.indices, u.inverse, u.counts)
