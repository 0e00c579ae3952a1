"""The float32 math helpers reduce and evaluate with ``fma`` where the adapter's compiler
fuses it (one rounding, as NVIDIA GPUs do; WGSL lets it round twice): the runtime's probe
at start-up says so (``Runtime.fused_fma``) and the renderer takes its answer as ``fma=``.
Lavapipe's fma is not fused (its probe says False), so there the fma text runs, in the
accuracy tests (``tests/test_numerics_ulp.py``, both modes), on an emulated fused fma."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion._core.dtype import DType
from asyncfusion.codegen.wgsl.lowering import HELPERS, HELPERS_FMA
from asyncfusion.codegen.wgsl.math_f32 import fma_helpers
from asyncfusion.codegen.wgsl.render import render
from asyncfusion.kernel import Arg, Instr, Kernel, Load, Store
from tests.ulps import reference, ulp_errors, use_math_mode

OPS = ("exp", "sin", "cos", "tan", "expm1", "sinh", "cosh", "tanh")


def _math_kernel(vec4: bool) -> Kernel:
    """x -> (exp(x), sin(x), ...), each of OPS stored."""
    f32 = DType.float32
    body = tuple(Instr(op, f32, f32, (Arg("in", 0),)) for op in OPS)
    stores = tuple(Store(Arg("v", i), f32) for i in range(len(OPS)))
    return Kernel(1, (Load(f32, True),), body, stores, (), vec4=vec4)


@pytest.mark.parametrize("vec4", [False, True], ids=["scalar", "vec4"])
async def test_both_texts_compile_and_only_the_fma_one_calls_fma(dev, vec4):
    rt = dev.backend.rt
    plain = render(_math_kernel(vec4), 64)
    fused = render(_math_kernel(vec4), 64, fma=True)
    assert "fma(" not in plain and plain.count("fma(") < fused.count("fma(")
    assert plain == render(_math_kernel(vec4), 64, fma=False)  # the default: plain
    rt.check_shader(plain)
    rt.check_shader(fused)


def test_the_fma_texts_replace_only_exp_and_the_trig_helpers():
    assert set(fma_helpers()) == {"af_exp", "af_trig", "af_sin", "af_cos", "af_tan"}
    assert {h for h in HELPERS if HELPERS[h] != HELPERS_FMA[h]} == set(fma_helpers())
    assert HELPERS_FMA.keys() == HELPERS.keys()


async def test_the_probe_answers_a_bool_and_renders_by_it(dev):
    rt = dev.backend.rt
    assert isinstance(rt.fused_fma, bool)
    got = await af.exp(af.tensor(np.float32([0.5, 1.0]), device=dev)).to_data()
    assert np.allclose(got, np.exp([0.5, 1.0]))
    texts = list(dev.backend._kernels.values())
    assert texts and all(("fma(" in t) is rt.fused_fma for t in texts if "af_exp" in t)


def test_the_probe_assumes_unfused_when_it_cannot_run(monkeypatch):
    from asyncfusion.backends.wgpu.runtime import Runtime

    def fail(self, *args):
        raise RuntimeError("no probe")
    monkeypatch.setattr(Runtime, "_probe", fail)
    assert Runtime._fused_fma(object.__new__(Runtime)) is False
    assert Runtime._folds_cancellation(object.__new__(Runtime)) is True


def test_the_probe_is_right_about_this_adapter(af_device):
    # The probe's cases on the adapter's own fma, in a kernel of the renderer's: where it
    # says fused, the rounding errors of the products come out exact; where not, they are 0.
    from asyncfusion.backends.wgpu.runtime import _FMA_CASES

    x, y = _FMA_CASES
    rt = af_device.backend.rt
    code = """
@group(0) @binding(0) var<storage, read> a: array<f32, 24>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(8) fn main(@builtin(local_invocation_index) i: u32) {
  b[i] = fma(a[i], a[i + 8u], a[i + 16u]);
}"""
    got = rt._probe(code, np.concatenate([x, y, -(x * y)]), 8)
    err = (x.astype(np.float64) * y - (x * y)).astype(np.float32)
    assert np.array_equal(got, err if rt.fused_fma else np.zeros_like(err)), got


@pytest.mark.parametrize("fma", [False, True], ids=["plain", "fma"])
def test_the_seed_chain_in_both_modes(af_device, monkeypatch, fma):
    """abs(cos(exp(sin(x * 0.5 + 1)) * 0.25 + 2)) in one fused kernel (vec4), its error
    in ulps against numpy's float64, in both texts (fma: emulated where not fused)."""
    use_math_mode(af_device, fma, monkeypatch)
    x = np.random.default_rng(0).uniform(-100, 100, 1 << 16).astype(np.float32)
    t = af.tensor(x, device=af_device)
    got = af.abs(af.cos(af.exp(af.sin(t * 0.5 + 1)) * 0.25 + 2)).numpy()
    # each step rounded to float32, as the kernel's are: what is left is the math's error
    s = reference(np.sin, x * np.float32(0.5) + np.float32(1))
    want = np.abs(reference(np.cos, reference(np.exp, s) * np.float32(0.25) + np.float32(2)))
    assert ulp_errors(got, want).max() <= 8  # exp's ulp at e, through + 2 and cos
    texts = list(af_device.backend._kernels.values())
    assert any("af_sincos_4" in t for t in texts)
    assert all(("fma(" in t or "fma_emul(" in t) is fma for t in texts if "af_sincos" in t)
