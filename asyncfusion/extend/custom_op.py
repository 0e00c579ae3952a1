"""Custom element-wise ops that fuse like built-in ones (the custom-fusion PR, in Python).

An op is a WGSL expression plus a numpy twin. Registering it adds one entry to the
primitive registry — dtype rule, WGSL rule and numpy function together — so the front
end, the fusers, the plan cache, both backends and fault isolation treat it exactly as a
built-in op.
"""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Callable

from ..lazy.record import elementwise
from ..lazy.tensor import Tensor
from ..primitives import PRIMITIVES, Primitive, Ty, register

__all__ = ["elementwise_op"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def elementwise_op(name: str, *, wgsl: str, numpy: Callable[..., Any], arity: int = 1,
                   rule: str = "float") -> Callable[..., Tensor]:
    """Register a fusible element-wise op and return the function that records it.

    :param wgsl: a WGSL expression; ``{0}``, ``{1}``, ... are the operands and ``{T}`` the
        register type (``f32`` or ``vec4<f32>``), e.g. ``"log({T}(1.0) + exp({0}))"``.
    :param numpy: the same function on numpy arrays (the reference and the oracle).
    :param rule: ``"float"`` (computed in float32) or ``"numeric"`` (in the operands'
        common dtype, bool refused).
    """
    if not _NAME.match(name):
        raise ValueError(f"op name {name!r} must be lower_snake_case")
    if name in PRIMITIVES:
        raise ValueError(f"an element-wise op named {name!r} exists already")
    if rule not in ("float", "numeric") or not 1 <= arity <= 3:
        raise ValueError("rule must be 'float' or 'numeric' and arity 1..3")
    if not isinstance(wgsl, str):
        raise TypeError(f"wgsl must be a WGSL expression string, not {wgsl!r}")
    if not callable(numpy):
        raise TypeError(f"numpy must be a function on numpy arrays, not {numpy!r}")
    try:
        wgsl.format(*[f"a{i}" for i in range(arity)], T="f32")
    except (IndexError, KeyError, AttributeError, ValueError) as exc:
        raise ValueError(f"wgsl template {wgsl!r} is not valid ({type(exc).__name__}: "
                         f"{exc}); use only the placeholders {{0}}..{{{arity - 1}}} and "
                         "{T}, and write literal braces as {{ }}") from exc

    def lower(args: list[str], ty: Ty) -> str:
        return f"({wgsl.format(*args, T=ty.t)})"

    register(Primitive(name, arity, rule, name.title().replace("_", ""), numpy, lower))

    def record(*args: Any) -> Tensor:
        return elementwise(name, *args)

    record.__name__ = name
    record.__doc__ = f"Custom element-wise op {name!r}: {wgsl}"
    return record
