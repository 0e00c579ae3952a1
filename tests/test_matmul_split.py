"""Matmul plans on the device: every schedule the autotuner may pick and split-K give
numpy's values at odd sizes, batched and through transposed views, with the epilogue
after the split's sum (two launches; one unsplit); float16 operands accumulate in
float32; serving shapes stay one fused launch."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.backends.wgpu import matmul_launch
from asyncfusion.codegen.wgsl.matmul_plan import CANDIDATE_TILES, TILES, MatmulPlan
from tests.conftest import assert_close
from tests.test_views_reductions import launches

RNG = np.random.default_rng(23)


def _force(monkeypatch, plan: MatmulPlan) -> None:
    monkeypatch.setattr(matmul_launch, "default_plan", lambda *_a, **_k: plan)


def _close(got, want, rtol=1e-4):
    assert_close(got, want, rtol=rtol, atol=rtol * float(np.abs(want).max() or 1.0))


async def _relu_affine(dev, a, w, b, view=lambda t: t):
    """``relu(a @ w + b)`` on ``dev`` (``view`` applied to ``a``'s tensor), its launches
    and its value."""
    ta, tw, tb = af.tensor(a, device=dev), af.tensor(w, device=dev), af.tensor(b, device=dev)
    n = await launches(dev, lambda: (view(ta) @ tw + tb).relu())
    return n, await (view(ta) @ tw + tb).relu().to_data()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # compiles every schedule: once
@pytest.mark.parametrize("i", range(len(CANDIDATE_TILES)),
                         ids=[t.name for t in CANDIDATE_TILES])
async def test_every_candidate_schedule_matches_numpy_at_odd_sizes(dev, monkeypatch, i):
    _force(monkeypatch, MatmulPlan(CANDIDATE_TILES[i]))
    a = RNG.standard_normal((97, 67)).astype(np.float32)
    w = RNG.standard_normal((67, 131)).astype(np.float32)
    b = RNG.standard_normal(131).astype(np.float32)
    if i % 2:  # every other one reads the left operand through a transposed view
        n, got = await _relu_affine(dev, np.ascontiguousarray(a.T), w, b, lambda t: t.T)
    else:
        n, got = await _relu_affine(dev, a, w, b)
    assert n == 1
    _close(got, np.maximum(a @ w + b, 0))


# (left, right, left view): odd sizes, one row, K not a multiple of 4, batched with
# broadcasting, a transposed left operand
SPLIT_CASES = [((97, 67), (67, 131), ""), ((1, 301), (301, 5), ""),
               ((3, 2, 9, 130), (2, 130, 7), ""), ((40, 33), (33, 12), "T")]


@pytest.mark.parametrize("split", [2, 5])
@pytest.mark.parametrize("sa,sb,view", SPLIT_CASES, ids=[f"{a}{v}@{b}" for a, b, v in SPLIT_CASES])
async def test_split_k_sums_the_slices_then_runs_the_epilogue(dev, monkeypatch, split, sa, sb,
                                                              view):
    _force(monkeypatch, MatmulPlan(TILES[2], split))
    a = RNG.standard_normal(sa).astype(np.float32)
    w = RNG.standard_normal(sb).astype(np.float32)
    b = RNG.standard_normal(sb[-1]).astype(np.float32)
    host = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if view else a
    n, got = await _relu_affine(dev, host, w, b, (lambda t: t.mT) if view else (lambda t: t))
    assert n == 2  # the partial sums, then their sum with the epilogue
    _close(got, np.maximum(np.matmul(a, w) + b, 0))


async def test_split_k_is_exact_on_int32_and_over_a_long_k(dev, monkeypatch):
    _force(monkeypatch, MatmulPlan(TILES[1], 6))
    x = RNG.integers(-3, 4, (5, 20000)).astype(np.int32)
    y = RNG.integers(-3, 4, (20000, 9)).astype(np.int32)
    tx, ty = af.tensor(x, device=dev), af.tensor(y, device=dev)
    assert await launches(dev, lambda: tx @ ty) == 2
    np.testing.assert_array_equal(await (tx @ ty).to_data(), x @ y)


async def test_a_gpu_splits_few_tiles_over_a_long_k_by_default(dev):
    dev.backend.matmul.gpu = True  # the default plan of a GPU adapter, run on this one
    a = RNG.standard_normal((32, 8192)).astype(np.float32)
    w = RNG.standard_normal((8192, 24)).astype(np.float32)
    b = RNG.standard_normal(24).astype(np.float32)
    n, got = await _relu_affine(dev, a, w, b)
    assert n == 2
    _close(got, np.maximum(a @ w + b, 0))
    sq = RNG.standard_normal((64, 64)).astype(np.float32)  # a short K: one launch
    n, got = await _relu_affine(dev, sq, sq, sq[0])
    assert n == 1
    _close(got, np.maximum(sq @ sq + sq[0], 0))


@pytest.mark.parametrize("split", [1, 3])
async def test_float16_operands_accumulate_in_float32(dev, monkeypatch, split):
    _force(monkeypatch, MatmulPlan(TILES[2], split))
    ones = af.ones((3, 4096), dtype=af.float16, device=dev)
    got = ones @ af.ones((4096, 5), dtype=af.float16, device=dev)
    assert got.dtype is af.float16
    # 4096 ones: float16 sums stop at 2048 (2048 + 1 rounds back), float32 ones do not
    np.testing.assert_array_equal(await got.to_data(), np.full((3, 5), 4096, np.float16))
    a = RNG.standard_normal((97, 67)).astype(np.float16)
    w = RNG.standard_normal((67, 131)).astype(np.float16)
    b = RNG.standard_normal(131).astype(np.float16)
    n, got = await _relu_affine(dev, a, w, b)
    assert n == (1 if split == 1 else 2) and got.dtype == np.float16
    want = np.maximum(a.astype(np.float32) @ w.astype(np.float32) + b, 0)
    _close(got.astype(np.float32), want, rtol=2e-3)  # one rounding to float16 at the end


@pytest.mark.parametrize("m", [1, 5, 33, 256])
async def test_serving_shapes_are_one_fused_launch(dev, m):
    x = RNG.standard_normal((m, 784)).astype(np.float32)
    w = (RNG.standard_normal((784, 512)) / 28).astype(np.float32)
    b = RNG.standard_normal(512).astype(np.float32)
    n, got = await _relu_affine(dev, x, w, b)
    assert n == 1
    _close(got, np.maximum(x @ w + b, 0))


async def test_sizes_off_every_tile_edge(dev):
    a = RNG.standard_normal((1000, 67)).astype(np.float32)
    w = RNG.standard_normal((67, 1001)).astype(np.float32)
    b = RNG.standard_normal(1001).astype(np.float32)
    n, got = await _relu_affine(dev, a, w, b)
    assert n == 1
    _close(got, np.maximum(a @ w + b, 0))
