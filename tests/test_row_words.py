"""Reductions read contiguous rows in vec4 words and the rest four positions at a time.

A launch whose rows are a multiple of 4 long, contiguous and aligned reads them a
``vec4`` word at a time (``row_words``); other element accesses of it take four scalar
accesses per word; rows of other lengths, transposed or misaligned views read element by
element. Which variant a launch takes is checked on the kernel's launch arguments and on
the launches themselves; every op and dtype, on every kind of view, against numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from asyncfusion.backends.wgpu import backend
from asyncfusion.backends.wgpu.backend import row_slots, row_words, threads_per_row
from asyncfusion.codegen.wgsl.render import RowWords, render
from asyncfusion.kernel import Kernel, LaunchArgs
from tests.test_fusion import _golden, kernels

OPS = ("sum", "mean", "prod", "max", "min", "argmax", "argmin", "any", "all")


def _kernel(make) -> Kernel:
    host = af.Device("numpy")
    out = make(af.tensor(np.ones((3, 8), np.float32), device=host),
               af.tensor(np.ones(8, np.float32), device=host))
    (k,) = kernels(host)
    del out
    return k


def _args(shape: tuple[int, ...], *maps: tuple[int, tuple[int, ...]]) -> LaunchArgs:
    return LaunchArgs(shape, tuple(maps), ())


def test_contiguous_aligned_rows_of_a_multiple_of_4_are_read_in_words():
    k = _kernel(lambda x, q: x.sum(-1))
    words = RowWords(frozenset({0}), frozenset())
    assert row_words(k, _args((5, 256), (0, (256, 1)))) == words
    assert row_words(k, _args((5, 256), (4, (260, 1)))) == words  # x[:, 4:260]
    assert row_words(k, _args((5, 256), (0, (512, 1)))) == words  # x[::2]
    assert row_words(k, _args((1, 8), (0, (3, 1)))) == words  # one row: its stride is moot
    assert row_words(k, _args((5, 255), (0, (255, 1)))) is None  # not whole words
    assert row_words(k, _args((5, 256), (1, (260, 1)))) is None  # x[:, 1:257]
    assert row_words(k, _args((5, 256), (0, (258, 1)))) is None  # rows start mid-word
    assert row_words(k, _args((5, 256), (0, (1, 5)))) is None  # x.T: strided along the row


def test_a_launch_reads_its_aligned_loads_in_words_and_the_others_four_at_a_time():
    score = _kernel(lambda x, q: (-((x - q) ** 2).sum(1)).exp())
    both = _args((5, 256), (0, (256, 1)), (0, (0, 1)))  # q: broadcast along the rows
    assert row_words(score, both) == RowWords(frozenset({0, 1}), frozenset())
    one = _args((5, 256), (0, (256, 1)), (0, (0, 3)))  # q read with a step of 3
    assert row_words(score, one) == RowWords(frozenset({0}), frozenset())
    soft = _kernel(lambda x, q: af.softmax(x))  # its output: written in words too
    assert row_words(soft, _args((5, 256), (0, (256, 1)), (0, (256, 1)))) == \
        RowWords(frozenset({0}), frozenset({0}))
    assert row_words(soft, _args((5, 256), (0, (256, 1)), (0, (1, 5)))) == \
        RowWords(frozenset({0}), frozenset())


def test_words_count_threads_and_held_registers_in_elements():
    """A row of 256 float32: 16 threads of 4 words, as 16 threads of 16 elements."""
    assert threads_per_row(1 << 20, 64, 512, 4) == threads_per_row(1 << 20, 256, 512) == 16
    soft = _kernel(lambda x, q: af.softmax(x))
    assert row_slots(soft, 64, 16, 4) == 4 and row_slots(soft, 256, 16) == 16
    assert row_slots(soft, 2048, 256, 4) == 8 and row_slots(soft, 2049 * 4, 256) == 0


def test_word_passes_load_once_per_word_and_unroll_the_streamed_loop():
    """In the generated text: one vec4 load per word of each row (four positions of the
    row per loop trip, then a tail), four scalar loads where a load is not aligned."""
    score = _kernel(lambda x, q: (-((x - q) ** 2).sum(1)).exp())
    plain = render(score, 256, True)
    words = render(score, 256, True, 0, RowWords(frozenset({0, 1}), frozenset()))
    mixed = render(score, 256, True, 0, RowWords(frozenset({0}), frozenset()))
    assert "array<vec4<f32>>" not in plain and words.count("array<vec4<f32>>") == 2
    assert plain.count("in0[") == words.count("in0[") == 5  # 4 unrolled + the tail
    assert words.count("in1[") == 5 and mixed.count("in1[") == 20
    assert words.count("/ 4u]") == 10 and "let n_w = n_red / 4u;" in words


@pytest.fixture
def variants(monkeypatch):
    """The RowWords (or None) of each reduction launch, in order."""
    seen: list[RowWords | None] = []

    def spy(kernel: Kernel, args: LaunchArgs) -> RowWords | None:
        seen.append(row_words(kernel, args))
        return seen[-1]

    monkeypatch.setattr(backend, "row_words", spy)
    return seen


VIEWS = ("contiguous", "slice4", "slice1", "rowstep", "transposed", "broadcast")


def _view(kind: str, h: np.ndarray, n: int) -> tuple[np.ndarray, Callable[[Any], Any]]:
    """(the host array to upload, the view of it to reduce, applied to either side)."""
    if kind == "slice4":
        return h, lambda x: x[:, 4:4 + n]
    if kind == "slice1":
        return h, lambda x: x[:, 1:1 + n]
    if kind == "rowstep":
        return h, lambda x: x[::2, :n]
    if kind == "transposed":
        return np.ascontiguousarray(h[:, :n].T), lambda x: x.T
    if kind == "broadcast":
        return h[0, :n], (lambda x: af.broadcast_to(x, (3, n)) if isinstance(x, af.Tensor)
                          else np.broadcast_to(x, (3, n)))
    return np.ascontiguousarray(h[:, :n]), lambda x: x


def _want(op: str, x: np.ndarray) -> np.ndarray:
    if op in ("any", "all"):
        return getattr(np, op)(x != 0, axis=-1)
    if op == "mean":
        return x.astype(np.float32).mean(-1)
    if op in ("sum", "prod") and x.dtype == np.int32:
        return getattr(np, op)(x, axis=-1, dtype=np.int32)
    return getattr(np, op)(x, axis=-1)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(n=st.sampled_from([1, 3, 4, 8, 12, 255, 256, 260, 1028]), op=st.sampled_from(OPS),
       dtype=st.sampled_from(["float32", "int32", "float16", "bool"]),
       view=st.sampled_from(VIEWS), nan=st.booleans(), seed=st.integers(0, 2**16))
async def test_row_reductions_of_every_op_dtype_and_view_equal_numpy(
        dev, variants, n, op, dtype, view, nan, seed):
    """Small integers: every op is exact in every dtype and ties are many (argmax and
    argmin keep the first), within a word and across the row's threads."""
    variants.clear()  # one fixture for all of hypothesis's examples
    dev.backend._launches.clear()  # and one device: an example another already made
    # (the same kernel and arguments) would reuse its prepared launch, asking no variant
    if dtype == "float16" and af.float16 not in dev.backend.dtypes:
        return
    if dtype == "bool" and op not in ("any", "all"):
        dtype = "int32"
    rng = np.random.default_rng(seed)
    h = rng.integers(-2, 3, (6, n + 8))
    if op == "prod":  # +-1: no overflow
        h = np.where(h == 0, 1, np.sign(h))
    h = h > 0 if dtype == "bool" else h.astype(dtype)
    if nan and h.dtype.kind == "f":
        h.flat[rng.integers(0, h.size)] = np.nan
    host, take = _view(view, h, n)
    want = _want(op, take(host))
    got = await getattr(take(af.tensor(host, device=dev)), op)(axis=-1).to_data()
    if op == "mean":  # a float16 mean divides in float16
        np.testing.assert_allclose(got, want, rtol=1e-3)
    else:
        np.testing.assert_array_equal(got, want)
    words = n % 4 == 0 and view in ("contiguous", "slice4", "rowstep", "broadcast")
    assert len(variants) == 1 and (variants[0] is not None) is words


