"""Matmul: values against numpy (fused, plain and on the numpy interpreter), numpy's
shape rules, operands read through their layouts, epilogues fused into the store, and
call-site errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from asyncfusion.backends.wgpu import matmul_launch
from asyncfusion.codegen.wgsl.matmul_plan import TILES as _TILES
from asyncfusion.codegen.wgsl.matmul_plan import MatmulPlan, matmul_tiles
from asyncfusion.codegen.wgsl.matmul import with_layout
from asyncfusion.kernel import LaunchArgs
from tests.conftest import assert_close
from tests.test_views_reductions import launches

RNG = np.random.default_rng(11)

# (left shape, right shape): 1-D, 2-D, primes, ones, empty K, batched with broadcasting
SHAPES = [((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((3, 5), (5, 7)), ((1, 1), (1, 1)),
          ((67, 131), (131, 37)), ((3, 0), (0, 4)), ((2, 4, 5), (5, 3)), ((4, 5), (3, 5, 2)),
          ((2, 1, 4, 5), (3, 5, 2)), ((1, 33), (33, 1))]


@pytest.mark.parametrize("sa,sb", SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
async def test_matmul_matches_numpy_fused_plain_and_interpreted(dev, plain, ref, sa, sb):
    a = RNG.standard_normal(sa).astype(np.float32)
    b = RNG.standard_normal(sb).astype(np.float32)
    for device in (dev, plain, ref):
        got = await (af.tensor(a, device=device) @ af.tensor(b, device=device)).to_data()
        assert got.shape == np.matmul(a, b).shape
        assert_close(got, np.matmul(a, b), rtol=1e-4, atol=1e-4)


async def test_int32_matmul_is_exact_and_wraps_as_numpy(dev, ref):
    a = RNG.integers(-1000, 1000, (6, 9)).astype(np.int32)
    b = RNG.integers(-1000, 1000, (9, 5)).astype(np.int32)
    big = np.full((2, 3), 2**20, np.int32)
    for device in (dev, ref):
        got = await af.matmul(af.tensor(a, device=device), af.tensor(b, device=device)).to_data()
        np.testing.assert_array_equal(got, a @ b)
        wrapped = await (af.tensor(big, device=device) @ af.tensor(big.T.copy(), device=device)
                         ).to_data()
        np.testing.assert_array_equal(wrapped, big @ big.T)  # 3 * 2**40 wraps in int32


async def test_mixed_dtypes_promote_as_elementwise_ops(dev):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = RNG.standard_normal((3, 2)).astype(np.float32)
    got = af.tensor(a, device=dev) @ af.tensor(b, device=dev)
    assert got.dtype is af.float32
    assert_close(await got.to_data(), a @ b, rtol=1e-5, atol=1e-5)


async def test_transposed_and_strided_operands_are_read_without_a_copy(dev):
    a = RNG.standard_normal((7, 5)).astype(np.float32)
    b = RNG.standard_normal((9, 7)).astype(np.float32)
    ta, tb = af.tensor(a, device=dev), af.tensor(b, device=dev)
    assert await launches(dev, lambda: ta.T @ tb.T) == 1
    assert_close(await (ta.T @ tb.T).to_data(), a.T @ b.T, rtol=1e-4, atol=1e-4)
    assert_close(await (ta[::2, ::-1] @ tb[::3, :5].T).to_data(),
                 a[::2, ::-1] @ b[::3, :5].T, rtol=1e-4, atol=1e-4)


async def test_epilogues_run_in_the_matmul_store(dev, ref):
    x = RNG.standard_normal((10, 12)).astype(np.float32)
    w = RNG.standard_normal((12, 6)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    r = RNG.standard_normal((10, 6)).astype(np.float32)
    tx, tw, tb, tr = (af.tensor(v, device=dev) for v in (x, w, b, r))
    assert await launches(dev, lambda: (tx @ tw + tb).relu()) == 1
    assert await launches(dev, lambda: ((tx @ tw) * 0.5 + tr).tanh()) == 1
    assert await launches(dev, lambda: af.gelu(tx @ tw + tb)) == 1
    for device in (dev, ref):
        tx, tw, tb, tr = (af.tensor(v, device=device) for v in (x, w, b, r))
        got = await ((tx @ tw + tb).relu() * 2.0 + tr).to_data()
        assert_close(got, np.maximum(x @ w + b, 0) * 2 + r, rtol=1e-4, atol=1e-4)


async def test_an_mlp_layer_stack_is_one_launch_per_layer(dev):
    x = af.tensor(RNG.standard_normal((8, 16)).astype(np.float32), device=dev)
    ws = [af.tensor(RNG.standard_normal(s).astype(np.float32), device=dev)
          for s in ((16, 32), (32, 32), (32, 4))]
    bs = [af.tensor(np.zeros(s[1], np.float32), device=dev) for s in ((16, 32), (32, 32), (32, 4))]

    def forward():
        h = x
        for w, b in zip(ws, bs, strict=True):
            h = (h @ w + b).relu()
        return h
    assert await launches(dev, forward) == 3


def test_tiles_follow_the_adapter_and_the_output():
    big = {"max-compute-invocations-per-workgroup": 1024,
           "max-compute-workgroup-storage-size": 49152}
    small = {"max-compute-invocations-per-workgroup": 256,
             "max-compute-workgroup-storage-size": 4096}
    assert matmul_tiles(4096, 4096, big, gpu=True).tm == 128
    assert matmul_tiles(1024, 1024, big, gpu=True).tm == 64  # 64 128-tiles: not a wave
    assert matmul_tiles(1024, 1024, big, gpu=True, batch=2).tm == 128
    assert matmul_tiles(4096, 4096, big, gpu=False).tm == 64
    assert matmul_tiles(4096, 8, big, gpu=True).tm == 32  # 64x16 tiles make no wave
    assert (matmul_tiles(4, 1_000_000, big, gpu=True).tm,  # 4 rows (a search query):
            matmul_tiles(4, 1_000_000, big, gpu=True).tn) == (16, 64)  # not 128 rows a tile
    assert matmul_tiles(256, 512, big, gpu=True).tm == 32  # the MLP layer: a wave of 32s
    assert matmul_tiles(4096, 4096, small, gpu=True).tm == 32  # 16 KiB tiles do not fit
    for t in _TILES:
        assert t.shared_bytes == 2 * (t.tm + t.tn) * t.tk * 4  # double-buffered


def _args(m, n, k, a, b):
    """Launch args of an (m, k) @ (k, n) product; ``a``/``b``: (offset, (M, K) or (K, N)
    strides) of each operand."""
    (oa, (am, ak)), (ob, (bk, bn)) = a, b
    return LaunchArgs((m, n, k), ((oa, (am, 0, ak)), (ob, (0, bn, bk))), ())


def test_operands_are_read_along_their_contiguous_axis_as_vec4_where_aligned():
    t = _TILES[0]
    row = with_layout(t, _args(8, 12, 16, (0, (16, 1)), (0, (12, 1))))
    assert (row.a_k, row.a_vec, row.b_k, row.b_vec) == (True, True, False, True)
    tr = with_layout(t, _args(8, 12, 16, (0, (1, 8)), (0, (1, 16))))  # a.mT @ b.mT
    assert (tr.a_k, tr.a_vec, tr.b_k, tr.b_vec) == (False, True, True, True)
    odd = with_layout(t, _args(8, 12, 15, (0, (15, 1)), (0, (12, 1))))  # K % 4 != 0
    assert (odd.a_k, odd.a_vec, odd.b_vec) == (True, False, True)
    shifted = with_layout(t, _args(8, 12, 16, (1, (16, 1)), (4, (12, 1))))  # offset 1
    assert (shifted.a_vec, shifted.b_vec) == (False, True)
    strided = with_layout(t, _args(8, 12, 16, (0, (32, 2)), (0, (12, 1))))  # a[:, ::2]
    assert strided.a_vec is False
    m, n, k = 2 * t.tm, t.tn, 3 * t.tk  # the tiles divide the product: unguarded reads
    assert with_layout(t, _args(m, n, k, (0, (k, 1)), (0, (n, 1)))).even
    for dm, dn, dk in ((1, 0, 0), (0, 4, 0), (0, 0, 4)):
        shape = (m + dm, n + dn, k + dk)
        assert not with_layout(t, _args(*shape, (0, (shape[2], 1)), (0, (shape[1], 1)))).even


# (left shape, right shape, left view, right view): several K steps, primes, ones,
# tile-size edges, transposes, offsets and steps, broadcast batches
LAYOUTS = [((1, 1), (1, 1), "", ""), ((130, 17), (17, 131), "", ""),
           ((128, 8), (8, 128), "", ""), ((64, 36), (36, 68), "T", ""),
           ((33, 40), (40, 20), "", "T"), ((29, 50), (50, 7), "T", "T"),
           ((37, 40), (40, 9), "slice", "slice"), ((3, 2, 33, 16), (2, 16, 65), "", ""),
           ((2, 31, 24), (24, 8), "", "T")]


def _view(x, how):
    """A view of host array ``x`` on ``device`` read through non-trivial strides."""
    if how == "T":
        return lambda device: af.tensor(np.ascontiguousarray(x.mT), device=device).mT, x
    if how == "slice":  # offset 1, step 2 along the last axis
        wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1] + 1,), np.float32)
        wide[..., 1::2] = x
        return lambda device: af.tensor(wide, device=device)[..., 1::2], x
    return lambda device: af.tensor(x, device=device), x


@pytest.mark.parametrize("tiles", _TILES, ids=lambda t: f"{t.tm}x{t.tn}")
@pytest.mark.parametrize("sa,sb,va,vb", LAYOUTS, ids=[f"{a}{va}@{b}{vb}" for a, b, va, vb
                                                        in LAYOUTS])
async def test_every_schedule_matches_numpy_for_every_layout(dev, monkeypatch, tiles,
                                                             sa, sb, va, vb):
    monkeypatch.setattr(matmul_launch, "default_plan", lambda *_a, **_k: MatmulPlan(tiles))
    (make_a, a), (make_b, b) = (_view(RNG.standard_normal(sa).astype(np.float32), va),
                                _view(RNG.standard_normal(sb).astype(np.float32), vb))
    bias = RNG.standard_normal(sb[-1]).astype(np.float32)
    ta, tb, tbias = make_a(dev), make_b(dev), af.tensor(bias, device=dev)
    assert await launches(dev, lambda: (ta @ tb + tbias).relu()) == 1
    got = await (ta @ tb + tbias).relu().to_data()
    assert_close(got, np.maximum(np.matmul(a, b) + bias, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tiles", _TILES, ids=lambda t: f"{t.tm}x{t.tn}")
async def test_every_schedule_is_exact_on_int32_and_long_k(dev, monkeypatch, tiles):
    monkeypatch.setattr(matmul_launch, "default_plan", lambda *_a, **_k: MatmulPlan(tiles))
    a = RNG.integers(-50, 50, (6, 20)).astype(np.int32)
    b = RNG.integers(-50, 50, (20, 8)).astype(np.int32)  # vec4<i32> reads
    got = await (af.tensor(a, device=dev) @ af.tensor(b, device=dev)).to_data()
    np.testing.assert_array_equal(got, a @ b)
    # more K steps than one inner loop runs (lavapipe stops loops at 65,535 iterations)
    k = tiles.tk * 1024 + 5
    x = RNG.integers(-3, 4, (2, k)).astype(np.int32)
    y = RNG.integers(-3, 4, (k, 3)).astype(np.int32)
    got = await (af.tensor(x, device=dev) @ af.tensor(y, device=dev)).to_data()
    np.testing.assert_array_equal(got, x @ y)


async def test_an_operand_used_twice_is_read_through_both_layouts(dev, ref):
    a = RNG.standard_normal((5, 5)).astype(np.float32)
    for device in (dev, ref):
        t = af.tensor(a, device=device)
        assert_close(await (t @ t).to_data(), a @ a, rtol=1e-4, atol=1e-4)
        assert_close(await (t @ t.T + t).to_data(), a @ a.T + a, rtol=1e-4, atol=1e-4)


async def test_matmul_errors_at_the_call_site(dev):
    a = af.ones((3, 4), device=dev)
    with pytest.raises(af.ShapeError, match=r"inner dimensions differ.*4.*5"):
        a @ af.ones((5, 2), device=dev)
    with pytest.raises(af.ShapeError, match="at least 1 dimension"):
        a @ af.tensor(2.0, device=dev)
    with pytest.raises(af.DTypeError, match="bool"):
        (a > 0) @ (a.T > 0)
    with pytest.raises(af.ShapeError, match="batch"):
        af.ones((2, 3, 4), device=dev) @ af.ones((3, 4, 2), device=dev)
    with pytest.raises(TypeError, match="asyncfusion.tensor"):
        a @ np.ones((4, 2), np.float32)


@st.composite
def operands(draw):
    m, k, n = (draw(st.integers(1, 40)) for _ in range(3))
    batch_a = draw(st.sampled_from([(), (2,), (1,), (3, 1)]))
    batch_b = draw(st.sampled_from([(), (2,), (1,), (1, 2)]))
    try:
        np.broadcast_shapes(batch_a, batch_b)
    except ValueError:
        batch_b = ()
    return batch_a + (m, k), batch_b + (k, n), draw(st.booleans()), draw(st.booleans()), \
        draw(st.integers(0, 2**16))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=operands())
async def test_random_shapes_and_transposes_match_numpy(dev, ref, case):
    sa, sb, ta, tb, seed = case
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, sa).astype(np.float32)
    b = rng.uniform(-1, 1, sb).astype(np.float32)
    # a transposed operand: stored transposed on the host, read through a .mT view
    a_host = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if ta else a
    b_host = np.ascontiguousarray(np.swapaxes(b, -1, -2)) if tb else b
    for device in (dev, ref):
        xa, xb = af.tensor(a_host, device=device), af.tensor(b_host, device=device)
        got = await ((xa.mT if ta else xa) @ (xb.mT if tb else xb) + 1.0).to_data()
        assert_close(got, np.matmul(a, b) + 1, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("script,args,expect", [
    ("mlp.py", ["32"], "probabilities match numpy"),
    ("search.py", ["3000", "32"], "scores match numpy"),
])
def test_examples_check_themselves_against_numpy(script, args, expect):
    import subprocess
    import sys
    from pathlib import Path

    path = Path(__file__).parent.parent / "examples" / script
    proc = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert expect in proc.stdout


async def test_a_vector_operand_is_one_fused_reduction(dev):
    rng = np.random.default_rng(9)
    m, v = rng.standard_normal((37, 19), dtype=np.float32), rng.standard_normal(19, dtype=np.float32)
    a, x = af.tensor(m, device=dev), af.tensor(v, device=dev)
    await dev.sync()
    before = dev.stats()
    got = await ((a @ x) * 2.0 + 1.0).to_data()  # the epilogue runs in the reduction's store
    after = dev.stats()
    assert after.launches - before.launches == 1
    assert not any(k.startswith("matmul") for k in after.kernels if after.kernels[k] > before.kernels.get(k, 0))
    np.testing.assert_allclose(got, (m @ v) * 2 + 1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(await (x[:19] @ a.T).to_data(), v @ m.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(await (x @ x).to_data(), v @ v, rtol=1e-5)
