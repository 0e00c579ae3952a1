"""The device's context manager: what the body raises comes out as itself; bad arguments
are refused when the device opens."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

import asyncfusion as af


async def test_an_exception_from_the_body_comes_out_as_itself():
    with pytest.raises(ValueError, match="mine") as info:
        async with af.open_device():
            raise ValueError("mine")
    assert type(info.value) is ValueError


async def test_an_execution_error_from_the_body_can_be_caught_by_its_class():
    caught = None
    try:
        async with af.open_device() as dev:
            x = af.tensor([1.0], device=dev)
            with dev.inject_fault("launch", op="exp"):
                await x.exp().to_data()
    except af.ExecutionError as exc:
        caught = exc
    assert caught is not None and "injected launch failure of exp" in str(caught)
    assert caught.__cause__ is not None  # the cause chain is kept


async def test_a_group_raised_by_the_body_is_not_flattened():
    async def fail(msg: str) -> None:
        raise KeyError(msg)

    with pytest.raises(BaseExceptionGroup) as info:
        async with af.open_device("numpy"):
            async with anyio.create_task_group() as tg:
                tg.start_soon(fail, "a")
                tg.start_soon(fail, "b")
    leaves = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                walk(sub)
        else:
            leaves.append(e)

    walk(info.value)
    assert sorted(str(e) for e in leaves) == ["'a'", "'b'"]


async def test_the_device_still_closes_after_the_body_raised():
    with pytest.raises(RuntimeError):
        async with af.open_device() as dev:
            x = af.tensor(np.ones(4, np.float32), device=dev)
            raise RuntimeError("boom")
    assert dev.closed
    with pytest.raises(af.DeviceClosedError):
        x + 1.0
