"""Shared fixtures: every async test runs on asyncio (debug mode) and trio.

``dev`` is the plugin's ``af_device`` (a wgpu device with fusion), ``plain`` the same
backend unfused, ``ref`` the numpy reference backend; each fails its test when buffers or
queued work outlive it (``asyncfusion.pytest_plugin``). A blockbuster guard fails any
blocking call made on the asyncio event loop thread while a test runs. ``assert_close``
is ``asyncfusion.testing.assert_array_close``.
"""

from __future__ import annotations

import inspect
import os

os.environ.setdefault("ASYNCFUSION_DEBUG", "1")  # before asyncfusion reads it

import hypothesis  # noqa: E402,F401 - before the first device freezes the collector (trio
# registers its random with hypothesis on import, which looks for referrers gc.freeze hides)
import numpy.testing  # noqa: E402,F401 - imported lazily it would trip blockbuster
import pytest  # noqa: E402

from asyncfusion.pytest_plugin import device_for_test  # noqa: E402
from asyncfusion.testing import assert_array_close as assert_close  # noqa: E402,F401

pytest_plugins = ["pytester"]


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
def dev(blockbuster, af_device):
    """The plugin's ``af_device`` (fused unless ``--af-fusion=off``), leak-checked."""
    return af_device


@pytest.fixture
async def plain(blockbuster, request):
    async with device_for_test(request, fusion=False) as d:
        yield d


@pytest.fixture
async def ref(request):
    async with device_for_test(request, backend="numpy") as d:
        yield d
