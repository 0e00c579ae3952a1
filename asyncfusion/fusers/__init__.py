"""Fusers: each bids to cover a run of ops with one kernel (see ``base.Fuser``)."""

from .base import BlockFuser, Candidate, Fuser
from .elementwise import ElementwiseFuser
from .matmul import MatmulFuser
from .reduce import ReduceFuser

__all__ = ["BlockFuser", "Candidate", "Fuser", "ElementwiseFuser", "MatmulFuser",
           "ReduceFuser"]
