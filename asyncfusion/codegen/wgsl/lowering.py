"""The lowering registry: how each registered op is written in WGSL.

A :class:`Lowering` maps argument expressions and a :class:`~.types.Ty` (the register
type, scalar or ``vec4``) to the op's expression, and names the helper functions it calls
(emitted once into each kernel that uses them: the 32-bit ones from :data:`HELPERS`, the
64-bit integer ones from :data:`HELPERS_WIDE`, the float64 ones from :data:`HELPERS_F64`).
There is one lowering per entry of :mod:`asyncfusion.ops`, under the same name, and one
fold (:data:`COMBINES`) per reduction but the arg ones, which the renderer folds as
(value, index) pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..._core.dtype import DType
from ...ops import Identity
from .arith import ARITH_32, ARITH_F64, ARITH_I64, DIVMOD_F32
from .math_f32 import FAST_DOMAIN_F32, MATH_F32, NEEDS_F32, fma_helpers
from .math_f64 import MATH_F64, NEEDS_F64
from .types import ABS64, INF64, WGSL_TYPE, Rule, Ty, isinf, isnan, lanes

__all__ = ["Lowering", "LOWERINGS", "register_lowering", "HELPERS", "HELPERS_FMA",
           "HELPERS_WIDE", "HELPERS_F64", "COMBINES", "identity"]


@dataclass(frozen=True, slots=True)
class Lowering:
    """An op's WGSL rule and the helpers it calls (with the helpers those call).
    ``domain``: where the rule's float32 ``vec4`` helper is split (``math_f32``'s
    :data:`FAST_DOMAIN_F32`, over ``{x}``), ``fast`` calls its fast path alone, right on
    that domain: an element-wise kernel of several split ops checks the domains once and
    recomputes the lanes outside in one slow tail (``render``)."""

    wgsl: Rule
    helpers: tuple[str, ...] = ()
    fast: Rule | None = None
    domain: str | None = None


HELPERS: dict[str, str] = (
    {name: text + "".join(lanes(name, t, arity) for t in types)
     for name, (text, types, arity) in ARITH_32.items()}
    | {"af_divmod": DIVMOD_F32}
    | {name: text + (lanes(name, "f32", arity) if arity else "")
       for name, (text, arity) in MATH_F32.items()})
# HELPERS for a compiler whose fma is fused (render(..., fma=True)): exp, sin, cos and tan
# reduce and evaluate with fma (math_f32.fma_helpers).
HELPERS_FMA: dict[str, str] = HELPERS | fma_helpers()
HELPERS_WIDE: dict[str, str] = ARITH_I64
HELPERS_F64: dict[str, str] = ARITH_F64 | MATH_F64


def _helpers(*names: str) -> tuple[str, ...]:
    """``names`` and every helper they call, in float32 or float64."""
    found = list(names)
    for h in found:
        found += [n for n in NEEDS_F32.get(h, ()) + NEEDS_F64.get(h, ()) if n not in found]
    return tuple(found)


# -- rules ----------------------------------------------------------------------------
def _by_kind(fl: Rule, it: Rule, ut: Rule | None = None) -> Rule:
    def rule(a: list[str], ty: Ty) -> str:
        if ty.dtype.is_float:
            return fl(a, ty)
        if ty.dtype.is_unsigned and ut is not None:
            return ut(a, ty)
        return it(a, ty)
    return rule


def _fn(name: str) -> Rule:
    """A helper function per dtype and width: ``name_f32``, ``name_i32_4`` ..."""
    def rule(a: list[str], ty: Ty) -> str:
        suffix = WGSL_TYPE[ty.dtype] + ("_4" if ty.vec4 else "")
        return f"{name}_{suffix}({', '.join(a)})"
    return rule


def _nan_select(fn: str) -> Rule:
    # WGSL leaves min/max of NaN unspecified; numpy propagates NaN.
    return _by_kind(
        lambda a, ty: f"select({fn}({a[0]}, {a[1]}), {a[0]} + {a[1]}, "
                      f"{isnan(a[0], ty.vec4, ty.dtype)} | {isnan(a[1], ty.vec4, ty.dtype)})",
        lambda a, ty: f"{fn}({a[0]}, {a[1]})")


def _cmp(sym: str) -> Rule:
    def rule(a: list[str], ty: Ty) -> str:
        if ty.dtype is DType.bool and sym not in ("==", "!="):  # WGSL orders no bools
            u = ty.of(DType.uint32).t
            return f"({u}({a[0]}) {sym} {u}({a[1]}))"
        if ty.dtype.is_float and sym == "!=":  # unordered: true when either is NaN
            return f"(!({a[0]} == {a[1]}))"
        return f"({a[0]} {sym} {a[1]})"
    return rule


def _ieee(op: str, flip: str) -> Rule:
    """Float add/sub that keep IEEE special values: lavapipe folds ``x - x`` (and, fused,
    ``x + (-x)``) to 0 even for inf and NaN. The result is NaN, by bits the compiler
    cannot fold, when an operand is NaN or both are infinities that cancel."""
    def rule(a: list[str], ty: Ty) -> str:
        expr = f"({a[0]} {op} {a[1]})"
        if not ty.folds:  # this compiler keeps inf - inf and NaN - NaN as NaN
            return expr
        if ty.dtype is DType.float64:
            return _ieee64(expr, a, flip)
        if ty.dtype is not DType.float32:
            return expr
        u = "vec4<u32>" if ty.vec4 else "u32"
        bits = [f"bitcast<{u}>({x})" for x in a]
        inf = f"(({bits[0]} & {u}(0x7fffffffu)) == {u}(0x7f800000u))"
        cancel = f"({inf} & ({bits[0]} == ({bits[1]} ^ {u}({flip}))))"
        nan = f"{ty.t}(bitcast<f32>(0x7fc00000u))"
        return (f"select({expr}, {nan}, {isnan(a[0], ty.vec4)} | {isnan(a[1], ty.vec4)} | "
                f"{cancel})")
    return rule


def _ieee64(expr: str, a: list[str], flip: str) -> str:
    """:func:`_ieee` for float64, on int64 bits."""
    bits = [f"bitcast<i64>({x})" for x in a]
    sign = "(-9223372036854775807li - 1li)" if flip != "0u" else "0li"
    cancel = (f"((({bits[0]} & {ABS64}) == {INF64}) & "
              f"({bits[0]} == ({bits[1]} ^ {sign})))")
    nan = "bitcast<f64>(0x7ff8000000000000li)"
    return (f"select({expr}, {nan}, {isnan(a[0], False, DType.float64)} | "
            f"{isnan(a[1], False, DType.float64)} | {cancel})")


def _same(fl: Rule) -> Rule:
    """A float function that leaves integers as they are (floor, ceil, round)."""
    return _by_kind(fl, lambda a, ty: a[0])


def _unary(fn: str) -> Rule:
    return lambda a, ty: f"{fn}({a[0]})"


def _binop(sym: str) -> Rule:
    return lambda a, ty: f"({a[0]} {sym} {a[1]})"


def _bits(ty: Ty) -> str:
    return "vec4<u32>" if ty.vec4 else "u32"


def _left_shift(a: list[str], ty: Ty) -> str:
    n = f"{_bits(ty)}({a[1]})"
    width = ty.dtype.itemsize * 8
    return f"select({a[0]} << {n}, {ty.const('0')}, {n} >= {_bits(ty)}({width}u))"


def _right_shift(a: list[str], ty: Ty) -> str:
    n = f"{_bits(ty)}({a[1]})"
    width = ty.dtype.itemsize * 8
    if not ty.dtype.is_unsigned:  # arithmetic: a shift of 31 (63) or more gives 0 or -1
        return f"({a[0]} >> min({n}, {_bits(ty)}({width - 1}u)))"
    return f"select({a[0]} >> {n}, {ty.const('0u')}, {n} >= {_bits(ty)}({width}u))"


def _signbit(a: list[str], ty: Ty) -> str:
    if ty.dtype is DType.float32:
        u = _bits(ty)
        return f"((bitcast<{u}>({a[0]}) >> {u}(31u)) == {u}(1u))"
    if ty.dtype is DType.float64:
        return f"(bitcast<i64>({a[0]}) < 0li)"
    if ty.dtype in (DType.int32, DType.int64):
        return f"({a[0]} < {ty.const('0')})"
    return "vec4<bool>(false)" if ty.vec4 else "false"


def _div(a: list[str], ty: Ty) -> str:
    """float32 through ``af_div`` (accurate over the whole range); float64 as WGSL's ``/``."""
    return f"({a[0]} / {a[1]})" if ty.dtype is DType.float64 else _fn("af_div")(a, ty)


