"""Factorizations: cholesky, qr, eigh, eigvalsh, svd, svdvals, and pinv and matrix_rank
built from the singular values.

Each checks its input at the call (a stack of matrices, floating-point, square where
it must be) and records one op for the whole batch: the device kernel
(:mod:`.kernels`) for matrices of at most 64 a side on a wgpu device, else numpy's
function on the host, in the device's worker (:mod:`.host`). Results are lazy either
way. Eigenvalues come ascending with their vectors, singular values descending; the
signs of vectors (and of QR's factors) may differ from numpy's, as they may between
LAPACK builds: ``Q R``, ``V diag(w) V^T`` and ``U diag(S) Vh`` give A back.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..creation import zeros
from ..._core.dtype import DType
from ..._core.errors import ShapeError
from ..manipulation import count_nonzero
from ..reductions import reduce
from ...lazy.tensor import Tensor
from ..elementwise import where
from ..views import broadcast_to
from .common import Stack, eps, stack_of
from .host import Arrays, host_op, per_matrix
from .kernels import launch, on_device
from .products import matmul

__all__ = ["cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "matrix_rank",
           "EighResult", "QRResult", "SVDResult"]


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor  # noqa: N815 - the standard's field names
    R: Tensor  # noqa: N815


class SVDResult(NamedTuple):
    U: Tensor  # noqa: N815
    S: Tensor  # noqa: N815
    Vh: Tensor  # noqa: N815


def _np_cholesky(a: np.ndarray, upper: bool) -> Arrays:
    return (np.linalg.cholesky(a, upper=upper),)


def _np_qr(a: np.ndarray, mode: str) -> Arrays:
    q, r = np.linalg.qr(a, mode=mode)  # type: ignore[call-overload]  # mode is checked
    return q, r


def _np_eigh(a: np.ndarray) -> Arrays:
    w, v = np.linalg.eigh(a)
    return w, v


def _np_eigvalsh(a: np.ndarray) -> Arrays:
    return (np.linalg.eigvalsh(a),)


def _np_svd(a: np.ndarray, full: bool) -> Arrays:
    u, s, vh = np.linalg.svd(a, full_matrices=full)
    return u, s, vh


def _np_svdvals(a: np.ndarray) -> Arrays:
    return (np.linalg.svd(a, compute_uv=False),)


_cholesky_host = per_matrix(_np_cholesky, lambda a, upper: [a.shape])
_eigh_host = per_matrix(_np_eigh, lambda a: [a.shape[-1:], a.shape])
_eigvalsh_host = per_matrix(_np_eigvalsh, lambda a: [a.shape[-1:]])


def _svd_shapes(a: np.ndarray, full: bool) -> list[tuple[int, ...]]:
    m, n = a.shape
    k = min(m, n)
    return [(m, m if full else k), (k,), (n if full else k, n)]


_svd_host = per_matrix(_np_svd, _svd_shapes)
_svdvals_host = per_matrix(_np_svdvals, lambda a: [(min(a.shape),)])


def cholesky(x: Tensor, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of each symmetric positive-definite matrix: lower ``L`` with
    ``A = L L^T``, or with ``upper`` the upper ``U = L^T`` (``A = U^T U``). A matrix that is
    not positive-definite gives NaN."""
    s = stack_of(x, "cholesky", square=True)
    n = s.rows
    if on_device(s.x, s.count, n):
        (lf,) = launch("cholesky", "", (s.flat(),), (s.count, n, int(bool(upper))))
        return s.give(lf, (n, n))
    (lf,) = host_op("cholesky", _cholesky_host, (bool(upper),), [s.x], [(s.x.shape, s.x.dtype)])
    return s.give(lf, (n, n))


def qr(x: Tensor, /, *, mode: str = "reduced") -> QRResult:
    """The QR factorization of each matrix (M x N, K = min(M, N)): ``mode="reduced"``
    gives Q (M x K) with orthonormal columns and upper-triangular R (K x N);
    ``"complete"`` gives Q (M x M) and R (M x N)."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', not {mode!r}")
    s = stack_of(x, "qr", square=False)
    m, n = s.rows, s.cols
    k = min(m, n)
    qc = rr = m if mode == "complete" else k
    if on_device(s.x, s.count, m, n):
        q, r, _, _ = launch("qr", "", (s.flat(),), (s.count, m, n, qc, rr))
    else:
        dt = s.x.dtype
        q, r = host_op("qr", _np_qr, (mode,), [s.x],
                       [(s.batch + (m, qc), dt), (s.batch + (rr, n), dt)])
    return QRResult(s.give(q, (m, qc)), s.give(r, (rr, n)))


def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (one a column) of each symmetric matrix,
    read from its lower triangle."""
    s = stack_of(x, "eigh", square=True)
    n = s.rows
    if on_device(s.x, s.count, n):
        w, v, _ = launch("eigh", "vectors", (s.flat(),), (s.count, n, n + n % 2))
    else:
        dt = s.x.dtype
        w, v = host_op("eigh", _eigh_host, (), [s.x],
                       [(s.batch + (n,), dt), (s.x.shape, dt)])
    return EighResult(s.give(w, (n,)), s.give(v, (n, n)))


