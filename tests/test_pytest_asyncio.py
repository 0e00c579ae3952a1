"""asyncfusion in a user's pytest-asyncio suite (most async test suites use that plugin)."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af


@pytest.mark.asyncio
async def test_works_under_pytest_asyncio():
    async with af.open_device() as dev:
        x = af.arange(8, dtype=af.float32, device=dev)
        out = await ((x * 2.0 + 1.0).sqrt()).to_data()
    np.testing.assert_allclose(out, np.sqrt(np.arange(8, dtype=np.float32) * 2 + 1), rtol=1e-6)
