"""examples/service.py through httpx's ASGI transport (no sockets): answers match numpy,
bad bodies are 4xx naming the field (and do no device work), errors reach clients without
the server's internals, overload is a 503 with Retry-After, a lost device is reopened."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator

import anyio
import httpx
import numpy as np
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

import asyncfusion as af
from asyncfusion.contrib.starlette import ArrayJSONResponse, DeviceService
from asyncfusion.testing import asgi_client
from examples.service import DIM, MLP_IN, create_app, host_weights

ROWS = 512


@contextlib.asynccontextmanager
async def client(**options) -> AsyncIterator[tuple[httpx.AsyncClient, DeviceService]]:
    app = create_app("af", rows=ROWS, **options)
    async with asgi_client(app) as c:
        yield c, app.state.service


@pytest.fixture
def app():
    """The app the plugin's af_asgi_client fixture drives."""
    return create_app("af", rows=ROWS)


def _query(seed: int) -> list[float]:
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32).tolist()


def strict_json(data: bytes) -> object:
    def no_constants(name: str) -> object:
        raise AssertionError(f"{name} is not JSON")

    return json.loads(data, parse_constant=no_constants)


async def test_search_and_mlp_match_numpy(af_asgi_client):
    host = host_weights(ROWS)
    q = np.asarray(_query(1), np.float32)
    r = await af_asgi_client.post("/search", json={"query": q.tolist(), "k": 5})
    assert r.status_code == 200, r.text
    want = host["db"] @ (q / np.linalg.norm(q))
    top = np.argsort(-want, kind="stable")[:5]
    assert r.json()["indices"] == top.tolist()
    np.testing.assert_allclose(r.json()["scores"], want[top], rtol=1e-4, atol=1e-5)

    x = np.random.default_rng(2).standard_normal((3, MLP_IN)).astype(np.float32)
    r = await af_asgi_client.post("/mlp", json={"x": x.tolist()})
    assert r.status_code == 200, r.text
    z = np.maximum(x @ host["w1"] + host["b1"], 0) @ host["w2"] + host["b2"]
    e = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(r.json()["probs"], e / e.sum(-1, keepdims=True),
                               rtol=1e-4, atol=1e-6)


async def test_asgi_client_runs_the_lifespan_that_a_bare_transport_skips():
    app = create_app("af", rows=ROWS)
    svc = app.state.service
    bare = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")
    async with bare:
        r = await bare.post("/search", json={"query": _query(1)})
    assert r.status_code == 503 and "not available" in r.json()["detail"]
    async with asgi_client(app) as c:
        r = await c.post("/search", json={"query": _query(1)})
        assert r.status_code == 200, r.text
        assert (await c.get("/health")).json()["status"] == "ok"
    with pytest.raises(af.DeviceClosedError):  # the lifespan's shutdown closed it
        svc.device()


def _row(value: object) -> list[object]:
    return [value] + [0.5] * (MLP_IN - 1)


q1 = _query(1)
BAD = [  # endpoint, body, status, field (None: the body), what the detail says
    ("/search", b"", 400, None, "the request body is empty"),
    ("/search", b"not json", 400, None, "not valid JSON"),
    ("/search", b"[1, 2]", 400, None, "the request body is a list of 2 items"),
    ("/search", {"q": q1}, 422, "query", "missing field 'query': expected a list of 256 "
                                        "numbers (float32)"),
    ("/search", {"query": q1[:10]}, 422, "query", "got a list of 10 items"),
    ("/search", {"query": ["a"] + q1[1:]}, 422, "query[0]", "got a string"),
    ("/search", {"query": q1[:5] + [True] + q1[6:]}, 422, "query[5]", "got true"),
    ("/search", {"query": q1[:7] + [None] + q1[8:]}, 422, "query[7]", "got null"),
    ("/search", {"query": q1[:3] + [float("nan")] + q1[4:]}, 422, "query[3]", "got NaN"),
    ("/search", {"query": q1[:9] + [float("inf")] + q1[10:]}, 422, "query[9]",
     "got Infinity"),
    ("/search", {"query": q1[:2] + [1e39] + q1[3:]}, 422, "query[2]",
     "1e+39 is out of range for float32"),
    ("/search", {"query": [0.0] * DIM}, 422, "query", "not all zeros"),
    ("/search", {"query": q1, "k": 0}, 422, "k", "from 1 to 100, got 0"),
    ("/search", {"query": q1, "k": "5"}, 422, "k", "expected an integer (int32), got a string"),
    ("/search", {"query": q1, "k": 2.5}, 422, "k", "got 2.5"),
    ("/search", {"query": q1, "k": 1 << 40}, 422, "k", "out of range for int32"),
    ("/mlp", {"x": [_row(1.0), _row(2.0)[:3]]}, 422, "x[1]",
     "expected a list of 64 numbers (float32), got a list of 3 items"),
    ("/mlp", {"x": []}, 422, "x", "a non-empty list of lists of 64 numbers"),
    ("/mlp", {"x": _row(1.0)}, 422, "x[0]", "got 1.0"),
    ("/mlp", {"x": [_row(1.0), _row(float("-inf"))]}, 422, "x[1][0]", "got -Infinity"),
    ("/mlp", {"x": [_row(-1e39)]}, 422, "x[0][0]", "-1e+39 is out of range for float32"),
    ("/mlp", {"y": [_row(1.0)]}, 422, "x", "missing field 'x'"),
]


