"""JSON in and out of a service, strictly: request fields checked into numpy arrays, and
results (numpy arrays included) written by one rule for non-finite numbers.

    body = parse_body(raw)                                           # RequestError, 400
    q = parse_array(body, "query", shape=(256,), dtype=af.float32)   # RequestError, 422
    payload = encode({"scores": scores, "indices": indices})         # NaN and ±inf: null

:func:`parse_body` refuses (400) an empty body, one that is not JSON (or not UTF-8), one
nested too deeply to read, and one that is not a JSON object. :func:`parse_array` refuses
(422) a field that is missing, whose nesting or lengths differ from ``shape`` (ragged
lists included), whose elements are not of the dtype's kind (numbers for a float dtype,
JSON integers included; integers for an integer dtype; ``true``/``false`` for bool: so
strings, ``null``, booleans among numbers and fractions among integers are refused),
that holds ``NaN`` or ``Infinity`` (Python's json reads those literals, JSON has none),
or whose values do not fit the dtype (``1e39`` for float32 rather than becoming inf,
``2**31`` for int32). Values too small for a float dtype round to 0 or a subnormal, as
any float conversion does.

A :class:`RequestError`'s message names the field (``x``, ``x[2]``, ``x[2][0]``) and the
form expected, and quotes only the client's own input, never the server's state: it is
safe to send to the client.

The rule for results: :func:`encode` writes ``NaN``, ``inf`` and ``-inf`` (Python floats,
numpy scalars or array elements) as ``null``, as JavaScript's ``JSON.stringify`` does,
so every response is standard JSON; numpy arrays become nested lists, numpy scalars
numbers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Union

import numpy as np
import numpy.typing as npt

from .._core.dtype import DType, as_dtype, int_range
from .._core.errors import InputError

__all__ = ["RequestError", "JSONValue", "parse_body", "parse_array", "encode"]

JSONValue = Union[None, bool, int, float, str, list["JSONValue"], dict[str, "JSONValue"]]
Shape = Sequence[int | None]


class RequestError(InputError, ValueError):
    """Raised when a request's body, or a field of it, is not of the form the endpoint
    expects. ``status`` is 400 for the body, 422 for a field; ``field`` is the field's
    path (``"x[2][0]"``) or ``None`` for the body. The message is about the client's
    input only: send it as it is."""

    def __init__(self, message: str, *, field: str | None = None, status: int = 422) -> None:
        super().__init__(message)
        self.field = field
        self.status = status


class _Literal(float):
    """A ``NaN``, ``Infinity`` or ``-Infinity`` literal read from a body: a float to code
    that reads the body as it is, and refused by :func:`parse_array`."""


def parse_body(raw: bytes) -> dict[str, JSONValue]:
    """The JSON object in a request body; raises :class:`RequestError` (400)."""
    if not raw.strip():
        raise RequestError("the request body is empty: send a JSON object", status=400)
    try:
        body = json.loads(raw, parse_constant=_Literal)
    except UnicodeDecodeError:
        raise RequestError("the request body is not UTF-8 text: send a JSON object",
                           status=400) from None
    except json.JSONDecodeError as exc:
        raise RequestError(f"the request body is not valid JSON ({exc.msg} at line "
                           f"{exc.lineno}, column {exc.colno}): send a JSON object",
                           status=400) from None
    except RecursionError:
        raise RequestError("the request body is nested too deeply to read: send a JSON "
                           "object of the endpoint's form", status=400) from None
    if not isinstance(body, dict):
        raise RequestError(f"the request body is {_what(body)}: send a JSON object",
                           status=400)
    return body


def parse_array(body: Mapping[str, object], key: str, *, shape: Shape, dtype: object,
                default: npt.ArrayLike | None = None) -> np.ndarray:
    """Field ``key`` of ``body`` as a numpy array of ``shape`` and ``dtype``.

    ``shape`` gives each dimension's length, ``None`` for any length from 1 up (``()`` is a
    scalar); ``dtype`` is an asyncfusion dtype or its name. ``default`` is the value when
    the field is absent (the server's own, so not checked); without it the field is
    required. Raises :class:`RequestError` (422) naming the field and the form expected.
    """
    dt = as_dtype(dtype)
    dims = tuple(shape)
    if key not in body:
        if default is not None:
            return np.asarray(default, dtype=dt.np)
        raise RequestError(f"missing field {key!r}: expected {_form(dims, dt)}", field=key)
    value = body[key]
    bad = _first_misfit(value, dims, _KINDS[dt.np.kind])
    if bad is not None:
        at, found, rest = bad
        where = key + "".join(f"[{i}]" for i in at)
        raise RequestError(f"{where}: expected {_form(rest, dt)}, got {_what(found)}",
                           field=where)
    return _values(value, key, dt)


_KINDS = {"f": frozenset((int, float)), "i": frozenset((int,)), "u": frozenset((int,)),
          "b": frozenset((bool,))}
_LEAVES = {"f": ("a number", "number", "numbers"), "i": ("an integer", "integer", "integers"),
           "u": ("an integer", "integer", "integers"),
           "b": ("true or false", "boolean", "booleans")}


def _first_misfit(value: object, dims: tuple[int | None, ...], kinds: frozenset[type]
                  ) -> tuple[tuple[int, ...], object, tuple[int | None, ...]] | None:
    """Where ``value`` first departs from nesting ``dims`` of elements of types ``kinds``:
    (index path, what is there, the dimensions expected there); None where it fits."""
    if not dims:
        return None if type(value) in kinds else ((), value, dims)
    n = dims[0]
    if type(value) is not list or (len(value) != n if n is not None else not value):
        return (), value, dims
    rest = dims[1:]
    if not rest:
        if set(map(type, value)) <= kinds:
            return None
        i = next(i for i, v in enumerate(value) if type(v) not in kinds)
        return (i,), value[i], rest
    for i, row in enumerate(value):
        bad = _first_misfit(row, rest, kinds)
        if bad is not None:
            return (i, *bad[0]), bad[1], bad[2]
    return None


def _values(value: object, key: str, dt: DType) -> np.ndarray:
    """The array of ``value`` (nesting and element types already checked) in ``dt``, or a
    RequestError naming the first value out of ``dt``'s range."""
    if dt.np.kind == "b":
        return np.asarray(value, dtype=dt.np)
    if dt.np.kind == "f":
        try:
            wide = np.asarray(value, dtype=np.float64)
        except OverflowError:  # an integer literal beyond float64
            pass
        else:
            with np.errstate(over="ignore"):
                out = wide.astype(dt.np, copy=False)
            if np.isfinite(out).all():
                return out
        top = float(np.finfo(dt.np).max)
        raise _out_of_range(key, value, lambda v: _fits_float(v, dt),
                            f"finite numbers of magnitude at most {top:.8g}", dt)
    lo, hi = int_range(dt)
    cells = np.asarray(value, dtype=object)
    if not all(_fits_int(v, lo, hi) for v in cells.flat):
        raise _out_of_range(key, value, lambda v: _fits_int(v, lo, hi),
                            f"integers from {lo} to {hi}", dt)
    return cells.astype(dt.np)


def _fits_int(v: object, lo: int, hi: int) -> bool:
    return isinstance(v, int) and lo <= v <= hi


def _fits_float(v: object, dt: DType) -> bool:
    if not isinstance(v, (int, float)):
        return False
    try:
        wide = float(v)
    except OverflowError:  # an integer beyond float64
        return False
    with np.errstate(over="ignore"):
        return bool(np.isfinite(dt.np.type(wide)))


def _out_of_range(key: str, value: object, fits: Callable[[object], bool], allowed: str,
                  dt: DType) -> RequestError:
    cells = np.asarray(value, dtype=object)
    at = next(i for i in np.ndindex(cells.shape) if not fits(cells[i]))
    where = key + "".join(f"[{i}]" for i in at)
    return RequestError(f"{where}: {_what(cells[at])} is out of range for {dt.label} "
                        f"(expected {allowed})", field=where)


def _form(dims: tuple[int | None, ...], dt: DType) -> str:
    """The form of a field in words: 'a list of 256 numbers (float32)'."""
    phrase, noun, nouns = _LEAVES[dt.np.kind]
    for n in reversed(dims):
        inner = noun if n == 1 else nouns
        size = f"{n} " if n is not None else ""
        prefix = "" if n is not None else "non-empty "
        noun, nouns = f"{prefix}list of {size}{inner}", f"{prefix}lists of {size}{inner}"
        phrase = f"a {noun}"
    return f"{phrase} ({dt.label})"


def _what(v: object) -> str:
    """What a client sent, in words, quoting numbers only (and those briefly)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if type(v) is _Literal:
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, int):
        digits = str(v)
        return f"{digits}" if len(digits) <= 24 else f"an integer of {len(digits)} digits"
    if isinstance(v, float):
        return repr(v) if np.isfinite(v) else "a number beyond float64's range"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return f"a list of {len(v)} item{'' if len(v) == 1 else 's'}"
    return "an object"


def encode(content: object) -> bytes:
    """``content`` as compact UTF-8 JSON: numpy arrays and scalars as lists and numbers,
    ``NaN``, ``inf`` and ``-inf`` as ``null``. Raises ``TypeError`` for other objects
    JSON has no form for."""
    try:
        text = json.dumps(content, allow_nan=False, default=_plain, ensure_ascii=False,
                          separators=(",", ":"))
    except ValueError:  # a non-finite Python float outside any array
        text = json.dumps(_finite(content), allow_nan=False, default=_plain,
                          ensure_ascii=False, separators=(",", ":"))
    return text.encode()


def _plain(obj: object) -> object:
    """json.dumps's ``default``: what it cannot write by itself, in forms it can."""
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fc" and not np.isfinite(obj).all():
            cells = obj.astype(object)
            cells[~np.isfinite(obj)] = None
            return cells.tolist()
        return obj.tolist()
    if isinstance(obj, np.generic):
        return _finite(obj.item())
    raise TypeError(f"{type(obj).__name__} has no JSON form: give lists, dicts, numbers, "
                    "strings, numpy arrays or numpy scalars")


def _finite(obj: object) -> object:
    """``obj`` with every non-finite float in its lists, tuples and dicts made None."""
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj
