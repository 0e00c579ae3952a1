"""The Fusion decorator: the seed's transcripts, plan caching, liveness, binding limits."""

from __future__ import annotations

import io
import os
from pathlib import Path

import anyio
import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.codegen.wgsl.render import render
from asyncfusion.engine.explorer import explore
from asyncfusion.engine.plan import KernelStep
from asyncfusion.fusers import ElementwiseFuser, ReduceFuser
from asyncfusion.fusers.base import APART_AT
from asyncfusion.ir import Renumber
from asyncfusion.kernel import Kernel
from tests.conftest import assert_close
from examples.seed_chain import chain as chain8
from examples.seed_chain import chain_np as chain8_np

GOLDEN = Path(__file__).parent / "golden"


def kernels(dev: af.Device) -> list[Kernel]:
    """The kernels the fusion explorer makes of what ``dev``'s one stream queued."""
    dev.streams.take_freeable()
    ops, _ = dev.streams.take(next(iter(dev.streams.queues)))
    rn = Renumber()
    for op in ops:
        op.signature(rn)
    steps = explore(ops, [ElementwiseFuser(8), ReduceFuser(8)], rn.rel)
    return [s.lowered.kernel for s in steps if isinstance(s, KernelStep)]




def small(dev, start: float) -> af.Tensor:
    return af.tensor([start, start + 1, start + 2, start + 3], device=dev)


async def test_trace_shows_one_block_and_one_fused_launch(dev):
    a, b, c = small(dev, 1.0), small(dev, 2.0), small(dev, 3.0)
    buf = io.StringIO()
    with af.tracing(buf):
        d = (a * b + c).exp()
        await d.to_data()
    lines = buf.getvalue().splitlines()
    blocks = [ln.strip() for ln in lines if "[block]" in ln]
    launches = [ln for ln in lines if "[launch]" in ln]
    assert blocks[-1] == "[block] 3 op(s): Mul(F32), Add(F32), Exp(F32)"
    assert [b for b in blocks if "Init" not in b] == [blocks[-1]]
    assert len(launches) == 1 and "mul add exp" in launches[0]
    registered = [ln.strip() for ln in lines if "[registered]" in ln]
    assert registered[-1].startswith("[registered] Exp(F32) in=[t")
    assert "ReadWrite" in registered[-1]  # the temporary is at its last use


async def test_seed_loop_eight_ops_one_launch_every_run(dev, plain):
    x_np = np.linspace(-2, 2, 256, dtype=np.float32)
    for device, expected in ((dev, 1), (plain, 8)):
        x = af.tensor(x_np, device=device)
        await device.sync()
        for _ in range(3):
            device.reset_stats()
            out = await chain8(x).to_data()
            assert device.stats().launches == expected
            assert_close(out, chain8_np(x_np), rtol=2e-5)


async def test_plan_cache_second_run_explores_nothing(dev):
    x = af.rand(1000, seed=1, device=dev)
    await dev.sync()
    await chain8(x).to_data()
    first = dev.stats()
    await chain8(x).to_data()
    second = dev.stats()
    assert second.plan_cache_hits == first.plan_cache_hits + 1
    assert second.plan_cache_misses == first.plan_cache_misses
    assert second.kernels_generated == first.kernels_generated


async def test_a_full_plan_cache_forgets_the_least_recently_used_plan(dev):
    x = af.rand(64, seed=1, device=dev)
    await dev.sync()
    dev._server.executor.runner.max_plans = 2
    programs = {"a": lambda: x + 1.0, "b": lambda: x * 2.0, "c": lambda: x - 3.0}

    async def misses(name):
        before = dev.stats().plan_cache_misses
        await programs[name]().to_data()
        return dev.stats().plan_cache_misses - before

    assert [await misses(n) for n in "abac"] == [1, 1, 0, 1]  # c pushes b out, not a
    assert [await misses(n) for n in "ab"] == [0, 1]


