"""The general eigenproblem (2025.12): ``eig`` and ``eigvals`` of real or complex square
matrices, whose eigenvalues and eigenvectors are complex.

Both run numpy's function on the host, in the device's worker (:mod:`.host`), one op
for the whole batch; a complex input goes as its two parts, and the results come back
as the parts of complex tensors (complex64 for float32 input, complex128 for float64).
Eigenvalues come in numpy's (LAPACK's) order, each eigenvector a column of unit norm; a
matrix numpy cannot decompose gives NaN.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...lazy.complex_tensor import ComplexTensor
from ...lazy.tensor import Tensor
from .common import Stack, stack_of
from .host import Arrays, host_op, per_matrix

__all__ = ["eig", "eigvals", "EigResult"]


class EigResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


def _joined(arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    return arrays[0] if len(arrays) == 1 else arrays[0] + 1j * arrays[1]


def _np_eig(*arrays: np.ndarray) -> Arrays:
    w, v = np.linalg.eig(_joined(arrays))
    return w.real, w.imag, v.real, v.imag


def _np_eigvals(*arrays: np.ndarray) -> Arrays:
    w = np.linalg.eigvals(_joined(arrays))
    return w.real, w.imag


_eig_host = per_matrix(_np_eig, lambda *a: [a[0].shape[-1:]] * 2 + [a[0].shape] * 2)
_eigvals_host = per_matrix(_np_eigvals, lambda *a: [a[0].shape[-1:]] * 2)


def _parts(x: Tensor, what: str) -> tuple[Stack, list[Tensor]]:
    """The matrices' stack (of the real part, for a complex ``x``) and the inputs."""
    if isinstance(x, ComplexTensor):
        re, im = stack_of(x.real, what, square=True), stack_of(x.imag, what, square=True)
        return re, [re.x, im.x]
    s = stack_of(x, what, square=True)
    return s, [s.x]


def eig(x: Tensor, /) -> EigResult:
    """Eigenvalues and eigenvectors (one a column) of each square matrix, complex."""
    s, inputs = _parts(x, "eig")
    n, dt = s.rows, s.x.dtype
    wr, wi, vr, vi = host_op("eig", _eig_host, (), inputs,
                             [(s.batch + (n,), dt)] * 2 + [(s.x.shape, dt)] * 2)
    return EigResult(ComplexTensor(wr, wi), ComplexTensor(vr, vi))


def eigvals(x: Tensor, /) -> Tensor:
    """Eigenvalues of each square matrix, complex."""
    s, inputs = _parts(x, "eigvals")
    wr, wi = host_op("eigvals", _eigvals_host, (), inputs, [(s.batch + (s.rows,), s.x.dtype)] * 2)
    return ComplexTensor(wr, wi)
