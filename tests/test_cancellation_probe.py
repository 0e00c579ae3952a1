"""Float add/sub keep IEEE special values on every adapter: where the shader compiler
folds ``x - x`` to 0 (lavapipe does), they guard them by bits; where it does not, the
runtime's probe at start-up says so and they are the plain operators."""

from __future__ import annotations

import numpy as np

import asyncfusion as af
from asyncfusion.backends.wgpu.render import render
from asyncfusion.backends.wgpu.runtime import detach, get_runtime
from asyncfusion.dtype import DType
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


def test_the_probe_answers_for_this_adapter():
    rt = get_runtime()
    try:
        assert isinstance(rt.folds_cancellation, bool)
    finally:
        detach(rt)


async def test_inf_minus_inf_and_nan_minus_nan_are_nan_on_the_device(dev):
    x = af.tensor(np.array([np.inf, -np.inf, np.nan, 1.5], np.float32), device=dev)
    got = await (x - x).to_data()
    assert np.isnan(got[:3]).all() and got[3] == 0.0
    got = await (x + (-x)).to_data()
    assert np.isnan(got[:3]).all() and got[3] == 0.0
