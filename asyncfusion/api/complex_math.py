"""Complex element-wise math, recorded as real ops on the parts.

Each entry of :data:`COMPLEX` takes the operands' parts, ``(re, im)`` pairs of float
tensors of the result's part dtype (real operands come with a zero imaginary part,
Python scalars as 0-d tensors), and returns the result's parts (or one real tensor, for
``abs``, the predicates and the comparisons). The formulas are the textbook ones in the
forms that stay finite where the result is (Smith's division, the half-angle
``expm1``, the reflected ``asinh``, ``log(2z)`` for huge arguments); they fuse into the
kernels of whatever reads them. :func:`call` is what the public functions run when an
operand is complex; the ops that need an order (``<``, ``floor``, ``maximum`` ...) raise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from .._core.dtype import DType, promote
from .._core.errors import DTypeError
from ..lazy.complex_tensor import ComplexTensor
from ..lazy.record import binary, elementwise, unary, what
from ..lazy.tensor import Operand, Tensor
from ..ops import PRIMITIVES
from .creation import tensor

__all__ = ["COMPLEX", "call", "parts", "common"]

Parts = tuple[Tensor, Tensor]
Result = Parts | Tensor


def _where(c: Tensor, a: Tensor, b: Tensor) -> Tensor:
    return elementwise("where", c, a, b)


def _zero(x: Tensor) -> Tensor:
    """+0 in ``x``'s shape, computed from ``x`` in the kernel (|copysign(0, x)|: never NaN)."""
    return unary("abs", binary("copysign", 0.0, x))


# -- the arithmetic ---------------------------------------------------------------------
def _mul(a: Parts, b: Parts) -> Parts:
    return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]


def _div(a: Parts, b: Parts) -> Parts:
    """Smith's division: the divisor's larger part divides, so nothing squares."""
    (ar, ai), (br, bi) = a, b
    wide = unary("abs", br) >= unary("abs", bi)
    r = _where(wide, bi / br, br / bi)
    d = _where(wide, br + bi * r, bi + br * r)
    re = _where(wide, ar + ai * r, ar * r + ai) / d
    im = _where(wide, ai - ar * r, ai * r - ar) / d
    return re, im


def _exp(a: Parts) -> Parts:
    e = unary("exp", a[0])
    return e * unary("cos", a[1]), e * unary("sin", a[1])


def _log(a: Parts) -> Parts:
    return unary("log", binary("hypot", a[0], a[1])), binary("atan2", a[1], a[0])


def _sqrt(a: Parts) -> Parts:
    """sqrt(|z| +- x) / 2 from the side that does not cancel, the other part from it."""
    re, im = a
    m = binary("hypot", re, im)
    t = unary("sqrt", unary("abs", re) * 0.5 + m * 0.5)
    zero = m == 0.0
    other = _where(zero, _zero(re), unary("abs", im) / (t * 2.0))
    pos = re >= 0.0
    out_re = _where(pos, t, other)
    out_im = binary("copysign", _where(pos, other, t), im)
    return _where(zero, _zero(re), out_re), out_im


def _tanh(a: Parts) -> Parts:
    re, im = a
    big = unary("abs", re) > 20.0
    x = _where(big, _zero(re), re) * 2.0
    d = unary("cosh", x) + unary("cos", im * 2.0)
    tail = unary("sin", im * 2.0) * 2.0 * unary("exp", unary("abs", re) * -2.0)
    return (_where(big, unary("sign", re), unary("sinh", x) / d),
            _where(big, tail, unary("sin", im * 2.0) / d))


def _times_i(a: Parts) -> Parts:
    return unary("neg", a[1]), a[0]


def _times_minus_i(a: Parts) -> Parts:
    return a[1], unary("neg", a[0])


def _huge(x: Tensor) -> float:
    """Where squaring an argument part would overflow: past it, asinh(z) is log(2z)."""
    return 1e17 if x.dtype is DType.float32 else 1e150


