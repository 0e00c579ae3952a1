"""Opaque custom kernels (af.custom_kernel), resolve (buffers out) and adopt (buffers in)."""

from __future__ import annotations

import functools
import math

import anyio
import numpy as np
import pytest
import wgpu

import asyncfusion as af
from asyncfusion.extend import custom_kernel as kernels_custom
from tests.conftest import assert_close

SCALE_ADD = """
struct P { n: u32, k: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < p.n) { out[g.x] = a[g.x] * p.k + b[g.x]; }
}
"""
SUM_DIFF = """
struct P { n: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> a: array<i32>;
@group(0) @binding(2) var<storage, read> b: array<i32>;
@group(0) @binding(3) var<storage, read_write> s: array<i32>;
@group(0) @binding(4) var<storage, read_write> d: array<i32>;
@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < p.n) { s[g.x] = a[g.x] + b[g.x]; d[g.x] = a[g.x] - b[g.x]; }
}
"""


def _groups(size: int) -> int:
    return -(-size // 64)


scale_add = af.custom_kernel(
    "scale_add", wgsl=SCALE_ADD, inputs=2, outputs=lambda a, b, *_: (a.shape, a.dtype),
    workgroups=lambda a, b, *_: _groups(math.prod(a.shape)),
    numpy=lambda a, b, n, k: a * k + b)
sum_diff = af.custom_kernel(
    "sum_diff", wgsl=SUM_DIFF, inputs=2,
    outputs=lambda a, b, *_: [(a.shape, a.dtype), (a.shape, a.dtype)],
    workgroups=lambda a, b, *_: -(-math.prod(a.shape) // 32),
    numpy=lambda a, b, n: (a + b, a - b))


async def _read(rt, gpu, offset=0):
    """queue.read_buffer blocks until the GPU is done: off the event loop."""
    return await anyio.to_thread.run_sync(functools.partial(rt.queue.read_buffer, gpu, offset))


_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


async def test_custom_kernel_runs_in_stream_order_between_fused_kernels(dev, ref):
    x_np = np.linspace(-2, 2, 100, dtype=np.float32)
    results = []
    for device in (dev, ref):
        x = af.tensor(x_np, device=device)
        z = scale_add(x * 2.0, x + 1.0, params=(100, 3.0))
        total = (z.exp() + 1.0).sum()
        device.reset_stats()
        results.append((await z.to_data(), await total.to_data()))
        if device is dev:  # the two inputs fused into one kernel, then the custom launch
            assert device.stats().kernels["custom[scale_add]"] == 1
    want = x_np * 2 * 3 + x_np + 1
    assert_close(results[0][0], want, rtol=1e-6)
    assert_close(results[1][0], want, rtol=1e-6)
    assert_close(results[0][1], np.float32((np.exp(want) + 1).sum()), rtol=1e-5)


async def test_a_call_signature_is_worked_out_once_and_its_param_types_count(dev, ref):
    """The rules of a kernel run once per (input shapes and dtypes, params and their
    types, backend): a repeated call records at once; 3 (an int param) and 3.0 (a float:
    other bits) are different calls, and each gives its own result."""
    ran = []

    def rule(a, b, *_):
        ran.append(a.shape)
        return (a.shape, a.dtype)

    k = af.custom_kernel("scale_add_counted", wgsl=SCALE_ADD, inputs=2, outputs=rule,
                         workgroups=lambda a, b, *_: _groups(math.prod(a.shape)),
                         numpy=lambda a, b, n, k: a * np.float32(k) + b)
    for device in (dev, ref):
        ran.clear()
        x = af.tensor(np.arange(8, dtype=np.float32), device=device)
        outs = [k(x, x, params=(8, 3.0)) for _ in range(5)]
        assert ran == [(8,)]  # worked out once for five calls
        for o in outs:
            assert_close(await o.to_data(), np.arange(8, dtype=np.float32) * 4)
        as_int = k(x, x, params=(8, 3))
        assert ran == [(8,), (8,)]  # an int 3 is not the float 3.0
        got = await as_int.to_data()
        if device is ref:  # the numpy twin takes the value
            assert_close(got, np.arange(8, dtype=np.float32) * 4)
        else:  # the kernel reads the int's bits as f32: a denormal, next to nothing
            assert_close(got, np.arange(8, dtype=np.float32))


async def test_several_outputs_views_and_liveness(dev):
    a_np = np.arange(12, dtype=np.int32).reshape(3, 4)
    a = af.tensor(a_np, device=dev)
    b = af.tensor(a_np * 10, device=dev)
    await dev.sync()
    base = dev.memory_stats().live_buffers
    s, d = sum_diff(a.T, b.T, params=(12,))  # views: copied to dense inputs first
    assert s.shape == (4, 3) and d.dtype is af.int32
    assert_close(await s.to_data(), (a_np + a_np * 10).T)
    assert_close(await d.to_data(), (a_np - a_np * 10).T)
    del s, d
    await dev.sync()
    await dev.sync()  # the drops reach the memory owner at the next round
    assert dev.memory_stats().live_buffers == base


async def test_dropped_unread_outputs_are_freed(dev):
    a = af.tensor(np.ones(40, np.int32), device=dev)
    await dev.sync()
    base = dev.memory_stats().live_buffers
    s, d = sum_diff(a, a, params=(40,))
    del d
    assert_close(await s.to_data(), np.full(40, 2, np.int32))
    del s
    await dev.sync()
    await dev.sync()
    assert dev.memory_stats().live_buffers == base


async def test_a_failed_custom_launch_poisons_only_its_outputs(dev):
    x = af.tensor(np.ones(8, np.float32), device=dev)
    good = x + 1.0
    with dev.inject_fault("launch", op="custom[scale_add]"):
        z = scale_add(x, x, params=(8, 2.0))
        after = z * 2.0
        with pytest.raises(af.ExecutionError, match="injected launch failure"):
            await after.to_data()
    assert_close(await good.to_data(), np.full(8, 2.0, np.float32))
    assert_close(await scale_add(x, x, params=(8, 2.0)).to_data(), np.full(8, 3.0, np.float32))


async def test_a_poisoned_input_poisons_the_custom_output(dev):
    x = af.tensor(np.ones(8, np.float32), device=dev)
    with dev.inject_fault("launch", op="exp"):
        z = scale_add(x.exp(), x, params=(8, 2.0))
        with pytest.raises(af.ExecutionError, match="injected"):
            await z.to_data()


async def test_wgsl_errors_raise_at_registration_with_wgpu_text_and_compile_once(dev):
    # a wgpu device is open: the shader compiles when the kernel is registered
    with pytest.raises(af.KernelCompileError, match="nope") as info:
        af.custom_kernel("bad_kernel", wgsl=SCALE_ADD.replace("p.k", "p.nope"), inputs=2,
                         outputs=lambda a, b, *_: (a.shape, a.dtype),
                         workgroups=lambda a, b, *_: 1)
    assert isinstance(info.value, ValueError)
    x = af.tensor([1.0, 2.0], device=dev)
    # bindings that do not match the ones asyncfusion binds (an input declared read_write)
    rw = af.custom_kernel("rw_input", wgsl=SCALE_ADD.replace("<storage, read> a",
                                                             "<storage, read_write> a"),
                          inputs=2, outputs=lambda a, b, *_: (a.shape, a.dtype),
                          workgroups=lambda a, b, *_: 1)
    with pytest.raises(af.KernelCompileError, match="var<storage, read> input"):
        rw(x, x)
    scale_add(x, x, params=(2, 1.0))
    rt = dev.backend.rt
    before = rt.pipelines_created
    z = scale_add(x, x, params=(2, 1.0))  # cached by text: nothing compiles again
    assert rt.pipelines_created == before
    assert_close(await z.to_data(), np.array([2.0, 4.0], np.float32))


async def test_bad_calls_are_refused_at_the_call(dev, ref):
    x = af.tensor([1.0, 2.0], device=dev)
    with pytest.raises(TypeError, match="takes 2 input"):
        scale_add(x)
    with pytest.raises(TypeError, match="params are ints, floats and bools"):
        scale_add(x, x, params=("n",))
    with pytest.raises(af.DeviceMismatchError):
        scale_add(x, af.tensor([1.0, 2.0], device=ref))
    huge = af.custom_kernel("huge_grid", wgsl=SCALE_ADD, inputs=2,
                            outputs=lambda a, b, *_: (a.shape, a.dtype),
                            workgroups=lambda a, b, *_: 1 << 30)
    with pytest.raises(af.LimitError, match="per dimension"):
        huge(x, x)
    no_twin = af.custom_kernel("no_twin", wgsl=SCALE_ADD, inputs=2,
                               outputs=lambda a, b, *_: (a.shape, a.dtype),
                               workgroups=lambda a, b, *_: 1)
    with pytest.raises(TypeError, match="no numpy twin"):
        no_twin(af.tensor([1.0], device=ref), af.tensor([1.0], device=ref))
    with pytest.raises(ValueError, match="lower_snake_case"):
        af.custom_kernel("Bad", wgsl=SCALE_ADD, inputs=1, outputs=lambda a: a,
                         workgroups=lambda a: 1)


async def test_resolve_hands_out_the_buffer_and_keeps_it_alive(dev):
    x = af.tensor(np.arange(64, dtype=np.float32), device=dev)
    y = x * 2.0 + 1.0
    await dev.sync()
    base = dev.memory_stats().live_buffers
    buf = await af.resolve(y)
    assert buf.shape == (64,) and buf.dtype is af.float32 and buf.contiguous
    assert buf.nbytes == 256 and buf.gpu_device is dev.backend.rt.device
    del y
    await dev.sync()
    await dev.sync()
    assert dev.memory_stats().live_buffers == base  # y's buffer is held by the handle
    rt = dev.backend.rt
    copy = rt.device.create_buffer(size=256, usage=_STORAGE)
    enc = rt.device.create_command_encoder()
    enc.copy_buffer_to_buffer(buf.buffer, buf.offset, copy, 0, buf.nbytes)
    rt.queue.submit([enc.finish()])
    got = np.frombuffer(await _read(rt, copy), np.float32)
    copy.destroy()
    assert_close(got, np.arange(64, dtype=np.float32) * 2 + 1)
    buf.release()
    assert buf.released
    await dev.sync()
    await dev.sync()
    assert dev.memory_stats().live_buffers == base - 1


async def test_resolve_of_a_view_and_of_a_failed_tensor(dev):
    x = af.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=dev)
    async with af.resolve(x[1:, ::2]) as buf:
        assert buf.offset == 4 * 4 and buf.strides == (4, 2) and not buf.contiguous
    assert buf.released
    with dev.inject_fault("launch", op="exp"):
        bad = x.exp()
        with pytest.raises(af.ExecutionError, match="injected"):
            await af.resolve(bad)


async def test_resolve_on_numpy_devices_gives_host_bytes(ref):
    x = af.tensor(np.arange(4, dtype=np.int32), device=ref) + 1
    async with af.resolve(x) as buf:
        assert buf.gpu_device is None
        assert_close(buf.buffer[buf.offset:buf.offset + buf.nbytes].view(np.int32),
                     np.arange(1, 5, dtype=np.int32))


async def test_adopt_makes_a_tensor_of_a_buffer_without_copy_or_ownership(dev):
    rt = dev.backend.rt
    data = np.arange(32, dtype=np.float32)
    gpu = rt.device.create_buffer(size=256 + 128, usage=_STORAGE)
    rt.queue.write_buffer(gpu, 256, data.tobytes())
    before = dev.memory_stats()
    t = af.adopt(gpu, (4, 8), af.float32, device=dev, offset=256)
    out = t + 1.0  # t's last use: its buffer must not be lent to the output
    assert_close(await out.to_data(), data.reshape(4, 8) + 1)
    assert dev.memory_stats().live_buffers == before.live_buffers + 1  # out only
    del t, out
    await dev.sync()
    await dev.sync()
    assert dev.memory_stats().live_buffers == before.live_buffers
    # still the caller's: not destroyed, not pooled, not written
    assert_close(np.frombuffer(await _read(rt, gpu, 256), np.float32), data)
    gpu.destroy()


async def test_adopt_feeds_a_custom_kernel_and_is_validated(dev, ref):
    rt = dev.backend.rt
    gpu = rt.device.create_buffer(size=64, usage=_STORAGE)
    rt.queue.write_buffer(gpu, 0, np.full(16, 2.0, np.float32).tobytes())
    t = af.adopt(gpu, (16,), "float32", device=dev)
    assert_close(await scale_add(t, t, params=(16, 4.0)).to_data(), np.full(16, 10.0))
    with pytest.raises(af.LimitError, match="needs 128 bytes"):
        af.adopt(gpu, (32,), af.float32, device=dev)
    with pytest.raises(ValueError, match="storage alignment"):
        af.adopt(gpu, (1,), af.float32, device=dev, offset=4)
    staging = rt.device.create_buffer(size=64, usage=wgpu.BufferUsage.MAP_READ |
                                      wgpu.BufferUsage.COPY_DST)
    with pytest.raises(af.DataError, match="STORAGE and COPY_SRC"):
        af.adopt(staging, (16,), af.float32, device=dev)
    with pytest.raises(TypeError, match="not a wgpu device"):
        af.adopt(gpu, (16,), af.float32, device=ref)
    del t
    await dev.sync()
    staging.destroy()
    gpu.destroy()


def test_the_example_checks_itself_against_numpy():
    import subprocess
    import sys
    from pathlib import Path

    path = Path(__file__).parent.parent / "examples" / "custom_kernel.py"
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "matches numpy" in proc.stdout and "resolve -> wgpu copy -> adopt" in proc.stdout


async def test_many_tasks_in_one_round_and_a_plain_device(dev, plain):
    results: dict[int, np.ndarray] = {}

    async def one(i: int) -> None:
        x = af.tensor(np.full(50, float(i), np.float32), device=dev)
        results[i] = await (scale_add(x + 1.0, x, params=(50, 2.0)) * 1.0).to_data()

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(one, i)
    for i in range(8):
        assert_close(results[i], np.full(50, (i + 1) * 2.0 + i, np.float32))
    x = af.tensor(np.arange(10, dtype=np.float32), device=plain)
    assert_close(await scale_add(x, x, params=(10, -1.0)).to_data(), np.zeros(10, np.float32))



async def test_a_kernel_registered_before_any_device_is_checked_at_its_first_call(dev,
                                                                                 monkeypatch):
    monkeypatch.setattr(kernels_custom, "_check_now", lambda name, wgsl: None)  # no device yet
    bad = af.custom_kernel("bad_early", wgsl=SCALE_ADD.replace("p.k", "p.nope"), inputs=2,
                           outputs=lambda a, b, *_: (a.shape, a.dtype),
                           workgroups=lambda a, b, *_: 1)
    x = af.tensor([1.0, 2.0], device=dev)
    with pytest.raises(af.KernelCompileError, match="nope"):
        bad(x, x)
    assert_close(await (x * 2.0).to_data(), np.array([2.0, 4.0], np.float32))  # the device works
