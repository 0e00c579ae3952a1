"""A service's device for Starlette (and FastAPI): lifespan, reopening, health, errors.

    svc = DeviceService(max_pending=256)
    app = Starlette(routes=[*svc.routes, Route("/score", score, methods=["POST"])],
                    lifespan=svc.lifespan, exception_handlers=svc.exception_handlers)

    async def score(request):
        async with svc.admit():               # 503 + Retry-After past max_pending
            dev = svc.device()                # the open device (reopened after a loss)
            ...

* ``lifespan`` opens the device when the app starts and closes it when the app stops.
* A lost device (:class:`~asyncfusion.DeviceLostError`, or ``dev.lost``) is closed and a
  new one opened; meanwhile requests get 503 with ``Retry-After``.
* ``/health`` answers 200 with the device and its metrics, or 503 while there is none.
* ``/metrics`` is the Prometheus exposition (with ``prometheus-client`` installed).
* ``exception_handlers`` answer :class:`~asyncfusion.InputError` with 400 (413 for
  ``LimitError``), ``Overloaded`` and a lost or closed device with 503 and
  ``Retry-After``, any other asyncfusion error with 500; the body is
  ``{"error": class name, "detail": message}``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..device import Device, open_device
from ..errors import (AsyncFusionError, DeviceClosedError, DeviceLostError, Overloaded,
                      http_status)

__all__ = ["DeviceService", "error_response"]


def error_response(exc: Exception, retry_after: float = 1.0) -> JSONResponse:
    """The JSON response for an asyncfusion error (see :func:`asyncfusion.http_status`)."""
    status = http_status(exc)
    headers = {}
    if status == 503:
        wait = exc.retry_after if isinstance(exc, Overloaded) else retry_after
        headers["Retry-After"] = str(max(1, math.ceil(wait)))
    return JSONResponse({"error": type(exc).__name__, "detail": str(exc)}, status_code=status,
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
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """Starlette's ``lifespan=``: the device is open while the app runs."""
        async with anyio.create_task_group() as tg:
            await tg.start(self._keep_open)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def _keep_open(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
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
    def exception_handlers(self) -> dict[Any, Any]:
        """Starlette's ``exception_handlers=``: every asyncfusion error to a response."""
        return {AsyncFusionError: self._on_error}
