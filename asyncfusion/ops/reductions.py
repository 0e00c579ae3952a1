"""The reduction registry: one entry per reduction (numpy twin, identity, accumulator
and result dtypes). How a reduction folds in a kernel is its lowering's business."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._core.dtype import DType

__all__ = ["Identity", "Reduction", "REDUCTIONS"]


class Identity(enum.Enum):
    """The value a fold starts from, in the accumulator's dtype: 0, 1, or the lowest
    (highest) value the dtype holds (-inf, +inf for floats)."""

    ZERO = "zero"
    ONE = "one"
    LOWEST = "lowest"
    HIGHEST = "highest"


@dataclass(frozen=True, slots=True)
class Reduction:
    """A reduction: its numpy twin over a tuple of axes with keepdims, and the
    ``identity`` its fold starts from.

    ``combine``: the element-wise op that folds two partial results (a reduction split in
    chunks). ``logical``: it reads its input as truth values (any, all). ``empty``: it
    has a value over no elements (its identity); the others refuse an empty input.
    ``widens``: 8- and 16-bit integers give results in their 32-bit lanes (sum, prod).
    ``arg`` reductions fold (value, index) pairs and give the index; ``combine`` is then the
    value's own reduction and ``better`` the comparison that makes one value win."""

    name: str
    numpy: Callable[[np.ndarray, tuple[int, ...]], np.ndarray]
    identity: Identity
    combine: str
    arg: bool = False
    logical: bool = False
    empty: bool = True
    widens: bool = False
    better: str | None = None

    def acc_dtype(self, src: DType) -> DType:
        """bool folds as uint32 words, float16 in float32 (rounded once at the end),
        the 8- and 16-bit integers in their 32-bit lanes."""
        if src is DType.float16:
            return DType.float32
        return DType.uint32 if src is DType.bool else src.lane

    def out_dtype(self, src: DType) -> DType:
        """Indices are int32; sums and products of the 8- and 16-bit integers are
        int32/uint32 (the Array API's default integer widths here), other results keep
        ``src``."""
        if self.arg:
            return DType.int32
        return src.lane if self.widens else src


def _np_arg(fn: Callable[..., np.ndarray]) -> Callable[[np.ndarray, tuple[int, ...]],
                                                        np.ndarray]:
    """argmax/argmin over several axes: the flat index within the reduced axes."""
    def run(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        keep = [d for d in range(x.ndim) if d not in axes]
        moved = np.transpose(x, keep + list(axes))
        flat = moved.reshape(moved.shape[:len(keep)] + (-1,))
        r = fn(flat, axis=-1).astype(np.int32)
        shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
        return r.reshape(shape)
    return run


REDUCTIONS: dict[str, Reduction] = {r.name: r for r in [
    Reduction("sum", lambda x, ax: np.sum(x, axis=ax, keepdims=True, dtype=x.dtype),
              Identity.ZERO, "add", widens=True),
    Reduction("prod", lambda x, ax: np.prod(x, axis=ax, keepdims=True, dtype=x.dtype),
              Identity.ONE, "mul", widens=True),
    Reduction("max", lambda x, ax: np.max(x, axis=ax, keepdims=True), Identity.LOWEST,
              "maximum", empty=False),
    Reduction("min", lambda x, ax: np.min(x, axis=ax, keepdims=True), Identity.HIGHEST,
              "minimum", empty=False),
    Reduction("any", lambda x, ax: np.any(x, axis=ax, keepdims=True), Identity.ZERO,
              "logical_or", logical=True),
    Reduction("all", lambda x, ax: np.all(x, axis=ax, keepdims=True), Identity.ONE,
              "logical_and", logical=True),
    Reduction("argmax", _np_arg(np.argmax), Identity.LOWEST, "max", arg=True, empty=False,
              better="gt"),
    Reduction("argmin", _np_arg(np.argmin), Identity.HIGHEST, "min", arg=True, empty=False,
              better="lt"),
]}