def _const(value: str) -> Rule:
    return lambda a, ty: f"vec4<bool>({value})" if ty.vec4 else value


def _math(name: str) -> Lowering:
    """A function of :mod:`.math_f32` (and :mod:`.math_f64`): ``af_name``."""
    domain = FAST_DOMAIN_F32.get(name)
    if domain is None:
        return Lowering(_fn(f"af_{name}"), _helpers(f"af_{name}"))
    return Lowering(_fn(f"af_{name}"), _helpers(f"af_{name}"),
                    fast=lambda a, ty: f"af_{name}_f32_4_fast({a[0]})", domain=domain)


_Z = "0"  # literal zero, typed by Ty.const

LOWERINGS: dict[str, Lowering] = {
    "add": Lowering(_ieee("+", "0x80000000u")),
    "sub": Lowering(_ieee("-", "0u")),
    "mul": Lowering(_binop("*")),
    "div": Lowering(_div, _helpers("af_div")),
    "pow": _math("pow"),
    "floor_divide": Lowering(_fn("af_floordiv"), _helpers("af_floordiv", "af_divmod")),
    "remainder": Lowering(_fn("af_rem"), _helpers("af_rem", "af_divmod")),
    "minimum": Lowering(_nan_select("min")),
    "maximum": Lowering(_nan_select("max")),
    "neg": Lowering(_by_kind(lambda a, ty: f"(-{a[0]})", lambda a, ty: f"(-{a[0]})",
                             lambda a, ty: f"({ty.const('0u')} - {a[0]})")),
    "positive": Lowering(lambda a, ty: a[0]),
    "abs": Lowering(_by_kind(_unary("abs"), _unary("abs"), lambda a, ty: a[0])),
    "square": Lowering(lambda a, ty: f"({a[0]} * {a[0]})"),
    "relu": Lowering(lambda a, ty: f"select({a[0]}, {ty.const(_Z)}, {a[0]} < {ty.const(_Z)})"),
    "sign": Lowering(_by_kind(
        lambda a, ty: f"select(sign({a[0]}), {a[0]}, {isnan(a[0], ty.vec4, ty.dtype)})",
        _unary("sign"),
        lambda a, ty: f"select({ty.const('0u')}, {ty.const('1u')}, {a[0]} > {ty.const('0u')})")),
    "floor": Lowering(_same(_unary("floor"))),
    "ceil": Lowering(_same(_unary("ceil"))),
    "round": Lowering(_same(_unary("round"))),
    "trunc": Lowering(_same(_unary("trunc"))),
    "sqrt": Lowering(_unary("sqrt")),
    "rsqrt": Lowering(lambda a, ty: f"({ty.const('1.0')} / sqrt({a[0]}))"),
    "deg2rad": Lowering(lambda a, ty: f"({a[0]} * {ty.const('0.017453292519943295')})"),
    "reciprocal": Lowering(lambda a, ty: f"({ty.const('1.0')} / {a[0]})"),
    "sigmoid": Lowering(lambda a, ty: f"({ty.const('1.0')} / ({ty.const('1.0')} + exp(-{a[0]})))"),
    "erf": Lowering(_fn("af_erf"), ("af_erf",)),
    **{name: _math(name) for name in (
        "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin",
        "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "hypot",
        "logaddexp", "copysign", "nextafter")},
    "isnan": Lowering(_by_kind(lambda a, ty: isnan(a[0], ty.vec4, ty.dtype), _const("false"))),
    "isinf": Lowering(_by_kind(lambda a, ty: isinf(a[0], ty.vec4, ty.dtype), _const("false"))),
    "isfinite": Lowering(_by_kind(
        lambda a, ty: f"(!({isnan(a[0], ty.vec4, ty.dtype)} | {isinf(a[0], ty.vec4, ty.dtype)}))",
        _const("true"))),
    "signbit": Lowering(_signbit),
    "eq": Lowering(_cmp("==")),
    "ne": Lowering(_cmp("!=")),
    "lt": Lowering(_cmp("<")),
    "le": Lowering(_cmp("<=")),
    "gt": Lowering(_cmp(">")),
    "ge": Lowering(_cmp(">=")),
    "logical_and": Lowering(_binop("&")),
    "logical_or": Lowering(_binop("|")),
    "logical_xor": Lowering(_binop("!=")),
    "logical_not": Lowering(lambda a, ty: f"(!{a[0]})"),
    "bitwise_and": Lowering(_binop("&")),
    "bitwise_or": Lowering(_binop("|")),
    "bitwise_xor": Lowering(lambda a, ty: _binop("!=" if ty.dtype is DType.bool else "^")(a, ty)),
    "bitwise_invert": Lowering(
        lambda a, ty: f"(!{a[0]})" if ty.dtype is DType.bool else f"(~{a[0]})"),
    "bitwise_left_shift": Lowering(_left_shift),
    "bitwise_right_shift": Lowering(_right_shift),
    "where": Lowering(lambda a, ty: f"select({a[2]}, {a[1]}, {a[0]})"),
    "cast": Lowering(lambda a, ty: f"{ty.t}({a[0]})"),
    "copy": Lowering(lambda a, ty: a[0]),
}


