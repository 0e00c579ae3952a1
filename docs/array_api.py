"""The Array API coverage table, generated from what ``asyncfusion`` exports.

``docs/hooks.py`` puts :func:`table` into ``array-api.md`` at build time; the test suite
checks it against the package. A name counts as covered when ``asyncfusion`` exports a
function of that name, and as partly covered when only a ``Tensor`` method or Python
operator provides it.
"""

from __future__ import annotations

import inspect
from typing import Any

# The functions of the Array API standard (2024.12), by section.
STANDARD: dict[str, tuple[str, ...]] = {
    "Creation": ("arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full",
                 "full_like", "linspace", "meshgrid", "ones", "ones_like", "tril", "triu",
                 "zeros", "zeros_like"),
    "Data types": ("astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"),
    "Element-wise": (
        "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh",
        "bitwise_and", "bitwise_left_shift", "bitwise_invert", "bitwise_or",
        "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign", "cos",
        "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater",
        "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less", "less_equal",
        "log", "log1p", "log2", "log10", "logaddexp", "logical_and", "logical_not",
        "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
        "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round",
        "sign", "signbit", "sin",
        "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc"),
    "Indexing": ("take", "take_along_axis"),
    "Linear algebra": ("matmul", "matrix_transpose", "tensordot", "vecdot"),
    "Manipulation": ("broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip",
                     "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze",
                     "stack", "tile", "unstack"),
    "Searching": ("argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"),
    "Sets": ("unique_all", "unique_counts", "unique_inverse", "unique_values"),
    "Sorting": ("argsort", "sort"),
    "Statistics": ("cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std",
                   "sum", "var"),
    "Utilities": ("all", "any", "diff"),
}

# Array API name -> the Tensor dunder that provides it as a Python operator.
OPERATORS = {
    "add": "__add__", "subtract": "__sub__", "multiply": "__mul__", "divide": "__truediv__",
    "pow": "__pow__", "negative": "__neg__", "abs": "__abs__", "equal": "__eq__",
    "not_equal": "__ne__", "less": "__lt__", "less_equal": "__le__", "greater": "__gt__",
    "greater_equal": "__ge__", "logical_and": "__and__", "logical_or": "__or__",
    "logical_not": "__invert__", "positive": "__pos__", "remainder": "__mod__",
    "floor_divide": "__floordiv__", "matmul": "__matmul__",
}


def coverage(af: Any) -> dict[str, tuple[str, str]]:
    """Array API name -> (status, how asyncfusion spells it); status is one of
    ``function``, ``method`` (Tensor method or operator only) and ``missing``."""
    tensor = af.Tensor
    out: dict[str, tuple[str, str]] = {}
    for names in STANDARD.values():
        for name in names:
            if callable(getattr(af, name, None)) and not isinstance(getattr(af, name), type):
                # a function whose result's size depends on data returns an awaitable
                # inside an event loop (nonzero: OrAwaitable[...])
                wait = " (awaited in an event loop)" if _waits(getattr(af, name)) else ""
                out[name] = ("function", f"`af.{name}`{wait}")
            elif callable(getattr(tensor, name, None)):
                out[name] = ("method", f"`Tensor.{name}`")
            elif name in OPERATORS and OPERATORS[name] in vars(tensor):
                out[name] = ("method", f"operator `{OPERATORS[name]}`")
            else:
                out[name] = ("missing", "")
    return out


def _waits(func: Any) -> bool:
    return inspect.iscoroutinefunction(func) or "OrAwaitable" in str(
        inspect.signature(func).return_annotation)


def table(af: Any) -> str:
    """The coverage table as Markdown: a summary line, then one table per section."""
    cov = coverage(af)
    counts = {s: sum(1 for v in cov.values() if v[0] == s) for s in ("function", "method")}
    lines = [f"Covered: **{counts['function']}** of {len(cov)} functions as `asyncfusion` "
             f"functions, **{counts['method']}** more as `Tensor` methods or operators only.",
             ""]
    marks = {"function": "yes", "method": "method only", "missing": "no"}
    for section, names in STANDARD.items():
        lines += [f"### {section}", "", "| Array API | asyncfusion | spelled |",
                  "| --- | --- | --- |"]
        lines += [f"| `{n}` | {marks[cov[n][0]]} | {cov[n][1]} |" for n in names]
        lines.append("")
    return "\n".join(lines)