def _asinh(a: Parts) -> Parts:
    """log(z + sqrt(z*z + 1)) on the right half plane (asinh is odd: the left half is
    reflected), log(2z) where z*z would overflow."""
    re, im = a
    left = re < 0.0
    z = (_where(left, unary("neg", re), re), _where(left, unary("neg", im), im))
    zz = _mul(z, z)
    s = _sqrt((zz[0] + 1.0, zz[1]))
    w = _log((z[0] + s[0], z[1] + s[1]))
    huge = binary("hypot", re, im) > _huge(re)
    big = _log(z)
    w = (_where(huge, big[0] + math.log(2.0), w[0]), _where(huge, big[1], w[1]))
    return _where(left, unary("neg", w[0]), w[0]), _where(left, unary("neg", w[1]), w[1])


def _acosh(a: Parts) -> Parts:
    re, im = a
    p = _sqrt((re + 1.0, im))
    m = _sqrt((re - 1.0, im))
    pm = _mul(p, m)
    w = _log((re + pm[0], im + pm[1]))
    huge = binary("hypot", re, im) > _huge(re)
    big = _log(a)
    return _where(huge, big[0] + math.log(2.0), w[0]), _where(huge, big[1], w[1])


def _log1p(a: Parts) -> Parts:
    re, im = a
    small = binary("hypot", re, im) < 0.5
    near = unary("log1p", re * (re + 2.0) + im * im) * 0.5
    far = unary("log", binary("hypot", re + 1.0, im))
    return _where(small, near, far), binary("atan2", im, re + 1.0)


def _atanh(a: Parts) -> Parts:
    p = _log1p(a)
    m = _log1p((unary("neg", a[0]), unary("neg", a[1])))
    return (p[0] - m[0]) * 0.5, (p[1] - m[1]) * 0.5


def _expm1(a: Parts) -> Parts:
    re, im = a
    half = unary("sin", im * 0.5)
    return (unary("expm1", re) * unary("cos", im) - half * half * 2.0,
            unary("exp", re) * unary("sin", im))


def _scaled(f: Callable[[Parts], Parts], k: float) -> Callable[[Parts], Parts]:
    def g(a: Parts) -> Parts:
        w = f(a)
        return w[0] * k, w[1] * k
    return g


def _rotated(f: Callable[[Parts], Parts]) -> Callable[[Parts], Parts]:
    """f of i*z, times -i: asin from asinh, atan from atanh, tan from tanh."""
    return lambda a: _times_minus_i(f(_times_i(a)))


def _sign(a: Parts) -> Parts:
    m = binary("hypot", a[0], a[1])
    zero = m == 0.0
    return _where(zero, a[0], a[0] / m), _where(zero, a[1], a[1] / m)


def _pow(a: Parts, b: Parts) -> Parts:
    lg = _log(a)
    e = _exp(_mul(b, lg))
    zero = (a[0] == 0.0) & (a[1] == 0.0) & (b[0] > 0.0)
    return _where(zero, _zero(a[0]), e[0]), _where(zero, _zero(a[0]), e[1])


def _asin(a: Parts) -> Parts:
    return _rotated(_asinh)(a)


def _acos(a: Parts) -> Parts:
    s = _asin(a)
    return math.pi / 2 - s[0], unary("neg", s[1])


def _each(op: str) -> Callable[..., Parts]:
    """An op applied to each part alone."""
    def each(*a: Parts) -> Parts:
        return elementwise(op, *(x[0] for x in a)), elementwise(op, *(x[1] for x in a))
    return each


