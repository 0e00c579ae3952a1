"""``asyncfusion.testing`` and the pytest plugin, as a user's suite sees them.

The plugin tests run small pytest sessions (``pytester``) in this process: the plugin is
loaded through its ``pytest11`` entry point, exactly as in a user's project.
"""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.testing import assert_array_close, assert_close, assert_no_leaks

EXAMPLE = Path(__file__).parent.parent / "examples" / "test_example.py"
ARGS = ("-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function")


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_user=source)
    return pytester.runpytest_inprocess(*ARGS, *args)


# -- assert_close ---------------------------------------------------------------------------
async def test_assert_close_reads_tensors_on_either_side(dev):
    x = af.tensor([1.0, 2.0, 3.0], device=dev)
    await assert_close(x * 2.0, np.array([2.0, 4.0, 6.0]))
    await assert_close(np.array([2.0, 4.0, 6.0], np.float32), x + x)
    await assert_close((x > 1.5).astype(af.int32).sum(), 2)


def test_assert_close_reports_like_numpy_testing():
    actual = np.array([[1.0, 2.0, 3.0], [4.0, np.nan, 6.0]], np.float32)
    expected = np.array([[1.0, 2.5, 3.0], [4.0, 5.0, 3.0]], np.float32)
    with pytest.raises(AssertionError) as info:
        assert_array_close(actual, expected, rtol=1e-3, atol=0.0)
    report = str(info.value)
    assert "Mismatched elements: 3 / 6 (50%)" in report
    assert "at (0, 1): actual" in report and "at (1, 1)" in report and "at (1, 2)" in report
    assert "Max absolute difference among violations: 3" in report
    assert "Max relative difference among violations: 1" in report
    assert "rtol=0.001, atol=0" in report


def test_assert_close_nan_inf_and_exact_integers():
    nan_inf = np.array([np.nan, np.inf, -np.inf], np.float32)
    assert_array_close(nan_inf, nan_inf.copy())
    with pytest.raises(AssertionError, match="1 / 3"):
        assert_array_close(nan_inf, nan_inf.copy(), equal_nan=False)
    with pytest.raises(AssertionError, match="at \\(1,\\): actual np.int32\\(3\\)"):
        assert_array_close(np.array([1, 3], np.int32), np.array([1, 2], np.int32))


def test_assert_close_checks_shape_and_dtype_but_accepts_numpy_float64():
    x = np.ones(3, np.float32)
    assert_array_close(x, np.ones(3))  # float64 expected: the dtype asyncfusion narrows to
    with pytest.raises(AssertionError, match="dtypes differ: actual int32, expected float32"):
        assert_array_close(x.astype(np.int32), x)
    with pytest.raises(AssertionError, match="shapes differ"):
        assert_array_close(x, np.ones((3, 1), np.float32))
    with pytest.raises(TypeError, match="await"):
        assert_array_close(af.tensor([1.0]), x)


# -- assert_no_leaks ---------------------------------------------------------------------------
async def test_assert_no_leaks_names_the_tensors_still_alive(ref):
    kept = af.tensor([[1.0, 2.0]], device=ref) * 2.0
    with pytest.raises(AssertionError, match=rf"outlived the check.*t{kept.id} \(1, 2\) float32"):
        await assert_no_leaks(ref, "the check")
    del kept
    await assert_no_leaks(ref)


async def test_assert_no_leaks_reports_work_still_queued(ref, monkeypatch):
    async def no_sync() -> None:  # as if a stream kept registering after the settle
        pass

    x = af.tensor([1.0], device=ref) + 1.0
    monkeypatch.setattr(ref, "sync", no_sync)
    with pytest.raises(AssertionError, match=r"2 queued op\(s\) outlived the test"):
        await assert_no_leaks(ref)
    monkeypatch.undo()
    await assert_close(x, [2.0])


async def test_a_failed_read_leaks_nothing(dev):
    async def fail_a_read() -> None:
        x = af.tensor([1.0, 2.0], device=dev)
        y = x.exp()
        with dev.inject_fault("launch", op="exp"):
            with pytest.raises(af.ExecutionError):
                await y.to_data()

    await fail_a_read()  # its frame, and x and y in it, are gone once it returns
    gc.collect()
    await dev.sync()
    assert dev.memory_stats().live_buffers == 0


