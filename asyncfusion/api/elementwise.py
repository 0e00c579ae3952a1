"""The element-wise functions: one per registry primitive, spelled as the standard (or
numpy) spells it, each a thin call of :func:`~asyncfusion.api.record.elementwise`.

The same function objects are the Tensor's operators and methods
(:mod:`asyncfusion.api.methods` binds them: ``t + u`` is ``add(t, u)``, ``2 - t`` is
``subtract(2, t)``, ``t.exp()`` is ``exp(t)``), so every spelling of an op takes one
path. Operands are tensors or scalars (at least one tensor), broadcast as numpy does;
a call without a tensor raises a TypeError that says to make one with
``asyncfusion.tensor``. Math functions compute in float32 (float64 where the adapter has
it; integer inputs are converted); bitwise functions take integers (and bool for
and/or/xor/invert); shifts take integers only.
"""

from __future__ import annotations

from collections.abc import Callable

from ..lazy.record import elementwise
from ..lazy.tensor import Operand, Tensor
from ..ops import PRIMITIVES
from .creation import zeros_like

__all__ = ["abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh",
           "bitwise_and", "bitwise_invert", "bitwise_left_shift", "bitwise_or",
           "bitwise_right_shift", "bitwise_xor", "ceil", "conj", "copysign", "cos", "cosh",
           "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater",
           "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less",
           "less_equal", "log", "log10", "log1p", "log2", "logaddexp", "logical_and",
           "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
           "negative", "nextafter", "not_equal", "positive", "pow", "real", "reciprocal",
           "relu", "remainder", "round", "rsqrt", "sigmoid", "sign", "signbit", "sin",
           "sinh", "sqrt", "square", "subtract", "tan", "tanh", "trunc", "where"]

Unary = Callable[[Operand], Tensor]
Binary = Callable[[Operand, Operand], Tensor]


