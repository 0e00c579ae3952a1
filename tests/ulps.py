"""Distances in ulps, for the accuracy tests (float32 by default, or float64).

A result counts as exact when it equals the expected value (NaN matching NaN), and (unless
asked not to) when both are below the dtype's smallest normal (a device may flush
subnormals to zero). Any
other mismatch in NaN or infinity is infinitely wrong.
"""

from __future__ import annotations

import numpy as np

TINY = float(np.finfo(np.float32).tiny)
WIDER = {np.dtype(np.float32): np.float64, np.dtype(np.float64): np.longdouble}


def ulp_errors(actual: np.ndarray, expected: np.ndarray, dtype=np.float32,
               flush: bool = True) -> np.ndarray:
    """Element-wise |actual - expected| in ulps of ``expected`` (of ``dtype``), the
    difference taken in a wider type (float64 for float32, long double for float64).
    ``flush=False`` measures subnormal results too (for devices that keep them)."""
    dtype = np.dtype(dtype)
    tiny = float(np.finfo(dtype).tiny)
    a = np.asarray(actual, dtype).astype(WIDER[dtype])
    e = np.asarray(expected, dtype).astype(WIDER[dtype])
    with np.errstate(all="ignore"):  # the spacing of the largest value overflows
        unit = np.spacing(np.maximum(np.abs(e), tiny).astype(dtype)).astype(WIDER[dtype])
        err = np.abs(a - e) / unit
    if flush:
        err[(np.abs(a) < tiny) & (np.abs(e) < tiny)] = 0.0
    same = (a == e) | (np.isnan(a) & np.isnan(e))
    err[same] = 0.0
    err[~same & ~(np.isfinite(a) & np.isfinite(e))] = np.inf
    return err.astype(np.float64)


def reference(fn, *xs: np.ndarray, dtype=np.float32) -> np.ndarray:
    """``fn`` computed in the wider type and rounded to ``dtype`` (the correctly rounded
    answer but for double rounding; for float64 where long double is wider than double,
    as on x86, and numpy's float64 itself, within ~1 ulp, where it is not)."""
    wide = WIDER[np.dtype(dtype)]
    with np.errstate(all="ignore"):
        return np.asarray(fn(*(x.astype(wide) for x in xs))).astype(dtype)