COMPLEX: dict[str, Callable[..., Result]] = {
    "add": _each("add"),
    "sub": _each("sub"),
    "mul": _mul,
    "div": _div,
    "pow": _pow,
    "neg": _each("neg"),
    "positive": _each("positive"),
    "round": _each("round"),
    "square": lambda a: _mul(a, a),
    "reciprocal": lambda a: _div((_zero(a[0]) + 1.0, _zero(a[0])), a),
    "abs": lambda a: binary("hypot", a[0], a[1]),
    "sign": _sign,
    "sqrt": _sqrt,
    "exp": _exp,
    "expm1": _expm1,
    "log": _log,
    "log1p": _log1p,
    "log2": _scaled(_log, 1 / math.log(2.0)),
    "log10": _scaled(_log, 1 / math.log(10.0)),
    "sin": lambda a: (unary("sin", a[0]) * unary("cosh", a[1]),
                      unary("cos", a[0]) * unary("sinh", a[1])),
    "cos": lambda a: (unary("cos", a[0]) * unary("cosh", a[1]),
                      unary("neg", unary("sin", a[0]) * unary("sinh", a[1]))),
    "tan": _rotated(_tanh),
    "sinh": lambda a: (unary("sinh", a[0]) * unary("cos", a[1]),
                       unary("cosh", a[0]) * unary("sin", a[1])),
    "cosh": lambda a: (unary("cosh", a[0]) * unary("cos", a[1]),
                       unary("sinh", a[0]) * unary("sin", a[1])),
    "tanh": _tanh,
    "asinh": _asinh,
    "acosh": _acosh,
    "atanh": _atanh,
    "asin": _asin,
    "acos": _acos,
    "atan": _rotated(_atanh),
    "isnan": lambda a: unary("isnan", a[0]) | unary("isnan", a[1]),
    "isinf": lambda a: unary("isinf", a[0]) | unary("isinf", a[1]),
    "isfinite": lambda a: unary("isfinite", a[0]) & unary("isfinite", a[1]),
    "eq": lambda a, b: (a[0] == b[0]) & (a[1] == b[1]),
    "ne": lambda a, b: (a[0] != b[0]) | (a[1] != b[1]),
}
"""Registry op name -> its complex form on parts."""


def _dtype_of(a: Operand | complex) -> DType | None:
    if isinstance(a, Tensor):
        return a.dtype
    if isinstance(a, (complex, np.complexfloating)):
        return DType.complex64
    return None


def parts(a: Operand | complex, part: DType, like: Tensor) -> Parts:
    """``a`` as (re, im) tensors of dtype ``part`` on ``like``'s device."""
    if isinstance(a, ComplexTensor):
        if a.real.dtype is part:
            return a.real, a.imag
        return elementwise("cast", a.real, dtype=part), elementwise("cast", a.imag, dtype=part)
    if isinstance(a, Tensor):
        re = a if a.dtype is part else elementwise("cast", a, dtype=part)
        return re, _zero(re)
    c = complex(a)
    return (tensor(c.real, part, device=like.device), tensor(c.imag, part, device=like.device))


def call(op: str, args: tuple[Operand | complex, ...]) -> Tensor:
    """The public function of registry op ``op`` on operands of which one is complex."""
    if op == "where":
        cond, *values = args
        out = common(op, values)
        ref = next(a for a in values if isinstance(a, Tensor))
        ps = [parts(a, out.part, ref) for a in values]
        return ComplexTensor(_where(cond, ps[0][0], ps[1][0]),  # type: ignore[arg-type]
                             _where(cond, ps[0][1], ps[1][1]))  # type: ignore[arg-type]
    fn = COMPLEX.get(op)
    if fn is None:
        p = PRIMITIVES[op]
        name = f"{p.public} ({p.symbol})" if p.symbol else p.public
        raise DTypeError(f"{name} is not defined for complex tensors (complex numbers have "
                         "no order); apply it to af.real(z), af.imag(z) or af.abs(z)")
    out = common(op, args)
    ref = next(a for a in args if isinstance(a, Tensor))
    got = fn(*(parts(a, out.part, ref) for a in args))
    return got if isinstance(got, Tensor) else ComplexTensor(*got)


def common(op: str, args: Sequence[Operand | complex]) -> DType:
    """The complex dtype of an op's result."""
    dts = [d for d in map(_dtype_of, args) if d is not None]
    out = dts[0]
    for d in dts[1:]:
        out = promote(out, d, what(op))
    if not out.is_complex:
        out = promote(out, DType.complex64, what(op))
    return out
