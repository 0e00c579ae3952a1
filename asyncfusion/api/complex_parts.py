"""The API's functions and methods on complex tensors, part by part.

A function that only moves elements (views, reshapes, indexing, joining, tiling) or is
linear (``sum``, ``mean``, ``cumulative_sum``, ``diff``) gives a complex tensor whose
parts are the function of each part: :data:`BY_PARTS` wraps those. Joining lifts real
operands to complex; ``matmul``, ``tensordot`` and ``vecdot`` expand into real products
of the parts; ``any``, ``all`` and ``count_nonzero`` look at ``z != 0``. :func:`attach`
gives :class:`~asyncfusion.lazy.complex_tensor.ComplexTensor` the Tensor's methods in
these forms; the package namespace takes :data:`PUBLIC`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from .._core.dtype import DTypeSpec, as_dtype, check_held
from .._core.errors import DTypeError
from ..lazy.complex_tensor import ComplexTensor
from ..lazy.record import elementwise
from ..lazy.tensor import Key, Operand, Tensor
from . import elementwise as ew, indexing, joining, linalg, manipulation, reductions, setitem, views
from .complex_math import common, parts

__all__ = ["PUBLIC", "LINALG", "attach", "astype"]

_F = Callable[..., Any]


def _by_parts(fn: _F) -> _F:
    """``fn`` of a complex tensor: ``fn`` of each part (every result, for tuples)."""
    @functools.wraps(fn)
    def call(x: Tensor, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(x, ComplexTensor):
            return fn(x, *args, **kwargs)
        re, im = fn(x.real, *args, **kwargs), fn(x.imag, *args, **kwargs)
        if isinstance(re, tuple):
            return tuple(ComplexTensor(r, i) for r, i in zip(re, im, strict=True))
        return ComplexTensor(re, im)
    return call


def _nonzero_first(fn: _F) -> _F:
    """``fn`` of ``z != 0`` for a complex tensor (the truth of a complex number)."""
    @functools.wraps(fn)
    def call(x: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(ew.not_equal(x, 0.0) if isinstance(x, ComplexTensor) else x, *args, **kwargs)
    return call


def _joining(fn: _F) -> _F:
    """``fn`` of a sequence of tensors of which one is complex: of the lifted parts."""
    @functools.wraps(fn)
    def call(arrays: Sequence[Tensor], *args: Any, **kwargs: Any) -> Any:
        arrays = list(arrays)
        if not any(isinstance(a, ComplexTensor) for a in arrays):
            return fn(arrays, *args, **kwargs)
        part = common("concat", arrays).part
        ps = [parts(a, part, a) for a in arrays]
        return ComplexTensor(fn([p[0] for p in ps], *args, **kwargs),
                             fn([p[1] for p in ps], *args, **kwargs))
    return call


def _spread(fn: _F) -> _F:
    """``fn`` of several tensors, one result each (``broadcast_arrays``, ``meshgrid``), of
    which one is complex: ``fn`` of the real parts and of the imaginary parts (real tensors
    are in both calls; the second call's real results are dropped unread)."""
    @functools.wraps(fn)
    def call(*arrays: Tensor, **kwargs: Any) -> Any:
        if not any(isinstance(a, ComplexTensor) for a in arrays):
            return fn(*arrays, **kwargs)
        re = fn(*(a.real if isinstance(a, ComplexTensor) else a for a in arrays), **kwargs)
        im = fn(*(a.imag if isinstance(a, ComplexTensor) else a for a in arrays), **kwargs)
        return tuple(ComplexTensor(r, i) if isinstance(a, ComplexTensor) else r
                     for a, r, i in zip(arrays, re, im, strict=True))
    return call


def _bilinear(fn: _F) -> _F:
    """``fn`` (a product, linear in each operand) of complex operands: four real
    products of the parts."""
    @functools.wraps(fn)
    def call(x1: Tensor, x2: Tensor, *args: Any, **kwargs: Any) -> Any:
        if not (isinstance(x1, ComplexTensor) or isinstance(x2, ComplexTensor)):
            return fn(x1, x2, *args, **kwargs)
        part = common(fn.__name__, (x1, x2)).part
        (ar, ai), (br, bi) = parts(x1, part, x1), parts(x2, part, x2)
        return ComplexTensor(fn(ar, br, *args, **kwargs) - fn(ai, bi, *args, **kwargs),
                             fn(ar, bi, *args, **kwargs) + fn(ai, br, *args, **kwargs))
    return call


def _sum(x: Tensor, /, *, axis: Any = None, dtype: DTypeSpec | None = None,
         keepdims: bool = False) -> Tensor:
    """``sum`` of each part; a complex ``dtype`` is the parts' dtype."""
    if dtype is not None and as_dtype(dtype).is_complex:
        x = astype(x, dtype, copy=False)
        dtype = None
    out: Tensor = _by_parts(reductions.sum)(x, axis=axis, dtype=dtype, keepdims=keepdims)
    return out


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The dot product along ``axis``, conjugating ``x1`` (the standard's vecdot)."""
    if not (isinstance(x1, ComplexTensor) or isinstance(x2, ComplexTensor)):
        return manipulation.vecdot(x1, x2, axis=axis)
    return _sum(ew.multiply(ew.conj(x1), x2), axis=manipulation.vecdot_axis(x1, x2, axis))


def astype(x: Tensor, dtype: DTypeSpec, /, *, copy: bool = True) -> Tensor:
    """``x`` in ``dtype`` where either is complex: a real tensor becomes the real part
    (imaginary zeros); a complex tensor changes its parts' dtype, and refuses a real
    dtype (its imaginary part would be lost: take ``real`` first)."""
    dt = as_dtype(dtype)
    check_held(dt, x.device, "astype")
    if not isinstance(x, ComplexTensor):
        return ComplexTensor(*parts(x, dt.part, x))
    if not dt.is_complex:
        raise DTypeError(f"astype: casting a {x.dtype.label} tensor to {dt.label} would drop "
                         "its imaginary part; take af.real(z) (or af.abs(z)) first")
    if dt is x.dtype and not copy:
        return x
    return ComplexTensor(elementwise("cast", x.real, dtype=dt.part),
                         elementwise("cast", x.imag, dtype=dt.part))


def _assign(z: ComplexTensor, key: Key, value: Operand | complex) -> None:
    re, im = (value.real, value.imag) if isinstance(value, (ComplexTensor, complex)) else (
        value, 0.0)
    setitem.assign(z.real, key, re)
    setitem.assign(z.imag, key, im)


BY_PARTS: tuple[_F, ...] = (
    views.broadcast_to, views.contiguous, views.flip, views.permute, views.squeeze,
    views.transpose, views.unsqueeze, manipulation.reshape, manipulation.moveaxis,
    manipulation.expand_dims, manipulation.permute_dims, manipulation.unstack,
    manipulation.tile, manipulation.repeat, manipulation.roll, manipulation.diff,
    manipulation.tril, manipulation.triu, linalg.matrix_transpose, reductions.mean,
    indexing.take, indexing.take_along_axis, manipulation.cumulative_sum)

def _of_magnitude(fn: _F) -> _F:
    """``fn`` of ``|z|`` for a complex tensor (a norm made of magnitudes alone)."""
    @functools.wraps(fn)
    def call(x: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(ew.abs(x) if isinstance(x, ComplexTensor) else x, *args, **kwargs)
    return call


_MATRIX_NORM = linalg.matrix_norm  # the real one (the namespace's becomes the one below)


def _matrix_norm(x: Tensor, /, *, keepdims: bool = False, ord: float | str = "fro") -> Tensor:  # noqa: A002
    """``matrix_norm``: of ``|z|`` for the norms made of magnitudes (Frobenius, the
    column and row sums); the singular-value norms of a complex tensor raise."""
    if isinstance(x, ComplexTensor):
        if ord in ("nuc", 2, -2):
            raise DTypeError(f"matrix_norm(ord={ord!r}) of a complex tensor needs its "
                             "singular values, which asyncfusion computes for real matrices "
                             "only; use ord='fro', 1, -1, inf or -inf")
        x = ew.abs(x)
    out: Tensor = _MATRIX_NORM(x, keepdims=keepdims, ord=ord)
    return out


LINALG: dict[str, _F] = {
    "diagonal": _by_parts(linalg.diagonal),
    "trace": _by_parts(linalg.trace),
    "vector_norm": _of_magnitude(linalg.vector_norm),
    "matrix_norm": functools.wraps(_MATRIX_NORM)(_matrix_norm),
}
"""The linalg extension's functions that take complex tensors beyond :data:`PUBLIC`'s."""

PUBLIC: dict[str, _F] = {
    **{f.__name__: _by_parts(f) for f in BY_PARTS},
    "sum": functools.wraps(reductions.sum)(_sum),
    **{f.__name__: _nonzero_first(f) for f in (reductions.any, reductions.all,
                                               manipulation.count_nonzero)},
    "concat": _joining(joining.concat), "cat": _joining(joining.cat),
    "stack": _joining(indexing.stack),
    "broadcast_arrays": _spread(manipulation.broadcast_arrays),
    "meshgrid": _spread(manipulation.meshgrid),
    "matmul": _bilinear(linalg.matmul), "tensordot": _bilinear(linalg.tensordot),
    "vecdot": vecdot,
}
"""The package's functions that take complex tensors, by name."""


def _method(name: str) -> _F:
    """A Tensor method (``T_of``: a property's getter) applied to each part."""
    attr = getattr(Tensor, name.removesuffix("_of"))
    real: _F = attr.fget if isinstance(attr, property) and attr.fget else attr

    def method(self: ComplexTensor, *args: Any, **kwargs: Any) -> Any:
        return ComplexTensor(real(self.real, *args, **kwargs), real(self.imag, *args, **kwargs))
    method.__name__ = name
    return method


def attach() -> None:
    """Give ComplexTensor the Tensor's methods in their complex forms."""
    for name in ("reshape", "permute", "expand", "broadcast_to", "transpose", "squeeze",
                 "unsqueeze", "flip", "contiguous", "__getitem__", "sum", "mean", "to",
                 "to_device"):
        setattr(ComplexTensor, name, _method(name))
    for name in ("T", "mT"):
        setattr(ComplexTensor, name, property(_method(name + "_of")))
    ComplexTensor.__setitem__ = _assign  # type: ignore[assignment]
    ComplexTensor.astype = astype  # type: ignore[method-assign]
    ComplexTensor.__matmul__ = PUBLIC["matmul"]  # type: ignore[method-assign]
    ComplexTensor.__rmatmul__ = lambda self, o: PUBLIC["matmul"](o, self)  # type: ignore[method-assign]
    ComplexTensor.any = PUBLIC["any"]  # type: ignore[method-assign]
    ComplexTensor.all = PUBLIC["all"]  # type: ignore[method-assign]
