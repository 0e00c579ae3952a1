"""Errors at the call site, as promised: scalars, shapes, devices, device options, custom
ops and the Tensor constructor."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af
from tests.conftest import assert_close


async def test_an_int_too_large_for_float_raises_at_the_call(dev):
    x = af.tensor([1.0], device=dev)
    with pytest.raises(OverflowError, match="too large to convert to float"):
        x + 2**1024
    with pytest.raises(OverflowError):
        2**1024 * x
    with pytest.raises(OverflowError):
        af.where(x > 0, x, -(2**1100))
    with pytest.raises(af.DTypeError, match="does not fit"):
        af.tensor([1], device=dev) + 2**40
    assert_close(await (x + 2**100).to_data(), np.array([2.0**100], np.float32))


async def test_reshape_and_creation_refuse_dimensions_kernels_cannot_index(dev):
    empty = af.zeros((0,), device=dev)
    with pytest.raises(af.LimitError, match="larger than"):
        empty.reshape(2**64, 0)
    with pytest.raises(af.LimitError, match="larger than"):
        af.zeros((2**40, 0), device=dev)
    assert (await empty.reshape(3, 0).to_data()).shape == (3, 0)


async def test_a_reduction_whose_output_exceeds_a_buffer_is_refused(dev):
    rows = dev.max_buffer_size // 4 + 1
    with pytest.raises(af.LimitError, match="largest buffer"):
        af.zeros((rows, 0), device=dev).mean(axis=1)
    out = await af.zeros((5, 0), device=dev).mean(axis=1).to_data()
    assert np.isnan(out).all() and out.shape == (5,)


@pytest.mark.parametrize("device", ["cpu", 0, object()])
def test_a_non_device_is_refused_by_name(device):
    with pytest.raises(TypeError, match="must be an asyncfusion Device"):
        af.tensor([1.0], device=device)
    with pytest.raises(TypeError, match="must be an asyncfusion Device"):
        af.zeros((2,), device=device)


def test_an_unentered_open_device_says_to_enter_it():
    cm = af.open_device()
    with pytest.raises(TypeError, match="async with asyncfusion.open_device"):
        af.ones((2,), device=cm)


def test_ones_with_two_ints_says_how_to_write_the_shape():
    with pytest.raises(TypeError, match=r"asyncfusion.ones\(\(2, 2\)\)"):
        af.ones(2, 2)
    with pytest.raises(TypeError, match=r"asyncfusion.zeros\(\(2, 3, 4\)\)"):
        af.zeros((2, 3), 4)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"flush_threshold": "x"}, TypeError, "flush_threshold must be an int"),
    ({"flush_threshold": 0}, ValueError, "flush_threshold must be at least 1"),
    ({"workgroup": -1}, ValueError, "workgroup must be at least 1"),
    ({"workgroup": 1.5}, TypeError, "workgroup must be an int"),
    ({"workgroup": 5000}, ValueError, "larger than this adapter allows"),
    ({"max_storage_bindings": 2}, ValueError, "max_storage_bindings must be at least 4"),
    ({"fusion": "yes"}, TypeError, "fusion must be True or False"),
    ({"backend": "cuda"}, af.OptionError, "unknown backend"),
])
async def test_bad_device_options_are_refused_when_the_device_opens(kwargs, error, match):
    with pytest.raises(error, match=match):
        async with af.open_device(**kwargs):
            pass


@pytest.mark.parametrize("wgsl, error", [("{0.real}", af.OptionError), (None, TypeError),
                                         ("{0} + {", af.OptionError),
                                         ("{2}", af.OptionError)])
def test_a_bad_custom_wgsl_template_is_refused_clearly(wgsl, error):
    with pytest.raises(error, match="wgsl"):
        af.elementwise_op("bad_template_op", wgsl=wgsl, numpy=np.negative)


@pytest.mark.parametrize("wgsl, arity, says", [
    ("{0} + {1}", 1, r"placeholder\(s\) \{1\} that no operand fills"),  # one extra
    ("{0} * {T}(2.0)", 2, r"never uses operand placeholder\(s\) \{1\}"),  # one missing
    ("{1} - {0} + {x}", 2, r"\{x\} that no operand fills"),
])
def test_a_template_names_the_placeholder_that_does_not_match(wgsl, arity, says):
    with pytest.raises(af.OptionError, match=says) as info:
        af.elementwise_op("mismatched_op", wgsl=wgsl, numpy=np.negative, arity=arity)
    assert f"an op of arity {arity} uses each of" in str(info.value)  # the remedy
    assert isinstance(info.value, af.InputError) and isinstance(info.value, ValueError)


def test_a_custom_op_needs_a_numpy_function():
    with pytest.raises(TypeError, match="numpy must be a function"):
        af.elementwise_op("no_numpy_op", wgsl="{0}", numpy="np.negative")


async def test_the_tensor_constructor_refuses_what_ops_never_pass(dev):
    for args in [([2], af.float32, dev), ((2,), "float32", dev), ((2,), af.float32, "cpu")]:
        with pytest.raises(TypeError, match="create tensors with asyncfusion.tensor"):
            af.Tensor(*args)


async def test_a_hand_built_tensor_fails_only_its_own_reads(dev):
    x = af.tensor([1.0, 2.0], device=dev)
    hand = af.Tensor((2,), af.float32, dev)
    good = x * 3.0
    bad = hand + good
    with pytest.raises(af.ExecutionError, match="no op computes it"):
        await hand.to_data()
    with pytest.raises(af.ExecutionError):
        await bad.to_data()
    assert_close(await good.to_data(), np.array([3.0, 6.0], np.float32))
    assert_close(await (x + 1.0).to_data(), np.array([2.0, 3.0], np.float32))
