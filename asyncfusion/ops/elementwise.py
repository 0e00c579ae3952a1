"""The element-wise op registry: one entry per op, built-in or custom.

An entry says what the op is to every stage but code generation: its arity and dtype
rule (the front end), its numpy function (the numpy backend, the oracle), its operator
symbol (error messages), and whether it runs in 64-bit dtypes. How it is written in WGSL
is its lowering's, in :mod:`asyncfusion.codegen.wgsl.lowering`, under the same name.
Every element-wise op fuses (its record is an :class:`~asyncfusion.ir.ElementwiseOp`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .reductions import REDUCTIONS

__all__ = ["Primitive", "PRIMITIVES", "register"]


@dataclass(frozen=True, slots=True)
class Primitive:
    """An element-wise op.

    ``rule`` is the dtype rule: ``numeric`` (any non-bool dtype, result in the common
    dtype), ``float`` (computed in float32), ``compare`` (common dtype in, bool out),
    ``logical`` (bool in, bool out), ``predicate`` (any non-bool in, bool out), ``where``
    (bool condition, common dtype of the rest), ``cast`` (dtype given by the op),
    ``integer`` (integers only) and ``bitwise`` (integers or bool), both in the common
    dtype, and ``same`` (the operand's dtype). ``wide``: it also runs in float64 and
    int64 (WGSL operators, 64-bit builtins, or math written out in float64).
    """

    name: str
    arity: int
    rule: str
    numpy: Callable[..., np.ndarray]
    symbol: str | None = None
    wide: bool = True

    @property
    def what(self) -> str:
        """How error messages name it: ``add (+)``."""
        return f"{self.name} ({self.symbol})" if self.symbol else self.name


PRIMITIVES: dict[str, Primitive] = {}


def register(p: Primitive) -> Primitive:
    if p.name in PRIMITIVES or p.name in REDUCTIONS:
        raise ValueError(f"a primitive named {p.name!r} exists already; pick another name")
    PRIMITIVES[p.name] = p
    return p


# -- numpy twins, where numpy's own function differs from what the kernels compute ----
def _np_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's power for floats; for integers exact wrapping powers by squaring, with a
    negative exponent giving 0 (or +-1 for a base of +-1), as the WGSL kernels do."""
    if a.dtype.kind == "f":
        return np.asarray(np.power(a, b))
    a, b = (np.array(v) for v in np.broadcast_arrays(a, b))
    r = np.ones_like(a)
    x = a.copy()
    e = np.where(b < 0, 0, b).astype(np.int64)
    while (e > 0).any():
        r = np.where(e & 1, r * x, r)
        x = x * x
        e >>= 1
    if a.dtype.kind == "i":
        neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        r = np.where(b < 0, neg, r)
    return r.astype(a.dtype)


def _np_int_zero(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Integer division by zero gives 0 (as the kernels do; numpy warns and gives 0)."""
    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind == "f":
            return fn(a, b)
        safe = np.where(b == 0, 1, b).astype(a.dtype)
        return np.where(b == 0, 0, fn(a, safe)).astype(a.dtype)
    return run


def _np_keep_int(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda a: fn(a) if a.dtype.kind == "f" else a


def _np_pred(fn: Callable[..., np.ndarray], default: bool) -> Callable[..., np.ndarray]:
    return lambda a: fn(a) if a.dtype.kind == "f" else np.full(a.shape, default)


def _np_reciprocal(a: np.ndarray) -> np.ndarray:
    return np.asarray(a.dtype.type(1) / a)


_np_erf = np.vectorize(math.erf, otypes=[np.float64])


def _float(name: str, numpy: Callable[..., np.ndarray], arity: int = 1) -> Primitive:
    return Primitive(name, arity, "float", numpy)


for _p in [
    Primitive("add", 2, "numeric", np.add, "+"),
    Primitive("sub", 2, "numeric", np.subtract, "-"),
    Primitive("mul", 2, "numeric", np.multiply, "*"),
    Primitive("div", 2, "float", np.true_divide, "/"),
    Primitive("pow", 2, "numeric", _np_pow, "**"),
    Primitive("floor_divide", 2, "numeric", _np_int_zero(np.floor_divide), "//"),
    Primitive("remainder", 2, "numeric", _np_int_zero(np.remainder), "%"),
    Primitive("minimum", 2, "numeric", np.minimum),
    Primitive("maximum", 2, "numeric", np.maximum),
    Primitive("neg", 1, "numeric",
              lambda a: np.negative(a) if a.dtype.kind != "u" else (a.dtype.type(0) - a), "-x"),
    Primitive("positive", 1, "numeric", np.positive, "+x"),
    Primitive("abs", 1, "numeric", lambda a: a if a.dtype.kind == "u" else np.abs(a)),
    Primitive("square", 1, "numeric", np.square),
    Primitive("relu", 1, "numeric", lambda a: np.maximum(a, a.dtype.type(0))),
    Primitive("sign", 1, "numeric", np.sign),
    Primitive("floor", 1, "numeric", _np_keep_int(np.floor)),
    Primitive("ceil", 1, "numeric", _np_keep_int(np.ceil)),
    Primitive("round", 1, "numeric", _np_keep_int(np.round)),
    Primitive("trunc", 1, "numeric", _np_keep_int(np.trunc)),
    Primitive("sqrt", 1, "float", np.sqrt),
    Primitive("rsqrt", 1, "float", lambda a: np.float32(1) / np.sqrt(a)),
    Primitive("reciprocal", 1, "float", _np_reciprocal),
    Primitive("sigmoid", 1, "float", lambda a: np.float32(1) / (np.float32(1) + np.exp(-a)),
              wide=False),
    Primitive("erf", 1, "float", lambda a: _np_erf(a).astype(a.dtype), wide=False),
    _float("exp", np.exp), _float("expm1", np.expm1),
    _float("log", np.log), _float("log1p", np.log1p), _float("log2", np.log2),
    _float("log10", np.log10),
    _float("sin", np.sin), _float("cos", np.cos), _float("tan", np.tan),
    _float("asin", np.arcsin), _float("acos", np.arccos), _float("atan", np.arctan),
    _float("atan2", np.arctan2, 2),
    _float("sinh", np.sinh), _float("cosh", np.cosh), _float("tanh", np.tanh),
    _float("asinh", np.arcsinh), _float("acosh", np.arccosh), _float("atanh", np.arctanh),
    _float("hypot", np.hypot, 2), _float("logaddexp", np.logaddexp, 2),
    _float("copysign", np.copysign, 2), _float("nextafter", np.nextafter, 2),
    Primitive("isnan", 1, "predicate", _np_pred(np.isnan, False)),
    Primitive("isinf", 1, "predicate", _np_pred(np.isinf, False)),
    Primitive("isfinite", 1, "predicate", _np_pred(np.isfinite, True)),
    Primitive("signbit", 1, "predicate", np.signbit),
    Primitive("eq", 2, "compare", np.equal, "=="),
    Primitive("ne", 2, "compare", np.not_equal, "!="),
    Primitive("lt", 2, "compare", np.less, "<"),
    Primitive("le", 2, "compare", np.less_equal, "<="),
    Primitive("gt", 2, "compare", np.greater, ">"),
    Primitive("ge", 2, "compare", np.greater_equal, ">="),
    Primitive("logical_and", 2, "logical", np.logical_and, "&", wide=False),
    Primitive("logical_or", 2, "logical", np.logical_or, "|", wide=False),
    Primitive("logical_xor", 2, "logical", np.logical_xor, "^", wide=False),
    Primitive("logical_not", 1, "logical", np.logical_not, "~", wide=False),
    Primitive("bitwise_and", 2, "bitwise", np.bitwise_and, "&"),
    Primitive("bitwise_or", 2, "bitwise", np.bitwise_or, "|"),
    Primitive("bitwise_xor", 2, "bitwise", np.bitwise_xor, "^"),
    Primitive("bitwise_invert", 1, "bitwise", np.invert, "~"),
    Primitive("bitwise_left_shift", 2, "integer", np.left_shift, "<<"),
    Primitive("bitwise_right_shift", 2, "integer", np.right_shift, ">>"),
    Primitive("where", 3, "where", lambda c, a, b: np.asarray(np.where(c, a, b))),
    Primitive("cast", 1, "cast", lambda a: a),
    Primitive("copy", 1, "same", lambda a: a),
]:
    register(_p)