def register_lowering(name: str, lowering: Lowering) -> Lowering:
    if name in LOWERINGS:
        raise ValueError(f"a lowering for {name!r} exists already; pick another name")
    LOWERINGS[name] = lowering
    return lowering


# -- reductions -----------------------------------------------------------------------
Combine = Callable[[str, str, DType], str]


def _fold_minmax(fn: str) -> Combine:
    def combine(a: str, b: str, dt: DType) -> str:
        if dt.is_float:
            return (f"select({fn}({a}, {b}), {a} + {b}, {isnan(a, False, dt)} | "
                    f"{isnan(b, False, dt)})")
        return f"{fn}({a}, {b})"
    return combine


COMBINES: dict[str, Combine] = {
    "sum": lambda a, b, dt: f"({a} + {b})",
    "prod": lambda a, b, dt: f"({a} * {b})",
    "max": _fold_minmax("max"),
    "min": _fold_minmax("min"),
    "any": lambda a, b, dt: f"max({a}, {b})",
    "all": lambda a, b, dt: f"min({a}, {b})",
}

_LOWEST = {DType.float32: "bitcast<f32>(0xff800000u)", DType.int32: "i32(-2147483647 - 1)",
           DType.uint32: "0u", DType.float64: "bitcast<f64>(-4503599627370496li)",
           DType.int64: "(-9223372036854775807li - 1li)", DType.uint64: "0lu"}
_HIGHEST = {DType.float32: "bitcast<f32>(0x7f800000u)", DType.int32: "2147483647",
            DType.uint32: "0xffffffffu", DType.float64: f"bitcast<f64>({INF64})",
            DType.int64: "9223372036854775807li", DType.uint64: "0xfffffffffffffffflu"}


def identity(of: Identity, dt: DType) -> str:
    """The WGSL literal of a fold's identity in accumulator dtype ``dt``."""
    if of is Identity.ZERO:
        return f"{WGSL_TYPE[dt]}(0)"
    if of is Identity.ONE:
        return f"{WGSL_TYPE[dt]}(1)"
    return (_LOWEST if of is Identity.LOWEST else _HIGHEST)[dt]
