"""The seed's loop: the same 8-op program three times, plain and fused, with launch counts.

    plain (one kernel per op)
    run 0: 8 ops -> 8 launch(es)
    ...
    fusion
    run 0: 8 ops -> 1 launch(es)
"""

import anyio
import numpy as np

import asyncfusion as af
from seed_chain import chain


async def main() -> None:
    for label, fusion in (("plain (one kernel per op)", False), ("fusion", True)):
        async with af.open_device(fusion=fusion) as dev:
            print(label)
            x = af.tensor(np.linspace(-1, 1, 1024, dtype=np.float32), device=dev)
            await dev.sync()
            for run in range(3):
                dev.reset_stats()
                await chain(x).to_data()
                stats = dev.stats()
                print(f"run {run}: 8 ops -> {stats.launches} launch(es)")
                if run == 0:
                    for name, count in sorted(stats.kernels.items()):
                        print(f"       {count} {name}")


if __name__ == "__main__":
    anyio.run(main)
