"""Views, reductions and composites: values against numpy, launch counts, call-site errors.

Every expression runs fused, plain (one kernel per op) and on the numpy interpreter, and
is compared with numpy computed directly on the host. Inputs are often strided views
(transposed, sliced, flipped, broadcast): every op must read them through index maps.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import asyncfusion as af
from tests.conftest import assert_close

RNG = np.random.default_rng(7)
X = RNG.standard_normal((6, 8)).astype(np.float32)
Y = RNG.standard_normal((8, 6)).astype(np.float32)
V = RNG.standard_normal((8,)).astype(np.float32)
B = RNG.standard_normal((2, 3, 4)).astype(np.float32)
I = RNG.integers(-9, 10, (6, 8)).astype(np.int32)
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


# name: (asyncfusion expression, numpy expression); arguments x, y, v, b, i
CASES = {
    "transpose-add": (lambda x, y, v, b, i: x.T + y, lambda x, y, v, b, i: x.T + y),
    "mT-mul": (lambda x, y, v, b, i: b.mT * 2.0, lambda x, y, v, b, i: np.swapaxes(b, -1, -2) * 2),
    "permute": (lambda x, y, v, b, i: b.permute(2, 0, 1) - 1.0,
                lambda x, y, v, b, i: b.transpose(2, 0, 1) - 1),
    "slice-steps": (lambda x, y, v, b, i: x[1::2, ::-3].exp(),
                    lambda x, y, v, b, i: np.exp(x[1::2, ::-3])),
    "int-none-ellipsis": (lambda x, y, v, b, i: b[1, None, ..., -1] + 0.5,
                          lambda x, y, v, b, i: b[1, None, ..., -1] + 0.5),
    "flip": (lambda x, y, v, b, i: b.flip((0, 2)) * b, lambda x, y, v, b, i: np.flip(b, (0, 2)) * b),
    "expand": (lambda x, y, v, b, i: v.broadcast_to((6, 8)) + x,
               lambda x, y, v, b, i: np.broadcast_to(v, (6, 8)) + x),
    "squeeze-unsqueeze": (lambda x, y, v, b, i: x[:, :1].squeeze(1).unsqueeze(0) * 3.0,
                          lambda x, y, v, b, i: x[:, :1].squeeze(1)[None] * 3),
    "reshape-view": (lambda x, y, v, b, i: b.reshape(6, 4) + 1.0,
                     lambda x, y, v, b, i: b.reshape(6, 4) + 1),
    "reshape-copy": (lambda x, y, v, b, i: x.T.reshape(-1) * 1.0,
                     lambda x, y, v, b, i: x.T.reshape(-1)),
    "contiguous": (lambda x, y, v, b, i: x[::2].T.contiguous(), lambda x, y, v, b, i: x[::2].T.copy()),
    "read-strided": (lambda x, y, v, b, i: x[::-1, 2:5], lambda x, y, v, b, i: x[::-1, 2:5]),
    "sum-axis": (lambda x, y, v, b, i: x.sum(1), lambda x, y, v, b, i: x.sum(1)),
    "sum-tuple-keep": (lambda x, y, v, b, i: b.sum((0, 2), keepdims=True),
                       lambda x, y, v, b, i: b.sum((0, 2), keepdims=True)),
    "sum-all-transposed": (lambda x, y, v, b, i: x.T.sum(), lambda x, y, v, b, i: x.T.sum()),
    "prod": (lambda x, y, v, b, i: (x * 0.5).prod(0), lambda x, y, v, b, i: (x * 0.5).prod(0)),
    "max-min": (lambda x, y, v, b, i: x.max(0) - x.T.min(1), lambda x, y, v, b, i: x.max(0) - x.min(0)),
    "int-sum": (lambda x, y, v, b, i: i.sum(1), lambda x, y, v, b, i: i.sum(1, dtype=np.int32)),
    "int-max": (lambda x, y, v, b, i: i.T.max(0), lambda x, y, v, b, i: i.max(1)),
    "argmax": (lambda x, y, v, b, i: x.argmax(1), lambda x, y, v, b, i: x.argmax(1).astype(np.int32)),
    "argmin-all": (lambda x, y, v, b, i: b.argmin(), lambda x, y, v, b, i: np.int32(b.argmin())),
    "argmax-ties": (lambda x, y, v, b, i: (i > 0).astype(af.int32).argmax(0),
                    lambda x, y, v, b, i: (i > 0).astype(np.int32).argmax(0).astype(np.int32)),
    "any-all": (lambda x, y, v, b, i: (x > 1.0).any(1) & (x > -3.0).all(1),
                lambda x, y, v, b, i: (x > 1).any(1) & (x > -3).all(1)),
    "mean": (lambda x, y, v, b, i: b.mean((1, 2)), lambda x, y, v, b, i: b.mean((1, 2))),
    "var-std": (lambda x, y, v, b, i: x.var(0) + x.std(1, correction=1).sum(),
                lambda x, y, v, b, i: x.var(0) + x.std(1, ddof=1).sum()),
    "score": (lambda x, y, v, b, i: (-((x - v) ** 2).sum(axis=1)).exp(),
              lambda x, y, v, b, i: np.exp(-((x - v) ** 2).sum(axis=1))),
    "softmax": (lambda x, y, v, b, i: af.softmax(x.T, axis=0),
                lambda x, y, v, b, i: _softmax(x.T, 0)),
    "log-softmax": (lambda x, y, v, b, i: af.log_softmax(x),
                    lambda x, y, v, b, i: np.log(_softmax(x))),
    "logsumexp": (lambda x, y, v, b, i: af.logsumexp(b, axis=1),
                  lambda x, y, v, b, i: np.log(np.exp(b - b.max(1, keepdims=True)).sum(1))
                  + b.max(1)),
    "layer-norm": (lambda x, y, v, b, i: af.layer_norm(x, v, v * 0.5),
                   lambda x, y, v, b, i: (x - x.mean(-1, keepdims=True))
                   / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * v + v * 0.5),
    "gelu-silu": (lambda x, y, v, b, i: af.gelu(x) + af.silu(x) + af.gelu(x, "tanh"),
                  lambda x, y, v, b, i: x * 0.5 * (1 + _erf(x / np.sqrt(2))).astype(np.float32)
                  + x / (1 + np.exp(-x))
                  + 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))),
    "clip-square-rsqrt": (lambda x, y, v, b, i: af.clip(x, -0.5, 0.5).square() + (x * x + 1.0).rsqrt(),
                          lambda x, y, v, b, i: np.clip(x, -0.5, 0.5) ** 2 + 1 / np.sqrt(x * x + 1)),
    "rounding": (lambda x, y, v, b, i: (x * 3.0).floor() + (x * 3.0).ceil() + (x * 3.0).round()
                 + x.sign(),
                 lambda x, y, v, b, i: np.floor(x * 3) + np.ceil(x * 3) + np.round(x * 3)
                 + np.sign(x)),
    "predicates": (lambda x, y, v, b, i: (x / (x * 0.0)).isnan() | (1.0 / (x * 0.0)).isinf()
                   | ~(x.log()).isfinite(),
                   lambda x, y, v, b, i: np.isnan(x / (x * 0)) | np.isinf(1 / (x * 0))
                   | ~np.isfinite(np.log(x))),
    "floordiv-mod": (lambda x, y, v, b, i: (i // 4) * 100 + i % 4 + (i.T // -3).T,
                     lambda x, y, v, b, i: (i // 4) * 100 + i % 4 + (i.T // -3).T),
    "float-floordiv-mod": (lambda x, y, v, b, i: x // 0.75 + x % 0.75,
                           lambda x, y, v, b, i: x // np.float32(0.75) + x % np.float32(0.75)),
    "cat-views": (lambda x, y, v, b, i: af.cat([x[:, ::2], y.T[:, :4], x[::-1, 1::2]], 0),
                  lambda x, y, v, b, i: np.concatenate([x[:, ::2], y.T[:, :4], x[::-1, 1::2]], 0)),
    "where-views": (lambda x, y, v, b, i: af.where(x.T > 0, y, x.T * 2.0) + v[::-1, None][:, :1],
                    lambda x, y, v, b, i: np.where(x.T > 0, y, x.T * 2) + v[::-1, None]),
    "astype-view": (lambda x, y, v, b, i: i.T[::2].astype(af.float32) * x.T[::2],
                    lambda x, y, v, b, i: i.T[::2].astype(np.float32) * x.T[::2]),
    "like": (lambda x, y, v, b, i: af.zeros_like(x) + af.ones_like(i) + af.full_like(x, 2.5),
             lambda x, y, v, b, i: np.zeros_like(x) + np.ones_like(i) + 2.5),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_matches_numpy_fused_plain_and_interpreted(dev, plain, ref, name):
    make, expect = CASES[name]
    with np.errstate(all="ignore"):
        expected = np.asarray(expect(X, Y, V, B, I))
    for device in (dev, plain, ref):
        args = [af.tensor(a, device=device) for a in (X, Y, V, B, I)]
        got = await make(*args).to_data()
        assert got.shape == expected.shape, (device, got.shape, expected.shape)
        if expected.dtype == np.float64:
            expected = expected.astype(np.float32)
        assert_close(got, expected.astype(got.dtype) if got.dtype != expected.dtype
                     and got.dtype.kind == expected.dtype.kind else expected,
                     rtol=2e-4, atol=2e-5)


async def launches(dev: af.Device, make) -> int:
    """Launches one evaluation of ``make()`` takes once its inputs are on the device."""
    await dev.sync()
    before = dev.stats().launches
    out = make()
    await out.to_data()
    return dev.stats().launches - before


async def test_launch_counts_of_fused_reductions_and_composites(dev):
    db = af.tensor(RNG.standard_normal((64, 16)).astype(np.float32), device=dev)
    q = af.tensor(RNG.standard_normal(16).astype(np.float32), device=dev)
    w = af.tensor(np.ones(16, np.float32), device=dev)
    assert await launches(dev, lambda: (-((db - q) ** 2).sum(axis=1)).exp()) == 1
    assert await launches(dev, lambda: af.softmax(db)) == 1  # two chained reductions
    assert await launches(dev, lambda: af.log_softmax(db)) == 1
    assert await launches(dev, lambda: af.logsumexp(db, 1)) == 1
    assert await launches(dev, lambda: af.layer_norm(db, w, w)) == 1
    assert await launches(dev, lambda: db.var(1)) == 1
    assert await launches(dev, lambda: db.mean()) == 1
    assert await launches(dev, lambda: af.gelu(db) * 2.0) == 1
    assert await launches(dev, lambda: (db.T[::2] * 2.0 + q[::2, None]).exp()) == 1  # views fuse
    assert await launches(dev, lambda: db.T.sum(0) + 1.0) == 1


async def test_views_launch_nothing_and_share_storage(dev):
    x = af.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4), device=dev)
    await dev.sync()
    before_launch = dev.stats().launches
    before_mem = dev.memory_stats()
    views = [x.T, x[1], x[:, ::-1], x.reshape(6, 4), x.permute(1, 0, 2), x[None, ..., 0]]
    await dev.sync()
    assert dev.stats().launches == before_launch
    assert dev.memory_stats().live_buffers == before_mem.live_buffers  # no copies
    for v, expected in zip(views, [np.arange(24).reshape(2, 3, 4).T,
                                   np.arange(24).reshape(2, 3, 4)[1],
                                   np.arange(24).reshape(2, 3, 4)[:, ::-1],
                                   np.arange(24).reshape(6, 4),
                                   np.arange(24).reshape(2, 3, 4).transpose(1, 0, 2),
                                   np.arange(24).reshape(2, 3, 4)[None, ..., 0]]):
        assert_close(await v.to_data(), expected.astype(np.float32))


async def test_a_view_keeps_its_base_alive_after_the_base_is_dropped(dev):
    x = af.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=dev) * 2.0
    col = x[:, 1]
    del x  # the storage lives on through the view
    await dev.sync()
    assert_close(await col.to_data(), np.array([2.0, 10.0, 18.0], np.float32))
    t = col.T * 1.0
    del col
    assert_close(await t.to_data(), np.array([2.0, 10.0, 18.0], np.float32))
    await dev.sync()
    del t
    await dev.sync()
    assert dev.memory_stats().live_buffers == 0


async def test_no_in_place_write_over_a_storage_a_view_still_reads(dev):
    x = af.tensor(np.arange(8, dtype=np.float32), device=dev) + 0.0
    rev = x[::-1]
    y = (x * 2.0).exp()  # x's last use: it may not lend its buffer while rev views it
    del x
    got_y, got_rev = await y.to_data(), await rev.to_data()
    assert_close(got_rev, np.arange(8, dtype=np.float32)[::-1].copy())
    assert_close(got_y, np.exp(np.arange(8, dtype=np.float32) * 2), rtol=1e-5)


@pytest.mark.parametrize("key, error", [
    ((5, 0), "out of range"), ((slice(None, None, 0),), "step cannot be zero"),
    ((0, 0, 0), "too many indices"), ((Ellipsis, Ellipsis), "one ellipsis"),
    ((1.5,), "not supported"), ((slice(0.5, None),), "objects with __index__ or None"),
])
async def test_bad_indices_raise_indexing_errors_at_the_call_site(dev, key, error):
    x = af.tensor(np.zeros((3, 4), np.float32), device=dev)
    with pytest.raises(af.IndexingError, match=error):
        x[key]
    with pytest.raises(IndexError):  # a subclass of the builtin
        x[key]
    assert_close(await (x + 1.0).to_data(), np.ones((3, 4), np.float32))  # device unharmed


async def test_bad_view_and_reduction_arguments_raise_at_the_call_site(dev):
    x = af.tensor(np.zeros((3, 4), np.float32), device=dev)
    with pytest.raises(af.AxisError, match="permutation"):
        x.permute(0, 0)
    with pytest.raises(af.ShapeError, match="do not broadcast"):
        x.broadcast_to((3, 5))
    with pytest.raises(af.ShapeError, match="size 4, not 1"):
        x.squeeze(1)
    with pytest.raises(af.AxisError, match="at least 2 dimensions"):
        x[0].mT
    with pytest.raises(af.ShapeError, match="cannot reshape"):
        x.T.reshape(5, -1)
    with pytest.raises(af.ShapeError, match="empty"):
        x[:, :0].max(1)
    assert_close(await x.T.sum(0).to_data(), np.zeros(3, np.float32))


async def test_long_reduction_axis_is_correct(dev):
    # A row longer than threads-per-row x the kernel's inner loop (1024): the outer loop runs.
    n = 300_000
    x = (np.arange(n, dtype=np.float32) % 7) - 3
    t = af.tensor(x, device=dev)
    got = await t.sum().to_data()
    assert float(got) == float(x.sum())
    assert int(await t.argmin().to_data()) == int(x.argmin())


@pytest.mark.parametrize("subgroups", [True, False], ids=["subgroups", "workgroup-tree"])
async def test_both_row_combines_agree_with_numpy(subgroups):
    """Rows are combined with subgroup shuffles where the adapter has them, else with a
    tree in workgroup memory; rows of 1 to 1000 elements exercise every width."""
    async with af.open_device() as dev:
        if subgroups and not dev.backend.rt.subgroups:
            pytest.skip("this adapter has no subgroup operations")
        dev.backend.subgroups = subgroups
        for n in (1, 3, 8, 33, 256, 1000):
            x = RNG.standard_normal((5, n)).astype(np.float32)
            t = af.tensor(x, device=dev)
            got = await af.cat([t.sum(1), t.max(1), t.argmax(1).astype(af.float32)], 0).to_data()
            want = np.concatenate([x.sum(1), x.max(1), x.argmax(1).astype(np.float32)])
            assert_close(got, want, rtol=1e-4, atol=1e-4)
