"""The op registry: what each element-wise op and reduction is (arity, dtype rule, numpy
twin, identity), apart from how any backend writes it."""

from .elementwise import PRIMITIVES, Primitive, register
from .reductions import REDUCTIONS, Identity, Reduction

__all__ = ["PRIMITIVES", "Primitive", "register", "REDUCTIONS", "Identity", "Reduction"]
