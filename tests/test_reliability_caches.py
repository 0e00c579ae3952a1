"""Bounded caches: compiled pipelines are kept least-recently-used up to a cap, and a wgpu
device is let go once no asyncfusion device uses it."""

from __future__ import annotations

import gc
import itertools
import os

import numpy as np
import wgpu

import asyncfusion as af
from asyncfusion.backends.wgpu import runtime
from tests.conftest import assert_close

REF = {"exp": np.exp, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sqrt": np.sqrt,
       "abs": np.abs, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
       "relu": lambda v: np.maximum(v, 0)}
UNARY = list(REF)
CHEAP = ["abs", "relu", "square", "sign", "floor", "ceil"]  # quick to compile


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def distinct_chains(n: int) -> list[tuple[str, ...]]:
    """``n`` distinct op sequences (each one a different fused kernel)."""
    return list(itertools.islice(itertools.product(UNARY, repeat=3), n))


async def test_the_pipeline_cache_keeps_the_most_recently_used_up_to_its_cap(dev):
    rt = dev.backend.rt
    saved = rt.max_pipelines
    rt.max_pipelines = 6
    try:
        x = af.rand(64, seed=1, device=dev)
        xn = await x.to_data()
        chains = distinct_chains(20)
        for chain in chains:
            y = x
            for op in chain:
                y = getattr(y, op)()
            out = await y.to_data()
            want = xn
            for op in chain:
                want = REF[op](want).astype(np.float32)
            assert_close(out, want, rtol=1e-4, atol=1e-5)
            assert rt.pipelines_alive <= 6
        assert rt.pipelines_created >= 20  # they were compiled, and the old ones let go
        # the group cache holds no layout of an evicted pipeline
        alive = {bgl for _, bgl in rt._pipelines.values()}
        assert all(k[0] in alive for k in rt._groups)
    finally:
        rt.max_pipelines = saved


def wgpu_objects() -> dict[str, int]:
    """Live wgpu objects of the kinds a pipeline brings, held by Python (wgpu-py's count)
    and by wgpu-native for Python (the handles not released to it)."""
    py = wgpu.diagnostics.object_counts.get_dict()
    native = wgpu.diagnostics.wgpu_native_counts.get_dict()
    kinds = ("ComputePipeline", "ShaderModule", "BindGroupLayout", "PipelineLayout",
             "BindGroup")
    return {f"{where} {k}": counts.get(k, {}).get("count", 0)
            for where, counts in (("py", py), ("native", native)) for k in kinds}


async def test_distinct_programs_leave_no_more_wgpu_objects_than_the_caches_hold(dev):
    rt = dev.backend.rt
    assert rt.max_pipelines == (runtime.MAX_PIPELINES if dev.backend.gpu
                                else runtime.MAX_PIPELINES_CPU)
    saved = rt.max_pipelines
    x = af.rand(64, seed=1, device=dev)
    await x.to_data()
    before, cached = wgpu_objects(), (rt.pipelines_alive, len(rt._groups))
    created = rt.pipelines_created
    rt.max_pipelines = 5
    try:
        for chain in itertools.islice(itertools.product(CHEAP, repeat=3), 24):
            y = x
            for op in chain:
                y = getattr(y, op)()
            await y.to_data()
        assert rt.pipelines_created - created >= 24 - 5  # the last 5 may have been cached
        gc.collect()
        after = wgpu_objects()
        alive, groups = rt.pipelines_alive, len(rt._groups)
        assert alive <= 5
        # Whatever else is alive (other runtimes, this one's buffers) is as it was: each
        # program's pipeline, layouts and bind groups went with its cache entry.
        for where in ("py", "native"):
            for kind, held in (("ComputePipeline", alive - cached[0]),
                               ("BindGroupLayout", alive - cached[0]),
                               ("BindGroup", groups - cached[1]),
                               ("ShaderModule", 0), ("PipelineLayout", 0)):
                key = f"{where} {kind}"
                assert after[key] == before[key] + held, (key, before, after)
    finally:
        rt.max_pipelines = saved


async def test_closing_the_last_device_of_many_limits_lets_their_wgpu_devices_go():
    gc.collect()
    threads = os_threads()
    for bindings in range(4, 14):
        async with af.open_device(max_storage_bindings=bindings) as dev:
            assert_close(await (af.tensor([1.0], device=dev) + 1.0).to_data(),
                         np.array([2.0], np.float32))
    gc.collect()
    mine = [k for k in runtime._RUNTIMES if k[0] is not None and 4 <= k[0] < 14]
    assert len(mine) <= 1  # at most one idle wgpu device kept for the next open
    assert os_threads() <= threads + 8  # the driver's threads went with their devices


async def test_a_device_opened_after_the_idle_one_was_let_go_works():
    async with af.open_device(max_storage_bindings=5) as a:
        first = a.backend.rt
    async with af.open_device(max_storage_bindings=6):
        pass  # parks its runtime idle, which lets the first one go
    assert first.lost is not None
    async with af.open_device(max_storage_bindings=5) as b:
        assert b.backend.rt is not first
        assert_close(await (af.tensor([2.0], device=b) * 2.0).to_data(),
                     np.array([4.0], np.float32))
