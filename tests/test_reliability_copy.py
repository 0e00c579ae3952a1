"""copy, deepcopy and pickle of tensors: copies share the (immutable) tensor; pickling
says what to do instead."""

from __future__ import annotations

import copy
import gc
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import asyncfusion as af
from tests.conftest import assert_close


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy])
async def test_a_dropped_copy_leaves_the_original_readable(dev, how):
    t = af.tensor([1.0, 2.0], device=dev)
    u = how(t)
    assert u is t
    del u
    gc.collect()
    await dev.sync()
    assert_close(await t.to_data(), np.array([1.0, 2.0], np.float32))
    assert_close(await (t * 2.0).to_data(), np.array([2.0, 4.0], np.float32))


async def test_deepcopy_of_a_structure_keeps_every_tensor_readable(dev):
    ts = {"a": af.tensor([1.0], device=dev), "b": [af.tensor([2.0], device=dev)]}
    clone = copy.deepcopy(ts)
    del ts
    gc.collect()
    await dev.sync()
    assert_close(await clone["a"].to_data(), np.array([1.0], np.float32))
    assert_close(await clone["b"][0].to_data(), np.array([2.0], np.float32))


async def test_pickling_a_tensor_says_what_to_do(dev):
    t = af.tensor([1.0], device=dev)
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        with pytest.raises(TypeError, match=r"cannot be pickled.*to_data\(\)"):
            pickle.dumps(t, protocol=protocol)
    assert_close(await t.to_data(), np.array([1.0], np.float32))


def test_a_failed_pickle_prints_no_ignored_exception():
    code = textwrap.dedent("""
        import pickle, asyncfusion as af
        t = af.tensor([1.0, 2.0])
        try:
            pickle.dumps([t, t * 2])
        except TypeError as exc:
            print("refused:", "to_data" in str(exc))
        print((t + 1.0).to_data_sync().tolist())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["refused:", "True", "[2.0,", "3.0]"]
    assert "Exception ignored" not in out.stderr