async def test_plan_is_relative_to_ids_sizes_and_scalar_values(dev):
    outs = []
    for n, k in ((1000, 0.5), (2000, 0.7), (1000, 0.9)):
        x = af.rand(n, seed=n, device=dev)
        await dev.sync()
        dev.reset_stats()
        y = (x * k + 1.0).exp()
        outs.append((await y.to_data(), await x.to_data(), k))
        stats = dev.stats()
        if n == 1000 and k == 0.5:
            assert stats.kernels_generated == 1 and stats.plan_cache_misses == 1
        else:
            assert stats.kernels_generated == 0 and stats.plan_cache_hits == 1
    for y, x, k in outs:
        assert_close(y, np.exp(x * np.float32(k) + np.float32(1)), rtol=1e-5)


def test_scalars_are_parameters_not_literals():
    made = []
    for k in (0.5, 0.7):
        a = af.Device("numpy")
        x = af.tensor([1.0, 2.0], device=a)
        y = x * k
        made += kernels(a)
        del y
    first, second = made
    assert first == second
    wgsl = render(first, 256)
    assert "0.5" not in wgsl and "0.7" not in wgsl


async def test_dropped_result_launches_nothing(dev):
    a, b, c = small(dev, 1.0), small(dev, 2.0), small(dev, 3.0)
    await dev.sync()
    dev.reset_stats()
    buf = io.StringIO()
    with af.tracing(buf):
        d = (a * b + c).exp()
        del d
        await dev.sync()
    assert dev.stats().launches == 0
    assert "[block] 4 op(s): Mul(F32), Add(F32), Exp(F32), Drop" in buf.getvalue()


async def test_dead_intermediates_are_never_written(dev):
    x = af.rand(4096, seed=3, device=dev)
    await dev.sync()
    await chain8(x).to_data()  # warm the pools
    before = dev.memory_stats()
    out = await chain8(x).to_data()
    after = dev.memory_stats()
    assert after.allocations == before.allocations  # one output buffer, reused from the pool
    assert after.live_buffers == before.live_buffers
    assert out.shape == (4096,)


async def test_live_intermediate_is_written_and_readable(dev):
    x = af.tensor(np.arange(8, dtype=np.float32), device=dev)
    y = x * 2.0
    z = (y + 1.0).exp()
    assert dev.stats().launches == 0
    zy = await z.to_data()
    assert dev.stats().launches == 1
    assert_close(await y.to_data(), np.arange(8, dtype=np.float32) * 2)
    assert_close(zy, np.exp(np.arange(8, dtype=np.float32) * 2 + 1), rtol=1e-5)


async def test_input_at_last_use_is_overwritten_in_place(dev):
    x = af.rand(1024, seed=5, device=dev)
    x_np = await x.to_data()
    warm = (af.rand(1024, seed=6, device=dev) * 2.0).exp()
    await warm.to_data()  # the staging buffer for this size exists now
    del warm
    await dev.sync()
    before = dev.memory_stats()
    y = (x * 2.0).exp()
    del x  # its last use is the Mul: the kernel may write y into x's buffer
    out = await y.to_data()
    after = dev.memory_stats()
    assert after.allocations == before.allocations
    assert after.live_buffers == before.live_buffers  # y took x's buffer
    assert_close(out, np.exp(x_np * 2), rtol=1e-5)


async def test_binding_limit_of_eight_splits_the_block():
    async with af.open_device(max_storage_bindings=8) as dev:
        xs_np = [np.full(16, i, dtype=np.float32) for i in range(12)]
        xs = [af.tensor(a, device=dev) for a in xs_np]
        total = xs[0]
        for x in xs[1:]:
            total = total + x
        out = await (total * 2.0).to_data()
        assert_close(out, sum(xs_np) * 2)
        steps = [s for plan in dev._server.executor.runner.plans.values() for s in plan
                 if isinstance(s, KernelStep)]
        assert len(steps) >= 2
        assert all(s.lowered.kernel.storage_bindings <= 8 for s in steps)
        assert dev.stats().launches == len([s for s in steps if s.outputs])


