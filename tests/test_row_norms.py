"""Row normalizations as one kernel: softmax, log_softmax, layer_norm, logsumexp, var and
std over the last axis chain their two reductions (a max then a sum of exponentials, a
mean then a sum of squared deviations) in one launch, with the element-wise work that
feeds them or reads their results fused in — whether a row fits the registers that hold
it between passes (8,192 float32 on lavapipe) or is read again for each pass.

Every case runs fused on wgpu (``dev``: its launches are counted) and on the numpy
interpreter of the same kernels (``ref``), both against numpy computed directly.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from asyncfusion.backends.wgpu.backend import row_slots, threads_per_row
from asyncfusion.codegen.wgsl.render import render
from asyncfusion.engine.explorer import explore
from asyncfusion.engine.plan import KernelStep
from asyncfusion.fusers import MatmulFuser
from asyncfusion.ir import Renumber
from asyncfusion.kernel import Kernel
from asyncfusion.kernel.rows import held_bytes
from tests.conftest import assert_close
from tests.test_fusion import _golden, kernels
from tests.test_views_reductions import launches

RNG = np.random.default_rng(22)
RTOL, ATOL = 2e-4, 2e-5


def np_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def np_layer_norm(x: np.ndarray, w: np.ndarray | None = None,
                  b: np.ndarray | None = None) -> np.ndarray:
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    return y * (1 if w is None else w) + (0 if b is None else b)


def np_logsumexp(x: np.ndarray, keepdims: bool = False) -> np.ndarray:
    m = x.max(-1, keepdims=True)
    out = np.log(np.exp(x - m).sum(-1, keepdims=True)) + m
    return out if keepdims else out[..., 0]


# name: (asyncfusion, numpy), each of (x, w, b): x of shape (rows, n), w and b of (n,)
NORMS = {
    "softmax": (lambda x, w, b: af.softmax(x), lambda x, w, b: np_softmax(x)),
    "log_softmax": (lambda x, w, b: af.log_softmax(x),
                    lambda x, w, b: np.log(np_softmax(x))),
    "layer_norm": (lambda x, w, b: af.layer_norm(x), lambda x, w, b: np_layer_norm(x)),
    "layer_norm_affine": (lambda x, w, b: af.layer_norm(x, w, b), np_layer_norm),
    "logsumexp": (lambda x, w, b: af.logsumexp(x), lambda x, w, b: np_logsumexp(x)),
    "logsumexp_keepdims": (lambda x, w, b: af.logsumexp(x, keepdims=True),
                           lambda x, w, b: np_logsumexp(x, True)),
    "var": (lambda x, w, b: x.var(-1), lambda x, w, b: x.var(-1)),
    "std_keepdims_ddof": (lambda x, w, b: x.std(-1, keepdims=True, correction=1),
                          lambda x, w, b: x.std(-1, keepdims=True, ddof=1)),
}
# held in registers between passes: (64, 256), (8, 8192), (3, 1000); read again: (2, 20000)
SHAPES = [(64, 256), (8, 8192), (3, 1000), (2, 20000)]


def inputs(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
    w = RNG.uniform(0.5, 1.5, shape[-1]).astype(np.float32)
    b = RNG.standard_normal(shape[-1]).astype(np.float32)
    return x, w, b


async def check(dev: af.Device, ref: af.Device, make, expect, arrays, want_launches: int,
                rtol: float = RTOL, atol: float = ATOL) -> None:
    """``make`` on ``dev`` takes ``want_launches``; it and ``ref`` give ``expect``'s
    values (numpy in float64, rounded to the inputs' dtype)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's std of one element
        expected = np.asarray(expect(*(a.astype(np.float64) for a in arrays)))
    if expected.dtype.kind == "f":
        expected = expected.astype(arrays[0].dtype)
    for device in (dev, ref):
        ts = [af.tensor(a, device=device) for a in arrays]
        if device is dev:
            assert await launches(dev, lambda: make(*ts)) == want_launches
        got = await make(*ts).to_data()
        assert_close(got, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
@pytest.mark.parametrize("name", list(NORMS))
async def test_each_norm_is_one_launch_and_matches_numpy(dev, ref, name, shape):
    make, expect = NORMS[name]
    await check(dev, ref, make, expect, inputs(shape), 1)


def _kernel(make) -> Kernel:
    host = af.Device("numpy")
    out = make(af.tensor(np.ones((3, 8), np.float32), device=host))
    (k,) = kernels(host)
    del out
    return k


@pytest.mark.parametrize("name", list(NORMS))
def test_rows_up_to_8192_are_held_in_registers_longer_ones_read_again(name):
    """The variant each launch of the numerics test above runs (lavapipe's workgroup of
    256 threads): held up to 8,192 float32 per row, read again for each pass past it."""
    make, _ = NORMS[name]
    k = _kernel(lambda x: make(x, x[0], x[0]))
    assert 4 <= held_bytes(k) <= 8  # x (softmax, layer_norm: and one value per element)
    for (rows, n), held in zip(SHAPES, (True, True, True, False), strict=True):
        tpr = threads_per_row(rows, n, 256)
        slots = row_slots(k, n, tpr)
        assert (slots > 0) is held
        assert not held or slots * tpr >= n  # every element of the row has its register
    assert row_slots(k, 8192, 256) == 32 and row_slots(k, 8193, 256) == 0


def test_a_single_pass_reduction_holds_nothing():
    k = _kernel(lambda x: (-((x - 1.0) ** 2).sum(-1)).exp())
    assert held_bytes(k) == 0 and row_slots(k, 100, 32) == 0


W = inputs((37, 300))
FUSED = {  # (asyncfusion, numpy) of (x, w, b): one launch each
    "softmax(x * 2 + 1)": (lambda x, w, b: af.softmax(x * 2.0 + 1.0),
                           lambda x, w, b: np_softmax(x * 2 + 1)),
    "softmax(x) * 3": (lambda x, w, b: af.softmax(x) * 3.0,
                       lambda x, w, b: np_softmax(x) * 3),
    "layer_norm(x * 0.5 - 1, w, b).tanh()": (
        lambda x, w, b: af.layer_norm(x * 0.5 - 1.0, w, b).tanh(),
        lambda x, w, b: np.tanh(np_layer_norm(x * 0.5 - 1, w, b))),
    "log_softmax(x).exp() + w": (lambda x, w, b: af.log_softmax(x).exp() + w,
                                 lambda x, w, b: np_softmax(x) + w),
    "written out softmax": (
        lambda x, w, b: (lambda e: e / e.sum(-1, keepdims=True))(
            (x - x.max(-1, keepdims=True)).exp()),
        lambda x, w, b: np_softmax(x)),
    "written out variance": (
        lambda x, w, b: ((x - x.mean(-1, keepdims=True)) ** 2).mean(-1),
        lambda x, w, b: x.var(-1)),
    "softmax over axis 0 of a transposed view": (
        lambda x, w, b: af.softmax(x.T, axis=0), lambda x, w, b: np_softmax(x.T, 0)),
    "a third reduction: softmax(x) @ w": (lambda x, w, b: af.softmax(x) @ w,
                                           lambda x, w, b: np_softmax(x) @ w),
}


@pytest.mark.parametrize("name", list(FUSED))
async def test_producers_and_consumers_fuse_into_the_one_kernel(dev, ref, name):
    make, expect = FUSED[name]
    await check(dev, ref, make, expect, W, 1)


def _four_means(x):
    for _ in range(4):
        x = x - x.mean(-1, keepdims=True)
    return x


SPLIT = {  # (asyncfusion, numpy, launches): what stays more than one kernel
    "four chained reductions (three per kernel)": (
        _four_means, _four_means, 2),
    "reductions over different axes": (
        lambda x: af.softmax(x).sum(0), lambda x: np_softmax(x).sum(0), 2),
    "an arg reduction after the first": (
        lambda x: (x - x.mean(-1, keepdims=True)).argmax(-1),
        lambda x: (x - x.mean(-1, keepdims=True)).argmax(-1).astype(np.int32), 2),
}


@pytest.mark.parametrize("name", list(SPLIT))
async def test_what_one_kernel_does_not_chain(dev, ref, name):
    make, expect, n = SPLIT[name]
    await check(dev, ref, make, expect, W[:1], n, atol=1e-4)


async def test_norms_of_unrelated_rows_stay_one_kernel_each(dev):
    # A reduction of a row the kernel neither computes nor loads opens a kernel of its
    # own: chained on, it would cut the next norm in two and store its middle whole.
    xs = [af.tensor(RNG.standard_normal((8, 256)).astype(np.float32) + i, device=dev)
          for i in range(4)]
    await dev.sync()
    dev.reset_stats()
    outs = [af.softmax(x, axis=-1) for x in xs] + [af.layer_norm(x) for x in xs]
    await dev.sync()
    kernels = dev.stats().kernels
    assert dev.stats().launches == 8, kernels
    assert len(kernels) == 2 and all(n == 4 for n in kernels.values()), kernels
    for x, out in zip(xs * 2, outs, strict=True):
        host = await x.to_data()
        assert (await out.to_data()).shape == host.shape


async def test_independent_reductions_of_other_data_are_kernels_of_their_own(dev):
    # Chained, K scorings of K databases would run each row's K passes one after another
    # in one thread; as K kernels they run side by side (one pass each).
    rng = np.random.default_rng(5)
    dbs = [rng.random((64, 256), dtype=np.float32) for _ in range(4)]
    q = rng.random(256, dtype=np.float32)
    tq = af.tensor(q, device=dev)
    tdbs = [af.tensor(d, device=dev) for d in dbs]
    await dev.sync()
    dev.reset_stats()
    outs = [(-((t - tq) ** 2).sum(axis=1)).exp() for t in tdbs]
    await dev.sync()
    assert dev.stats().kernels == {"reduce[sub square sum neg exp]": 4}
    for d, out in zip(dbs, outs, strict=True):
        assert_close(await out.to_data(), np.exp(-((d - q) ** 2).sum(axis=1)),
                     rtol=1e-5, atol=1e-6)
    dev.reset_stats()  # the same data: one kernel, its second phase reads nothing new
    x = tdbs[0]
    both = x.sum(-1) + (x * x).sum(-1)
    assert_close(await both.to_data(), dbs[0].sum(-1) + (dbs[0] ** 2).sum(-1),
                 rtol=1e-5, atol=1e-4)
    assert dev.stats().launches == 1


async def test_an_arg_reduction_may_open_the_chain(dev, ref):
    x = W[0]
    await check(dev, ref, lambda t: t.argmax(-1) + t.sum(-1),
                lambda t: t.argmax(-1) + t.sum(-1), (x,), 1)


@pytest.mark.parametrize("shape", [(16, 1000), (4, 8192)])
async def test_float16_rows_fold_in_float32(dev, ref, shape):
    x = RNG.uniform(-4, 4, shape).astype(np.float16)
    w = RNG.uniform(0.5, 1.5, shape[-1]).astype(np.float16)
    for make, expect in (NORMS["softmax"], NORMS["layer_norm_affine"], NORMS["logsumexp"]):
        await check(dev, ref, make, expect, (x, w, w), 1, rtol=4e-3, atol=4e-3)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=st.integers(1, 9), n=st.one_of(st.integers(1, 600), st.sampled_from([8192, 9000])),
       name=st.sampled_from(list(NORMS)), scale=st.booleans(), shift=st.booleans(),
       seed=st.integers(0, 2**16))
async def test_random_rows_one_launch_equal_numpy(dev, ref, rows, n, name, scale, shift, seed):
    """Any row length (of one element, odd, past the registers) and element-wise work
    before and after the norm."""
    make, expect = NORMS[name]
    rng = np.random.default_rng(seed)
    arrays = (rng.standard_normal((rows, n)).astype(np.float32),
              rng.uniform(0.5, 1.5, n).astype(np.float32),
              rng.standard_normal(n).astype(np.float32))

    def wrap(f):
        def run(x, w, b):
            y = f(x * 1.5 if scale else x, w, b)
            return y + 2.0 if shift else y
        return run

    await check(dev, ref, wrap(make), wrap(expect), arrays, 1)


@pytest.mark.parametrize("case", ["softmax_held", "layer_norm_held"])
def test_generated_wgsl_of_held_rows_matches_golden(case):
    if case == "softmax_held":  # subgroup shuffles, 8 rows a subgroup of 32 (no
        # barrier there); x and exp(x - max) held, 4 each
        k, sg, slots, tpr = _kernel(af.softmax), True, 4, 4
    else:  # a tree in workgroup memory; x and x - mean held, 2 each
        k, sg, slots, tpr = _kernel(lambda x: af.layer_norm(x, x[0], x[1])), False, 2, 32
    _golden(case, render(k, 256, sg, slots, tpr=tpr))


def test_kernel_titles_name_the_work_phase_by_phase():
    assert _kernel(af.softmax).title == "reduce[max sub exp sum div]"
    assert _kernel(lambda x: af.layer_norm(x) * 2.0).title == \
        "reduce[sum div sub mul sum div add rsqrt mul mul]"
    host = af.Device("numpy")
    x = af.tensor(np.ones((3, 8), np.float32), device=host)
    out = (x @ x.mT + 1.0).relu()
    host.streams.take_freeable()
    ops, _ = host.streams.take(next(iter(host.streams.queues)))
    rn = Renumber()
    for op in ops:
        op.signature(rn)
    steps = explore(ops, [MatmulFuser(8)], rn.rel)
    assert [s.lowered.kernel.title for s in steps if isinstance(s, KernelStep)] == [
        "matmul[matmul add relu]"]  # the product is the matmul, not a "mul" of its own
    del out


async def test_a_chained_reduction_past_the_binding_limit_opens_the_next_kernel():
    """On a device of 4 storage bindings, ``z.sum`` after ``(x * y).sum`` would bind a
    fifth buffer (x, y, z and both results): the chain stops before it."""
    x, y, z = (RNG.standard_normal((5, 40)).astype(np.float32) for _ in range(3))
    async with af.open_device(max_storage_bindings=4) as dev:
        tx, ty, tz = (af.tensor(a, device=dev) for a in (x, y, z))
        make = lambda: (tx * ty).sum(-1) + tz.sum(-1)  # noqa: E731
        assert await launches(dev, make) == 2
        assert_close(await make().to_data(), (x * y).sum(-1) + z.sum(-1), rtol=RTOL,
                     atol=ATOL)
        assert await launches(dev, lambda: af.softmax(tx) * ty) == 1  # x, y, the result


async def test_a_normalization_read_by_a_matmul_stays_one_kernel(dev):
    # The division after the row sum is handed back to a later kernel only where that
    # kernel computes it on read (element-wise work, a reduction); a matmul reads its
    # operand stored, so the normalization stays whole: one kernel, then the product.
    q_host = RNG.standard_normal((4, 64)).astype(np.float32)
    db_host = RNG.standard_normal((96, 64)).astype(np.float32)
    q, db = af.tensor(q_host, device=dev), af.tensor(db_host, device=dev)
    await dev.sync()
    dev.reset_stats()
    scores = (q / (q * q).sum(-1, keepdims=True).sqrt()) @ db.T
    got = await scores.to_data()
    assert dev.stats().kernels == {"reduce[mul sum sqrt div]": 1, "matmul[matmul]": 1}
    want = (q_host / np.sqrt((q_host * q_host).sum(-1, keepdims=True))) @ db_host.T
    assert_close(got, want, rtol=RTOL, atol=1e-4)
    dev.reset_stats()  # read by element-wise work instead: handed back, recomputed on read
    shifted = (q / (q * q).sum(-1, keepdims=True).sqrt()) + 1.0
    assert_close(await shifted.to_data(),
                 q_host / np.sqrt((q_host * q_host).sum(-1, keepdims=True)) + 1.0,
                 rtol=RTOL, atol=ATOL)
    assert dev.stats().launches == 1
