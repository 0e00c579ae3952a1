"""Distances in float32 ulps, for the accuracy tests.

A result counts as exact when it equals the expected value (NaN matching NaN), and when
both are below float32's smallest normal (a device may flush subnormals to zero). Any
other mismatch in NaN or infinity is infinitely wrong.
"""

from __future__ import annotations

import numpy as np

TINY = float(np.finfo(np.float32).tiny)


def ulp_errors(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Element-wise |actual - expected| in ulps of ``expected`` (float32)."""
    a = np.asarray(actual, np.float32).astype(np.float64)
    e = np.asarray(expected, np.float32).astype(np.float64)
    with np.errstate(all="ignore"):  # the spacing of float32's largest value overflows
        unit = np.spacing(np.maximum(np.abs(e), TINY).astype(np.float32)).astype(np.float64)
        err = np.abs(a - e) / unit
    err[(np.abs(a) < TINY) & (np.abs(e) < TINY)] = 0.0
    same = (a == e) | (np.isnan(a) & np.isnan(e))
    err[same] = 0.0
    err[~same & ~(np.isfinite(a) & np.isfinite(e))] = np.inf
    return err


def reference(fn, *xs: np.ndarray) -> np.ndarray:
    """``fn`` computed in float64 and rounded to float32 (the correctly rounded answer but
    for double rounding)."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*(x.astype(np.float64) for x in xs))).astype(np.float32)
