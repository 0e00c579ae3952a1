"""A service's device for Starlette (and FastAPI): lifespan, reopening, health, errors,
and JSON in and out.

    svc = DeviceService(max_pending=256)
    app = Starlette(routes=[*svc.routes, Route("/score", score, methods=["POST"])],
                    lifespan=svc.lifespan, exception_handlers=svc.exception_handlers)

    async def score(request):
        q = await read_array(request, "query", shape=(256,), dtype=af.float32)  # 4xx if bad
        async with svc.admit():               # 503 + Retry-After past max_pending
            dev = svc.device()                # the open device (reopened after a loss)
            ...
            return ArrayJSONResponse({"scores": await s.to_data()})  # NaN, ±inf: null

* ``lifespan`` opens the device when the app starts and closes it when the app stops.
* A lost device (:class:`~asyncfusion.DeviceLostError`, or ``dev.lost``) is closed and a
  new one opened; meanwhile requests get 503 with ``Retry-After``.
* ``/health`` answers 200 with the device and its metrics, or 503 while there is none.
* ``/metrics`` is the Prometheus exposition (with ``prometheus-client`` installed).
* :func:`read_json`, :func:`read_array` and :meth:`DeviceService.read_tensor` read a
  request's JSON body strictly (:mod:`asyncfusion.contrib.jsonio`): a bad body or field
  raises :class:`~asyncfusion.contrib.jsonio.RequestError` (400 or 422) naming the field
  and the form expected. :class:`ArrayJSONResponse` writes numpy results, non-finite
  numbers as ``null``.
* ``exception_handlers`` answer every asyncfusion error (:func:`error_response`):
  ``RequestError`` with its status, any other :class:`~asyncfusion.InputError` with 400
  (413 for ``LimitError``), ``Overloaded`` and a lost or closed device with 503 and
  ``Retry-After``, the rest with 500. The body is ``{"error": class name, "detail": ...}``
  (and ``"field"`` for a ``RequestError``). Only a ``RequestError``'s message, which is
  about the client's input, is sent; for the others ``detail`` is a fixed sentence for
  their kind (an op's message can name the server's shapes, a kernel's the runtime's
  internals) and the full message goes to the ``asyncfusion.contrib.starlette`` logger.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import math
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.abc import TaskStatus
import numpy as np
import numpy.typing as npt
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import HTTPExceptionHandler

from .._core.dtype import DTypeSpec
from ..api.creation import tensor
from ..runtime import Device, DevicePool, open_device, open_pool
from .._core.errors import (AsyncFusionError, DeviceClosedError, DeviceLostError, Overloaded,
                      http_status)
from ..lazy.tensor import Tensor
from .jsonio import JSONValue, RequestError, Shape, encode, parse_array, parse_body

__all__ = ["DeviceService", "PoolService", "ArrayJSONResponse", "error_response", "read_json",
           "read_array", "RequestError"]

_log = logging.getLogger(__name__)
_BODY = "asyncfusion.json_body"  # where read_json keeps a request's parsed body (its scope)
_DETAIL = {400: "the request's input does not fit this endpoint; check it against the "
                "endpoint's documented form",
           413: "the request's input is too large for this service",
           500: "the service failed to run the request"}


class ArrayJSONResponse(JSONResponse):
    """A JSON response whose content may hold numpy arrays and scalars; ``NaN``, ``inf``
    and ``-inf`` are written as ``null`` (:func:`asyncfusion.contrib.jsonio.encode`)."""

    def render(self, content: object) -> bytes:
        return encode(content)


async def read_json(request: Request) -> dict[str, JSONValue]:
    """The request's body as a JSON object, parsed once per request; raises
    :class:`RequestError` (400) for an empty body, one that is not JSON or not an object."""
    body: dict[str, JSONValue] | None = request.scope.get(_BODY)
    if body is None:
        body = request.scope[_BODY] = parse_body(await request.body())
    return body


async def read_array(request: Request, key: str, *, shape: Shape, dtype: object,
                     default: npt.ArrayLike | None = None) -> np.ndarray:
    """Field ``key`` of the request's JSON body as a numpy array of ``shape`` (``None``
    for a dimension of any length from 1 up) and ``dtype``; raises :class:`RequestError`
    (:func:`asyncfusion.contrib.jsonio.parse_array` says what is refused)."""
    return parse_array(await read_json(request), key, shape=shape, dtype=dtype,
                       default=default)


def error_response(exc: Exception, retry_after: float = 1.0) -> JSONResponse:
    """The JSON response for an asyncfusion error (see the module's docstring): a
    :class:`RequestError`'s message as it is, for the others a sentence for their kind,
    with their full message logged."""
    if isinstance(exc, RequestError):
        _log.info("refused a request (%d): %s", exc.status, exc)
        return JSONResponse({"error": "RequestError", "detail": str(exc), "field": exc.field},
                            status_code=exc.status)
    status = http_status(exc)
    headers = {}
    if status == 503:
        wait = exc.retry_after if isinstance(exc, Overloaded) else retry_after
        seconds = max(1, math.ceil(wait))
        headers["Retry-After"] = str(seconds)
        what = ("the service is at capacity" if isinstance(exc, Overloaded) else
                "the service's device is not available (starting, stopping or reopening)")
        detail = f"{what}; retry in {seconds} s"
        _log.info("answered %s with 503: %s", type(exc).__name__, exc)
    elif status >= 500:
        detail = _DETAIL[500]
        _log.error("answered %s with %d: %s", type(exc).__name__, status, exc, exc_info=exc)
    else:
        detail = _DETAIL[status]
        _log.warning("answered %s with %d (the client is told only its kind): %s",
                     type(exc).__name__, status, exc)
    return JSONResponse({"error": type(exc).__name__, "detail": detail}, status_code=status,
                        headers=headers)


class DeviceService:
    """Opens a device for an app's lifetime and reopens it after a loss; ``options`` go
    to :func:`asyncfusion.open_device`."""

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.retry_after = float(options.get("retry_after", 1.0))
        self.reopens = 0
        self._dev: Device | None = None
        self._lost: anyio.Event | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self, app: object) -> AsyncIterator[None]:
        """Starlette's ``lifespan=``: the device is open while the app runs."""
        async with anyio.create_task_group() as tg:
            await tg.start(self._keep_open)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def _keep_open(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        started = False
        try:
            while True:
                lost = self._lost = anyio.Event()
                async with open_device(**self.options) as dev:
                    self._dev = dev
                    if not started:
                        task_status.started()
                        started = True
                    await lost.wait()
                    self._dev = None
                self.reopens += 1
        finally:
            self._dev = None

    def reopen(self) -> None:
        """Close the device and open a new one (done on its own after a loss)."""
        if self._lost is not None:
            self._lost.set()

    def device(self) -> Device:
        """The open device; raises :class:`~asyncfusion.DeviceClosedError` (503) while
        there is none, and starts a reopen when the device is lost."""
        dev = self._dev
        if dev is not None and dev.lost:
            self.reopen()
            raise DeviceLostError("the GPU device was lost; a new one is being opened, retry")
        if dev is None or dev.closed:
            raise DeviceClosedError("no device is open (the service is starting, stopping or "
                                    "reopening its device); retry")
        return dev

    async def read_tensor(self, request: Request, key: str, *, shape: Shape, dtype: DTypeSpec,
                          default: npt.ArrayLike | None = None) -> Tensor:
        """:func:`read_array` uploaded to the open device. The body is read and checked
        before anything reaches the device; inside ``admit()``, the slot is held while
        the body arrives (read a slow client's body with :func:`read_array` first)."""
        data = await read_array(request, key, shape=shape, dtype=dtype, default=default)
        return tensor(data, dtype=dtype, device=self.device())

    def admit(self, timeout: float = 0.0) -> contextlib.AbstractAsyncContextManager[None]:
        """``async with svc.admit():`` — the device's :meth:`~asyncfusion.Device.admit`."""
        return self.device().admit(timeout)

    async def health(self, request: Request) -> JSONResponse:
        """200 with the device and its metrics while one is open; 503 otherwise."""
        try:
            dev = self.device()
        except AsyncFusionError as exc:
            return error_response(exc, self.retry_after)
        m = dev.metrics()
        return JSONResponse({"status": "ok", "device": repr(dev), "reopens": self.reopens,
                             "rounds": m.rounds, "queued_requests": m.queued_requests,
                             "reads_in_flight": m.reads_in_flight,
                             "admitted_now": m.admitted_now, "rejected": m.rejected,
                             "launches": m.launches, "submissions": m.submissions})

    async def metrics(self, request: Request) -> Response:
        """The Prometheus exposition of the device's metrics."""
        from .prometheus import exposition

        try:
            body = exposition(self.device())
        except AsyncFusionError as exc:
            return error_response(exc, self.retry_after)
        return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def _on_error(self, request: Request, exc: Exception) -> Response:
        if isinstance(exc, DeviceLostError):
            self.reopen()
        return error_response(exc, self.retry_after)

    @property
    def routes(self) -> list[Route]:
        """``/health``, and ``/metrics`` where ``prometheus-client`` is installed."""
        out = [Route("/health", self.health)]
        if importlib.util.find_spec("prometheus_client") is not None:
            out.append(Route("/metrics", self.metrics))
        return out

    @property
    def exception_handlers(self) -> dict[type[Exception], HTTPExceptionHandler]:
        """Starlette's ``exception_handlers=``: every asyncfusion error to a response."""
        return {AsyncFusionError: self._on_error}


class PoolService:
    """A :class:`~asyncfusion.DevicePool` for an app's lifetime: ``per_adapter`` devices
    on each of ``adapters`` (default: one per GPU of the host, see
    :func:`asyncfusion.runtime.pool.serving_adapters`), lost ones reopened; ``options``
    go to every :func:`asyncfusion.open_device`.

        svc = PoolService(max_pending=256)
        async def score(request):
            async with svc.device() as dev:   # least loaded; 503 when all are full
                ...
    """

    def __init__(self, *, adapters: list[int] | None = None, per_adapter: int = 1,
                 backend: str = "wgpu", **options: Any) -> None:
        self.options = options
        self.adapters = adapters
        self.per_adapter = per_adapter
        self.backend = backend
        self.retry_after = float(options.get("retry_after", 1.0))
        self._pool: DevicePool | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self, app: object) -> AsyncIterator[None]:
        """Starlette's ``lifespan=``: the pool is open while the app runs."""
        async with open_pool(self.backend, adapters=self.adapters,
                             per_adapter=self.per_adapter, **self.options) as pool:
            self._pool = pool
            try:
                yield
            finally:
                self._pool = None

    @property
    def pool(self) -> DevicePool:
        """The open pool; :class:`~asyncfusion.DeviceClosedError` (503) while there is none."""
        if self._pool is None:
            raise DeviceClosedError("no device pool is open (the service is starting or "
                                    "stopping); retry")
        return self._pool

    def device(self, timeout: float = 0.0) -> contextlib.AbstractAsyncContextManager[Device]:
        """``async with svc.device() as dev:`` — :meth:`DevicePool.device`."""
        return self.pool.device(timeout)

    async def health(self, request: Request) -> JSONResponse:
        """200 with each device's state and load while one is live; 503 otherwise."""
        try:
            pool = self.pool
            live = pool.live()
            if not live:
                raise DeviceLostError("every device of the pool is lost; reopening")
        except AsyncFusionError as exc:
            return error_response(exc, self.retry_after)
        devices = [{"device": repr(d), "lost": d.lost, "rounds": m.rounds,
                    "queued_ops": m.queued_ops, "reads_in_flight": m.reads_in_flight,
                    "admitted_now": m.admitted_now, "rejected": m.rejected}
                   for d in pool.devices for m in (d.metrics(),)]
        return JSONResponse({"status": "ok", "live": len(live), "devices": devices})

    @property
    def routes(self) -> list[Route]:
        """``/health``."""
        return [Route("/health", self.health)]

    @property
    def exception_handlers(self) -> dict[type[Exception], HTTPExceptionHandler]:
        """Starlette's ``exception_handlers=``: every asyncfusion error to a response."""
        return {AsyncFusionError: lambda request, exc: error_response(exc, self.retry_after)}
