"""``DevicePool``: several devices behind one door, for services and data parallelism.

``async with pool.device() as dev:`` hands out the least-loaded live device — the fewest
queued ops plus reads in flight plus requests admitted (``dev.metrics()``) — holding one
of its ``max_pending`` slots (``dev.admit()``) for the block; only when every device is
full does it raise :class:`~asyncfusion.Overloaded`. A lost or closed device is skipped;
:func:`open_pool` also opens a replacement for it. ``await pool.map(fn, batch)`` splits
a batch across the devices and gathers the results in order.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
import numpy as np

from .._core.errors import DeviceLostError, Overloaded
from .device import Device
from .lifecycle import open_device

__all__ = ["DevicePool", "open_pool", "serving_adapters"]

MapFn = Callable[[Device, Any], Awaitable[Any]]


def _load(dev: Device) -> int:
    m = dev.metrics()
    return m.queued_ops + m.reads_in_flight + m.admitted_now


def _full(dev: Device) -> bool:
    m = dev.metrics()
    return m.max_pending is not None and m.admitted_now >= m.max_pending


class DevicePool:
    """Devices (open, each from ``open_device``) served as one."""

    def __init__(self, devices: Sequence[Device]) -> None:
        devs = list(devices)
        if not devs:
            raise ValueError("DevicePool needs at least one device; open them with "
                             "open_device() (or use asyncfusion.open_pool())")
        for d in devs:
            if not isinstance(d, Device):
                raise TypeError(f"DevicePool takes asyncfusion Devices, not {d!r}")
        if len({id(d) for d in devs}) != len(devs):
            raise ValueError("DevicePool got the same device twice; give each device once")
        self._devices = devs
        self.retry_after = max(d.options.retry_after for d in devs)

    def __repr__(self) -> str:
        return f"<asyncfusion.DevicePool of {len(self._devices)}: {self._devices!r}>"

    @property
    def devices(self) -> list[Device]:
        """Every device of the pool, lost or closed ones included."""
        return list(self._devices)

    def live(self) -> list[Device]:
        """The devices that can take work (neither lost nor closed), least loaded first
        (ties keep the pool's order)."""
        return sorted((d for d in self._devices if not d.closed and not d.lost), key=_load)

    def replace(self, old: Device, new: Device) -> None:
        """Put ``new`` where ``old`` was (a device reopened after a loss)."""
        self._devices[self._devices.index(old)] = new

    def _none_left(self) -> DeviceLostError:
        states = ", ".join(f"{d!r} ({'lost' if d.lost else 'closed'})" for d in self._devices)
        return DeviceLostError(f"every device of the pool is lost or closed: {states}; "
                               "open new devices (asyncfusion.open_pool reopens lost ones)")

    @contextlib.asynccontextmanager
    async def device(self, timeout: float = 0.0) -> AsyncIterator[Device]:
        """The least-loaded device that has a free admission slot, held for the block.

        When every device is at its ``max_pending``, waits up to ``timeout`` seconds for a
        slot on the least loaded one, else raises :class:`~asyncfusion.Overloaded`; raises
        :class:`~asyncfusion.DeviceLostError` when no device of the pool is left."""
        live = self.live()
        if not live:
            raise self._none_left()
        async with contextlib.AsyncExitStack() as stack:
            for dev in live:
                if _full(dev):
                    continue
                try:
                    await stack.enter_async_context(dev.admit())
                except Overloaded:  # others wait for its slots already
                    continue
                break
            else:
                if timeout <= 0:
                    limits = ", ".join(str(d.metrics().max_pending) for d in live)
                    raise Overloaded(
                        f"every device of the pool is at its limit of pending requests "
                        f"({limits}); retry in {math.ceil(self.retry_after)} s (answer 503 "
                        "with Retry-After), or add devices or raise max_pending",
                        self.retry_after)
                dev = live[0]
                await stack.enter_async_context(dev.admit(timeout))
            yield dev

    async def map(self, fn: MapFn, batch: Any, *, axis: int = 0) -> Any:
        """``fn(device, part)`` for one part of ``batch`` per live device, concurrently,
        gathered in order in one await.

        ``batch`` is a numpy array (split along ``axis``) or a list (split into runs);
        ``fn`` is an async function returning a Tensor, a numpy array or a list for its
        part. Array results are concatenated along ``axis`` (Tensors read on their own
        device, all at once), list results joined. The first failure cancels the rest and
        is raised as itself."""
        if not callable(fn):
            raise TypeError(f"map needs an async function fn(device, part), not {fn!r}")
        if isinstance(batch, np.ndarray):
            if batch.ndim == 0:
                raise ValueError("map splits a batch along an axis; a 0-d array has none")
            n = batch.shape[axis]
        elif isinstance(batch, list):
            n = len(batch)
        else:
            raise TypeError(f"map splits a numpy array or a list, not {type(batch).__name__}")
        live = self.live()
        if not live:
            raise self._none_left()
        k = max(1, min(len(live), n))
        bounds = [n * i // k for i in range(k + 1)]
        parts = [batch[bounds[i]:bounds[i + 1]] if isinstance(batch, list) else
                 np.take(batch, np.arange(bounds[i], bounds[i + 1]), axis=axis)
                 for i in range(k)]
        results: list[Any] = [None] * k

        async def one(i: int) -> None:
            out = await fn(live[i], parts[i])
            read = getattr(out, "to_data", None)  # a Tensor: read on its own device
            results[i] = await read() if read is not None else out

        try:
            async with anyio.create_task_group() as tg:
                for i in range(k):
                    tg.start_soon(one, i)
        except BaseExceptionGroup as group:
            first = _first_leaf(group)
            if first is None:
                raise
            raise first from None
        if all(isinstance(r, list) for r in results):
            return [x for r in results for x in r]
        return np.concatenate([np.asarray(r) for r in results], axis=axis)


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one failure (not a cancellation) inside ``group``, if there is just one."""
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for x in e.exceptions:
                walk(x)
        elif not isinstance(e, anyio.get_cancelled_exc_class()):
            leaves.append(e)

    walk(group)
    return leaves[0] if len(leaves) == 1 else None


def serving_adapters() -> list[int]:
    """The adapters a pool serves from by default, one device each: every GPU that
    wgpu reaches through a native API (Vulkan, Metal, D3D12: not OpenGL, which lists the
    same GPUs again), or, on a host without one, the first CPU adapter."""
    from ..backends.wgpu.adapters import adapters

    listed = [a for a in adapters() if a.backend != "OpenGL"] or adapters()
    gpus = [a.index for a in listed if a.gpu]
    if gpus or not listed:
        return gpus
    return [listed[0].index]


@contextlib.asynccontextmanager
async def open_pool(backend: str = "wgpu", *, adapters: Sequence[int] | None = None,
                    per_adapter: int = 1, reopen: bool = True, **options: Any
                    ) -> AsyncIterator[DevicePool]:
    """Open a :class:`DevicePool`: ``per_adapter`` devices on each of ``adapters``
    (indices into ``af.adapters()``; default: :func:`serving_adapters`), each with the
    :class:`~asyncfusion.DeviceOptions` ``options``. With ``reopen``, a device that is
    lost is closed and a new one opened on its adapter (its place in the pool goes to
    the new one); meanwhile the pool skips it. ``backend="numpy"`` opens ``per_adapter``
    host devices."""
    if not isinstance(per_adapter, int) or isinstance(per_adapter, bool) or per_adapter < 1:
        raise ValueError(f"per_adapter must be an int of at least 1, not {per_adapter!r}")
    if "adapter" in options:
        raise TypeError("open_pool takes adapters=[...] (indices), not adapter=")
    if backend == "numpy":
        if adapters is not None:
            raise ValueError("adapters= picks wgpu adapters; the numpy backend has none")
        choices: list[int | None] = [None] * per_adapter
    else:
        picked = serving_adapters() if adapters is None else list(adapters)
        if not picked:
            raise ValueError("open_pool found no adapter to open; see asyncfusion.adapters()")
        choices = [a for a in picked for _ in range(per_adapter)]
    async with contextlib.AsyncExitStack() as stack:
        devs = []
        for choice in choices:
            extra = {} if choice is None else {"adapter": choice}
            devs.append(await stack.enter_async_context(
                open_device(backend, **extra, **options)))
        pool = DevicePool(devs)
        if not reopen:
            yield pool
            return
        async with anyio.create_task_group() as tg:
            for dev, choice in zip(devs, choices, strict=True):
                tg.start_soon(_keep_open, pool, dev, backend,
                              {} if choice is None else {"adapter": choice}, options)
            try:
                yield pool
            finally:
                tg.cancel_scope.cancel()


async def _keep_open(pool: DevicePool, dev: Device, backend: str, extra: dict[str, int],
                     options: dict[str, Any]) -> None:
    """Watch one device of ``pool``; once it is lost, open a new one in its place (the
    lost one closes when its replacement is up)."""
    while True:
        while not dev.lost:
            await anyio.sleep(0.05)
        async with open_device(backend, **extra, **options) as new:
            pool.replace(dev, new)
            dev = new
            while not dev.lost:
                await anyio.sleep(0.05)
