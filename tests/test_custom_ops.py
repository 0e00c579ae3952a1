"""Custom element-wise ops fuse with built-in ones and match their numpy twins."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af
from tests.conftest import assert_close

softplus = af.elementwise_op("softplus", wgsl="log({T}(1.0) + exp({0}))",
                             numpy=lambda x: np.log1p(np.exp(x)))
lerp = af.elementwise_op("lerp3", arity=3, wgsl="mix({0}, {1}, {2})",
                         numpy=lambda a, b, t: a + (b - a) * t)
broken = af.elementwise_op("broken_op", wgsl="no_such_function({0})", numpy=np.negative)


async def test_custom_ops_fuse_with_builtins(dev, plain, ref):
    x_np = np.linspace(-3, 3, 64, dtype=np.float32)
    results = []
    for device in (dev, plain, ref):
        x = af.tensor(x_np, device=device)
        y = lerp(softplus(x * 2.0), x, 0.25) + 1.0
        device.reset_stats()
        results.append(await y.to_data())
        if device is dev:
            assert device.stats().launches == 1
        if device is plain:
            assert device.stats().launches == 4
    assert_close(results[0], results[2], rtol=1e-5, atol=1e-5)
    assert_close(results[1], results[2], rtol=1e-5, atol=1e-5)


async def test_a_broken_custom_op_poisons_only_its_dependents(dev):
    x = af.tensor([1.0, 2.0], device=dev)
    good = x * 3.0
    bad = broken(x) + 1.0
    assert_close(await good.to_data(), np.array([3.0, 6.0], np.float32))
    with pytest.raises(af.ExecutionError, match="no_such_function"):
        await bad.to_data()


def test_registration_is_validated():
    with pytest.raises(ValueError, match="exists already"):
        af.elementwise_op("exp", wgsl="exp({0})", numpy=np.exp)
    with pytest.raises(ValueError, match="placeholder"):
        af.elementwise_op("two_args", wgsl="{0} + {1}", numpy=np.add)
    with pytest.raises(af.DTypeError):
        softplus(af.tensor([True, False], device=af.Device("numpy")))
