"""``topk`` through workgroup selection (``asyncfusion.api.selection``): values and indices
equal a stable sort's first ``k`` (NaN the largest, ``-0.0`` equal to ``0.0``, ties by
lower index) for every dtype, on the device and on the numpy twins; at most three
launches; the sort where ``k`` is beyond what a workgroup keeps; the search pipeline's
launch count."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from asyncfusion.api import selection
from tests.test_views_reductions import launches

RNG = np.random.default_rng(23)
WIDE = (np.float64, np.int64, np.uint64)


def data(shape: tuple[int, ...], dtype, rng=RNG) -> np.ndarray:
    """Few distinct values (ties everywhere, the best ones far apart too); floats get
    NaN, both zeros and both infinities; unsigned values straddle the signed range."""
    x = rng.integers(-6, 7, shape)
    if np.issubdtype(dtype, np.unsignedinteger):
        x = x.astype(dtype) + dtype(2 ** (np.dtype(dtype).itemsize * 8 - 1))
    else:
        x = x.astype(dtype)
    if np.issubdtype(dtype, np.floating):
        flat = x.reshape(-1)
        picks = rng.choice(flat.size, size=min(flat.size, 10), replace=False)
        flat[picks] = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan, -0.0, 1e-3,
                                -2.5, 0.0], dtype)[:picks.size]
    return x


def stable_top(x: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """The first ``k`` positions of numpy's stable argsort of each last-axis row, where
    NaN is the largest value and -0.0 equals 0.0 (both through ``numpy.unique``'s ranks)."""
    _, rank = np.unique(x.reshape(-1), return_inverse=True)  # NaN ranks last, 0s as one
    rank = rank.reshape(x.shape).astype(np.int64)
    return np.argsort(-rank if largest else rank, axis=-1, kind="stable")[..., :k]


def on(device, x: np.ndarray):
    return af.tensor(x, dtype=x.dtype if x.dtype in map(np.dtype, WIDE) else None,
                     device=device)


async def check(device, x: np.ndarray, k: int, largest: bool = True) -> None:
    want = stable_top(x, k, largest)
    v, i = af.topk(on(device, x), k, largest=largest)
    np.testing.assert_array_equal(await i.to_data(), want)
    got, picked = await v.to_data(), np.take_along_axis(x, want, -1)
    bits = f"uint{x.dtype.itemsize * 8}"  # -0.0 stays -0.0; NaN's bits are kept
    np.testing.assert_array_equal(got.view(bits), picked.view(bits))


DTYPES = (np.float32, np.float16, np.float64, np.int32, np.int16, np.int8, np.uint32, np.uint16,
          np.uint8, np.int64, np.uint64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,k", [((3, 700), 1), ((2, 300), 300), ((5000,), 40),
                                     ((2, 9000), 7), ((37, 5), 3)])
async def test_topk_is_a_stable_sorts_first_k_for_every_dtype(dev, ref, dtype, shape, k):
    x = data(shape, dtype)
    for device in (dev, ref):
        await check(device, x, k, largest=True)
        await check(device, x, k, largest=False)


async def test_nan_is_the_largest_and_zeros_tie_by_position(dev, ref):
    x = np.array([[0.0, -0.0, np.nan, 1.0, -0.0, np.nan, -np.inf, 0.0, np.inf]], np.float32)
    for device in (dev, ref):
        v, i = af.topk(af.tensor(x, device=device), 9)
        np.testing.assert_array_equal(await i.to_data(), [[2, 5, 8, 3, 0, 1, 4, 7, 6]])
        v, i = af.topk(af.tensor(x, device=device), 5, largest=False)
        np.testing.assert_array_equal(await i.to_data(), [[6, 0, 1, 4, 7]])
        got = await v.to_data()
        np.testing.assert_array_equal(np.signbit(got), [[True, False, True, True, False]])


@pytest.mark.parametrize("shape,k", [((700, 3), 2), ((33, 100), 100), ((5, 1), 1),
                                     ((300, 129), 4)])
async def test_short_rows_share_workgroups(dev, ref, shape, k):
    # rows of m <= 128 go WG / pow2(m) to a workgroup, each to its own team of threads
    # and slots; the last workgroup's spare teams write nothing
    x = data(shape, np.float32)
    t = af.tensor(x, device=dev)
    assert await launches(dev, lambda: af.topk(t, k)[1]) == 1
    for device in (dev, ref):
        await check(device, x, k)
        await check(device, x, k, largest=False)


def test_workgroups_spread_over_y_past_the_limit():
    # params: n, m, seg, segs, groups, k, kk, mode, lanes
    assert selection._groups(129, 129, 4096, 1, 70_000, 1, 1, 3, 256) == (65535, 2)
    assert selection._groups(3, 3, 4096, 1, 70_000, 1, 1, 3, 4) == (1094, 1)