def eigvalsh(x: Tensor, /) -> Tensor:
    """Eigenvalues (ascending) of each symmetric matrix, read from its lower triangle."""
    s = stack_of(x, "eigvalsh", square=True)
    n = s.rows
    if on_device(s.x, s.count, n):
        w, _ = launch("eigh", "values", (s.flat(),), (s.count, n, n + n % 2))
    else:
        (w,) = host_op("eigvalsh", _eigvalsh_host, (), [s.x], [(s.batch + (n,), s.x.dtype)])
    return s.give(w, (n,))


def _svd_device(s: Stack, full: bool) -> tuple[Tensor, Tensor, Tensor]:
    m, n = s.rows, s.cols
    rows, cols, tr = max(m, n), min(m, n), m < n
    pc = rows if full else cols
    sv, pm, qm, _ = launch("svd", "vectors", (s.flat(),),
                           (s.count, m, n, rows, cols, cols + cols % 2, int(tr), pc))
    if tr:
        return qm, sv, pm.mT
    return pm, sv, qm.mT


def svd(x: Tensor, /, *, full_matrices: bool = True) -> SVDResult:
    """``A = U diag(S) Vh`` for each matrix (M x N, K = min(M, N)): S (K) descending;
    U (M x M) and Vh (N x N) with ``full_matrices``, else U (M x K) and Vh (K x N)."""
    s = stack_of(x, "svd", square=False)
    m, n = s.rows, s.cols
    k = min(m, n)
    full = bool(full_matrices)
    us, vs = ((m, m), (n, n)) if full else ((m, k), (k, n))
    if on_device(s.x, s.count, m, n):
        u, sv, vh = _svd_device(s, full)
    else:
        dt = s.x.dtype
        u, sv, vh = host_op("svd", _svd_host, (full,), [s.x],
                            [(s.batch + us, dt), (s.batch + (k,), dt), (s.batch + vs, dt)])
    return SVDResult(s.give(u, us), s.give(sv, (k,)), s.give(vh, vs))


def _singular_values(s: Stack) -> Tensor:
    m, n = s.rows, s.cols
    rows, cols = max(m, n), min(m, n)
    if on_device(s.x, s.count, m, n):
        sv, _ = launch("svd", "values", (s.flat(),),
                       (s.count, m, n, rows, cols, cols + cols % 2, int(m < n), cols))
        return sv.reshape(s.batch + (cols,))
    (sv,) = host_op("svdvals", _svdvals_host, (), [s.x], [(s.batch + (cols,), s.x.dtype)])
    return sv


def svdvals(x: Tensor, /) -> Tensor:
    """The singular values of each matrix, descending (K = min(M, N) of them)."""
    s = stack_of(x, "svdvals", square=False)
    return s.give(_singular_values(s), (min(s.rows, s.cols),))


def _cutoff(what: str, sv: Tensor, s: Stack, rtol: float | Tensor | None) -> Tensor:
    """``rtol`` (default ``max(M, N) eps``) times the largest singular value, per matrix,
    with a trailing axis of 1."""
    if rtol is None:
        rtol = max(s.rows, s.cols) * eps(s.out)
    if type(rtol) is Tensor:
        try:
            rtol = broadcast_to(rtol.astype(sv.dtype), s.batch)
        except ShapeError as exc:
            raise ShapeError(f"{what}: rtol of shape {rtol.shape} does not broadcast against "
                             f"the batch shape {s.batch}") from exc
    elif not isinstance(rtol, (int, float)) or isinstance(rtol, bool):
        raise TypeError(f"{what}: rtol must be a float, a tensor or None, not {rtol!r}")
    return (reduce("max", sv, -1, keepdims=True) * (rtol if not isinstance(rtol, Tensor)
                                                     else rtol.unsqueeze(-1)))


def pinv(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The Moore–Penrose pseudo-inverse of each matrix (N x M for M x N), from its SVD:
    singular values at most ``rtol`` times the largest (default ``max(M, N) eps``) are
    taken as zero."""
    s = stack_of(x, "pinv", square=False)
    m, n = s.rows, s.cols
    if min(m, n) == 0:
        return zeros(s.batch + (n, m), s.out, device=s.x.device)
    u, sv, vh = svd(s.x, full_matrices=False)
    keep = sv > _cutoff("pinv", sv, s, rtol)
    inv = where(keep, 1 / where(keep, sv, 1), 0)
    out = matmul(vh.mT * inv.unsqueeze(-2), u.mT)
    return out if out.dtype is s.out else out.astype(s.out)


def matrix_rank(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """How many singular values of each matrix exceed ``rtol`` times the largest (default
    ``max(M, N) eps``): int32."""
    s = stack_of(x, "matrix_rank", square=False)
    if min(s.rows, s.cols) == 0:
        return zeros(s.batch, DType.int32, device=s.x.device)
    sv = _singular_values(s)
    return count_nonzero(sv > _cutoff("matrix_rank", sv, s, rtol), axis=-1)
