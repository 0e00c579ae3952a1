"""examples/ray_serve.py on a local Ray instance: the replica opens its device at start-up
and answers /search and /mlp over HTTP as numpy does; errors keep their status codes.

Marked ``ray`` (left out of ``make test``): ``make ray-test`` installs the ``ray`` extra
and runs it.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from examples.service import DIM, MLP_IN, host_weights

pytestmark = [pytest.mark.ray, pytest.mark.timeout(900),
              # Ray's own imports warn about its use of pydantic and the like
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ROOT = Path(__file__).resolve().parent.parent
ROWS = 384
SESSION = pytest.StashKey[Path]()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def serve_url(monkeypatch, request):
    import ray
    from ray import serve

    from examples.ray_serve import build_app

    # Ray's worker processes inherit this environment: they import examples.* from here
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    port = free_port()
    context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    request.node.stash[SESSION] = Path(context.address_info["session_dir"])
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(build_app({"rows": str(ROWS), "max_batch": "8", "max_wait_ms": "2"}),
                  route_prefix="/")
        yield f"http://127.0.0.1:{port}"
    finally:
        serve.shutdown()
        ray.shutdown()


def test_a_ray_serve_replica_answers_as_numpy(serve_url):
    import httpx

    host = host_weights(ROWS)
    rng = np.random.default_rng(5)
    with httpx.Client(base_url=serve_url, timeout=120) as c:
        health = c.get("/health")
        assert health.status_code == 200, health.text
        for _ in range(3):
            q = rng.standard_normal(DIM).astype(np.float32)
            r = c.post("/search", json={"query": q.tolist(), "k": 4})
            assert r.status_code == 200, r.text
            scores = host["db"] @ (q / np.linalg.norm(q))
            top = np.argsort(-scores, kind="stable")[:4]
            assert r.json()["indices"] == top.tolist()
            np.testing.assert_allclose(r.json()["scores"], scores[top], rtol=1e-4, atol=1e-5)
        x = rng.standard_normal((3, MLP_IN)).astype(np.float32)
        r = c.post("/mlp", json={"x": x.tolist()})
        assert r.status_code == 200, r.text
        z = np.maximum(x @ host["w1"] + host["b1"], 0) @ host["w2"] + host["b2"]
        want = np.exp(z - z.max(-1, keepdims=True))
        np.testing.assert_allclose(r.json()["probs"], want / want.sum(-1, keepdims=True),
                                   rtol=1e-4, atol=1e-6)
        bad = c.post("/search", json={"query": [1.0, 2.0], "k": 4})
        assert bad.status_code == 422 and bad.json()["field"] == "query"
        assert c.get("/stats").json()["served"] == 4


def replica_log(session: Path) -> str:
    return "".join(p.read_text() for p in (session / "logs" / "serve").glob("replica_*.log"))


def test_the_replica_opens_its_device_at_start_and_closes_it_at_shutdown(request: Any):
    from ray import serve

    serve_url = request.getfixturevalue("serve_url")
    session = request.node.stash[SESSION]
    assert "asyncfusion replica device opened: <asyncfusion.Device" in replica_log(session)
    assert serve_url and "device closed" not in replica_log(session)
    serve.shutdown()  # graceful: Ray Serve runs the app's lifespan shutdown
    closed = "asyncfusion replica device closed: <asyncfusion.Device"
    give_up = time.monotonic() + 60  # the replica's last lines may land a little later
    while closed not in replica_log(session) and time.monotonic() < give_up:
        time.sleep(0.2)
    assert closed in replica_log(session)
