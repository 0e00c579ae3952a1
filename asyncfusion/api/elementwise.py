"""The element-wise functions: one per op of the registry that has a public name
(:data:`asyncfusion.ops.PRIMITIVES`, each entry's ``public`` name and ``doc``), each a
thin call of :func:`asyncfusion.lazy.record.elementwise` (a complex operand takes
:mod:`asyncfusion.api.complex_math` instead); plus ``conj``, ``real`` and ``imag``,
which read a complex tensor's parts and are copies (or zeros) on real dtypes.

The same function objects are the Tensor's operators and methods
(:mod:`asyncfusion.api.methods` binds them: ``t + u`` is ``add(t, u)``, ``2 - t`` is
``subtract(2, t)``, ``t.exp()`` is ``exp(t)``), so every spelling of an op takes one
path. Operands are tensors or scalars (at least one tensor), broadcast as numpy does;
a call without a tensor raises a TypeError that says to make one with
``asyncfusion.tensor``. Math functions compute in float32 (float64 where the adapter has
it; integer inputs are converted); bitwise functions take integers (and bool for
and/or/xor/invert); shifts take integers only.

Type checkers read the functions' signatures from ``elementwise.pyi`` beside this file,
which :func:`stub` writes from the registry (``tests/test_dispatch.py`` checks it is
current; regenerate with ``ASYNCFUSION_REGEN_GOLDEN=1``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from ..lazy.complex_tensor import ComplexTensor
from ..lazy.record import ComplexOperands, binary, elementwise, unary
from ..lazy.tensor import Operand, Tensor, not_a_tensor
from ..ops import PRIMITIVES, Primitive
from .complex_math import call
from .creation import zeros_like

PARAMS = {1: ("x",), 2: ("x1", "x2"), 3: ("condition", "x1", "x2")}


def _function(p: Primitive) -> Callable[..., Tensor]:
    """``p``'s public function: positional operands, named as the standard names them.
    A complex operand takes :func:`asyncfusion.api.complex_math.call`."""
    op = p.name
    if p.arity == 1:
        def fn(x: Operand, /) -> Tensor:
            try:
                return unary(op, x)
            except ComplexOperands:
                return call(op, (x,))
    elif p.arity == 2:
        def fn(x1: Operand, x2: Operand, /) -> Tensor:  # type: ignore[misc]
            try:
                return binary(op, x1, x2)
            except ComplexOperands:
                return call(op, (x1, x2))
    else:
        def fn(condition: Operand, x1: Operand, x2: Operand, /) -> Tensor:  # type: ignore[misc]
            try:
                return elementwise(op, condition, x1, x2)
            except ComplexOperands:
                return call(op, (condition, x1, x2))
    fn.__name__ = fn.__qualname__ = p.public
    fn.__doc__ = p.doc
    fn.__module__ = __name__
    return fn


FUNCTIONS: dict[str, Callable[..., Tensor]] = {
    p.public: _function(p) for p in PRIMITIVES.values() if p.doc}
globals().update(FUNCTIONS)


def _tensor(x: object, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise not_a_tensor(x, name)
    return x


def conj(x: Tensor, /) -> Tensor:
    """Complex conjugate: the imaginary part negated (a copy of x for real dtypes)."""
    if isinstance(_tensor(x, "conj"), ComplexTensor):
        return ComplexTensor(unary("positive", x.real), unary("neg", x.imag))
    return unary("positive", x)


def real(x: Tensor, /) -> Tensor:
    """Real part (a float tensor; a copy of x for real dtypes)."""
    return unary("positive", x.real if isinstance(_tensor(x, "real"), ComplexTensor) else x)


def imag(x: Tensor, /) -> Tensor:
    """Imaginary part (a float tensor): zeros of x's shape and dtype for real dtypes."""
    if isinstance(_tensor(x, "imag"), ComplexTensor):
        return unary("positive", x.imag)
    return zeros_like(x)


__all__ = sorted([*FUNCTIONS, "conj", "real", "imag"])


def stub() -> str:
    """The text of ``elementwise.pyi``: every public function's signature, from the
    registry."""
    lines = ["# The element-wise functions' signatures, written from the op registry by",
             "# asyncfusion.api.elementwise.stub(): edit the registry, not this file.",
             "from ..lazy.tensor import Operand, Tensor", "",
             "__all__ = [", *(f"    {n!r}," for n in __all__), "]", ""]
    for name in sorted(FUNCTIONS):
        params = ", ".join(f"{a}: Operand" for a in inspect.signature(FUNCTIONS[name])
                           .parameters)
        lines.append(f"def {name}({params}, /) -> Tensor: ...")
    lines += [f"def {n}(x: Tensor, /) -> Tensor: ..." for n in ("conj", "imag", "real")]
    return "\n".join(lines) + "\n"
