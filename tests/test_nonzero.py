"""af.nonzero(x): data-dependent output size, through a custom compaction kernel; awaited
inside an event loop, a blocking read of the size outside one."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import asyncfusion as af
from tests.conftest import assert_close


@pytest.mark.parametrize("shape", [(1,), (37,), (5, 1, 9), (3, 4, 5, 2)])
async def test_nonzero_matches_numpy(dev, ref, shape):
    rng = np.random.default_rng(len(shape))
    x_np = rng.standard_normal(shape).astype(np.float32)
    x_np[x_np < 0.4] = 0.0
    for device in (dev, ref):
        got = await af.nonzero(af.tensor(x_np, device=device) * 2.0)
        want = np.nonzero(x_np)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.dtype is af.int32
            assert_close(await g.to_data(), w.astype(np.int32))


async def test_nonzero_of_bools_views_and_empty_results(dev):
    mask = np.arange(70000) % 13 == 0  # more than one workgroup row
    got = await af.nonzero(af.tensor(mask, device=dev))
    assert_close(await got[0].to_data(), np.flatnonzero(mask).astype(np.int32))
    x = af.tensor(np.eye(4, dtype=np.int32), device=dev)
    rows, cols = await af.nonzero(x.T[::-1])
    assert_close(await rows.to_data(), np.array([0, 1, 2, 3], np.int32))
    assert_close(await cols.to_data(), np.array([3, 2, 1, 0], np.int32))
    (none,) = await af.nonzero(af.zeros((6,), device=dev))
    assert none.shape == (0,)
    (empty,) = await af.nonzero(af.zeros((0,), device=dev))
    assert empty.shape == (0,)
    with pytest.raises(af.ShapeError, match="0-d"):
        await af.nonzero(af.tensor(1.0, device=dev))


async def test_nonzero_inside_a_loop_is_awaitable_and_checks_at_the_call(dev):
    pending = af.nonzero(af.tensor(np.int32([0, 3, 0, 4]), device=dev))
    assert inspect.isawaitable(pending)
    (got,) = await pending
    assert (await got.to_data()).tolist() == [1, 3]
    with pytest.raises(TypeError, match="asyncfusion Tensor"):
        af.nonzero([1, 0])  # refused when called, before anything is awaited


def test_nonzero_outside_a_loop_returns_the_tuple():
    x = np.float32([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    got = af.nonzero(af.tensor(x) + 0.0)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, np.nonzero(x), strict=True):
        assert g.dtype is af.int32
        np.testing.assert_array_equal(g.numpy(), w)
    (none,) = af.nonzero(af.zeros((4,), dtype=af.bool))
    assert none.shape == (0,)
    with pytest.raises(af.ShapeError, match="0-d"):
        af.nonzero(af.tensor(1.0))
