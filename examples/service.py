"""A search and an MLP service on one device, with back pressure, health and metrics.

    pip install 'asyncfusion[serve]'
    uvicorn --factory examples.service:create_app       # or: python examples/service.py

* ``POST /search`` ``{"query": [256 numbers, not all 0], "k": 1 to 100, default 5}``:
  cosine scores of the query (normalized on the host) against a resident (N, 256) matrix
  of unit rows (one matmul), the top k on the device (``af.topk``), values and indices
  read in one await (``af.to_data``).
* ``POST /mlp`` ``{"x": [[64 numbers], ...]}``: ``softmax(relu(x @ w1 + b1) @ w2 + b2)``.
* ``POST /score`` ``{"query": [256 numbers], "k": 1 to 100, default 5}``: the similarity
  ``exp(-sum((db - query) ** 2, 1))`` of the query to every row of the resident matrix
  (one fused kernel), the top k of it on the device, read in one await.
* ``GET /health``, ``GET /metrics`` (Prometheus), ``GET /stats`` (counters for the bench;
  ``?since=<lag_taken>``: the event-loop lag since that earlier answer).

On a host with several GPUs (or with ``SERVICE_PER_GPU=n``: n devices on each), requests
go to a device pool (``asyncfusion.contrib.starlette.PoolService``): each to the least
loaded device, with the weights resident on every device; ``/health`` lists the devices
and ``/stats`` sums their counters (no ``/metrics`` then).

Bodies are read strictly (``asyncfusion.contrib.starlette.read_array``): a body that is
not a JSON object is a 400, a field that is missing, of the wrong shape, not numbers,
non-finite or out of float32's range a 422 naming the field; results are written with
``ArrayJSONResponse`` (a non-finite number as ``null``). Other errors map to responses by
kind: overload is a 503 with ``Retry-After``, a lost device a 503 while it is reopened.
``SERVICE_VARIANT=numpy`` or ``torch`` serves the same endpoints from numpy or torch in a
worker thread, for ``bench/service.py`` to compare; ``SERVICE_ROWS`` sets N;
``SERVICE_TARGET_LATENCY_MS`` (25 by default) is the admission's latency target
(``open_device(target_latency_ms=...)``: under overload the device keeps as many
requests at work as it finishes within it and answers the rest 503 at once);
``SERVICE_GC_FREEZE=1`` freezes the objects made at startup (``gc.freeze()``: full
collections get cheaper); ``SERVICE_MAX_BATCH`` and ``SERVICE_MAX_WAIT_MS`` set the
device's dynamic batcher
(``open_device(max_batch=..., max_wait_ms=...)``: a round waits up to that long for
requests of that many tasks, so that they share one launch per kernel).
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
import weakref
from collections.abc import AsyncIterator
from typing import Any

import anyio
import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import asyncfusion as af
from asyncfusion.contrib.starlette import (ArrayJSONResponse, DeviceService, PoolService,
                                           RequestError, error_response, read_array)
from asyncfusion.runtime.pool import serving_adapters

DIM, HIDDEN, CLASSES = 256, 128, 10
MLP_IN = 64


def host_weights(rows: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    db = rng.standard_normal((rows, DIM), dtype=np.float32)
    db /= np.linalg.norm(db, axis=1, keepdims=True)
    return {"db": db,
            "w1": (rng.standard_normal((MLP_IN, HIDDEN)) / 8).astype(np.float32),
            "b1": (rng.standard_normal(HIDDEN) * 0.1).astype(np.float32),
            "w2": (rng.standard_normal((HIDDEN, CLASSES)) / 11).astype(np.float32),
            "b2": (rng.standard_normal(CLASSES) * 0.1).astype(np.float32)}


async def read_search(request: Request) -> tuple[np.ndarray, int]:
    """/search's query, normalized (float32), and k; RequestError (422) if either is bad.
    The query is normalized on the host: 256 floats cost less than four ops."""
    q = await read_array(request, "query", shape=(DIM,), dtype=af.float32)
    k = await read_k(request)
    wide = q.astype(np.float64)  # float32's squares overflow near the top of its range
    norm = float(np.sqrt(wide @ wide))
    if norm == 0.0:
        raise RequestError("query: expected a vector that is not all zeros (its direction "
                           "is searched)", field="query")
    return (wide / norm).astype(np.float32), k


async def read_score(request: Request) -> tuple[np.ndarray, int]:
    """/score's query (float32) and k; RequestError (422) if either is bad."""
    q = await read_array(request, "query", shape=(DIM,), dtype=af.float32)
    return q, await read_k(request)


async def read_k(request: Request) -> int:
    k = int(await read_array(request, "k", shape=(), dtype=af.int32, default=5))
    if not 1 <= k <= 100:
        raise RequestError(f"k: expected an integer from 1 to 100, got {k}", field="k")
    return k


