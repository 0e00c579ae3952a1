"""Search: the ``examples/search.py`` workload end to end, asyncfusion vs numpy and torch.

Cosine top-5 of Q queries over N embeddings of dimension D: normalize the database and
the queries, one matmul against the transposed database, ``topk`` — as the example
writes it. Two asyncfusion timings, both with the raw database already on the device:

* ``af_e2e``: the whole program (normalizing the database included) and both reads,
  ``await af.to_data(values, indices)`` (one round, as ``examples/service.py`` reads
  them): what a caller waits for.
* ``af_query``: the database normalized once up front (kept on the device), then per
  repetition the queries' part only: normalize, matmul, topk (two launches: the best of
  each segment of the scores, then of their candidates), reads — a search service.
* ``af_topk``: ``topk(scores, 5)`` of one N-long score vector on the device, 20 calls per
  sync (ms per call; torch.topk the same way).

Peers: numpy float32 on the host (``argpartition`` for the top-k, no full sort), and
torch float32 (TF32 off; CUDA where available, else CPU) where torch is installed, timed
the same two ways (the call + ``synchronize``, results copied to the host). Each result
is checked once against numpy: the top scores to rtol 1e-4.

Usage: python bench/search.py [--quick] [--n 1e6] [--dim 256] [--queries 4] [--no-torch]
``--quick`` (a CPU adapter): N = 65536, D = 64. Writes bench/results/search-<host-tag>.json.
"""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np

import _common as C
import asyncfusion as af

NAME = "search"
K = 5


def normalize(x: Any) -> Any:
    return x / (x * x).sum(-1, keepdims=True).sqrt()


