"""``arange`` fused as an index expression: the kernels that read an arange compute
``start + i * step`` from their index (no upload, no buffer, no launch of its own), views
of it stay fused, and it is written out by a kernel where it must exist in memory."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from asyncfusion.codegen.wgsl.render import render
from tests.conftest import assert_close
from tests.test_batching import run_tasks
from tests.test_fusion import _golden, kernels


def _blocks(trace: str) -> list[str]:
    return [ln.strip() for ln in trace.splitlines() if "[block]" in ln]


def _uploads(trace: str) -> int:
    return sum("Init" in b for b in _blocks(trace))


async def test_arange_in_a_reduction_is_one_launch_with_no_upload(dev, ref):
    xn = np.linspace(-1, 1, 50, dtype=np.float32)
    expected = (np.arange(50) * 0.5 + xn).sum()
    for device in (dev, ref):
        x = af.tensor(xn, device=device)
        await device.sync()
        device.reset_stats()
        allocations = device.memory_stats().allocations
        buf = io.StringIO()
        with af.tracing(buf):
            y = (af.arange(50, device=device) * 0.5 + x).sum()
            got = await y.to_data()
        assert _blocks(buf.getvalue()) == ["[block] 4 op(s): Iota, MulScalar(F32), Add(F32), Sum"]
        assert device.stats().blocks == 1  # an upload would be a block of its own
        if device.backend.name == "numpy":  # no pool: every buffer is an allocation
            assert device.memory_stats().allocations - allocations == 1  # the result only
        else:
            assert device.stats().kernels == {"reduce[mul add sum]": 1}
        assert_close(got, expected, rtol=1e-5)


async def test_one_hot_tril_and_eye_are_one_kernel_each(dev):
    idx = af.tensor([0, 3, 1, 7], device=dev)  # 7 is out of range: a row of zeros
    m = af.tensor(np.arange(20, dtype=np.float32).reshape(4, 5), device=dev)
    await dev.sync()
    cases = [(lambda: af.one_hot(idx, 5), np.eye(5, dtype=np.float32)[[0, 3, 1]].tolist()
              + [[0.0] * 5]),
             (lambda: af.tril(m, k=1), np.tril(np.arange(20).reshape(4, 5), k=1)),
             (lambda: af.triu(m), np.triu(np.arange(20).reshape(4, 5))),
             (lambda: af.eye(3, 5, k=-1, device=dev), np.eye(3, 5, k=-1)),
             (lambda: af.eye(4, dtype=af.int32, device=dev), np.eye(4, dtype=np.int32))]
    for make, expected in cases:
        dev.reset_stats()
        buf = io.StringIO()
        with af.tracing(buf):
            got = await make().to_data()
        np.testing.assert_array_equal(got, np.asarray(expected))
        assert dev.stats().launches == 1
        assert not _uploads(buf.getvalue())


VIEWS = [
    ("reshape-transpose", lambda a: a.reshape(3, 4).T * 2, lambda a: a.reshape(3, 4).T * 2),
    ("flip", lambda a: a[::-1] + 1, lambda a: a[::-1] + 1),
    ("vec4-one-element", lambda a: a[5:6] * a, lambda a: a[5:6] * a),  # vec4 kernel
    ("slice-step", lambda a: a[2:11:3] * a[1:4], lambda a: a[2:11:3] * a[1:4]),
    ("outer", lambda a: a[:, None] - a[None, :], lambda a: a[:, None] - a[None, :]),
    ("column-sum", lambda a: (a.reshape(4, 3) * 1).sum(0),
     lambda a: a.reshape(4, 3).sum(0)),
    ("take", lambda a: af.take_along_axis(a * 3, a[::-1] % 5, 0),
     lambda a: np.take_along_axis(a * 3, a[::-1] % 5, 0)),
]


@pytest.mark.parametrize("make,make_np", [v[1:] for v in VIEWS], ids=[v[0] for v in VIEWS])
async def test_views_of_an_arange_read_it_fused(make, make_np, dev, plain, ref):
    expected = make_np(np.arange(12, dtype=np.int32))
    for device in (dev, plain, ref):
        buf = io.StringIO()
        with af.tracing(buf):
            got = await make(af.arange(12, device=device)).to_data()
        np.testing.assert_array_equal(got, expected)
        if device is not plain:  # unfused: the arange gets a kernel; fused: none
            assert "Iota" in _blocks(buf.getvalue())[0]
            assert "[block] 1 op(s): Iota" not in buf.getvalue()
        assert not _uploads(buf.getvalue())


SLICES = [slice(None), slice(None, None, -1), slice(1, None, 2), slice(None, 1), slice(-2, None)]


@st.composite
def view_programs(draw: st.DrawFn) -> tuple:
    dims = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    bounds = (draw(st.integers(-20, 20)), draw(st.integers(-3, 3).filter(bool)))
    perm = tuple(draw(st.permutations(range(len(dims)))))
    index = tuple(draw(st.sampled_from(SLICES)) for _ in dims)
    axis = draw(st.none() | st.integers(0, len(dims) - 1))
    return dims, bounds, perm, index, axis, draw(st.sampled_from([af.int32, af.float32]))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(program=view_programs())
async def test_random_views_of_an_arange_match_numpy(program, ref):
    dims, (start, step), perm, index, axis, dtype = program
    stop = start + math.prod(dims) * step

    def run(a):
        v = a.reshape(dims)
        v = (v.transpose(perm) if isinstance(v, np.ndarray) else v.permute(*perm))[index]
        y = v[None] * 2 + v  # a broadcast view too
        return y if axis is None else y.sum(axis + 1)

    expected = run(np.arange(start, stop, step).astype(dtype.np))
    async with af.open_device("numpy", fusion=False) as unfused:
        for device in (ref, unfused):
            got = await run(af.arange(start, stop, step, dtype, device=device)).to_data()
            assert got.shape == expected.shape
            assert_close(got, expected.astype(got.dtype), rtol=1e-6)


async def test_a_gather_from_an_arange_reads_it_fused(dev, ref):
    for device in (dev, ref):
        idx = af.tensor(np.array([[3, -1, 0], [2, 2, 9]], np.int32), device=device)
        await device.sync()
        buf = io.StringIO()
        with af.tracing(buf):  # negative indices wrap, large ones clamp
            y = af.take_along_axis(af.arange(10, 20, device=device).reshape(1, 10), idx, 1)
            got = await y.to_data()
        np.testing.assert_array_equal(got, [[13, 19, 10], [12, 12, 19]])
        assert _blocks(buf.getvalue()) == ["[block] 3 op(s): Iota, View[reshape], Gather"]


async def test_an_arange_that_is_kept_read_or_matmul_operand_is_written_by_a_kernel(dev):
    w = af.tensor(np.ones((4, 2), np.float32), device=dev)
    await dev.sync()
    for reduce in (False, True):
        dev.reset_stats()
        buf = io.StringIO()
        with af.tracing(buf):
            a = af.arange(1, 13, dtype=af.float32, device=dev)
            y = a * 2.0 + 1.0
            y = y.sum() if reduce else y  # a is kept: the same kernel stores it
            got_y = await y.to_data()
            got_a = await a.to_data()
        assert_close(got_y, (np.arange(1, 13) * 2.0 + 1).sum() if reduce else
                     np.arange(1, 13) * 2.0 + 1)
        np.testing.assert_array_equal(got_a, np.arange(1, 13, dtype=np.float32))
        assert dev.stats().launches == 1
        assert not _uploads(buf.getvalue())
    dev.reset_stats()
    m = (af.arange(12, dtype=af.float32, device=dev).reshape(3, 4) @ w + 1.0)
    np.testing.assert_array_equal(await m.to_data(),
                                  np.arange(12, dtype=np.float32).reshape(3, 4) @ np.ones(
                                      (4, 2), np.float32) + 1)
    assert dev.stats().kernels["elementwise[arange]"] == 1  # materialized for the matmul
    assert dev.stats().launches == 2


async def test_a_lone_arange_is_one_kernel_and_equal_programs_share_a_plan(dev):
    x = af.tensor(np.ones(40, np.float32), device=dev)
    await dev.sync()
    for k, (start, step) in enumerate([(0, 1), (-7, 3), (100, -2)]):
        dev.reset_stats()
        expected = np.arange(start, start + 40 * step, step)
        a = af.arange(start, start + 40 * step, step, device=dev)
        np.testing.assert_array_equal(await a.to_data(), expected)
        s = (af.arange(start, start + 40 * step, step, device=dev) * x).sum()
        assert await s.to_data() == expected.sum()
        stats = dev.stats()
        assert stats.kernels == {"elementwise[arange]": 1, "reduce[mul sum]": 1}
        if k:  # other ranges: launch scalars, not new plans or kernels
            assert (stats.plan_cache_misses, stats.kernels_generated) == (0, 0)


@pytest.mark.parametrize("reduce", [False, True])
async def test_tasks_with_equal_arange_programs_are_batched(reduce, dev):
    xs = [np.full(64, i, np.float32) for i in range(6)]
    ts = [af.tensor(x, device=dev) for x in xs]
    await dev.sync()

    def work(x: af.Tensor) -> af.Tensor:
        if reduce:  # a strided arange
            return (af.arange(64, device=x.device).reshape(8, 8) * x.reshape(8, 8)).sum(1)
        return af.arange(64, device=x.device) * x + 1.0  # a dense one (vec4 unbatched)

    results, stats = await run_tasks(dev, ts, work)
    assert stats.batched_instances == 6 and stats.launches == 1
    for i, r in enumerate(results):
        y = np.arange(64, dtype=np.float32) * i
        assert_close(r, y.reshape(8, 8).sum(1) if reduce else y + 1)


async def test_a_failed_fused_launch_reruns_op_by_op_and_leaks_nothing(dev):
    x = af.tensor(np.ones(16, np.float32), device=dev)
    await dev.sync()
    dev.reset_stats()
    with dev.inject_fault("launch", op="sum", count=1):
        y = (af.arange(16, device=dev)[::-1] * x).sum()
        assert await y.to_data() == 120
    # the fused kernel failed; then the arange, the product and the sum ran one by one
    assert dev.stats().kernels == {"elementwise[arange]": 1, "elementwise[mul]": 1,
                                   "reduce[sum]": 1}


def _expected(start: float, stop: float, step: float, dtype: af.DType) -> np.ndarray:
    values = np.arange(start, stop, step)
    if np.issubdtype(values.dtype, np.floating) and not dtype.is_float:
        values = np.trunc(values)
    return values.astype(dtype.np)


def _ulps(got: np.ndarray, expected: np.ndarray, scale: float) -> float:
    spacing = np.spacing(np.maximum(np.abs(expected), np.float32(scale)).astype(np.float32))
    return float(np.max(np.abs(got.astype(np.float64) - expected) / spacing, initial=0))


ranges = st.one_of(
    st.tuples(st.integers(-300, 300), st.integers(-300, 300),
              st.integers(-40, 40).filter(bool)),
    st.tuples(st.floats(-100, 100), st.floats(-100, 100),
              st.floats(0.05, 20) | st.floats(-20, -0.05)).filter(
        lambda r: abs((r[1] - r[0]) / r[2]) < 400))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(bounds=ranges, dtype=st.sampled_from([af.int32, af.float32, af.int64, af.float64,
                                              af.float16, af.uint32, af.int16, af.uint16,
                                              af.int8, af.uint8]))
@example(bounds=(-1.5, -13.0, -1.05), dtype=af.int32)  # float32 gave -12.0: trunc -12
@example(bounds=(0.0, 5e-324, 2.0), dtype=af.int32)  # numpy: one element, not none
@example(bounds=(2, 10, 3), dtype=af.int16)  # counted in the int32 lane (was a KeyError)
@example(bounds=(-0.5, 0.5, 1.0), dtype=af.uint16)  # -0.5 is refused, not truncated to 0
@example(bounds=(-128, 128, 51), dtype=af.int8)  # both ends of int8's range
@example(bounds=(100, 300, 100), dtype=af.uint8)  # 300 is refused (numpy's astype wraps)
async def test_arange_matches_numpy(bounds, dtype, ref):
    start, stop, step = bounds
    try:
        expected = _expected(start, stop, step, dtype)
    except (OverflowError, ValueError):  # numpy refuses the conversion: we must too
        expected = None
    raw = np.arange(start, stop, step)
    if expected is not None and dtype.is_int and raw.size and (
            raw.min() < np.iinfo(dtype.np).min or raw.max() > np.iinfo(dtype.np).max):
        expected = None  # values outside the dtype (before truncation): refused
    if expected is None:
        with pytest.raises(af.DataError):
            af.arange(start, stop, step, dtype, device=ref)
        return
    a = af.arange(start, stop, step, dtype, device=ref)
    got = await a.to_data()
    fused = await (af.arange(start, stop, step, dtype, device=ref) * 1).to_data()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if dtype.is_float:
        scale = max(abs(start), abs(stop))
        assert _ulps(got, expected, scale) <= 4 and _ulps(fused, expected, scale) <= 4
    else:
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(fused, expected)


AGREE = [((3, 40, 7), af.int32), ((-2.5, 3.0, 0.25), af.float32), ((10, -10, -3), af.int64),
         ((0, 1, 0.1), af.float16), ((0, 5, 0.5), af.int32), ((0, 1, 0.125), af.float64),
         ((2**31 - 9, 2**31 - 1, 2), af.uint32)]


@pytest.mark.parametrize("bounds,dtype", AGREE)
async def test_wgpu_plain_and_numpy_agree(bounds, dtype, dev, plain, ref):
    outs = []
    for device in (dev, plain, ref):
        a = af.arange(*bounds, dtype, device=device)
        outs.append((await a.to_data(), await (a[::-1] + a).to_data(),
                     await (af.arange(*bounds, dtype, device=device)[:, None] * 2).sum(1)
                     .to_data()))
    expected = _expected(*bounds, dtype)
    for got in outs:
        assert_close(got[0], expected, rtol=1e-6)
        assert_close(got[1], expected[::-1] + expected, rtol=1e-3 if dtype is af.float16
                     else 1e-6)
        np.testing.assert_array_equal(got[2], outs[2][2])


async def test_empty_ranges_and_bad_arguments(ref):
    for args in ((0,), (5, 0), (0, 5, -1), (1.5, 1.5)):
        a = af.arange(*args, device=ref)
        assert a.shape == (0,) and (await (a * 2).to_data()).size == 0
    with pytest.raises(af.ShapeError, match="step must not be zero"):
        af.arange(0, 5, 0, device=ref)
    for bad in ((0, math.inf), (math.nan,), (0, 5, math.nan), (-math.inf, 0, 1)):
        with pytest.raises(af.DataError, match="finite"):
            af.arange(*bad, device=ref)
    with pytest.raises(af.DataError, match="real numbers"):
        af.arange(1j, device=ref)
    with pytest.raises(af.DataError, match="do not fit in int32"):
        af.arange(2**31 - 1, 2**31 + 1, device=ref)


def test_generated_wgsl_of_a_fused_arange_matches_golden():
    dev = af.Device("numpy")
    m = af.tensor(np.ones((3, 8), np.float32), device=dev)
    # one kernel: a broadcast column view and a dense row of two aranges, bound to nothing
    out = af.where(af.arange(3, device=dev)[:, None] <= af.arange(8, device=dev), m * 2.0, 0.0)
    text = "\n".join(f"// kernel {i}\n{render(k, 256)}" for i, k in enumerate(kernels(dev)))
    _golden("arange_where", text)
    del out


@pytest.mark.parametrize("dtype", ["int16", "uint16"])
async def test_16_bit_aranges_count_in_their_lanes(dev, plain, dtype):
    for device in (dev, plain):
        a = af.arange(3, 30_000, 7_000, dtype=dtype, device=device)
        np.testing.assert_array_equal(await a.to_data(), np.arange(3, 30_000, 7_000,
                                                                   dtype=dtype))
        np.testing.assert_array_equal(await (a + 1).to_data(),
                                      np.arange(3, 30_000, 7_000, dtype=dtype) + 1)