async def read_mlp(request: Request) -> np.ndarray:
    """/mlp's rows of MLP_IN numbers (float32); RequestError (422) if bad."""
    return await read_array(request, "x", shape=(None, MLP_IN), dtype=af.float32)


def _freeze_gc() -> None:
    """``SERVICE_GC_FREEZE=1``: move what startup made to the collector's permanent
    generation, so that full collections (frequent under load) skip it. Off by default:
    frozen objects are hidden from ``gc.get_referrers``, which tools in the same process
    (a test runner) may rely on."""
    if os.environ.get("SERVICE_GC_FREEZE") == "1":
        gc.freeze()


class LagMonitor:
    """Event-loop lag: how late a 5 ms sleep wakes up, kept for /stats. ``taken`` counts
    every sample so far, so a client can ask for the lag since an earlier answer
    (``GET /stats?since=<lag_taken>``)."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.taken = 0

    async def run(self) -> None:
        while True:
            start = time.perf_counter()
            await anyio.sleep(0.005)
            self.samples.append(max(0.0, time.perf_counter() - start - 0.005))
            self.taken += 1
            del self.samples[:-20_000]

    def summary(self, since: int = 0) -> dict[str, float]:
        recent = self.samples[-min(max(self.taken - since, 0), len(self.samples)):]
        if not recent or self.taken <= since:
            return {"lag_taken": self.taken}
        s = np.asarray(recent) * 1e3
        return {"lag_taken": self.taken, "lag_p50_ms": float(np.percentile(s, 50)),
                "lag_p99_ms": float(np.percentile(s, 99)), "lag_max_ms": float(s.max())}


def _since(request: Request) -> int:
    try:
        return int(request.query_params.get("since", "0"))
    except ValueError:
        return 0


def create_app(variant: str | None = None, rows: int | None = None,
               **device_options: Any) -> Starlette:
    variant = variant or os.environ.get("SERVICE_VARIANT", "af")
    rows = rows or int(os.environ.get("SERVICE_ROWS", "4096"))
    host = host_weights(rows)
    lag = LagMonitor()
    served = [0]
    if variant == "af":
        return _af_app(host, lag, served, device_options)
    return _thread_app(variant, host, lag, served)


def _af_app(host: dict[str, np.ndarray], lag: LagMonitor, served: list[int],
            device_options: dict[str, Any]) -> Starlette:
    device_options.setdefault("max_pending", 512)
    device_options.setdefault("target_latency_ms", 25.0)
    for name, env, kind in (("max_batch", "SERVICE_MAX_BATCH", int),
                            ("max_wait_ms", "SERVICE_MAX_WAIT_MS", float),
                            ("target_latency_ms", "SERVICE_TARGET_LATENCY_MS", float)):
        if os.environ.get(env):
            device_options.setdefault(name, kind(os.environ[env]))
    per_adapter = int(device_options.pop("per_adapter", os.environ.get("SERVICE_PER_GPU", 0)))
    # Several GPUs (or SERVICE_PER_GPU devices on each): a pool, each request on the least
    # loaded device; one GPU: one device.
    svc: DeviceService | PoolService
    if per_adapter or len(serving_adapters()) > 1:
        svc = PoolService(per_adapter=max(per_adapter, 1), **device_options)
    else:
        svc = DeviceService(**device_options)
    resident: weakref.WeakKeyDictionary[af.Device, dict[str, af.Tensor]] = (
        weakref.WeakKeyDictionary())

    def weights(dev: af.Device) -> dict[str, af.Tensor]:
        w = resident.get(dev)  # uploaded once per device (again after a reopen)
        if w is None:
            w = resident[dev] = {k: af.tensor(v, device=dev) for k, v in host.items()}
        return w

    @contextlib.asynccontextmanager
    async def device() -> AsyncIterator[af.Device]:
        """An admission slot and the device that serves this request."""
        if isinstance(svc, PoolService):
            async with svc.device() as dev:
                yield dev
        else:
            async with svc.admit():
                yield svc.device()

    # Admission comes first: under overload a request is refused before its body is even
    # parsed, so refusing costs the event loop next to nothing.
    async def search(request: Request) -> ArrayJSONResponse:
        async with device() as dev:
            q, k = await read_search(request)
            w = weights(dev)
            values, indices = af.topk(w["db"] @ af.tensor(q, device=dev), k)
            v, i = await af.to_data(values, indices)
        served[0] += 1
        return ArrayJSONResponse({"indices": i, "scores": v})

    async def mlp(request: Request) -> ArrayJSONResponse:
        async with device() as dev:
            x = await read_mlp(request)
            w = weights(dev)
            h = af.relu(af.tensor(x, device=dev) @ w["w1"] + w["b1"])
            probs = await af.softmax(h @ w["w2"] + w["b2"], axis=-1).to_data()
        served[0] += 1
        return ArrayJSONResponse({"probs": probs})

    async def score(request: Request) -> ArrayJSONResponse:
        async with device() as dev:
            q, k = await read_score(request)
            d = weights(dev)["db"] - af.tensor(q, device=dev)
            values, indices = af.topk(af.exp(-af.sum(d * d, axis=1)), k)
            v, i = await af.to_data(values, indices)
        served[0] += 1
        return ArrayJSONResponse({"indices": i, "scores": v})

    async def stats(request: Request) -> ArrayJSONResponse:
        devices = svc.pool.devices if isinstance(svc, PoolService) else [svc.device()]
        ms = [d.metrics() for d in devices]
        return ArrayJSONResponse({"served": served[0], "devices": len(ms),
                                  "launches": sum(m.launches for m in ms),
                                  "submissions": sum(m.submissions for m in ms),
                                  "rounds": sum(m.rounds for m in ms),
                                  "rejected": sum(m.rejected for m in ms),
                                  **lag.summary(_since(request))})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with svc.lifespan(app), anyio.create_task_group() as tg:
            tg.start_soon(lag.run)
            _freeze_gc()
            yield
            tg.cancel_scope.cancel()

    app = Starlette(routes=[*svc.routes, Route("/search", search, methods=["POST"]),
                            Route("/mlp", mlp, methods=["POST"]),
                            Route("/score", score, methods=["POST"]), Route("/stats", stats)],
                    lifespan=lifespan, exception_handlers=svc.exception_handlers)
    app.state.service = svc
    return app


def _thread_app(variant: str, host: dict[str, np.ndarray], lag: LagMonitor,
                served: list[int]) -> Starlette:
    """The same endpoints computed by numpy or torch in anyio's worker threads (the
    bodies read, and the query normalized, on the event loop as in the af app)."""
    if variant == "torch":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        tw = {k: torch.from_numpy(v).to(device) for k, v in host.items()}

        def search_fn(q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
            v, i = torch.topk(tw["db"] @ torch.from_numpy(q).to(device), k)
            return v.cpu().numpy(), i.cpu().numpy()

        def score_fn(q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
            d = tw["db"] - torch.from_numpy(q).to(device)
            v, i = torch.topk(torch.exp(-(d * d).sum(1)), k)
            return v.cpu().numpy(), i.cpu().numpy()

        def mlp_fn(x: np.ndarray) -> np.ndarray:
            h = torch.relu(torch.from_numpy(x).to(device) @ tw["w1"] + tw["b1"])
            return torch.softmax(h @ tw["w2"] + tw["b2"], -1).cpu().numpy()  # type: ignore
    elif variant == "numpy":
        def top(s: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
            i = np.argpartition(-s, k)[:k]
            i = i[np.argsort(-s[i], kind="stable")]
            return s[i], i

        def search_fn(q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
            return top(host["db"] @ q, k)

        def score_fn(q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
            d = host["db"] - q
            return top(np.exp(-np.einsum("ij,ij->i", d, d)), k)

        def mlp_fn(x: np.ndarray) -> np.ndarray:
            z = np.maximum(x @ host["w1"] + host["b1"], 0) @ host["w2"] + host["b2"]
            e = np.exp(z - z.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)
    else:
        raise ValueError(f"SERVICE_VARIANT must be af, numpy or torch, not {variant!r}")

    async def search(request: Request) -> ArrayJSONResponse:
        q, k = await read_search(request)
        v, i = await anyio.to_thread.run_sync(search_fn, q, k)
        served[0] += 1
        return ArrayJSONResponse({"indices": i, "scores": v})

    async def score(request: Request) -> ArrayJSONResponse:
        q, k = await read_score(request)
        v, i = await anyio.to_thread.run_sync(score_fn, q, k)
        served[0] += 1
        return ArrayJSONResponse({"indices": i, "scores": v})

    async def mlp(request: Request) -> ArrayJSONResponse:
        x = await read_mlp(request)
        probs = await anyio.to_thread.run_sync(mlp_fn, x)
        served[0] += 1
        return ArrayJSONResponse({"probs": probs})

    async def stats(request: Request) -> ArrayJSONResponse:
        return ArrayJSONResponse({"served": served[0], "launches": None,
                                  "submissions": None, **lag.summary(_since(request))})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lag.run)
            _freeze_gc()
            yield
            tg.cancel_scope.cancel()

    async def refused(request: Request, exc: Exception) -> Response:
        return error_response(exc)

    return Starlette(routes=[Route("/search", search, methods=["POST"]),
                             Route("/mlp", mlp, methods=["POST"]),
                             Route("/score", score, methods=["POST"]), Route("/stats", stats)],
                     lifespan=lifespan, exception_handlers={RequestError: refused})


if __name__ == "__main__":
    import uvicorn

    uvicorn.run("examples.service:create_app", factory=True, host="127.0.0.1", port=8000)