@pytest.mark.parametrize("shape,k,levels", [((4, 65536), 100, 2), ((1, 5000), 1024, 2),
                                            ((3, 4096), 9, 1), ((1, 20_000), 1024, 3)])
async def test_launches_are_the_plans_levels(dev, shape, k, levels):
    x = data(shape, np.float32)
    t = af.tensor(x, device=dev)
    assert selection.launches(shape[-1], k) == levels
    assert await launches(dev, lambda: af.topk(t, k)[1]) == levels
    await check(dev, x, k)


async def test_top_5_of_a_million_in_two_launches(dev):
    x = RNG.standard_normal((1, 1_000_000)).astype(np.float32)
    x[0, [17, 999_998]] = 9.0  # a tie of the best, in the first and the last segment
    t = af.tensor(x, device=dev)
    assert await launches(dev, lambda: af.topk(t, 5)[1]) == 2
    await check(dev, x, 5)


@pytest.mark.parametrize("shape", [(50_000,), (2, 3, 5000)])
async def test_along_the_last_axis_topk_records_its_launches_only(dev, shape, monkeypatch):
    """Rows along the last axis, of any rank, go to the kernels as they are: no reshape
    into rows and back (each a recorded op, run by the executor), just a launch a level."""
    x = data(shape, np.float32)
    t = af.tensor(x, device=dev)
    recorded: list[str] = []
    register = dev.streams.register

    def counting(key, op, *rest):
        recorded.append(op.title())
        return register(key, op, *rest)
    monkeypatch.setattr(dev.streams, "register", counting)
    values, at = af.topk(t, 7)
    assert len(recorded) == selection.launches(shape[-1], 7), recorded
    assert values.shape == at.shape == shape[:-1] + (7,)
    await check(dev, x, 7)


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32])
async def test_three_levels_match_numpy(dev, ref, dtype):
    x = data((2, 28_672), dtype)  # 7 segments of 4096 -> 4200 candidates -> 2 -> 1
    assert selection.launches(x.shape[-1], 600) == 3
    for device in (dev, ref):
        await check(device, x, 600)


def test_plans_take_three_levels_at_most_up_to_16m():
    for n in (1, 4096, 4097, 1 << 20, 1_000_000, 1 << 24):
        for k in (1, 5, 100, 128, 513, 1000, 1024):
            if k <= n:
                seg, lengths = selection.plan(n, k)
                assert len(lengths) <= 3 and seg >= 4 * k, (n, k, seg, lengths)
                assert lengths[-1] <= seg  # the last level: one segment a row
    assert selection.plan(1 << 24, 1024)[1] == [1 << 24, 1 << 19, 1 << 14]


def test_max_k_follows_workgroup_memory():
    def adapter(room):
        return types.SimpleNamespace(name="wgpu",
                                     limits={"max-compute-workgroup-storage-size": room})
    assert selection.max_k(adapter(32768), af.float32) == 1024
    assert selection.max_k(adapter(32768), af.float64) == 1024
    assert selection.max_k(adapter(16384), af.float32) == 512
    assert selection.max_k(adapter(8192), af.int64) == 256


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64])
async def test_beyond_max_k_topk_sorts_or_passes(dev, ref, monkeypatch, dtype):
    monkeypatch.setattr(selection, "max_k", lambda backend, dtype: 4)
    x = data((3, 300), dtype)
    for device in (dev, ref):
        await check(device, x, 5)
        await check(device, x, 6, largest=False)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(1, 3), n=st.integers(1, 9000), k_at=st.floats(0, 1),
       dtype=st.sampled_from([np.float32, np.int32, np.float16, np.uint64]),
       largest=st.booleans(), seed=st.integers(0, 2**16))
async def test_random_shapes_and_k_match_numpy(dev, rows, n, k_at, dtype, largest, seed):
    k = 1 + int(k_at * (min(n, 1024) - 1))
    x = data((rows, n), dtype, np.random.default_rng(seed))
    await check(dev, x, k, largest)


def normalize(x):
    return x / (x * x).sum(-1, keepdims=True).sqrt()


async def test_the_search_query_pipeline_launch_count(dev):
    db = af.tensor(RNG.standard_normal((65536, 64)).astype(np.float32), device=dev)
    q = af.tensor(RNG.standard_normal((4, 64)).astype(np.float32), device=dev)
    dbn = normalize(db)
    scores = normalize(q) @ dbn.T
    await scores.to_data()
    assert await launches(dev, lambda: af.topk(scores, 5)[1]) == 2
    # normalize the queries (one kernel), score them (one), then the top 5 (two)
    assert await launches(dev, lambda: af.topk(normalize(q) @ dbn.T, 5)[1]) == 4
    want = stable_top(await scores.to_data(), 5, True)
    np.testing.assert_array_equal(await af.topk(normalize(q) @ dbn.T, 5)[1].to_data(), want)