async def test_softmax_and_scoring_over_word_rows_equal_numpy(dev, variants):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((37, 260)).astype(np.float32)
    q = rng.standard_normal(256).astype(np.float32)
    t, tq = af.tensor(x, device=dev), af.tensor(q, device=dev)
    e = np.exp(x[:, 4:] - x[:, 4:].max(-1, keepdims=True))
    soft = await af.softmax(t[:, 4:], axis=-1).to_data()
    np.testing.assert_allclose(soft, e / e.sum(-1, keepdims=True), rtol=2e-5, atol=1e-7)
    score = await (-((t[:, 4:] - tq) ** 2).sum(1) / 256.0).exp().to_data()
    np.testing.assert_allclose(score, np.exp(-((x[:, 4:] - q) ** 2).sum(1) / 256), rtol=2e-5)
    assert variants == [RowWords(frozenset({0}), frozenset({0})),
                        RowWords(frozenset({0, 1}), frozenset())]


@pytest.mark.parametrize("case", ["reduce_score_words", "softmax_words"])
def test_generated_wgsl_of_word_rows_matches_golden(case):
    if case == "reduce_score_words":  # read again each pass (one here), 16 threads a
        # row of 256 (4 words each), subgroup shuffles (no barrier on a GPU)
        k = _kernel(lambda x, q: (-((x - q) ** 2).sum(1)).exp())
        text = render(k, 256, True, 0, RowWords(frozenset({0, 1}), frozenset()), 16)
    else:  # held in vec4 registers, 4 words a thread; a row over 256 threads: subgroup
        # shuffles, then the subgroups' partials through workgroup memory; stored in words
        k = _kernel(lambda x, q: af.softmax(x))
        text = render(k, 256, True, 4, RowWords(frozenset({0}), frozenset({0})), 256)
    _golden(case, text)


async def test_rows_folded_over_several_axes_or_along_a_transposed_one_equal_numpy(
        dev, variants):
    """Words along the last folded dimension, whichever it is; the other folded ones
    step over whole words."""
    b = np.random.default_rng(5).integers(-9, 10, (3, 5, 8)).astype(np.float32)
    t = af.tensor(b, device=dev)
    cases = [(t.sum((0, 2)), b.sum((0, 2)), True), (t.max((0, 1)), b.max((0, 1)), False),
             (t.permute(2, 1, 0).sum(0), b.transpose(2, 1, 0).sum(0), True),
             (t.argmax(0), b.argmax(0), False)]
    for got, want, _ in cases:
        np.testing.assert_array_equal(await got.to_data(), want)
    assert [v is not None for v in variants] == [words for *_, words in cases]
