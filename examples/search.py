"""Cosine nearest neighbours: the top 5 of N embeddings for a batch of queries, on the
device, checked against numpy.

Normalize the database and the queries (fused reductions), one matmul against the
transposed database (a view: no copy), then ``topk`` (each workgroup keeps the best 5 of
a segment of the scores, then one merges their candidates: two launches, no sort).

A device buffer holds at most ``dev.max_buffer_size`` bytes (128 MiB on lavapipe, 2 GiB
on an H200), so the database is uploaded in as many shards as that takes, each scored
with its own matmul; the scores of all shards (4 x n floats) are joined for one topk.

    python examples/search.py [n] [dim]     # default 1,000,000 x 256 (about 1 GiB)
"""

import sys
import time

import anyio
import numpy as np

import asyncfusion as af

K = 5


def normalize(x):
    return x / (x * x).sum(-1, keepdims=True).sqrt()


async def main(n: int, dim: int) -> None:
    rng = np.random.default_rng(0)
    db_host = rng.standard_normal((n, dim), dtype=np.float32)
    q_host = rng.standard_normal((4, dim), dtype=np.float32)
    async with af.open_device() as dev:
        rows = max(1, dev.max_buffer_size // (dim * 4))  # rows one buffer holds
        shards = [af.tensor(db_host[i:i + rows], device=dev) for i in range(0, n, rows)]
        q = af.tensor(q_host, device=dev)
        await dev.sync()
        dev.reset_stats()
        t0 = time.perf_counter()
        qn = normalize(q)
        parts = [qn @ normalize(db).T for db in shards]  # (4, rows) each
        scores = parts[0] if len(parts) == 1 else af.concat(parts, axis=-1)  # (4, n)
        values, indices = af.topk(scores, K, axis=-1)
        v, i = await values.to_data(), await indices.to_data()
        ms = (time.perf_counter() - t0) * 1e3
        launches = dev.stats().launches
    dbn = db_host / np.linalg.norm(db_host, axis=-1, keepdims=True)
    qn = q_host / np.linalg.norm(q_host, axis=-1, keepdims=True)
    ref = qn @ dbn.T
    want = np.argsort(-ref, axis=-1, kind="stable")[:, :K]
    np.testing.assert_allclose(v, np.take_along_axis(ref, want, -1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.take_along_axis(ref, i, -1), v, rtol=1e-4, atol=1e-5)
    print(f"{n} x {dim} in {len(shards)} shard(s): top {K} of 4 queries in {ms:.1f} ms, "
          f"{launches} launches; "
          f"scores match numpy (indices agree: {float((i == want).mean()):.0%})")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    anyio.run(main, *(args + [1_000_000, 256][len(args):]))
