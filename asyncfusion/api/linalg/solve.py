"""Solves and determinants: inv, solve, det, slogdet, and matrix_power.

On the device (matrices of at most 64 a side on a wgpu device) each is one LU
factorization with partial pivoting, one launch for the batch: ``inv`` and ``solve``
eliminate their right-hand sides in the same kernel, ``det`` and ``slogdet`` fold U's
diagonal and the permutation's sign with ordinary fused ops (one more launch). Else
numpy's function runs on the host, in the device's worker (:mod:`.host`). A singular
matrix gives non-finite values from ``inv`` and ``solve`` (numpy's refusal becomes NaN on
the host), a zero ``det`` and ``slogdet`` ``(0, -inf)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..creation import eye
from ..._core.dtype import DType, promote
from ..._core.errors import DTypeError, ShapeError
from ..reductions import reduce
from ..._core.shapes import broadcast_shapes
from ...lazy.tensor import Tensor, not_a_tensor
from ..views import broadcast_to
from .common import Stack, stack_of
from .host import Arrays, host_op, per_matrix
from .kernels import MAX_RHS, launch, on_device
from .products import matmul

__all__ = ["inv", "solve", "det", "slogdet", "matrix_power", "SlogdetResult"]


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


def _np_inv(a: np.ndarray) -> Arrays:
    return (np.linalg.inv(a),)


def _np_solve(a: np.ndarray, b: np.ndarray) -> Arrays:
    return (np.linalg.solve(a, b),)


def _np_det(a: np.ndarray) -> Arrays:
    return (np.linalg.det(a),)


def _np_slogdet(a: np.ndarray) -> Arrays:
    sign, logabs = np.linalg.slogdet(a)
    return sign, logabs


_inv_host = per_matrix(_np_inv, lambda a: [a.shape])
_solve_host = per_matrix(_np_solve, lambda a, b: [b.shape])


def inv(x: Tensor, /) -> Tensor:
    """The inverse of each square matrix."""
    s = stack_of(x, "inv", square=True)
    n = s.rows
    if on_device(s.x, s.count, n):
        _, out = launch("lu", "inv", (s.flat(),), (s.count, n, n))
    else:
        (out,) = host_op("inv", _inv_host, (), [s.x], [(s.x.shape, s.x.dtype)])
    return s.give(out, (n, n))


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """``X`` with ``x1 @ X == x2`` for each square ``x1`` (..., M, M): ``x2`` of shape
    (M,) is one right-hand side (the result has shape (..., M)); otherwise ``x2`` is a
    stack (..., M, K) whose batch broadcasts against x1's."""
    s = stack_of(x1, "solve", square=True)
    if type(x2) is not Tensor:
        raise TypeError(f"solve needs asyncfusion Tensors, not {type(x2).__name__} for x2")
    if not x2.dtype.is_float:
        raise DTypeError(f"solve needs a floating-point x2, not {x2.dtype.label}; cast with "
                         ".astype(asyncfusion.float32) (or float64) first")
    dt = promote(x1.dtype, x2.dtype, "solve")
    n = s.rows
    vector = x2.ndim == 1
    if x2.ndim == 0 or x2.shape[0 if vector else -2] != n:
        raise ShapeError(f"solve: x2 of shape {x2.shape} does not fit x1 of shape {x1.shape}; "
                         f"give x2 as ({n},) or (..., {n}, K)")
    rhs = x2.unsqueeze(-1) if vector else x2
    k = rhs.shape[-1]
    batch = broadcast_shapes(s.batch, rhs.shape[:-2], "solve: the batch shapes of x1 and x2")
    work = DType.float32 if dt is DType.float16 else dt
    a = broadcast_to(s.x.astype(work) if s.x.dtype is not work else s.x, batch + (n, n))
    b = broadcast_to(rhs.astype(work) if rhs.dtype is not work else rhs, batch + (n, k))
    st = Stack(a, batch, int(np.prod(batch, dtype=np.int64)), n, n, dt)
    if on_device(a, st.count, n) and 0 < k <= MAX_RHS:
        flat_b = b.reshape(st.count, n, k).contiguous()
        _, out = launch("lu", "solve", (st.flat(), flat_b), (st.count, n, k))
        out = st.give(out, (n, k))
    else:
        (out,) = host_op("solve", _solve_host, (), [a.contiguous(), b.contiguous()],
                         [(batch + (n, k), work)])
        out = st.give(out, (n, k))
    return out.squeeze(-1) if vector else out


def _lu_parts(s: Stack) -> tuple[Tensor, Tensor]:
    """U's diagonal (count, n) and the permutation's sign (count, 1) of each matrix."""
    _, diag, parity = launch("lu", "det", (s.flat(),), (s.count, s.rows, 0))
    return diag, parity.unsqueeze(-1)


def det(x: Tensor, /) -> Tensor:
    """The determinant of each square matrix."""
    s = stack_of(x, "det", square=True)
    if on_device(s.x, s.count, s.rows):
        diag, parity = _lu_parts(s)
        return s.give(reduce("prod", diag, -1) * parity.squeeze(-1), ())
    (out,) = host_op("det", _np_det, (), [s.x], [(s.batch, s.x.dtype)])
    return s.give(out, ())


def slogdet(x: Tensor, /) -> SlogdetResult:
    """The sign (-1, 0 or 1) and the natural log of the absolute value of each square
    matrix's determinant: ``(0, -inf)`` for a singular one."""
    s = stack_of(x, "slogdet", square=True)
    if on_device(s.x, s.count, s.rows):
        diag, parity = _lu_parts(s)
        sign = reduce("prod", diag.sign(), -1) * parity.squeeze(-1)
        logabs = reduce("sum", diag.abs().log(), -1)
    else:
        sign, logabs = host_op("slogdet", _np_slogdet, (), [s.x],
                               [(s.batch, s.x.dtype), (s.batch, s.x.dtype)])
    return SlogdetResult(s.give(sign, ()), s.give(logabs, ()))


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    """``x`` multiplied by itself ``n`` times (square matrices, batched): repeated
    squaring; ``n == 0`` gives identities, a negative ``n`` powers the inverse."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, "matrix_power")
    if x.dtype is DType.bool:
        raise DTypeError("matrix_power is not defined for bool tensors; cast with "
                         ".astype(asyncfusion.int32) or .astype(asyncfusion.float32) first")
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"matrix_power: n must be an int, not {n!r}")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"matrix_power needs square matrices (..., M, M), got shape "
                         f"{x.shape}")
    if n == 0:
        ident = eye(x.shape[-1], dtype=x.dtype, device=x.device)
        return broadcast_to(ident, x.shape).contiguous()
    if n < 0:
        if not x.dtype.is_float:
            raise DTypeError(f"matrix_power: a negative power inverts, which needs a "
                             f"floating dtype, not {x.dtype.label}; cast with "
                             ".astype(asyncfusion.float32) first")
        x, n = inv(x), -n
    result: Tensor | None = None
    base = x
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            break
        base = matmul(base, base)
    assert result is not None
    return result