def numpy_search(db: np.ndarray, q: np.ndarray, dbn: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    dbn = db / np.linalg.norm(db, axis=-1, keepdims=True) if dbn is None else dbn
    qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
    scores = qn @ dbn.T
    part = np.argpartition(-scores, K, axis=-1)[:, :K]
    order = np.argsort(-np.take_along_axis(scores, part, -1), axis=-1, kind="stable")
    idx = np.take_along_axis(part, order, -1)
    return np.take_along_axis(scores, idx, -1), idx


def check(values: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(values, want, rtol=1e-4, atol=1e-5)


TOPK_BATCH = 20  # top-k calls per sync in the top-k-alone timing


async def topk_alone(dev: Any, rng: np.random.Generator, n: int, reps: dict[str, Any]
                     ) -> dict[str, Any]:
    """``topk(scores, K)`` of one score vector of ``n`` already on the device:
    ``TOPK_BATCH`` calls then one sync, per call (the sync round trip amortized)."""
    host = rng.standard_normal(n, dtype=np.float32)
    scores = af.tensor(host, device=dev)
    _, i = af.topk(scores, K)
    np.testing.assert_array_equal(np.sort(await i.to_data()),
                                  np.sort(np.argpartition(-host, K)[:K]))

    async def batch() -> None:
        kept = [af.topk(scores, K) for _ in range(TOPK_BATCH)]
        await dev.sync()
        del kept

    dev.reset_stats()
    await batch()
    out = {"topk_n": n, "topk_launches": dev.stats().launches / TOPK_BATCH,
           "af_topk_ms": (await C.ameasure(batch, **reps)).median * 1e3 / TOPK_BATCH}
    torch = C.import_torch()
    if torch is not None:
        tdev = C.torch_device(torch)
        ts = torch.from_numpy(host).to(tdev)

        def tbatch() -> None:
            kept = [torch.topk(ts, K) for _ in range(TOPK_BATCH)]
            C.torch_sync(torch, tdev)
            del kept
        out["torch_topk_ms"] = C.measure(tbatch, warmup=2, **reps).median * 1e3 / TOPK_BATCH
    return out


async def run(args: Any) -> dict[str, Any]:
    n, dim, nq = C.parse_size(args.n), args.dim, args.queries
    rng = np.random.default_rng(0)
    db_host = rng.standard_normal((n, dim), dtype=np.float32)
    q_host = rng.standard_normal((nq, dim), dtype=np.float32)
    want, _ = numpy_search(db_host, q_host)
    reps = dict(min_reps=3, max_reps=10 if args.quick else 50, budget_s=2.0)
    row: dict[str, Any] = {"n": n, "dim": dim, "queries": nq, "k": K}
    async with af.open_device() as dev:
        info = C.adapter_info(dev)
        db, q = af.tensor(db_host, device=dev), af.tensor(q_host, device=dev)
        dbn = normalize(db)
        await dev.sync()

        async def e2e() -> np.ndarray:
            values, indices = af.topk(normalize(q) @ normalize(db).T, K, axis=-1)
            got, _ = await af.to_data(values, indices)  # one round, as the service reads
            return got

        async def query() -> np.ndarray:
            values, indices = af.topk(normalize(q) @ dbn.T, K, axis=-1)
            got, _ = await af.to_data(values, indices)  # one round, as the service reads
            return got

        for name, fn in (("af_e2e", e2e), ("af_query", query)):
            check(await fn(), want)
            dev.reset_stats()
            await fn()
            row[f"{name}_launches"] = dev.stats().launches
            row[f"{name}_ms"] = (await C.ameasure(fn, **reps)).median * 1e3
        row.update(await topk_alone(dev, rng, n, reps))
    dbn_host = db_host / np.linalg.norm(db_host, axis=-1, keepdims=True)
    row["numpy_e2e_ms"] = C.measure(lambda: numpy_search(db_host, q_host), **reps).median * 1e3
    row["numpy_query_ms"] = C.measure(lambda: numpy_search(db_host, q_host, dbn_host),
                                      **reps).median * 1e3
    torch = C.import_torch()
    tdev = C.torch_device(torch) if torch is not None else None
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        tdb, tq = torch.from_numpy(db_host).to(tdev), torch.from_numpy(q_host).to(tdev)
        tdbn = normalize(tdb)

        def t_e2e(base: Any = None) -> np.ndarray:
            v, i = torch.topk(normalize(tq) @ (normalize(tdb) if base is None else base).T, K)
            i.cpu()
            return np.asarray(v.cpu())

        for name, fn in (("torch_e2e", t_e2e), ("torch_query", lambda: t_e2e(tdbn))):
            check(fn(), want)

            def once(fn: Any = fn) -> None:
                fn()
                C.torch_sync(torch, tdev)
            row[f"{name}_ms"] = C.measure(once, warmup=2, **reps).median * 1e3
    for kind in ("e2e", "query"):
        row[f"af_vs_numpy_{kind}"] = C.ratio(row[f"numpy_{kind}_ms"], row[f"af_{kind}_ms"])
        if f"torch_{kind}_ms" in row:
            row[f"af_vs_torch_{kind}"] = C.ratio(row[f"torch_{kind}_ms"], row[f"af_{kind}_ms"])
    return {"meta": C.meta(info, args, torch_device=tdev), "rows": [row]}


def main() -> None:
    p = C.base_parser(__doc__.splitlines()[0])
    p.add_argument("--n", default=None, help="database rows (default 1e6; --quick 65536)")
    p.add_argument("--dim", type=int, default=None, help="dimension (default 256; --quick 64)")
    p.add_argument("--queries", type=int, default=4)
    args = p.parse_args()
    args.n = args.n or ("65536" if args.quick else "1e6")
    args.dim = args.dim or (64 if args.quick else 256)
    C.apply_common(args)
    payload = anyio.run(run, args)
    row = payload["rows"][0]
    cols = [c for c in ("af_e2e_ms", "af_e2e_launches", "numpy_e2e_ms", "torch_e2e_ms",
                        "af_query_ms", "af_query_launches", "numpy_query_ms",
                        "torch_query_ms", "af_vs_numpy_query", "af_vs_torch_query",
                        "af_topk_ms", "topk_launches", "torch_topk_ms")
            if c in row]
    print(C.table(cols, [[row[c] for c in cols]],
                  title=f"search: top {K} of {row['queries']} queries over "
                        f"{C.fmt_size(row['n'])} x {row['dim']} (float32; ratios: peer "
                        "time / asyncfusion time)"))
    path = C.write_json(NAME, payload["meta"]["host_tag"], payload, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
