"""Debug mode warns when an await keeps a large intermediate alive: a fused kernel's
intermediate that a local still names is written to memory, and the reader of that round
gets an ``IntermediateKeptWarning`` pointing at the line that made it — once per line,
and only from ``ASYNCFUSION_DEBUG_KEPT_BYTES`` (lowered here to 16 KiB) up.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion import _debug
from asyncfusion.pytest_plugin import device_for_test
from tests.conftest import assert_close

N = 8192  # float32: 32 KiB


@pytest.fixture
async def fdev(request, monkeypatch):
    monkeypatch.setattr(_debug, "DEBUG", True)  # as under ASYNCFUSION_DEBUG=1
    monkeypatch.setattr(_debug, "KEPT_BYTES", 16 << 10)
    async with device_for_test(request, fusion=True) as d:
        yield d


def host() -> np.ndarray:
    return np.linspace(-1, 1, N, dtype=np.float32)


def expected() -> np.float32:
    return np.float32((np.exp(host() * 2) + 1).sum())


async def test_a_named_intermediate_held_across_the_await_warns_at_its_line(fdev):
    x = af.tensor(host(), device=fdev)
    y = (x * 2.0).exp(); line = _line()  # noqa: E702 - the warning names this line
    with pytest.warns(af.IntermediateKeptWarning) as record:
        got = await (y + 1.0).sum().to_data()
    assert_close(got, expected(), rtol=1e-4)
    [w] = record.list
    assert (w.filename, w.lineno) == (__file__, line)
    assert f"32 KiB intermediate (shape ({N},), float32)" in str(w.message)
    assert "del" in str(w.message)
    assert_close(await y.to_data(), np.exp(host() * 2), rtol=1e-5)  # and y is there


async def test_no_warning_when_the_intermediate_is_dropped_small_or_read(fdev):
    x = af.tensor(host(), device=fdev)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = (x * 2.0).exp()
        s = (y + 1.0).sum()
        del y  # dropped before the await: it stays in registers
        assert_close(await s.to_data(), expected(), rtol=1e-4)
        small = x[:100] * 2.0  # named, but under the threshold
        assert_close(await (small + 1.0).sum().to_data(),
                     (host()[:100] * 2 + 1).sum(), rtol=1e-4)
        z = (x * 2.0).exp()
        got_z, got_s = await af.to_data(z, (z + 1.0).sum())  # the round reads z itself
        assert_close(got_s, expected(), rtol=1e-4)
        del small, z


async def test_each_line_warns_once(fdev):
    x = af.tensor(host(), device=fdev)
    with pytest.warns(af.IntermediateKeptWarning) as record:
        for _ in range(3):
            y = (x * 2.0).exp()
            got = await (y + 1.0).sum().to_data()
            assert_close(got, expected(), rtol=1e-4)
    assert len(record.list) == 1


async def test_only_debug_mode_looks(request, monkeypatch):
    monkeypatch.setattr(_debug, "DEBUG", False)
    monkeypatch.setattr(_debug, "KEPT_BYTES", 16 << 10)
    async with device_for_test(request, fusion=True) as dev:
        assert dev._server.executor.kept is None and dev._kept is None
        x = af.tensor(host(), device=dev)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = (x * 2.0).exp()
            assert_close(await (y + 1.0).sum().to_data(), expected(), rtol=1e-4)
        del x, y


def _line() -> int:
    import sys

    return sys._getframe(1).f_lineno
