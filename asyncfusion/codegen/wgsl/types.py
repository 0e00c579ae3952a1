"""WGSL's types for asyncfusion's dtypes, register types, and the conversions and bit
tests every lowering shares."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..._core.dtype import DType
from ...kernel import Kernel

__all__ = ["WGSL_TYPE", "STORAGE_TYPE", "Ty", "Rule", "convert", "isnan", "isinf", "lanes",
           "ABS64", "INF64", "enables"]

# int8, uint8, int16 and uint16 live in i32/u32 lanes (WGSL has no 8- or 16-bit
# integers): sign- or zero-extended in storage and registers, wrapped to their width
# after every op (convert)
WGSL_TYPE = {DType.float16: "f16", DType.float32: "f32", DType.float64: "f64",
             DType.int64: "i64", DType.int32: "i32", DType.uint64: "u64",
             DType.uint32: "u32", DType.bool: "bool"}
WGSL_TYPE |= {d: WGSL_TYPE[d.lane] for d in DType if d.lane is not d}
STORAGE_TYPE = WGSL_TYPE | {DType.bool: "u32"}  # WGSL cannot store bool: a u32 per element

ABS64 = "0x7fffffffffffffffli"  # float64 bits, as int64 literals: all but the sign
INF64 = "0x7ff0000000000000li"  # +inf


@dataclass(frozen=True, slots=True)
class Ty:
    """A register type: ``dtype`` as a scalar or as a 4-lane vector. ``folds``: the
    adapter's compiler folds ``x - x`` to 0 even for inf and NaN (lavapipe does), so
    float add/sub keep IEEE special values by bits it cannot fold."""

    dtype: DType
    vec4: bool
    folds: bool = True

    @property
    def t(self) -> str:
        w = WGSL_TYPE[self.dtype]
        return f"vec4<{w}>" if self.vec4 else w

    def const(self, literal: str) -> str:
        return f"{self.t}({literal})"

    def of(self, dtype: DType) -> Ty:
        return Ty(dtype, self.vec4, self.folds)


Rule = Callable[[list[str], Ty], str]  # argument expressions -> the op's expression


def convert(expr: str, src: DType, ty: Ty) -> str:
    """``expr`` (of ``src``) as ``ty``. A 32-bit (or narrower) integer becomes a 64-bit one
    by an explicit sign or zero extension: naga (wgpu 0.32) sign-extends ``i64(u32)``,
    and on lavapipe a plain ``i64(x)`` of a negative i32 compares as non-negative.
    The narrow integers' results wrap: the low 8 or 16 bits of the 32-bit lane, sign- or
    zero-extended."""
    dst = ty.dtype
    if dst.itemsize == 8 and dst.is_int and src.lane in (DType.int32, DType.uint32):
        wide = (f"((i64({expr}) << 32u) >> 32u)" if src.lane is DType.int32
                else f"(i64({expr}) & 0xffffffffli)")
        return wide if dst is DType.int64 else f"bitcast<u64>({wide})"
    lane = expr if WGSL_TYPE[src] == WGSL_TYPE[dst] else f"{ty.t}({expr})"
    if dst.lane is dst:
        return lane
    if dst.is_unsigned:
        return f"({lane} & {ty.const(f'{(1 << dst.bits) - 1:#x}u')})"
    spare = f"{32 - dst.bits}u"  # the lane's bits above the value's
    shift = ty.of(DType.uint32).const(spare) if ty.vec4 else spare
    return f"(({lane} << {shift}) >> {shift})"


def isnan(expr: str, vec4: bool, dtype: DType = DType.float32) -> str:
    """NaN test by bits: lavapipe compiles float ``!=`` as an ordered compare. float64
    (never in ``vec4`` kernels) is tested through its int64 bits."""
    return _magnitude_vs_inf(expr, vec4, dtype, ">")


def isinf(expr: str, vec4: bool, dtype: DType) -> str:
    return _magnitude_vs_inf(expr, vec4, dtype, "==")


def _magnitude_vs_inf(expr: str, vec4: bool, dtype: DType, cmp: str) -> str:
    """``|expr| cmp inf``, compared on the bits (the sign bit masked off)."""
    if dtype is DType.float64:
        return f"((bitcast<i64>({expr}) & {ABS64}) {cmp} {INF64})"
    if vec4:
        return (f"((bitcast<vec4<u32>>({expr}) & vec4<u32>(0x7fffffffu)) {cmp} "
                f"vec4<u32>(0x7f800000u))")
    return f"((bitcast<u32>({expr}) & 0x7fffffffu) {cmp} 0x7f800000u)"


def lanes(name: str, t: str, arity: int) -> str:
    """The ``vec4`` variant ``name_t_4`` of scalar helper ``name_t``, lane by lane."""
    params = ", ".join(f"{p}: vec4<{t}>" for p in "ab"[:arity])
    calls = ", ".join(f"{name}_{t}({', '.join(f'{p}.{c}' for p in 'ab'[:arity])})"
                      for c in "xyzw")
    return f"fn {name}_{t}_4({params}) -> vec4<{t}> {{ return vec4<{t}>({calls}); }}\n"


def enables(kernel: Kernel) -> str:
    """``enable f16;`` where the kernel holds a float16 anywhere."""
    dts = {ld.dtype for ld in kernel.loads} | {st.dtype for st in kernel.stores}
    dts |= {d for ins in kernel.body for d in (ins.compute, ins.out)} | set(kernel.scalars)
    for red in kernel.reduces:
        dts |= {red.src, red.out}
    return "enable f16;\n" if DType.float16 in dts else ""
