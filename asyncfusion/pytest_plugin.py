"""The asyncfusion pytest plugin (entry point ``pytest11``; active once installed).

Fixtures
    ``af_device``: a device opened for one test and closed after it. An async test gets a
    device whose server runs in the test's own event loop — under anyio's plugin (asyncio
    and trio) or pytest-asyncio — and a plain test gets one whose server runs on its own
    thread (use the blocking door: ``t.numpy()``, ``t.to_data_sync()``). After a passing
    test the fixture settles the device and fails the test when buffers or queued work
    are still alive (:func:`asyncfusion.testing.assert_no_leaks`).

    ``af_fusion``: whether ``af_device`` fuses (from ``--af-fusion``).

    ``af_asgi_client``: an ``httpx.AsyncClient`` bound to the ASGI app that a fixture
    named ``app`` returns (define it in your ``conftest.py`` or test module), with the
    app's lifespan running for the test (:func:`asyncfusion.testing.asgi_client`): a
    service's device is open, so requests get their answers, not 503s. For async tests
    (anyio's plugin or pytest-asyncio).

Marker
    ``@pytest.mark.af_device(**options)``: keyword arguments for ``open_device``
    (``backend``, ``fusion``, ``max_storage_bindings``, ...) and ``leak_check=False``.

Option
    ``--af-fusion=on|off|both``: run ``af_device`` fused (default), plain, or every test
    twice, once each way (test ids gain ``[fused]`` / ``[plain]``).

Nothing here imports asyncfusion until a fixture runs, so the plugin costs nothing in
projects that do not use it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Generator, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    import httpx

    from .runtime import Device
    from .testing import ASGIApp

_T = TypeVar("_T")

__all__ = ["device_for_test"]

_FAILED = pytest.StashKey[bool]()
_CHOICES = {"on": [True], "off": [False], "both": [True, False]}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("asyncfusion")
    group.addoption("--af-fusion", choices=sorted(_CHOICES), default="on",
                    help="af_device with fusion (on), without (off), or each test both ways")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "af_device(**options): open_device() options for the af_device fixture "
                   "(backend, fusion, max_storage_bindings, ...); leak_check=False skips the "
                   "check for buffers and queued work that outlive the test")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "af_fusion" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("af_device")
    if marker is not None and "fusion" in marker.kwargs:
        return
    choice = metafunc.config.getoption("af_fusion")
    if len(_CHOICES[choice]) > 1:
        metafunc.parametrize("af_fusion", _CHOICES[choice], indirect=True,
                             ids=["fused", "plain"])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        item.stash[_FAILED] = True
    return report


@pytest.fixture
def af_fusion(request: pytest.FixtureRequest) -> bool:
    """Whether ``af_device`` fuses: the test's marker, else ``--af-fusion`` (default on)."""
    marker = request.node.get_closest_marker("af_device")
    if marker is not None and "fusion" in marker.kwargs:
        return bool(marker.kwargs["fusion"])
    param = getattr(request, "param", None)
    if param is not None:
        return bool(param)
    return bool(_CHOICES[request.config.getoption("af_fusion")][0])


@contextlib.asynccontextmanager
async def device_for_test(request: pytest.FixtureRequest, **options: Any
                          ) -> AsyncIterator[Device]:
    """Open a device in the running event loop for ``request``'s test; on exit, after a
    passing test, fail when buffers or queued work outlive it (unless the test's
    ``af_device`` marker says ``leak_check=False``)."""
    import asyncfusion as af
    from .testing import assert_no_leaks

    kwargs, check = _options(request, options)
    async with af.open_device(**kwargs) as dev:
        yield dev
        if check and not request.node.stash.get(_FAILED, False):
            await assert_no_leaks(dev, f"test {request.node.name}")


def _options(request: pytest.FixtureRequest, given: dict[str, Any]
             ) -> tuple[dict[str, Any], bool]:
    marker = request.node.get_closest_marker("af_device")
    kwargs = {**(marker.kwargs if marker else {}), **given}
    return kwargs, bool(kwargs.pop("leak_check", True))


@pytest.fixture
def af_device(request: pytest.FixtureRequest, af_fusion: bool) -> Device:
    """A device for this test, fused per ``--af-fusion``; see the module's docstring."""
    if "anyio_backend" in request.fixturenames:
        return request.getfixturevalue("_af_device_anyio")  # type: ignore[no-any-return]
    if request.node.get_closest_marker("asyncio") is not None and _pytest_asyncio:
        return request.getfixturevalue("_af_device_asyncio")  # type: ignore[no-any-return]
    return request.getfixturevalue("_af_device_thread")  # type: ignore[no-any-return]


@pytest.fixture
async def _af_device_anyio(request: pytest.FixtureRequest, af_fusion: bool
                           ) -> AsyncIterator[Device]:
    async with device_for_test(request, fusion=af_fusion) as dev:
        yield dev


@pytest.fixture
def af_asgi_client(request: pytest.FixtureRequest) -> httpx.AsyncClient:
    """A client for the ``app`` fixture's app, its lifespan running; see the module's
    docstring."""
    if "anyio_backend" in request.fixturenames:
        return request.getfixturevalue("_af_asgi_client_anyio")  # type: ignore[no-any-return]
    if request.node.get_closest_marker("asyncio") is not None and _pytest_asyncio:
        return request.getfixturevalue("_af_asgi_client_asyncio")  # type: ignore[no-any-return]
    pytest.fail("af_asgi_client is an httpx.AsyncClient: use it in an async test "
                "(@pytest.mark.anyio or @pytest.mark.asyncio)", pytrace=False)


@pytest.fixture
async def _af_asgi_client_anyio(app: ASGIApp) -> AsyncIterator[httpx.AsyncClient]:
    from .testing import asgi_client

    async with asgi_client(app) as client:
        yield client


@pytest.fixture
def _af_device_thread(request: pytest.FixtureRequest, af_fusion: bool) -> Iterator[Device]:
    from anyio.from_thread import start_blocking_portal

    with start_blocking_portal() as portal, portal.wrap_async_context_manager(
            device_for_test(request, fusion=af_fusion)) as dev:
        yield dev


try:
    import pytest_asyncio
except ImportError:  # pragma: no cover - pytest-asyncio is optional
    _pytest_asyncio = False
else:
    _pytest_asyncio = True

    @pytest_asyncio.fixture
    async def _af_device_asyncio(request: pytest.FixtureRequest, af_fusion: bool
                                 ) -> AsyncIterator[Device]:
        async for dev in _held_in_a_task(device_for_test(request, fusion=af_fusion)):
            yield dev

    @pytest_asyncio.fixture
    async def _af_asgi_client_asyncio(app: ASGIApp) -> AsyncIterator[httpx.AsyncClient]:
        from .testing import asgi_client

        async for client in _held_in_a_task(asgi_client(app)):
            yield client

    async def _held_in_a_task(cm: contextlib.AbstractAsyncContextManager[_T]
                              ) -> AsyncIterator[_T]:
        # pytest-asyncio sets a fixture up and tears it down in two different tasks, and a
        # task group must be left by the task that entered it: ``cm`` is held by a task of
        # its own, in the test's loop, until the fixture is torn down.
        import asyncio

        ready: asyncio.Future[_T] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()

        async def hold() -> None:
            async with cm as value:
                ready.set_result(value)
                await stop.wait()

        holder = asyncio.create_task(hold())
        waiting: set[asyncio.Future[_T] | asyncio.Task[None]] = {ready, holder}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            holder.result()  # entering cm failed: raise why
        yield ready.result()
        stop.set()
        await holder
