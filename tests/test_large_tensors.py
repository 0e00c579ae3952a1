"""Tensors past one storage binding (lavapipe binds 128 MiB of a buffer, and holds
buffers up to 2 GiB): creation, upload, element-wise work and reads of a (8192, 8192)
float32 tensor (256 MiB), its element-wise kernels split into launches that each bind
a window of the buffers; an op that cannot split (a reduction of the whole tensor)
fails naming the binding limit, and slices of it reduce."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af

N = 8192


def _big(dev) -> bool:
    return dev.max_binding < N * N * 4 <= dev.max_buffer_size


async def test_a_tensor_larger_than_one_binding_works_element_wise(dev):
    if not _big(dev):
        pytest.skip("this adapter binds a (8192, 8192) float32 tensor whole")
    host = np.full((N, N), 1.5, np.float32)
    x = af.tensor(host, device=dev)  # an upload of 256 MiB
    del host
    bias = af.arange(N, dtype=af.float32, device=dev)
    await dev.sync()
    before = dev.stats().launches
    y = x * 2.0 + bias  # one fused kernel: a dense load and a broadcast one
    np.testing.assert_array_equal(await y[0, :3].to_data(), np.float32([3, 4, 5]))
    np.testing.assert_array_equal(await y[-1, -3:].to_data(), 3 + np.float32([8189, 8190, 8191]))
    np.testing.assert_array_equal(await y[N // 2, N // 2:N // 2 + 2].to_data(),
                                  3 + np.float32([4096, 4097]))
    assert dev.stats().launches - before == 2  # two pieces of 128 MiB windows
    del x, y
    twos = af.ones((N, N), dtype=af.float32, device=dev) + 1.0  # in place, past the binding
    halves = (twos[:N // 2].sum() + twos[N // 2:].sum()).to_data()  # slices that fit
    assert float(await halves) == 2 * N * N
    # ops that cannot split their bindings refuse where they are called, naming the limit
    for what, call in (("sum()", lambda: twos.sum()), ("matmul", lambda: twos @ twos),
                       ("topk", lambda: af.topk(twos, 3)), ("argsort", lambda: af.argsort(twos)),
                       ("take_along_axis", lambda: af.take(twos, [0, 1], axis=0))):
        with pytest.raises(af.LimitError, match="max-storage-buffer-binding-size") as info:
            call()
        assert f"({dev.max_binding} bytes; its max-buffer-size" in str(info.value), what
    assert float(await twos[:2, :2].sum().to_data()) == 8.0  # the device still serves


def test_the_largest_buffer_is_named_with_the_adapters_number(dev):
    too = dev.max_buffer_size // 4 + 1
    with pytest.raises(af.LimitError, match=rf"max-buffer-size: {dev.max_buffer_size} bytes"):
        af.zeros((too,), dtype=af.float32, device=dev)
