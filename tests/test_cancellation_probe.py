"""Float add/sub keep IEEE special values on every adapter: where the shader compiler
folds ``x - x`` to 0 (lavapipe does), they guard them by bits; where it does not, the
runtime's probe at start-up says so and they are the plain operators."""

from __future__ import annotations

import numpy as np

import asyncfusion as af
from asyncfusion.codegen.wgsl.render import render
from asyncfusion._core.dtype import DType
from asyncfusion.kernel import Arg, Instr, Kernel, Load, Store


def _sub_kernel() -> Kernel:
    f32 = DType.float32
    return Kernel(1, (Load(f32, True), Load(f32, True)),
                  (Instr("sub", f32, f32, (Arg("in", 0), Arg("in", 1))),),
                  (Store(Arg("v", 0), f32),), ())


def test_the_guard_is_rendered_only_where_the_compiler_folds():
    guarded = render(_sub_kernel(), 64, folds=True)
    plain = render(_sub_kernel(), 64, folds=False)
    assert "0x7fc00000u" in guarded and "bitcast<u32>" in guarded
    assert "let v0 = (a0 - a1);" in plain and "0x7fc00000u" not in plain


async def test_the_probe_is_right_about_this_adapter():
    # With the guard turned off, x - x on inf and NaN is NaN exactly where the probe said
    # the compiler does not fold it (a fresh device: its kernels are rendered anew).
    async with af.open_device() as d:
        rt = d.backend.rt
        folds = rt.folds_cancellation
        rt.folds_cancellation = False
        try:
            x = af.tensor(np.array([np.inf, np.nan], np.float32), device=d)
            got = await (x - x).to_data()
        finally:
            rt.folds_cancellation = folds
    assert bool(np.isnan(got).all()) is (not folds), (folds, got)


async def test_inf_minus_inf_and_nan_minus_nan_are_nan_on_the_device(dev):
    x = af.tensor(np.array([np.inf, -np.inf, np.nan, 1.5], np.float32), device=dev)
    got = await (x - x).to_data()
    assert np.isnan(got[:3]).all() and got[3] == 0.0
    got = await (x + (-x)).to_data()
    assert np.isnan(got[:3]).all() and got[3] == 0.0