def _unary(op: str, name: str, doc: str) -> Unary:
    if PRIMITIVES[op].arity != 1:
        raise AssertionError(f"{name}: the registry's {op} takes {PRIMITIVES[op].arity} operands")

    def fn(x: Operand, /) -> Tensor:
        return elementwise(op, x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _binary(op: str, name: str, doc: str) -> Binary:
    if PRIMITIVES[op].arity != 2:
        raise AssertionError(f"{name}: the registry's {op} takes {PRIMITIVES[op].arity} operands")

    def fn(x1: Operand, x2: Operand, /) -> Tensor:
        return elementwise(op, x1, x2)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def where(condition: Tensor, x1: Operand, x2: Operand, /) -> Tensor:
    """Elements of ``x1`` where ``condition`` is true, else of ``x2`` (numpy.where)."""
    return elementwise("where", condition, x1, x2)


def imag(x: Tensor, /) -> Tensor:
    """Imaginary part: zeros of x's shape and dtype for real dtypes."""
    if type(x) is not Tensor:
        raise TypeError(f"imag: needs an asyncfusion Tensor, not {type(x).__name__}")
    return zeros_like(x)


abs = _unary("abs", "abs", "Absolute value.")  # noqa: A001 - the standard's name
exp = _unary("exp", "exp", "e ** x.")
log = _unary("log", "log", "Natural logarithm.")
sqrt = _unary("sqrt", "sqrt", "Square root.")
rsqrt = _unary("rsqrt", "rsqrt", "1 / sqrt(x).")
square = _unary("square", "square", "x * x.")
sin = _unary("sin", "sin", "Sine.")
cos = _unary("cos", "cos", "Cosine.")
tanh = _unary("tanh", "tanh", "Hyperbolic tangent.")
sigmoid = _unary("sigmoid", "sigmoid", "1 / (1 + exp(-x)).")
relu = _unary("relu", "relu", "max(x, 0).")
floor = _unary("floor", "floor", "Round down (integers unchanged).")
ceil = _unary("ceil", "ceil", "Round up (integers unchanged).")
round = _unary("round", "round", "Round half to even (integers unchanged).")  # noqa: A001
sign = _unary("sign", "sign", "-1, 0 or 1 (NaN stays NaN).")
isnan = _unary("isnan", "isnan", "Element is NaN.")
isinf = _unary("isinf", "isinf", "Element is +-infinity.")
isfinite = _unary("isfinite", "isfinite", "Element is neither NaN nor infinite.")
acos = _unary("acos", "acos", "Inverse cosine (NaN outside [-1, 1]).")
acosh = _unary("acosh", "acosh", "Inverse hyperbolic cosine (NaN below 1).")
asin = _unary("asin", "asin", "Inverse sine (NaN outside [-1, 1]).")
asinh = _unary("asinh", "asinh", "Inverse hyperbolic sine.")
atan = _unary("atan", "atan", "Inverse tangent.")
atanh = _unary("atanh", "atanh", "Inverse hyperbolic tangent (+-inf at +-1).")
cosh = _unary("cosh", "cosh", "Hyperbolic cosine.")
sinh = _unary("sinh", "sinh", "Hyperbolic sine.")
tan = _unary("tan", "tan", "Tangent, range-reduced over the whole float32 range.")
expm1 = _unary("expm1", "expm1", "exp(x) - 1, accurate near 0.")
log1p = _unary("log1p", "log1p", "log(1 + x), accurate near 0.")
log2 = _unary("log2", "log2", "Base-2 logarithm (exact at powers of two).")
log10 = _unary("log10", "log10", "Base-10 logarithm.")
reciprocal = _unary("reciprocal", "reciprocal", "1 / x (float32).")
trunc = _unary("trunc", "trunc", "Round toward zero (integers unchanged).")
positive = _unary("positive", "positive", "+x (a copy).")
negative = _unary("neg", "negative", "-x (unsigned integers wrap).")
signbit = _unary("signbit", "signbit", "Whether the sign bit is set (true for -0.0 and -NaN).")
bitwise_invert = _unary("bitwise_invert", "bitwise_invert", "~x: bit flip (not, for bool).")
logical_not = _unary("logical_not", "logical_not", "not x, for bool tensors.")
conj = _unary("positive", "conj", "Complex conjugate: x itself for real dtypes.")
real = _unary("positive", "real", "Real part: x itself for real dtypes.")


floor_divide = _binary("floor_divide", "floor_divide",
                       "x1 // x2, rounding toward -infinity (as numpy).")
remainder = _binary("remainder", "remainder", "x1 % x2 with the sign of x2 (as numpy).")
minimum = _binary("minimum", "minimum", "Element-wise minimum; NaN in either gives NaN.")
maximum = _binary("maximum", "maximum", "Element-wise maximum; NaN in either gives NaN.")
add = _binary("add", "add", "x1 + x2.")
subtract = _binary("sub", "subtract", "x1 - x2.")
multiply = _binary("mul", "multiply", "x1 * x2.")
divide = _binary("div", "divide", "x1 / x2 (float32).")
pow = _binary("pow", "pow", "x1 ** x2 (numpy's special cases).")  # noqa: A001 - the standard's
equal = _binary("eq", "equal", "x1 == x2.")
not_equal = _binary("ne", "not_equal", "x1 != x2 (true where either is NaN).")
less = _binary("lt", "less", "x1 < x2.")
less_equal = _binary("le", "less_equal", "x1 <= x2.")
greater = _binary("gt", "greater", "x1 > x2.")
greater_equal = _binary("ge", "greater_equal", "x1 >= x2.")
logical_and = _binary("logical_and", "logical_and", "x1 and x2, for bool tensors.")
logical_or = _binary("logical_or", "logical_or", "x1 or x2, for bool tensors.")
logical_xor = _binary("logical_xor", "logical_xor", "x1 xor x2, for bool tensors.")
bitwise_and = _binary("bitwise_and", "bitwise_and", "x1 & x2 (integers or bool).")
bitwise_or = _binary("bitwise_or", "bitwise_or", "x1 | x2 (integers or bool).")
bitwise_xor = _binary("bitwise_xor", "bitwise_xor", "x1 ^ x2 (integers or bool).")
bitwise_left_shift = _binary("bitwise_left_shift", "bitwise_left_shift",
                             "x1 << x2; 0 for shifts of 32 or more (as numpy).")
bitwise_right_shift = _binary("bitwise_right_shift", "bitwise_right_shift",
                              "x1 >> x2 (arithmetic for int32); shifts past 31 saturate.")
atan2 = _binary("atan2", "atan2", "The angle of (x2, x1), with IEEE's signed zeros.")
hypot = _binary("hypot", "hypot", "sqrt(x1**2 + x2**2) without overflow.")
logaddexp = _binary("logaddexp", "logaddexp", "log(exp(x1) + exp(x2)) without overflow.")
copysign = _binary("copysign", "copysign", "|x1| with the sign of x2.")
nextafter = _binary("nextafter", "nextafter", "The next float32 after x1 toward x2.")
