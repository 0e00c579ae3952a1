"""Custom element-wise ops that fuse like built-in ones (the custom-fusion PR, in Python).

An op is a WGSL expression plus a numpy twin. Registering it adds an entry to the op
registry (arity, dtype rule, numpy function) and one to the WGSL lowerings, so the front
end, the fusers, the plan cache, both backends and fault isolation treat it exactly as a
built-in op.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable

import numpy as np

from .._core.errors import OptionError
from ..codegen.wgsl.lowering import Lowering, register_lowering
from ..codegen.wgsl.types import Ty
from ..lazy.record import elementwise
from ..lazy.tensor import Operand, Tensor
from ..ops import PRIMITIVES, Primitive, register

__all__ = ["elementwise_op"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def elementwise_op(name: str, *, wgsl: str, numpy: Callable[..., np.ndarray], arity: int = 1,
                   rule: str = "float") -> Callable[..., Tensor]:
    """Register a fusible element-wise op and return the function that records it.

    :param wgsl: a WGSL expression; ``{0}``, ``{1}``, ... are the operands and ``{T}`` the
        register type (``f32`` or ``vec4<f32>``), e.g. ``"log({T}(1.0) + exp({0}))"``.
    :param numpy: the same function on numpy arrays (the reference and the oracle).
    :param rule: ``"float"`` (computed in float32) or ``"numeric"`` (in the operands'
        common dtype, bool refused).
    """
    if not _NAME.match(name):
        raise OptionError(f"op name {name!r} must be lower_snake_case")
    if name in PRIMITIVES:
        raise OptionError(f"an element-wise op named {name!r} exists already")
    if rule not in ("float", "numeric") or not 1 <= arity <= 3:
        raise OptionError("rule must be 'float' or 'numeric' and arity 1..3")
    if not isinstance(wgsl, str):
        raise TypeError(f"wgsl must be a WGSL expression string, not {wgsl!r}")
    if not callable(numpy):
        raise TypeError(f"numpy must be a function on numpy arrays, not {numpy!r}")
    _check_template(wgsl, arity)

    def lower(args: list[str], ty: Ty) -> str:
        return f"({wgsl.format(*args, T=ty.t)})"

    register(Primitive(name, arity, rule, numpy, wide=False))
    register_lowering(name, Lowering(lower))

    def record(*args: Operand) -> Tensor:
        return elementwise(name, *args)

    record.__name__ = name
    record.__doc__ = f"Custom element-wise op {name!r}: {wgsl}"
    return record


def _check_template(wgsl: str, arity: int) -> None:
    """Every operand's placeholder ``{0}``..``{arity - 1}`` is used, and no other but
    ``{T}``: an OptionError that says which is wrong otherwise."""
    want = ", ".join(f"{{{i}}}" for i in range(arity))
    fix = (f"an op of arity {arity} uses each of {want} (and {{T}}, the register type, "
           "where it needs it); write literal braces as {{ }}, or change arity=")
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(wgsl) if f is not None]
    except ValueError as exc:  # a lone brace
        raise OptionError(f"wgsl template {wgsl!r} is not valid ({exc}); {fix}") from exc
    used = set(fields)
    extra = sorted(used - {str(i) for i in range(arity)} - {"T"})
    if extra:
        raise OptionError(f"wgsl template {wgsl!r} has the placeholder(s) "
                          f"{', '.join('{' + f + '}' for f in extra)} that no operand fills; "
                          f"{fix}")
    missing = [f"{{{i}}}" for i in range(arity) if str(i) not in used]
    if missing:
        raise OptionError(f"wgsl template {wgsl!r} never uses operand placeholder(s) "
                          f"{', '.join(missing)}; {fix}")
