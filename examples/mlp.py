"""A 3-layer MLP forward pass on a batch, entirely on the device, checked against numpy.

Weights are uploaded once; each layer is ``relu(x @ w + b)`` — one launch, the bias and
activation run in the matmul's store — then softmax and argmax. One ``await`` reads.

    python examples/mlp.py [batch]      # default batch 256
"""

import sys
import time

import anyio
import numpy as np

import asyncfusion as af

SIZES = (784, 512, 256, 10)


def init(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    return [((rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32),
             (rng.standard_normal(o) * 0.1).astype(np.float32))
            for i, o in zip(SIZES[:-1], SIZES[1:])]


def forward(x, layers):
    """The same code runs on numpy arrays and on asyncfusion tensors."""
    for k, (w, b) in enumerate(layers):
        x = x @ w + b
        if k < len(layers) - 1:
            x = af.maximum(x, 0.0) if isinstance(x, af.Tensor) else np.maximum(x, 0)
    return x


async def main(batch: int) -> None:
    rng = np.random.default_rng(0)
    host = init(rng)
    x_host = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    async with af.open_device() as dev:
        layers = [(af.tensor(w, device=dev), af.tensor(b, device=dev)) for w, b in host]
        x = af.tensor(x_host, device=dev)
        await dev.sync()  # weights and batch uploaded once
        dev.reset_stats()
        t0 = time.perf_counter()
        logits = forward(x, layers)
        probs, labels = af.softmax(logits), logits.argmax(-1)
        p, y = await probs.to_data(), await labels.to_data()
        ms = (time.perf_counter() - t0) * 1e3
        launches = dev.stats().launches
    ref = forward(x_host, host)
    e = np.exp(ref - ref.max(-1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(-1, keepdims=True), rtol=1e-3, atol=1e-5)
    agree = float((y == ref.argmax(-1)).mean())
    assert agree >= 0.99, f"argmax agrees with numpy on only {agree:.1%} of the batch"
    print(f"batch {batch}: {launches} launches, {ms:.1f} ms, probabilities match numpy, "
          f"argmax agrees on {agree:.1%}")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 256)
