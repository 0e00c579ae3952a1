"""WGSL for element-wise programs. Lowering rules are a table keyed by op.

Each rule maps the argument expressions and a :class:`Ty` (the register type, scalar or
``vec4``) to an expression. Sizes and scalar values are never literals: they are read from
the uniform ``params`` block, so one kernel text serves every size and every scalar.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

from ...dtype import DType
from ...elementwise import ElementwiseProgram

__all__ = ["render_elementwise", "RULES", "Ty", "uniform_words", "param"]


@dataclass(frozen=True, slots=True)
class Ty:
    """A register type: ``dtype`` as a scalar or as a 4-lane vector."""

    dtype: DType
    vec4: bool

    @property
    def t(self) -> str:
        return f"vec4<{self.dtype.wgsl}>" if self.vec4 else self.dtype.wgsl

    @property
    def f(self) -> str:
        return "vec4<f32>" if self.vec4 else "f32"

    def const(self, literal: str) -> str:
        return f"{self.t}({literal})"


Rule = Callable[[list[str], Ty], str]


def _float_or_int(fl: Rule, it: Rule) -> Rule:
    return lambda a, ty: fl(a, ty) if ty.dtype.is_float else it(a, ty)


def isnan(expr: str, vec4: bool) -> str:
    """NaN test by bits: lavapipe compiles float ``!=`` as an ordered compare (x != x is
    false for NaN), so the usual idiom cannot be trusted."""
    if vec4:
        return (f"((bitcast<vec4<u32>>({expr}) & vec4<u32>(0x7fffffffu)) > "
                f"vec4<u32>(0x7f800000u))")
    return f"((bitcast<u32>({expr}) & 0x7fffffffu) > 0x7f800000u)"


def _nan_select(fn: str) -> Rule:
    # WGSL leaves min/max of NaN unspecified; numpy propagates NaN.
    return _float_or_int(
        lambda a, ty: f"select({fn}({a[0]}, {a[1]}), {a[0]} + {a[1]}, "
                      f"{isnan(a[0], ty.vec4)} | {isnan(a[1], ty.vec4)})",
        lambda a, ty: f"{fn}({a[0]}, {a[1]})",
    )


def _ieee(op: str, flip: str) -> Rule:
    """Float add/sub that keep IEEE special values: lavapipe folds ``x - x`` (and, fused,
    ``x + (-x)``) to 0 even for inf and NaN. The result is NaN, by bits the compiler
    cannot fold, when an operand is NaN or both are infinities that cancel."""
    def rule(a: list[str], ty: Ty) -> str:
        expr = f"({a[0]} {op} {a[1]})"
        if not ty.dtype.is_float:
            return expr
        u = "vec4<u32>" if ty.vec4 else "u32"
        bits = [f"bitcast<{u}>({x})" for x in a]
        inf = f"(({bits[0]} & {u}(0x7fffffffu)) == {u}(0x7f800000u))"
        cancel = f"({inf} & ({bits[0]} == ({bits[1]} ^ {u}({flip}))))"
        nan = f"{ty.t}(bitcast<f32>(0x7fc00000u))"
        return (f"select({expr}, {nan}, {isnan(a[0], ty.vec4)} | {isnan(a[1], ty.vec4)} | "
                f"{cancel})")
    return rule


def _tanh(a: list[str], ty: Ty) -> str:
    """tanh: the builtin (exp-based, clamped to stay finite) loses all accuracy near 0,
    so |x| < 0.1 uses the odd series to x^7 (error below float32 rounding there)."""
    x, c = a[0], ty.const
    x2 = f"({x} * {x})"
    series = (f"({x} * ({c('1.0')} + {x2} * ({c('-0.33333334')} + {x2} * ({c('0.13333334')}"
              f" + {x2} * {c('-0.053968254')}))))")
    big = f"tanh(clamp({x}, {c('-10.0')}, {c('10.0')}))"
    return (f"select(select({big}, {series}, abs({x}) < {c('0.1')}), {x}, "
            f"{isnan(x, ty.vec4)})")


def _pow(a: list[str], ty: Ty) -> str:
    """Float: numpy's power (negative bases, 0**-1, 1**nan). Integer: exact, by squaring,
    wrapping like numpy; a negative exponent gives 0 (or +-1 for a base of +-1)."""
    name = {DType.float32: "af_pow", DType.int32: "af_ipow", DType.uint32: "af_upow"}[ty.dtype]
    return f"{name}{'4' if ty.vec4 else ''}({a[0]}, {a[1]})"


def _cmp(sym: str) -> Rule:
    def rule(a: list[str], ty: Ty) -> str:
        if ty.dtype is DType.bool and sym not in ("==", "!="):  # WGSL orders no bools
            u = Ty(DType.uint32, ty.vec4).t
            return f"({u}({a[0]}) {sym} {u}({a[1]}))"
        if ty.dtype.is_float and sym == "!=":  # unordered: true when either is NaN
            return f"(!({a[0]} == {a[1]}))"
        return f"({a[0]} {sym} {a[1]})"
    return rule


RULES: dict[str, Rule] = {
    "add": _ieee("+", "0x80000000u"),
    "sub": _ieee("-", "0u"),
    "mul": lambda a, ty: f"({a[0]} * {a[1]})",
    "div": lambda a, ty: f"({a[0]} / {a[1]})",
    "pow": _pow,
    "minimum": _nan_select("min"),
    "maximum": _nan_select("max"),
    "neg": lambda a, ty: f"({ty.const('0u')} - {a[0]})" if ty.dtype is DType.uint32
    else f"(-{a[0]})",
    "abs": lambda a, ty: a[0] if ty.dtype is DType.uint32 else f"abs({a[0]})",
    "relu": lambda a, ty: f"select({a[0]}, {ty.const('0')}, {a[0]} < {ty.const('0')})",
    "exp": lambda a, ty: f"exp({a[0]})",
    "log": lambda a, ty: f"log({a[0]})",
    "sqrt": lambda a, ty: f"sqrt({a[0]})",
    "sin": lambda a, ty: f"sin({a[0]})",
    "cos": lambda a, ty: f"cos({a[0]})",
    "tanh": _tanh,
    "sigmoid": lambda a, ty: f"({ty.const('1.0')} / ({ty.const('1.0')} + exp(-{a[0]})))",
    "eq": _cmp("=="),
    "ne": _cmp("!="),
    "lt": _cmp("<"),
    "le": _cmp("<="),
    "gt": _cmp(">"),
    "ge": _cmp(">="),
    "logical_and": lambda a, ty: f"({a[0]} & {a[1]})",
    "logical_or": lambda a, ty: f"({a[0]} | {a[1]})",
    "logical_not": lambda a, ty: f"(!{a[0]})",
    "where": lambda a, ty: f"select({a[2]}, {a[1]}, {a[0]})",
    "cast": lambda a, ty: f"{ty.t}({a[0]})",
}

_POW = """
fn af_pow(a: f32, b: f32) -> f32 {
  if (b == 0.0 || a == 1.0) { return 1.0; }
  let inf = bitcast<f32>(0x7f800000u);
  let abits = bitcast<u32>(a) & 0x7fffffffu;
  let bbits = bitcast<u32>(b) & 0x7fffffffu;
  if (abits > 0x7f800000u || bbits > 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
  let neg = (bitcast<u32>(a) & 0x80000000u) != 0u;
  let odd = bbits < 0x4b800000u && b == floor(b) && fract(b * 0.5) == 0.5;
  if (abits == 0u || abits == 0x7f800000u) {
    let mag = select(0.0, inf, (abits == 0u) == (b < 0.0));
    return select(mag, -mag, neg && odd);
  }
  if (bbits == 0x7f800000u) {
    if (abits == 0x3f800000u) { return 1.0; }
    return select(0.0, inf, (abits > 0x3f800000u) == (b > 0.0));
  }
  let r = pow(abs(a), b);
  if (!neg) { return r; }
  if (b != floor(b)) { return bitcast<f32>(0x7fc00000u); }
  return select(r, -r, odd);
}
fn af_upow(a: u32, b: u32) -> u32 {
  var r = 1u;
  var x = a;
  var e = b;
  loop {
    if (e == 0u) { break; }
    if ((e & 1u) == 1u) { r = r * x; }
    x = x * x;
    e = e >> 1u;
  }
  return r;
}
fn af_ipow(a: i32, b: i32) -> i32 {
  if (b < 0) {
    if (a == 1) { return 1; }
    if (a == -1) { return select(-1, 1, (b & 1) == 0); }
    return 0;
  }
  return bitcast<i32>(af_upow(bitcast<u32>(a), u32(b)));
}
"""
for _t, _fn in (("f32", "af_pow"), ("i32", "af_ipow"), ("u32", "af_upow")):
    _POW += (f"fn {_fn}4(a: vec4<{_t}>, b: vec4<{_t}>) -> vec4<{_t}> {{\n"
             f"  return vec4<{_t}>({_fn}(a.x, b.x), {_fn}(a.y, b.y), {_fn}(a.z, b.z), "
             f"{_fn}(a.w, b.w));\n}}\n")


def uniform_words(program: ElementwiseProgram) -> int:
    """Words of the params block: element count, the shape, then the scalars."""
    return 1 + program.rank + len(program.scalars)


def param(word: int) -> str:
    return f"params.w[{word // 4}][{word % 4}]"


def _load(expr: str, dtype: DType, vec4: bool) -> str:
    if dtype is DType.bool:
        zero = "vec4<u32>(0u)" if vec4 else "0u"
        return f"({expr} != {zero})"
    return expr


def _store(expr: str, dtype: DType, vec4: bool) -> str:
    if dtype is DType.bool:
        if vec4:
            return f"select(vec4<u32>(0u), vec4<u32>(1u), {expr})"
        return f"select(0u, 1u, {expr})"
    return expr


def _scalar(word: int, dtype: DType, vec4: bool) -> str:
    raw = param(word)
    s = {DType.float32: f"bitcast<f32>({raw})", DType.int32: f"bitcast<i32>({raw})",
         DType.uint32: raw, DType.bool: f"({raw} != 0u)"}[dtype]
    return Ty(dtype, vec4).const(s) if vec4 else s


def render_elementwise(program: ElementwiseProgram, workgroup: int) -> str:
    """The WGSL text of one element-wise program."""
    v4 = program.vec4
    rank = program.rank
    lines: list[str] = []
    words = uniform_words(program)
    lines.append(f"struct Params {{ w: array<vec4<u32>, {(words + 3) // 4}> }}")
    lines.append("@group(0) @binding(0) var<uniform> params: Params;")
    writes = {slot for slot in program.inplace if slot is not None}
    binding = 1
    for k, inp in enumerate(program.inputs):
        st = f"vec4<{inp.dtype.storage}>" if v4 and inp.spans is None else inp.dtype.storage
        access = "read_write" if k in writes else "read"
        lines.append(f"@group(0) @binding({binding}) var<storage, {access}> in{k}: array<{st}>;")
        binding += 1
    out_names: list[str] = []
    for j, ((_, dt), slot) in enumerate(zip(program.outputs, program.inplace)):
        if slot is not None:
            out_names.append(f"in{slot}")
            continue
        st = f"vec4<{dt.storage}>" if v4 else dt.storage
        lines.append(f"@group(0) @binding({binding}) var<storage, read_write> out{j}: array<{st}>;")
        out_names.append(f"out{j}")
        binding += 1
    if any(i.op == "pow" for i in program.body):
        lines.append(_POW.strip())
    lines.append(f"@compute @workgroup_size({workgroup})")
    lines.append("fn main(@builtin(global_invocation_id) gid: vec3<u32>, "
                 "@builtin(num_workgroups) nwg: vec3<u32>) {")
    lines.append(f"  let i = gid.x + gid.y * nwg.x * {workgroup}u;")
    lines.append(f"  if (i >= {param(0)}) {{ return; }}")
    needs_coords = any(inp.spans is not None and any(inp.spans) for inp in program.inputs)
    if needs_coords and not v4:
        lines.append("  var r = i;")
        for d in range(rank - 1, 0, -1):
            lines.append(f"  let c{d} = r % {param(1 + d)}; r = r / {param(1 + d)};")
        lines.append("  let c0 = r;")
    for k, inp in enumerate(program.inputs):
        if inp.spans is None:
            idx = "i"
        else:
            terms = []
            for d, spans in enumerate(inp.spans):
                if not spans:
                    continue
                inner = [param(1 + e) for e in range(d + 1, rank) if inp.spans[e]]
                terms.append("*".join([f"c{d}"] + inner))
            idx = " + ".join(terms) if terms else "0u"
        raw = f"in{k}[{idx}]"
        if v4 and inp.spans is not None:
            raw = f"vec4<{inp.dtype.storage}>({raw})"
        lines.append(f"  let a{k} = {_load(raw, inp.dtype, v4)};")
    scalar_word = 1 + rank
    for j, ins in enumerate(program.body):
        ty = Ty(ins.compute, v4)
        args: list[str] = []
        for kind, idx in ins.args:
            if kind == "s":
                args.append(_scalar(scalar_word + idx, program.scalars[idx], v4))
                continue
            if kind == "in":
                expr, dt = f"a{idx}", program.inputs[idx].dtype
            else:
                expr, dt = f"v{idx}", program.body[idx].out
            as_is = ins.op == "cast" or (ins.op == "where" and not args)  # rule converts
            if dt is not ins.compute and not as_is:
                expr = f"{ty.t}({expr})"
            args.append(expr)
        lines.append(f"  let v{j} = {RULES[ins.op](args, ty)};")
    for (vi, dt), name in zip(program.outputs, out_names):
        lines.append(f"  {name}[i] = {_store(f'v{vi}', dt, v4)};")
    lines.append("}")
    return "\n".join(lines) + "\n"