def _send(body: bytes | dict[str, object]) -> dict[str, object]:
    if isinstance(body, bytes):
        return {"content": body, "headers": {"content-type": "application/json"}}
    # json.dumps writes NaN and Infinity literals, as a careless client's encoder does
    return {"content": json.dumps(body).encode(), "headers": {"content-type":
                                                              "application/json"}}


async def test_bad_bodies_are_4xx_naming_the_field_and_run_nothing():
    async with client() as (c, svc):
        assert (await c.post("/search", json={"query": q1})).status_code == 200
        dev = svc.device()
        launches, rounds = dev.stats().launches, dev.metrics().rounds
        for path, body, status, field, says in BAD:
            r = await c.post(path, **_send(body))
            assert r.status_code == status, (path, body, r.text)
            got = r.json()
            assert got["error"] == "RequestError" and got["field"] == field, r.text
            assert says in got["detail"], r.text
            assert str(ROWS) not in r.text and "@" not in r.text  # nothing of the server's
        assert (dev.stats().launches, dev.metrics().rounds) == (launches, rounds)
        assert svc.device() is dev and not dev.lost
        r = await c.post("/search", json={"query": q1, "k": 3})  # the device still serves
        assert r.status_code == 200 and len(r.json()["indices"]) == 3
        r = await c.post("/mlp", json={"x": [_row(1.0)]})
        assert r.status_code == 200 and abs(sum(r.json()["probs"][0]) - 1.0) < 1e-5


async def test_results_are_standard_json_even_when_not_finite():
    async with client() as (c, _):
        # values near float32's top overflow inside the MLP: its result may hold NaN or inf
        r = await c.post("/mlp", json={"x": [[3e38] * MLP_IN, [-3e38] * MLP_IN]})
        assert r.status_code == 200, r.text
        probs = strict_json(r.content)["probs"]
        assert all(p is None or isinstance(p, float) for row in probs for p in row)
        r = await c.post("/search", json={"query": [3e38] * DIM})  # normalized in float64
        assert r.status_code == 200 and None not in r.json()["scores"]


async def test_op_errors_reach_clients_as_their_kind_and_the_log_gets_the_message(caplog):
    svc = DeviceService(backend="numpy")

    async def project(request: Request) -> ArrayJSONResponse:
        v = await svc.read_tensor(request, "v", shape=(None,), dtype=af.float32)
        resident = af.ones((7, 3), device=svc.device())
        return ArrayJSONResponse({"p": await (resident @ v).to_data()})

    async def broken(request: Request) -> ArrayJSONResponse:
        raise af.ExecutionError("kernel fused_17 failed: wgpu says binding 3 is 4096 bytes")

    async def not_finite(request: Request) -> ArrayJSONResponse:
        return ArrayJSONResponse({"v": np.array([1.0, np.nan, np.inf, -np.inf], np.float32),
                                  "s": float("nan")})

    app = Starlette(routes=[Route("/project", project, methods=["POST"]),
                            Route("/broken", broken), Route("/not-finite", not_finite)],
                    lifespan=svc.lifespan, exception_handlers=svc.exception_handlers)
    caplog.set_level(logging.INFO, logger="asyncfusion.contrib.starlette")
    async with asgi_client(app) as c:
        r = await c.post("/project", json={"v": [1.0, 2.0, 3.0]})
        assert r.status_code == 200 and r.json() == {"p": [6.0] * 7}
        r = await c.post("/project", json={"v": ["1"]})  # read_tensor refuses it
        assert r.status_code == 422 and r.json()["field"] == "v[0]"
        r = await c.post("/project", json={"v": [1.0, 2.0]})  # the op refuses (7, 3) @ (2,)
        assert r.status_code == 400 and r.json()["error"] == "ShapeError"
        assert "does not fit this endpoint" in r.json()["detail"]
        assert "7" not in r.text and "(2,)" not in r.text
        r = await c.get("/broken")
        assert r.status_code == 500 and r.json() == {
            "error": "ExecutionError", "detail": "the service failed to run the request"}
        r = await c.get("/not-finite")
        assert r.status_code == 200 and r.content == b'{"v":[1.0,null,null,null],"s":null}'
        r = await c.post("/project", json={"v": [0.5, 0.5, 0.5]})  # still serving
        assert r.status_code == 200 and r.json() == {"p": [1.5] * 7}
    logged = {(rec.levelno, rec.getMessage()) for rec in caplog.records}
    warned = [m for level, m in logged if level == logging.WARNING]
    assert len(warned) == 1 and "ShapeError" in warned[0] and "(7, 3)" in warned[0]
    errors = [m for level, m in logged if level == logging.ERROR]
    assert len(errors) == 1 and "binding 3 is 4096 bytes" in errors[0]


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