# -- the plugin -----------------------------------------------------------------------------
def test_the_example_runs_fused_and_plain_under_both_plugins(pytester):
    pytester.makepyfile(test_example=EXAMPLE.read_text())
    result = pytester.runpytest_inprocess(*ARGS, "--af-fusion=both", "-v")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["*test_softplus_matches_numpy?trio-fused? PASSED*",
                                 "*test_softplus_is_positive?plain* PASSED*",
                                 "*test_plain_tests_use_the_blocking_door?plain* PASSED*"])


def test_af_fusion_option_and_marker_choose_the_device(pytester):
    result = run(pytester, """
import pytest

@pytest.mark.anyio
async def test_off(af_device, anyio_backend):
    assert af_device.fusion is False and not af_device.closed

@pytest.mark.anyio
@pytest.mark.af_device(fusion=True, max_storage_bindings=8)
async def test_marker_wins(af_device):
    assert af_device.fusion is True

@pytest.fixture
def anyio_backend():
    return "trio"
""", "--af-fusion=off")
    result.assert_outcomes(passed=2)


def test_a_tensor_that_outlives_its_test_fails_it(pytester):
    result = run(pytester, """
import pytest
import asyncfusion as af

KEEP = []

@pytest.mark.asyncio
async def test_keeps_a_tensor(af_device):
    KEEP.append(af.tensor([1.0, 2.0, 3.0], device=af_device) + 1.0)
    assert (await KEEP[0].to_data())[0] == 2.0

def test_sync_keeps_a_tensor(af_device):
    KEEP.append(af.ones((2, 2), device=af_device))

@pytest.mark.asyncio
@pytest.mark.af_device(leak_check=False)
async def test_may_keep_a_tensor(af_device):
    KEEP.append(af.zeros((1,), device=af_device))

@pytest.mark.asyncio
async def test_fails_and_keeps_a_tensor(af_device):
    KEEP.append(af.zeros((1,), device=af_device))
    assert False, "the test's own failure"
""")
    result.assert_outcomes(passed=3, failed=1, errors=2)
    result.stdout.fnmatch_lines([
        "*AssertionError: 1 buffer(s) outlived test test_keeps_a_tensor on*: tensors t* (3,) "
        "float32*",
        "*1 buffer(s) outlived test test_sync_keeps_a_tensor*(2, 2) float32*",
    ])
    assert "outlived test test_fails_and_keeps_a_tensor" not in result.stdout.str()
    assert "outlived test test_may_keep" not in result.stdout.str()


def test_af_asgi_client_runs_the_app_fixtures_lifespan_under_every_plugin(pytester):
    result = run(pytester, """
import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from asyncfusion.contrib.starlette import ArrayJSONResponse, DeviceService

SVC = DeviceService(backend="numpy")

async def ones(request):
    import asyncfusion as af
    return ArrayJSONResponse({"sum": await af.ones((3,), device=SVC.device()).sum().to_data()})

@pytest.fixture
def app():
    return Starlette(routes=[*SVC.routes, Route("/ones", ones)], lifespan=SVC.lifespan,
                     exception_handlers=SVC.exception_handlers)

@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param

@pytest.mark.anyio
async def test_under_anyio(af_asgi_client):
    assert (await af_asgi_client.get("/health")).status_code == 200
    r = await af_asgi_client.get("/ones")
    assert r.status_code == 200 and r.json() == {"sum": 3.0}

@pytest.mark.asyncio
async def test_under_pytest_asyncio(af_asgi_client):
    assert (await af_asgi_client.get("/health")).json()["status"] == "ok"

def test_after_them_the_lifespan_closed_the_device():
    import asyncfusion as af
    with pytest.raises(af.DeviceClosedError):
        SVC.device()

def test_in_a_plain_test(af_asgi_client):
    pass
""", "-v")
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(["*test_under_anyio?trio? PASSED*",
                                 "*af_asgi_client is an httpx.AsyncClient: use it in an async "
                                 "test*"])
