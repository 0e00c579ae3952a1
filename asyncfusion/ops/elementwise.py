"""The element-wise op registry: one entry per op, built-in or custom.

An entry says what the op is to every stage but code generation: its arity and dtype
rule (the front end), its numpy function (the numpy backend, the oracle), its operator
symbol (error messages), whether it runs in 64-bit dtypes, and its public function: the
name the standard (or numpy) gives it and the docstring (:mod:`asyncfusion.api.elementwise`
makes one function per entry that has a docstring). How it is written in WGSL is its
lowering's, in :mod:`asyncfusion.codegen.wgsl.lowering`, under the same name.
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
    int64 (WGSL operators, 64-bit builtins, or math written out in float64). ``doc``:
    the public function's docstring (empty: no public function, the op is internal);
    ``api``: its name where it differs from ``name``.
    """

    name: str
    arity: int
    rule: str
    numpy: Callable[..., np.ndarray]
    symbol: str | None = None
    wide: bool = True
    doc: str = ""
    api: str | None = None

    @property
    def public(self) -> str:
        """The public function's name."""
        return self.api or self.name

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


def _np_floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's floor_divide, but the standard's answers where one operand is infinite and
    the other finite (a non-zero divisor): ``inf // 2`` is inf and ``1 // -inf`` is -0
    (numpy's divmod gives NaN and -1), the quotient ``a / b`` itself."""
    q = _np_int_zero(np.floor_divide)(a, b)
    if a.dtype.kind != "f":
        return q
    with np.errstate(all="ignore"):
        edge = (np.isinf(a) & np.isfinite(b) & (b != 0)) | (np.isfinite(a) & np.isinf(b))
        return np.asarray(np.where(edge, a / b, q))


def _np_keep_int(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda a: fn(a) if a.dtype.kind == "f" else a


def _np_pred(fn: Callable[..., np.ndarray], default: bool) -> Callable[..., np.ndarray]:
    return lambda a: fn(a) if a.dtype.kind == "f" else np.full(a.shape, default)


def _np_reciprocal(a: np.ndarray) -> np.ndarray:
    return np.asarray(a.dtype.type(1) / a)


_np_erf = np.vectorize(math.erf, otypes=[np.float64])


def _float(name: str, numpy: Callable[..., np.ndarray], doc: str, arity: int = 1) -> Primitive:
    return Primitive(name, arity, "float", numpy, doc=doc)


for _p in [
    Primitive("add", 2, "numeric", np.add, "+", doc="x1 + x2."),
    Primitive("sub", 2, "numeric", np.subtract, "-", doc="x1 - x2.", api="subtract"),
    Primitive("mul", 2, "numeric", np.multiply, "*", doc="x1 * x2.", api="multiply"),
    Primitive("div", 2, "float", np.true_divide, "/", doc="x1 / x2 (float32).", api="divide"),
    Primitive("pow", 2, "numeric", _np_pow, "**", doc="x1 ** x2 (numpy's special cases)."),
    Primitive("floor_divide", 2, "numeric", _np_floor_divide, "//",
              doc="x1 // x2, rounding toward -infinity (as numpy)."),
    Primitive("remainder", 2, "numeric", _np_int_zero(np.remainder), "%",
              doc="x1 % x2 with the sign of x2 (as numpy)."),
    Primitive("minimum", 2, "numeric", np.minimum,
              doc="Element-wise minimum; NaN in either gives NaN."),
    Primitive("maximum", 2, "numeric", np.maximum,
              doc="Element-wise maximum; NaN in either gives NaN."),
    Primitive("neg", 1, "numeric",
              lambda a: np.negative(a) if a.dtype.kind != "u" else (a.dtype.type(0) - a), "-x",
              doc="-x (unsigned integers wrap).", api="negative"),
    Primitive("positive", 1, "numeric", np.positive, "+x", doc="+x (a copy)."),
    Primitive("abs", 1, "numeric", lambda a: a if a.dtype.kind == "u" else np.abs(a),
              doc="Absolute value."),
    Primitive("square", 1, "numeric", np.square, doc="x * x."),
    Primitive("relu", 1, "numeric", lambda a: np.maximum(a, a.dtype.type(0)), doc="max(x, 0)."),
    Primitive("sign", 1, "numeric", np.sign, doc="-1, 0 or 1 (NaN stays NaN)."),
    Primitive("floor", 1, "numeric", _np_keep_int(np.floor),
              doc="Round down (integers unchanged)."),
    Primitive("ceil", 1, "numeric", _np_keep_int(np.ceil), doc="Round up (integers unchanged)."),
    Primitive("round", 1, "numeric", _np_keep_int(np.round),
              doc="Round half to even (integers unchanged)."),
    Primitive("trunc", 1, "numeric", _np_keep_int(np.trunc),
              doc="Round toward zero (integers unchanged)."),
    Primitive("sqrt", 1, "float", np.sqrt, doc="Square root."),
    Primitive("rsqrt", 1, "float", lambda a: np.float32(1) / np.sqrt(a), doc="1 / sqrt(x)."),
    Primitive("reciprocal", 1, "float", _np_reciprocal, doc="1 / x (float32)."),
    Primitive("deg2rad", 1, "float", np.deg2rad, doc="Degrees to radians: x * (pi / 180)."),
    Primitive("sigmoid", 1, "float", lambda a: np.float32(1) / (np.float32(1) + np.exp(-a)),
              wide=False, doc="1 / (1 + exp(-x))."),
    Primitive("erf", 1, "float", lambda a: _np_erf(a).astype(a.dtype), wide=False),
    _float("exp", np.exp, "e ** x."),
    _float("expm1", np.expm1, "exp(x) - 1, accurate near 0."),
    _float("log", np.log, "Natural logarithm."),
    _float("log1p", np.log1p, "log(1 + x), accurate near 0."),
    _float("log2", np.log2, "Base-2 logarithm (exact at powers of two)."),
    _float("log10", np.log10, "Base-10 logarithm."),
    _float("sin", np.sin, "Sine."), _float("cos", np.cos, "Cosine."),
    _float("tan", np.tan, "Tangent, range-reduced over the whole float32 range."),
    _float("asin", np.arcsin, "Inverse sine (NaN outside [-1, 1])."),
    _float("acos", np.arccos, "Inverse cosine (NaN outside [-1, 1])."),
    _float("atan", np.arctan, "Inverse tangent."),
    _float("atan2", np.arctan2, "The angle of (x2, x1), with IEEE's signed zeros.", 2),
    _float("sinh", np.sinh, "Hyperbolic sine."), _float("cosh", np.cosh, "Hyperbolic cosine."),
    _float("tanh", np.tanh, "Hyperbolic tangent."),
    _float("asinh", np.arcsinh, "Inverse hyperbolic sine."),
    _float("acosh", np.arccosh, "Inverse hyperbolic cosine (NaN below 1)."),
    _float("atanh", np.arctanh, "Inverse hyperbolic tangent (+-inf at +-1)."),
    _float("hypot", np.hypot, "sqrt(x1**2 + x2**2) without overflow.", 2),
    _float("logaddexp", np.logaddexp, "log(exp(x1) + exp(x2)) without overflow.", 2),
    _float("copysign", np.copysign, "|x1| with the sign of x2.", 2),
    _float("nextafter", np.nextafter, "The next float32 after x1 toward x2.", 2),
    Primitive("isnan", 1, "predicate", _np_pred(np.isnan, False), doc="Element is NaN."),
    Primitive("isinf", 1, "predicate", _np_pred(np.isinf, False), doc="Element is +-infinity."),
    Primitive("isfinite", 1, "predicate", _np_pred(np.isfinite, True),
              doc="Element is neither NaN nor infinite."),
    Primitive("signbit", 1, "predicate", np.signbit,
              doc="Whether the sign bit is set (true for -0.0 and -NaN)."),
    Primitive("eq", 2, "compare", np.equal, "==", doc="x1 == x2.", api="equal"),
    Primitive("ne", 2, "compare", np.not_equal, "!=", doc="x1 != x2 (true where either is NaN).",
              api="not_equal"),
    Primitive("lt", 2, "compare", np.less, "<", doc="x1 < x2.", api="less"),
    Primitive("le", 2, "compare", np.less_equal, "<=", doc="x1 <= x2.", api="less_equal"),
    Primitive("gt", 2, "compare", np.greater, ">", doc="x1 > x2.", api="greater"),
    Primitive("ge", 2, "compare", np.greater_equal, ">=", doc="x1 >= x2.", api="greater_equal"),
    Primitive("logical_and", 2, "logical", np.logical_and, "&", wide=False,
              doc="x1 and x2, for bool tensors."),
    Primitive("logical_or", 2, "logical", np.logical_or, "|", wide=False,
              doc="x1 or x2, for bool tensors."),
    Primitive("logical_xor", 2, "logical", np.logical_xor, "^", wide=False,
              doc="x1 xor x2, for bool tensors."),
    Primitive("logical_not", 1, "logical", np.logical_not, "~", wide=False,
              doc="not x, for bool tensors."),
    Primitive("bitwise_and", 2, "bitwise", np.bitwise_and, "&", doc="x1 & x2 (integers or bool)."),
    Primitive("bitwise_or", 2, "bitwise", np.bitwise_or, "|", doc="x1 | x2 (integers or bool)."),
    Primitive("bitwise_xor", 2, "bitwise", np.bitwise_xor, "^", doc="x1 ^ x2 (integers or bool)."),
    Primitive("bitwise_invert", 1, "bitwise", np.invert, "~",
              doc="~x: bit flip (not, for bool)."),
    Primitive("bitwise_left_shift", 2, "integer", np.left_shift, "<<",
              doc="x1 << x2; 0 for shifts of 32 or more (as numpy)."),
    Primitive("bitwise_right_shift", 2, "integer", np.right_shift, ">>",
              doc="x1 >> x2 (arithmetic for int32); shifts past 31 saturate."),
    Primitive("where", 3, "where", lambda c, a, b: np.asarray(np.where(c, a, b)),
              doc="Elements of x1 where condition is true, else of x2 (numpy.where)."),
    Primitive("cast", 1, "cast", lambda a: a),
    Primitive("copy", 1, "same", lambda a: a),
]:
    register(_p)
