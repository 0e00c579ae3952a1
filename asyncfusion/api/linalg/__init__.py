"""The Array API's linalg extension: ``asyncfusion.linalg`` (and ``xp.linalg`` for
``xp = t.__array_namespace__()``).

Everything shaped like a product or a reduction is recorded as ordinary lazy ops and
fuses: matmul, matrix_transpose (a view), tensordot, vecdot, outer, cross, diagonal (a
view), trace, matrix_power (repeated squaring), vector_norm and matrix_norm. The
factorizations and solves (cholesky, qr, eigh, eigvalsh, svd, svdvals, inv, solve, det,
slogdet, and pinv and matrix_rank through the SVD) take one op for a whole batch: on a
wgpu device, matrices of at most 64 a side run in a WGSL kernel, one workgroup a matrix;
larger ones, and every matrix on a numpy device, run numpy's function in the device's
worker thread. eig and eigvals (complex results) always take that host path. Both paths are lazy: the call returns at once, ``await r.to_data()``
reads.
"""

from ..manipulation import vecdot
from .eig import EigResult, eig, eigvals
from .factor import (EighResult, QRResult, SVDResult, cholesky, eigh, eigvalsh,
                     matrix_rank, pinv, qr, svd, svdvals)
from .norms import matrix_norm, vector_norm
from .products import cross, diagonal, matmul, matrix_transpose, outer, tensordot, trace
from .solve import SlogdetResult, det, inv, matrix_power, slogdet, solve

__all__ = ["cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
           "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm", "EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult"]
