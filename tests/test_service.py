"""examples/service.py through httpx's ASGI transport (no sockets): answers match numpy,
errors map to 4xx/5xx, overload is a 503 with Retry-After, a lost device is reopened."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
import httpx
import numpy as np
import pytest

from examples.service import DIM, MLP_IN, create_app, host_weights

ROWS = 512


@contextlib.asynccontextmanager
async def client(**options) -> AsyncIterator[tuple[httpx.AsyncClient, object]]:
    app = create_app("af", rows=ROWS, **options)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            yield c, app.state.service


def _query(seed: int) -> list[float]:
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32).tolist()


async def test_search_and_mlp_match_numpy():
    host = host_weights(ROWS)
    async with client() as (c, _):
        q = np.asarray(_query(1), np.float32)
        r = await c.post("/search", json={"query": q.tolist(), "k": 5})
        assert r.status_code == 200, r.text
        want = host["db"] @ (q / np.linalg.norm(q))
        top = np.argsort(-want, kind="stable")[:5]
        assert r.json()["indices"] == top.tolist()
        np.testing.assert_allclose(r.json()["scores"], want[top], rtol=1e-4, atol=1e-5)

        x = np.random.default_rng(2).standard_normal((3, MLP_IN)).astype(np.float32)
        r = await c.post("/mlp", json={"x": x.tolist()})
        assert r.status_code == 200, r.text
        z = np.maximum(x @ host["w1"] + host["b1"], 0) @ host["w2"] + host["b2"]
        e = np.exp(z - z.max(-1, keepdims=True))
        np.testing.assert_allclose(r.json()["probs"], e / e.sum(-1, keepdims=True),
                                   rtol=1e-4, atol=1e-6)


async def test_caller_mistakes_are_400_and_name_the_error():
    async with client() as (c, _):
        r = await c.post("/search", json={"query": [1.0, 2.0], "k": 5})
        assert r.status_code == 400 and r.json()["error"] == "ShapeError"
        r = await c.post("/mlp", json={"x": [[1.0, 2.0], [3.0]]})
        assert r.status_code == 400
        r = await c.post("/search", content=b"not json")
        assert r.status_code == 400
        r = await c.post("/search", json={"query": _query(1), "k": 0})
        assert r.status_code == 400


async def test_overload_is_a_503_with_retry_after_and_runs_nothing():
    async with client(max_pending=1, retry_after=3) as (c, svc):
        dev = svc.device()
        await c.post("/search", json={"query": _query(1)})  # uploads the weights
        launches = dev.stats().launches
        async with svc.admit():  # the one slot is taken
            r = await c.post("/search", json={"query": _query(1)})
        assert r.status_code == 503 and r.headers["retry-after"] == "3"
        assert r.json()["error"] == "Overloaded"
        assert dev.stats().launches == launches
        assert dev.metrics().rejected == 1
        r = await c.post("/search", json={"query": _query(1)})
        assert r.status_code == 200


async def test_health_metrics_and_reopening_after_a_device_loss():
    async with client() as (c, svc):
        r = await c.get("/health")
        assert r.status_code == 200 and r.json()["status"] == "ok"
        await c.post("/search", json={"query": _query(1)})
        r = await c.get("/metrics")
        assert r.status_code == 200 and "asyncfusion_round_seconds_bucket" in r.text
        assert "asyncfusion_batched_instances_total" in r.text
        first = svc.device()
        first.lose_device()
        r = await c.post("/search", json={"query": _query(1)})
        assert r.status_code == 503 and "retry-after" in r.headers
        for _ in range(500):  # the reopen takes an adapter set-up (about 0.5 s)
            r = await c.get("/health")
            if r.status_code == 200:
                break
            await anyio.sleep(0.01)
        assert r.status_code == 200 and r.json()["reopens"] == 1
        assert svc.device() is not first
        r = await c.post("/search", json={"query": _query(1)})
        assert r.status_code == 200, r.text


@pytest.mark.parametrize("variant", ["numpy"])
async def test_the_thread_variant_answers_the_same(variant):
    app = create_app(variant, rows=ROWS)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            q = _query(1)
            r = await c.post("/search", json={"query": q, "k": 5})
    host = host_weights(ROWS)
    qa = np.asarray(q, np.float32)
    want = np.argsort(-(host["db"] @ (qa / np.linalg.norm(qa))), kind="stable")[:5]
    assert r.status_code == 200 and r.json()["indices"] == want.tolist()
