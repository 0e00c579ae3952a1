"""The example service (``examples/service.py``) as a Ray Serve deployment: one replica
per GPU, each with its own device, on one host or a Ray cluster of many.

    pip install 'asyncfusion[ray]'
    serve run examples.ray_serve:build_app                      # one replica, on CPU
    serve run examples.ray_serve:build_app num_gpus=1 replicas=8  # one per GPU of 8

Each replica serves the same Starlette app as ``examples/service.py`` through Ray
Serve's ASGI ingress (``@serve.ingress``), so the endpoints (``/search``, ``/mlp``,
``/health``, ``/metrics``, ``/stats``) and their error mapping are that module's. Ray
Serve runs the app's lifespan in the replica's event loop: the device opens when the
replica starts (before it takes traffic) and closes when the replica shuts down.
``@serve.batch`` is not needed: the replica's device batches its concurrent requests
itself (``max_batch`` / ``max_wait_ms`` tune it).

``build_app``'s arguments (``serve run ... key=value``, all optional): ``num_gpus`` per
replica (0: CPU only, e.g. lavapipe; 1: one GPU each), ``replicas``, and ``rows``,
``max_batch``, ``max_wait_ms``, handed to the replica's ``create_app`` as
``SERVICE_*`` environment variables.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from ray import serve
from starlette.applications import Starlette

# lines in the replica's log (Ray Serve quiets "ray.serve" itself during the lifespan)
log = logging.getLogger("ray.serve.asyncfusion")
log.setLevel(logging.INFO)


def _replica_app() -> Starlette:
    """Built in each replica when it starts (the weights are made there, not pickled);
    its lifespan logs the replica's device as it opens and once it is closed."""
    from examples.service import create_app

    app = create_app()
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app_: Starlette) -> AsyncIterator[None]:
        async with inner(app_):
            dev = app.state.service.device()
            log.info("asyncfusion replica device opened: %r", dev)
            yield
        log.info("asyncfusion replica device %s: %r", "closed" if dev.closed else "OPEN", dev)

    app.router.lifespan_context = lifespan
    return app


@serve.deployment
@serve.ingress(_replica_app)
class AsyncFusionService:
    """One replica: the example service's app, on the replica's own device."""


_ENV = {"rows": "SERVICE_ROWS", "max_batch": "SERVICE_MAX_BATCH",
        "max_wait_ms": "SERVICE_MAX_WAIT_MS"}


def build_app(args: dict[str, str] | None = None) -> Any:
    """The Ray Serve application (``serve run examples.ray_serve:build_app k=v ...``)."""
    args = dict(args or {})
    unknown = set(args) - {"num_gpus", "replicas", *_ENV}
    if unknown:
        raise ValueError(f"unknown arguments {sorted(unknown)}; use num_gpus, replicas, "
                         f"{', '.join(_ENV)}")
    actor: dict[str, Any] = {"num_gpus": float(args.get("num_gpus", 0))}
    env = {_ENV[k]: str(v) for k, v in args.items() if k in _ENV}
    if env:
        actor["runtime_env"] = {"env_vars": env}
    return AsyncFusionService.options(
        num_replicas=int(args.get("replicas", 1)), ray_actor_options=actor).bind()


app = build_app()  # serve run examples.ray_serve:app
