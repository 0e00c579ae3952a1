"""``DeviceOptions``: every option of a device, defined, documented and checked once.

``open_device(backend, **options)`` and ``Device(backend, **options)`` take these as
keywords; a bad value is refused when the device opens, naming the option.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._core.errors import OptionError

if TYPE_CHECKING:
    from ..backends.wgpu.adapters import Adapter

__all__ = ["DeviceOptions"]

_BACKENDS = ("wgpu", "numpy")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceOptions:
    """The options of one device.

    :param backend: ``"wgpu"`` (WebGPU through wgpu-native) or ``"numpy"`` (the reference).
    :param adapter: which adapter a wgpu device runs on: an index into
        :func:`asyncfusion.adapters`, or a predicate on its entries (the first that
        matches: ``adapter=lambda a: a.backend == "Vulkan"``); None: wgpu's
        high-performance adapter.
    :param fusion: wrap the backend in the Fusion decorator (``False``: one launch per op).
    :param max_storage_bindings: cap on storage buffers per kernel (WebGPU's default is 8).
    :param workgroup: threads per workgroup of element-wise kernels (None: the adapter's
        best: 512 on a GPU, 256 on a CPU adapter).
    :param flush_threshold: queued ops of one stream that make the server run them
        without a read.
    :param early_start: start a task's queued work before its read when the task begins
        large work that shares no tensor with it (an op over 16M elements or more, the
        size at which the fuser gives independent work a kernel of its own anyway): the
        executor thread runs what came before while the task records on, so the GPU
        starts instead of waiting for the read (False: nothing runs before a read).
    :param max_pending: requests admitted at once by :meth:`Device.admit` (None: no limit);
        the rest wait or get :class:`~asyncfusion.Overloaded`.
    :param max_round: requests one round serves at most (None: all that wait), so a
        round's latency stays bounded under overload; the rest go in the next round.
    :param target_latency_ms: a latency target for :meth:`Device.admit`: the number of
        requests admitted at once adapts (at most ``max_pending``) so that each holds its
        slot no longer than this; past it requests are refused at once (None: a fixed
        ``max_pending``).
    :param retry_after: the seconds an ``Overloaded`` error suggests to wait.
    :param max_batch: instances one batched launch takes at most (None: as many as fit):
        equal programs of more tasks than this run as several launches per kernel.
    :param max_wait_ms: how long a round whose reads come from fewer than ``max_batch``
        tasks (or ``max_round`` requests) may wait for more, counted from its oldest read
        (0, the default: it starts at once). Under light load this trades up to that much
        latency for batching: requests that arrive a little apart share one launch, as in
        Triton's dynamic batcher or Ray Serve's ``@serve.batch``. Syncs never wait.
    :param cache_bytes: how many bytes of freed buffers the caching allocator keeps for
        reuse (None: the ``ASYNCFUSION_CACHE_BYTES`` environment variable, else 8 GiB on a
        GPU and a quarter of the host's memory, at most 4 GiB, on a CPU adapter; WebGPU
        does not report a device's memory; by default the cache also keeps up to the most
        bytes the device once held live at one time, so repeated rounds larger than the
        budget reuse their buffers; a budget given here or in the environment is a hard
        cap). Past it, freed buffers are released; under allocation pressure the cache is
        emptied and the allocation retried.
    :param matmul_tune: time candidate matmul schedules once per shape class and keep the
        fastest on disk (None: the ``ASYNCFUSION_MATMUL_TUNE`` environment variable, 1 or
        0, else on for GPU adapters and off for CPU ones, which take the default).
    :param tune_dir: the directory of the tuning files (None: ``ASYNCFUSION_TUNE_DIR``,
        else ``$XDG_CACHE_HOME/asyncfusion``, ``~/.cache/asyncfusion`` by default).
    :param freeze_gc: the first device of the process collects garbage once and freezes
        what survived (:func:`gc.freeze`), so the objects imported before it (torch, a web
        framework) are not walked again by every full collection while it serves, and a
        device raises the young generation's threshold to 10,000 new objects (see
        ``runtime/collector.py``); False leaves the collector alone.
    """

    backend: str = "wgpu"
    adapter: int | Callable[[Adapter], bool] | None = None
    fusion: bool = True
    max_storage_bindings: int | None = None
    workgroup: int | None = None
    flush_threshold: int = 512
    early_start: bool = True
    max_pending: int | None = None
    max_round: int | None = None
    target_latency_ms: float | None = None
    retry_after: float = 1.0
    max_batch: int | None = None
    max_wait_ms: float = 0.0
    cache_bytes: int | None = None
    matmul_tune: bool | None = None
    tune_dir: str | os.PathLike[str] | None = None
    freeze_gc: bool = True

    @staticmethod
    def of(backend: str, options: dict[str, Any]) -> DeviceOptions:
        """The options that ``open_device(backend, **options)`` names; an unknown name
        is a TypeError that lists the known ones."""
        known = {f.name for f in dataclasses.fields(DeviceOptions)} - {"backend"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"unknown device option{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(map(repr, unknown))}; the options are: "
                            f"{', '.join(sorted(known))}")
        return DeviceOptions(backend=backend, **options)

    def __post_init__(self) -> None:
        if self.backend not in _BACKENDS:
            raise OptionError(f"unknown backend {self.backend!r}; use 'wgpu' (every GPU, NVIDIA's "
                              "included, through WebGPU: Vulkan, Metal, D3D12) or 'numpy' "
                              "(the host reference): af.open_device('wgpu')")
        self.adapter_index()
        for flag in ("fusion", "freeze_gc", "early_start"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be True or False, not {getattr(self, flag)!r}")
        for name, low, optional in (("max_storage_bindings", 4, True), ("workgroup", 1, True),
                                    ("flush_threshold", 1, False),
                                    ("max_pending", 1, True), ("max_round", 1, True),
                                    ("max_batch", 1, True)):
            _check_int(name, getattr(self, name), low, optional)
        cache = self.cache_bytes
        if cache is not None:
            if not isinstance(cache, int) or isinstance(cache, bool):
                raise TypeError(f"cache_bytes must be an int (bytes) or None, not {cache!r}")
            if cache < 0:
                raise OptionError(f"cache_bytes must be 0 or more (0: free buffers at once), "
                                 f"not {cache}")
        if self.matmul_tune is not None and not isinstance(self.matmul_tune, bool):
            raise TypeError(f"matmul_tune must be True, False or None (the adapter's "
                            f"default), not {self.matmul_tune!r}")
        if self.tune_dir is not None and not isinstance(self.tune_dir, (str, os.PathLike)):
            raise TypeError(f"tune_dir must be a directory path (str or os.PathLike) or None, "
                            f"not {self.tune_dir!r}")
        retry = self.retry_after
        if not isinstance(retry, (int, float)) or isinstance(retry, bool) or not retry > 0:
            raise OptionError(f"retry_after must be a positive number of seconds, not {retry!r}")
        target = self.target_latency_ms
        if target is not None and (not isinstance(target, (int, float))
                                   or isinstance(target, bool) or not 0 < target < math.inf):
            raise OptionError(f"target_latency_ms must be a positive number of milliseconds "
                              f"or None (a fixed max_pending), not {target!r}")
        wait = self.max_wait_ms
        if not isinstance(wait, (int, float)) or isinstance(wait, bool) \
                or not 0 <= wait < float("inf"):
            raise OptionError(f"max_wait_ms must be a number of milliseconds, 0 or more (0: "
                             f"rounds start at once), not {wait!r}")

    def adapter_index(self) -> int | None:
        """The index in ``af.adapters()`` that ``adapter`` names (None: the default);
        raises a clear error for one that names no adapter."""
        choice = self.adapter
        if choice is None:
            return None
        if self.backend != "wgpu":
            raise OptionError(f"adapter= picks a wgpu adapter; the {self.backend!r} backend "
                             "runs on the host (leave adapter out)")
        if isinstance(choice, bool) or not (isinstance(choice, int) or callable(choice)):
            raise TypeError(f"adapter must be an index into asyncfusion.adapters() or a "
                            f"predicate on its entries, not {choice!r}")
        from ..backends.wgpu.adapters import adapters

        listed = adapters()
        names = "; ".join(map(str, listed)) or "none: wgpu sees no adapter"
        if isinstance(choice, int):
            if not 0 <= choice < len(listed):
                raise OptionError(f"adapter={choice} is out of range: this host has "
                                 f"{len(listed)} adapter(s): {names}")
            return choice
        for a in listed:
            if choice(a):
                return a.index
        raise OptionError(f"adapter= predicate matched none of this host's adapters: {names}")


def _check_int(name: str, value: object, low: int, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        kind = "an int or None" if optional else "an int"
        raise TypeError(f"{name} must be {kind}, not {value!r}")
    if value < low:
        extra = " (or None: no limit)" if optional and name.startswith("max_") and \
            name != "max_storage_bindings" else ""
        raise OptionError(f"{name} must be at least {low}{extra}, not {value}")