def _near_row(host: dict[str, np.ndarray], row: int, seed: int) -> np.ndarray:
    """A query close to one resident row, so its scores are not all underflowed."""
    noise = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return (host["db"][row] + 0.05 * noise).astype(np.float32)


def _score_top(host: dict[str, np.ndarray], q: np.ndarray, k: int) -> tuple[list, np.ndarray]:
    d = host["db"].astype(np.float64) - q
    s = np.exp(-(d * d).sum(1))
    top = np.argsort(-s, kind="stable")[:k]
    return top.tolist(), s[top]


@pytest.mark.parametrize("variant", ["af", "numpy"])
async def test_score_is_the_top_k_of_exp_minus_squared_distance(variant):
    host = host_weights(ROWS)
    q = _near_row(host, 17, 3)
    async with asgi_client(create_app(variant, rows=ROWS)) as c:
        r = await c.post("/score", json={"query": q.tolist(), "k": 4})
        bad = await c.post("/score", json={"query": q.tolist(), "k": 101})
    assert r.status_code == 200, r.text
    top, scores = _score_top(host, q, 4)
    assert r.json()["indices"][0] == 17 and r.json()["indices"] == top
    np.testing.assert_allclose(r.json()["scores"], scores, rtol=1e-4, atol=1e-6)
    assert bad.status_code == 422 and bad.json()["field"] == "k"


@pytest.mark.parametrize("variant", ["numpy"])
async def test_the_thread_variant_answers_the_same(variant):
    async with asgi_client(create_app(variant, rows=ROWS)) as c:
        q = _query(1)
        r = await c.post("/search", json={"query": q, "k": 5})
        bad = await c.post("/search", json={"query": q[:3]})
    host = host_weights(ROWS)
    qa = np.asarray(q, np.float32)
    want = np.argsort(-(host["db"] @ (qa / np.linalg.norm(qa))), kind="stable")[:5]
    assert r.status_code == 200 and r.json()["indices"] == want.tolist()
    assert bad.status_code == 422 and bad.json()["field"] == "query"


async def test_a_pool_of_devices_serves_every_request_on_the_least_loaded_one():
    # SERVICE_PER_GPU / per_adapter: the service behind a device pool (here two devices
    # of lavapipe), the weights resident on each device that served a request.
    host = host_weights(ROWS)
    async with client(per_adapter=2) as (c, svc):
        assert len(svc.pool.devices) == 2
        queries = [np.asarray(_query(seed), np.float32) for seed in range(8)]

        async def one(q: np.ndarray) -> list[int]:
            r = await c.post("/search", json={"query": q.tolist(), "k": 3})
            assert r.status_code == 200, r.text
            return r.json()["indices"]

        got: dict[int, list[int]] = {}

        async def run(i: int) -> None:
            got[i] = await one(queries[i])

        async with anyio.create_task_group() as tg:
            for i in range(len(queries)):
                tg.start_soon(run, i)
        for i, q in enumerate(queries):
            want = host["db"] @ (q / np.linalg.norm(q))
            assert got[i] == np.argsort(-want, kind="stable")[:3].tolist()
        stats = (await c.get("/stats")).json()
        assert stats["devices"] == 2 and stats["served"] == len(queries)
        health = (await c.get("/health")).json()
        assert health["live"] == 2
