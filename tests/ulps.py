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


# A fused fma for adapters whose own is not (lavapipe): the product of two float32 is exact
# in float64, so a * b + c rounds there once and then to float32 (a double rounding, off
# by one ulp of the result only where the first rounding lands on a float32 tie).
FMA_EMULATION = """fn af_fma_emul(a: f32, b: f32, c: f32) -> f32 {
  return f32(f64(a) * f64(b) + f64(c));
}
fn af_fma_emul_4(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(vec4<f64>(a) * vec4<f64>(b) + vec4<f64>(c));
}
"""


def use_math_mode(device, fma: bool, monkeypatch) -> None:
    """Make ``device`` (before it renders a kernel) render the float32 math helpers'
    ``fma`` text (``render(..., fma=True)``, for adapters whose fma is fused) or the plain
    one, whatever its adapter's probe said (``Runtime.fused_fma``, restored after the test
    by ``monkeypatch``). Where the adapter's fma is not fused, the fma text calls the
    float64 emulation above instead (skips the test where the adapter has no float64)."""
    import pytest

    from asyncfusion.codegen.wgsl import render
    from asyncfusion.codegen.wgsl.lowering import HELPERS
    from asyncfusion.codegen.wgsl.math_f32 import fma_helpers

    rt = device.backend.rt
    if fma and not rt.fused_fma:
        if "shader-f64" not in rt.features:
            pytest.skip("this adapter's fma is not fused and it has no float64 to emulate one")
        texts = HELPERS | fma_helpers("af_fma_emul", "af_fma_emul_4")
        texts["af_magic"] += FMA_EMULATION  # exp and the trig functions all call it
        monkeypatch.setattr(render, "HELPERS_FMA", texts)
    monkeypatch.setattr(rt, "fused_fma", fma)
