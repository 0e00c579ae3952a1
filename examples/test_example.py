"""A user's tests, written with asyncfusion's pytest plugin.

Installing asyncfusion registers the plugin (entry point ``pytest11``): nothing to add to
``conftest.py``. ``af_device`` opens a device for one test, closes it afterwards and fails
the test if tensors or queued work outlive it. Run these with either async plugin:

    pytest examples/test_example.py                     # fused (the default)
    pytest examples/test_example.py --af-fusion=both    # every test fused and plain
"""

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.testing import assert_close


def softplus(x: af.Tensor) -> af.Tensor:
    """The code under test: log(1 + exp(x)), written with asyncfusion ops."""
    return (x.exp() + 1.0).log()


@pytest.mark.anyio  # anyio's plugin: runs on every anyio_backend (asyncio and trio below)
async def test_softplus_matches_numpy(af_device):
    x = af.tensor(np.linspace(-3, 3, 7, dtype=np.float32), device=af_device)
    await assert_close(softplus(x), np.log1p(np.exp(np.linspace(-3, 3, 7))), rtol=1e-5)


@pytest.mark.asyncio  # pytest-asyncio works the same way
async def test_softplus_is_positive(af_device):
    y = softplus(af.randn((1000,), seed=0, device=af_device))
    assert (await y.min().to_data()) > 0


@pytest.mark.af_device(backend="numpy")  # open_device() options for this test
def test_plain_tests_use_the_blocking_door(af_device):
    y = softplus(af.zeros((3,), device=af_device))
    np.testing.assert_allclose(y.numpy(), np.log(2.0), rtol=1e-6)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param
