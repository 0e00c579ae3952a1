"""A hand-written WGSL kernel between fused ops, and device buffers in and out.

1. ``af.custom_kernel``: a whole WGSL compute shader (here a leaky clamp that also counts,
   per workgroup, how many values it clamped: two outputs) runs in stream order between
   fused kernels, as its own launch.
2. ``af.resolve``: the result's wgpu buffer is handed to plain wgpu code (a buffer copy),
   kept alive while the handle is held.
3. ``af.adopt``: that copy, a buffer asyncfusion does not own, becomes a tensor again
   without a copy and feeds more asyncfusion work.

Every result is checked against numpy (the numpy twin runs the same program on a numpy
device).

    python examples/custom_kernel.py
"""

import functools

import anyio
import numpy as np
import wgpu

import asyncfusion as af

WG = 64
CLAMP_COUNT = f"""
struct P {{ n: u32, limit: f32 }}
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> clamped: array<u32>;
var<workgroup> hits: atomic<u32>;

@compute @workgroup_size({WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>,
        @builtin(local_invocation_index) l: u32, @builtin(workgroup_id) w: vec3<u32>) {{
    if (l == 0u) {{ atomicStore(&hits, 0u); }}
    workgroupBarrier();
    if (g.x < p.n) {{
        let v = x[g.x];
        if (abs(v) > p.limit) {{
            y[g.x] = sign(v) * p.limit + 0.01 * (v - sign(v) * p.limit);
            atomicAdd(&hits, 1u);
        }} else {{
            y[g.x] = v;
        }}
    }}
    workgroupBarrier();
    if (l == 0u) {{ clamped[w.x] = atomicLoad(&hits); }}
}}
"""


def clamp_count_np(x, n, limit):
    over = np.abs(x) > limit
    y = np.where(over, np.sign(x) * limit + np.float32(0.01) * (x - np.sign(x) * limit), x)
    counts = np.add.reduceat(over.astype(np.uint32), np.arange(0, x.size, WG))
    return y.astype(np.float32), counts.astype(np.uint32)


clamp_count = af.custom_kernel(
    "clamp_count", wgsl=CLAMP_COUNT, inputs=1,
    outputs=lambda x, n, limit: [(x.shape, af.float32), ((-(-n // WG),), af.uint32)],
    workgroups=lambda x, n, limit: -(-n // WG),
    numpy=clamp_count_np)


async def program(dev, x_host, limit):
    x = af.tensor(x_host, device=dev)
    y, counts = clamp_count((x * 3.0).tanh() * 2.0, params=(x_host.size, limit))
    return y, counts, (y * y).sum()


async def main() -> None:
    n, limit = 1000, 1.5
    x_host = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    async with af.open_device("numpy") as ref:
        want = [await t.to_data() for t in await program(ref, x_host, limit)]
    async with af.open_device() as dev:
        y, counts, energy = await program(dev, x_host, limit)
        got = [await y.to_data(), await counts.to_data(), await energy.to_data()]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        print(f"custom kernel: {int(got[1].sum())} of {n} values clamped in "
              f"{len(got[1])} workgroups; matches numpy")

        # buffers out: plain wgpu code copies the result while the handle holds it
        rt = dev.backend.rt
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        mine = rt.device.create_buffer(size=y.size * 4, usage=usage)
        async with af.resolve(y) as buf:
            encoder = buf.gpu_device.create_command_encoder()
            encoder.copy_buffer_to_buffer(buf.buffer, buf.offset, mine, 0, buf.nbytes)
            buf.gpu_device.queue.submit([encoder.finish()])
        del y  # its buffer goes back to asyncfusion's pool; the copy is ours

        # buffers in: our buffer as a tensor, no copy; asyncfusion never frees it
        z = af.adopt(mine, (n,), af.float32, device=dev)
        mean = await z.mean().to_data()
        np.testing.assert_allclose(mean, want[0].mean(), rtol=1e-5, atol=1e-6)
        print(f"resolve -> wgpu copy -> adopt: mean {float(mean):.6f} matches numpy")
        del z
        await dev.sync()  # nothing queued reads our buffer any more
        read = functools.partial(rt.queue.read_buffer, mine)
        np.testing.assert_allclose(np.frombuffer(await anyio.to_thread.run_sync(read),
                                                 np.float32), want[0], rtol=1e-5, atol=1e-6)
        mine.destroy()


if __name__ == "__main__":
    anyio.run(main)
