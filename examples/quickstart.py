"""The seed's first program: d = (a * b + c).exp(), traced, with one fused launch.

Run it with `make demo`. The trace shows each op as the server takes it, the block the
explorer formed, and the single fused kernel it launched.
"""

import anyio

import asyncfusion as af


async def main() -> None:
    async with af.open_device() as dev:
        print(f"device: {dev.backend.adapter_summary}")
        with af.tracing():
            print("--- from_floats x3")
            a = af.tensor([1.0, 2.0, 3.0, 4.0], device=dev)
            b = af.tensor([2.0, 3.0, 4.0, 5.0], device=dev)
            c = af.tensor([3.0, 4.0, 5.0, 6.0], device=dev)
            print("--- let d = (a * b + c).exp()")
            d = (a * b + c).exp()
            print("--- d.to_data()")
            result = await d.to_data()
        print(f"--- result {result.tolist()}")
        stats = dev.stats()
        print(f"launches: {stats.launches}, blocks: {stats.blocks}")


if __name__ == "__main__":
    anyio.run(main)