async def test_chain_of_100_splits_at_the_op_cap(dev):
    x_np = np.linspace(0, 1, 64, dtype=np.float32)
    x = af.tensor(x_np, device=dev)
    await dev.sync()
    dev.reset_stats()
    y = x
    expected = x_np
    for i in range(100):
        y = y * 0.99 if i % 2 == 0 else y + 0.01
        expected = expected * np.float32(0.99) if i % 2 == 0 else expected + np.float32(0.01)
    out = await y.to_data()
    assert dev.stats().launches == 2  # 64 + 36 ops
    assert_close(out, expected, rtol=1e-5)


async def test_non_elementwise_op_closes_the_block(dev, ref):
    results = []
    for device in (dev, ref):
        x = af.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
        y = ((x * 2.0 + 1.0).sum(axis=1) - 3.0).exp()
        results.append(await y.to_data())
    assert_close(results[0], results[1], rtol=1e-5)


def _golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.wgsl"
    if os.environ.get("ASYNCFUSION_REGEN_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"generated WGSL for {name} changed; review and regen"


@pytest.mark.parametrize("case", ["mul_add_exp", "broadcast_where_cast", "inplace_exp",
                                  "reduce_score", "softmax", "view_transpose_add",
                                  "argmax_subgroups", "seed_chain_tail"])
def test_generated_wgsl_matches_golden(case):
    dev = af.Device("numpy")
    a = af.tensor(np.ones(8, np.float32), device=dev)
    b = af.tensor(np.ones(8, np.float32), device=dev)
    m = af.tensor(np.ones((3, 8), np.float32), device=dev)
    if case == "mul_add_exp":
        out = (a * b + 2.0).exp()
    elif case == "broadcast_where_cast":
        m = af.tensor(np.ones((3, 1), np.float32), device=dev)
        x = af.tensor(np.ones((3, 8), np.int32), device=dev)
        out = af.where(x > 0, m * x + a, -1.0).astype(af.int32)
    elif case == "inplace_exp":
        out = (a * 3.0).exp()
        del a
    elif case == "reduce_score":  # the search service's scoring expression: one kernel
        out = (-((m - a) ** 2).sum(axis=1)).exp()
    elif case == "softmax":  # the max, the sum of exp, the division: one kernel, 3 passes
        out = af.softmax(m)
    elif case == "argmax_subgroups":  # (value, index) pairs combined by subgroup shuffles
        out = (m * 2.0).argmax(1)
    elif case == "seed_chain_tail":  # sin, exp, cos: fast paths, one slow tail for all
        out = chain8(a)
    else:  # a transposed view read through its strides, fused with the add
        out = m.T + 1.0
    sg = case.endswith("subgroups")
    text = "\n".join(f"// kernel {i}\n{render(k, 256, sg, tpr=16 if k.reduces else 1)}"
                     for i, k in enumerate(kernels(dev)))
    _golden(case, text)
    del out


async def test_several_split_math_ops_share_one_slow_tail_and_match_them_op_by_op(dev):
    """sin, exp, cos and tan fused into one vec4 kernel run their fast paths alone and
    recompute the lanes outside any fast domain (huge, infinite, NaN) in one scalar
    tail; every lane equals the unfused device's, where each op checks its own lanes."""
    rng = np.random.default_rng(3)
    specials = [0.5, 1e4, -3e5, np.nan, np.inf, -np.inf, 7000.0, 1e38, -0.0, 6433.0,
                6434.0, 88.0, -87.5, 1e-40, 3.0, -2.0]
    x_np = np.concatenate([np.array(specials, np.float32),
                           (rng.standard_normal(1008) * 10.0 ** rng.integers(-3, 7, 1008))
                           .astype(np.float32)])

    def program(x: af.Tensor) -> af.Tensor:
        return af.cos(af.exp(af.sin(x) * 3.0) + x) * 2.0 + af.tan(x * 0.5) + af.exp(x)

    x = af.tensor(x_np, device=dev)
    dev.reset_stats()
    got = await program(x).to_data()
    assert dev.stats().launches == 1
    text = "".join(render(k, 256, False) for k in kernels_of(program, x_np))
    main = text[text.index("fn main("):]
    assert main.count("_f32_4_fast(") == 5 and main.count("loop {") == 1
    async with af.open_device(fusion=False) as plain:
        want = await program(af.tensor(x_np, device=plain)).to_data()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert_close(got, want, rtol=2e-6, atol=0.0)


def kernels_of(program, x_np: np.ndarray) -> list[Kernel]:
    """The kernels of ``program`` on ``x_np``, recorded on a numpy device."""
    rec = af.Device("numpy")
    out = program(af.tensor(x_np, device=rec))
    ks = kernels(rec)
    del out
    return ks


@pytest.mark.parametrize("n, shared, made", [
    (1 << 12, False, 1),   # small: four unrelated chains in one kernel (one launch)
    (APART_AT, False, 4),  # each fills the GPU: a kernel each
    (APART_AT, True, 1),   # related (all read one input): one kernel, one read of it
])
def test_unrelated_works_share_a_kernel_only_while_their_space_is_small(n, shared, made):
    dev = af.Device("numpy")  # records only: nothing of this size is allocated
    xs = [af.full((n,), float(i), dtype=af.float32, device=dev) for i in range(4)]
    dev.streams.take_freeable()
    dev.streams.take(next(iter(dev.streams.queues)))  # the fills: not element-wise work
    ys = [chain8(xs[0] if shared else x) * float(i) for i, x in enumerate(xs)]
    ks = kernels(dev)
    assert len(ks) == made
    assert sum(len(k.stores) for k in ks) == 4
    del ys


async def test_a_long_queue_is_drained_by_the_server_without_a_read(dev):
    x = af.tensor(np.ones(16, np.float32), device=dev)
    y = x
    for _ in range(600):  # past the 512-op flush threshold
        y = y * 1.0
    with anyio.fail_after(10):
        while dev.stats().launches == 0:
            await anyio.sleep(0.01)
    assert_close(await y.to_data(), np.ones(16, np.float32))


def _guards(text: str) -> int:
    """How many float add/subs keep IEEE specials by bits (the fold guard's NaN word)."""
    return text.count("0x7fc00000u")


@pytest.mark.parametrize("make, guarded", [
    (lambda a, b: a + 2.0, 0),          # a scalar is read at run time: nothing to fold
    (lambda a, b: (a * 3.0) - 1.5, 0),  # ... nor when the other side used another scalar
    (lambda a, b: a - b, 1),            # two tensors may be one value
    (lambda a, b: a - a, 1),
    (lambda a, b: (a + 3.0) - 3.0, 0),  # two words: equal values are not known equal
    (lambda a, b: (-a) + a, 1),
])
def test_fold_guards_only_where_a_compiler_could_cancel(make, guarded):
    dev = af.Device("numpy")
    a = af.tensor(np.ones(8, np.float32), device=dev)
    b = af.tensor(np.ones(8, np.float32), device=dev)
    out = make(a, b)
    text = "".join(render(k, 256, False) for k in kernels(dev))
    assert _guards(text) == guarded, text
    del out


async def test_specials_stay_ieee_where_the_guard_is_left_out(dev, ref):
    x_np = np.array([np.inf, -np.inf, np.nan, 1.0], np.float32)
    for device in (dev, ref):
        x = af.tensor(x_np, device=device)
        got = await af.to_data(x + float("-inf"), x - float("inf"), (x + 3.0) - 3.0,
                               x - x, (x * 1.0) - x)
        with np.errstate(invalid="ignore"):
            want = (x_np + np.float32(-np.inf), x_np - np.float32(np.inf),
                    (x_np + np.float32(3)) - np.float32(3), x_np - x_np,
                    (x_np * np.float32(1)) - x_np)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
