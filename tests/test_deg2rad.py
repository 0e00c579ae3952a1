"""``deg2rad``: an op added as one registry entry and one lowering, and nothing else of
the package: a public function, fused like any other op, numpy's answers."""

from __future__ import annotations

import numpy as np

import asyncfusion as af
from tests.conftest import assert_close


def test_it_is_a_public_function_with_its_registry_docstring():
    assert "deg2rad" in af.__all__ and af.deg2rad.__doc__.startswith("Degrees to radians")


async def test_it_matches_numpy_and_fuses_with_its_neighbours(dev, ref):
    x_np = np.array([0.0, 30.0, -90.0, 180.0, 359.5, 1e6, np.inf, np.nan], np.float32)
    for device in (dev, ref):
        x = af.tensor(x_np, device=device)
        await device.sync()
        device.reset_stats()
        got = await af.sin(af.deg2rad(x * 2.0) + 1.0).to_data()
        if device is dev:
            assert device.stats().launches == 1  # mul, deg2rad, add, sin: one kernel
        with np.errstate(invalid="ignore"):
            want = np.sin(np.deg2rad(x_np * np.float32(2)) + np.float32(1))
        assert_close(got, want, rtol=2e-6, atol=1e-6)
        assert_close(await af.deg2rad(x).to_data(), np.deg2rad(x_np), rtol=1e-7)


async def test_integers_convert_to_float(ref):
    x = af.tensor(np.array([0, 90, 180], np.int32), device=ref)
    out = af.deg2rad(x)
    assert out.dtype is af.float32
    assert_close(await out.to_data(), np.deg2rad(np.array([0, 90, 180], np.float32)))
