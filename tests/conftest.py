"""Shared fixtures: every async test runs on asyncio (debug mode) and trio.

``dev`` is a wgpu device with fusion, ``plain`` the same backend unfused, ``ref`` the
numpy reference backend. A blockbuster guard fails any blocking call made on the
asyncio event loop thread while a test runs.
"""

from __future__ import annotations

import inspect
import os

os.environ.setdefault("ASYNCFUSION_DEBUG", "1")  # before asyncfusion reads it

import numpy as np  # noqa: E402
import numpy.testing  # noqa: E402,F401 - imported lazily it would trip blockbuster
import pytest  # noqa: E402

import asyncfusion as af  # noqa: E402


@pytest.fixture(params=[pytest.param(("asyncio", {"debug": True}), id="asyncio"),
                        pytest.param(("trio", {}), id="trio")])
def anyio_backend(request):
    return request.param


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """Run every ``async def`` test on anyio's backends unless it asks for pytest-asyncio."""
    inner = getattr(getattr(obj, "hypothesis", None), "inner_test", obj)  # @given wraps it
    if collector.istestfunction(obj, name) and inspect.iscoroutinefunction(inner):
        marks = {m.name for m in getattr(obj, "pytestmark", [])}
        if "asyncio" not in marks and "anyio" not in marks:
            pytest.mark.anyio(obj)


@pytest.fixture
def blockbuster():
    from blockbuster import blockbuster_ctx

    with blockbuster_ctx() as bb:
        yield bb


@pytest.fixture
async def dev(blockbuster):
    async with af.open_device() as d:
        yield d


@pytest.fixture
async def plain(blockbuster):
    async with af.open_device(fusion=False) as d:
        yield d


@pytest.fixture
async def ref():
    async with af.open_device("numpy") as d:
        yield d


def assert_close(actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-5,
                 atol: float = 1e-6) -> None:
    """Equal dtype and shape; values within tolerance, NaN where numpy has NaN."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)
