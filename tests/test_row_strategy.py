"""Row kernels at every row schedule: the row lengths that pick each one at launch (a
thread or a few per row, rows of one subgroup or part of one, rows over several
subgroups, held in registers or read again), and each threads-per-row forced, with and
without subgroup operations (lavapipe's subgroups are 8 wide: 16 threads and more take
the workgroup-memory step). One launch each, equal to numpy on wgpu and on the numpy
interpreter of the same kernels.
"""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.backends.wgpu import backend
from tests.test_row_norms import NORMS, check

RNG = np.random.default_rng(2222)
LENGTHS = [1, 3, 31, 256, 257, 4096, 8192]


def _score(db, q, b):
    return (-((db - q) ** 2).sum(-1)).exp()


def _score_np(db, q, b):
    return np.exp(-((db - q) ** 2).sum(-1))


CASES = {name: NORMS[name] for name in ("softmax", "log_softmax", "layer_norm",
                                         "layer_norm_affine", "logsumexp", "var",
                                         "std_keepdims_ddof")}
CASES["scoring"] = (_score, _score_np)


def _arrays(rows: int, n: int) -> tuple[np.ndarray, ...]:
    return ((RNG.standard_normal((rows, n)) * 2 + 0.5).astype(np.float32),
            RNG.uniform(-1, 1, n).astype(np.float32), RNG.uniform(0.5, 1.5, n).astype(np.float32))


@pytest.mark.parametrize("n", LENGTHS)
async def test_each_row_length_is_one_launch_equal_numpy(dev, ref, n):
    rows = 3 if n >= 4096 else 9
    arrays = _arrays(rows, n)
    for make, expect in CASES.values():
        # the scoring's q is the second array; the norms read it as their weight
        await check(dev, ref, make, expect, arrays, 1, rtol=2e-4, atol=5e-5)


def _forced(monkeypatch, dev: af.Device, tpr: int, subgroups: bool) -> None:
    monkeypatch.setattr(backend, "threads_per_row", lambda n_out, n_red, wg, lanes=1: tpr)
    monkeypatch.setattr(dev.backend, "subgroups", subgroups)


@pytest.mark.parametrize("subgroups", [True, False], ids=["subgroups", "tree"])
@pytest.mark.parametrize("tpr", [1, 4, 8, 16, 64, 256])
async def test_every_threads_per_row_and_combine_equal_numpy(dev, ref, monkeypatch, tpr,
                                                             subgroups):
    _forced(monkeypatch, dev, tpr, subgroups)
    for n in (301, 1000):  # elements, vec4 words (held in registers at most tpr sizes)
        arrays = _arrays(6, n)
        for name in ("softmax", "layer_norm_affine", "scoring"):
            make, expect = CASES[name]
            await check(dev, ref, make, expect, arrays, 1, rtol=2e-4, atol=5e-5)
        await check(dev, ref, lambda t, w, b: t.argmax(-1) + t.sum(-1),
                    lambda t, w, b: t.argmax(-1) + t.sum(-1), arrays, 1, atol=1e-3)
    big = _arrays(2, 20000)  # past the registers at every tpr: each pass reads it again
    await check(dev, ref, *CASES["softmax"], big, 1, rtol=2e-4, atol=5e-5)


async def test_threads_per_row_are_a_constant_of_the_text(dev, monkeypatch):
    """Each threads-per-row renders its own text (and no uniform word is read for it)."""
    seen: list[str] = []
    render = backend.render

    def spy(*args, **kwargs):
        seen.append(render(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(backend, "render", spy)
    x = af.tensor(RNG.standard_normal((4, 64)).astype(np.float32), device=dev)
    for tpr in (2, 32):
        _forced(monkeypatch, dev, tpr, True)
        await af.softmax(x * float(tpr)).to_data()
    assert len(seen) == 2 and "const tpr = 2u;" in seen[0] and "const tpr = 32u;" in seen[1]
    assert "if (tpr > sgs)" not in seen[0] and "if (tpr > sgs)" in seen[1]
    assert all("workgroupBarrier" not in t.split("if (tpr > sgs)")[0] for t in seen)
