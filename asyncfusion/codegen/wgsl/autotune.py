"""The matmul autotuner: one timing of the candidate plans per device and shape class,
kept on disk.

The first launch of a shape class (:func:`~.matmul_plan.shape_class`) on a device with
tuning on times each candidate plan (:func:`~.matmul_plan.candidates`) on scratch
buffers — on the device's executor thread, where kernels are compiled, never on the
event loop — and keeps the fastest. Winners are kept per device in one JSON file,
``matmul-<key>.json`` in the tuning directory, where ``<key>`` hashes the adapter's
name, driver, backend, ids and the limits that shape kernels, wgpu-native's version and
:data:`FORMAT`; every later device with that key reads it and tunes nothing it holds.

Tuning is on by default on GPU adapters and off on CPU ones (lavapipe), where the
default plan is used. ``open_device(matmul_tune=...)`` or the ``ASYNCFUSION_MATMUL_TUNE``
environment variable (``1``/``0``) override that; the directory is
``open_device(tune_dir=...)``, else ``ASYNCFUSION_TUNE_DIR``, else
``$XDG_CACHE_HOME/asyncfusion`` (``~/.cache/asyncfusion``). A file that cannot be read
or holds something else is ignored with a warning (and rewritten at the next tuning);
a directory that cannot be written leaves the winners in memory, with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .matmul_plan import MatmulPlan, fits

__all__ = ["MatmulTuner", "TuneCache", "tune_enabled", "tune_dir", "device_key", "FORMAT",
           "ENV_TUNE", "ENV_DIR"]

FORMAT = 1  # bump when the matmul kernels or the plans' meaning change: old files go stale
ENV_TUNE = "ASYNCFUSION_MATMUL_TUNE"
ENV_DIR = "ASYNCFUSION_TUNE_DIR"
_LIMITS = ("max-compute-invocations-per-workgroup", "max-compute-workgroup-storage-size")
logger = logging.getLogger("asyncfusion.tune")

# One tuned shape class as kept on disk: the plan, and each candidate's microseconds
# (None: it failed to compile or run) at the shape that was timed.
Record = dict[str, object]


def tune_enabled(option: bool | None, gpu: bool) -> bool:
    """Whether a device tunes: ``option`` where given, else ``ASYNCFUSION_MATMUL_TUNE``
    where set, else on GPU adapters only."""
    if option is not None:
        return option
    env = os.environ.get(ENV_TUNE, "").strip().lower()
    if env in ("1", "true", "yes", "on"):
        return True
    if env in ("0", "false", "no", "off"):
        return False
    if env:
        warnings.warn(f"{ENV_TUNE}={env!r} is not 1 or 0; tuning matmuls "
                      f"{'on' if gpu else 'off'} (this adapter's default)", RuntimeWarning,
                      stacklevel=2)
    return gpu


def tune_dir(option: str | os.PathLike[str] | None) -> Path:
    """The directory of tuning files: ``option``, ``ASYNCFUSION_TUNE_DIR``, or the user's
    cache directory's ``asyncfusion``."""
    if option is not None:
        return Path(option)
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "asyncfusion"


def device_key(info: Mapping[str, object], limits: Mapping[str, int],
               wgpu_native: str) -> dict[str, object]:
    """What a tuning file is kept for: the adapter (name, driver, backend, type, ids),
    the limits that shape matmul kernels, wgpu-native's version and :data:`FORMAT`."""
    key: dict[str, object] = {name: info.get(name) for name in (
        "device", "description", "vendor", "backend_type", "adapter_type", "vendor_id",
        "device_id")}
    key.update({name: limits.get(name) for name in _LIMITS})
    key["wgpu_native"] = wgpu_native
    key["format"] = FORMAT
    return key


class TuneCache:
    """The tuning file of one device key in ``directory``."""

    def __init__(self, directory: Path, device: dict[str, object]) -> None:
        self.device = device
        digest = hashlib.sha256(json.dumps(device, sort_keys=True).encode()).hexdigest()
        self.path = directory / f"matmul-{digest[:16]}.json"
        self._warned_write = False

    def load(self) -> dict[str, Record]:
        """The records of the file; an absent file is empty, a broken one is empty with a
        warning that names it."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            self._warn(f"cannot be read ({exc})")
            return {}
        try:
            data = json.loads(text)
        except ValueError as exc:
            self._warn(f"is not JSON ({exc})")
            return {}
        if not isinstance(data, dict) or not isinstance(data.get("classes"), dict):
            self._warn("holds no 'classes' object")
            return {}
        if data.get("device") != self.device:
            self._warn("was written for another device or format")
            return {}
        return {str(k): v for k, v in data["classes"].items() if isinstance(v, dict)}

    def save(self, records: dict[str, Record]) -> None:
        """Write ``records`` over the file's own (another process may have added some),
        atomically: a reader sees the old file or the new one."""
        merged = {**self._quiet_load(), **records}
        payload = json.dumps({"device": self.device, "classes": merged}, indent=1,
                             sort_keys=True)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=self.path.name, dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(payload)
            os.replace(tmp, self.path)
        except OSError as exc:
            if not self._warned_write:
                self._warned_write = True
                warnings.warn(f"asyncfusion: the matmul tuning file {self.path} cannot be "
                              f"written ({exc}); tuned plans are kept for this device only. "
                              f"Point open_device(tune_dir=...) or {ENV_DIR} at a writable "
                              "directory", RuntimeWarning, stacklevel=2)

    def _quiet_load(self) -> dict[str, Record]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.load()

    def _warn(self, why: str) -> None:
        warnings.warn(f"asyncfusion: ignoring the matmul tuning file {self.path}: it {why}; "
                      "matmuls are tuned again and the file rewritten", RuntimeWarning,
                      stacklevel=3)


class MatmulTuner:
    """The tuned plans of one device: from its file where held there, else timed.

    ``cache`` None: tuning is off and every class gets its default plan. ``runs`` counts
    candidate timings (each dispatches kernels); ``records`` holds what each class's
    tuning measured, as written to the file; ``last`` names the class of the latest
    tuned launch.
    """

    def __init__(self, cache: TuneCache | None, limits: dict[str, int]) -> None:
        self.cache = cache
        self.limits = limits
        self.runs = 0
        self.records: dict[str, Record] = {}
        self.last: str | None = None
        self._plans: dict[str, MatmulPlan] = {}
        self._loaded = False
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.cache is not None

    def chosen(self, cls: str) -> MatmulPlan | None:
        """The plan kept for ``cls`` (None: not tuned or read yet)."""
        return self._plans.get(cls)

    def timings(self, cls: str) -> dict[str, float]:
        """Microseconds per launch of each candidate that ran when ``cls`` was tuned."""
        us = self.records.get(cls, {}).get("us")
        if not isinstance(us, dict):
            return {}
        return {str(k): float(v) for k, v in us.items() if isinstance(v, (int, float))}

    def plan(self, cls: str, default: MatmulPlan, options: Callable[[], Sequence[MatmulPlan]],
             measure: Callable[[MatmulPlan], float], shape: tuple[int, ...]) -> MatmulPlan:
        """The plan of shape class ``cls``: ``default`` with tuning off; else the one
        kept for it, or the fastest of ``options()`` by ``measure`` (seconds per launch,
        raising where a plan fails), kept (``shape``: what was timed, for the file)."""
        if self.cache is None:
            return default
        with self._lock:
            self.last = cls
            hit = self._plans.get(cls)
            if hit is not None:
                return hit
            if not self._loaded:
                self._loaded = True
                self._read(self.cache.load(), self.cache.path)
                hit = self._plans.get(cls)
                if hit is not None:
                    return hit
            best, record = self._tune(default, options(), measure, shape)
            self._plans[cls] = best
            self.records[cls] = record
            self.cache.save({cls: record})
            logger.info("matmul %s: tuned %s", cls, best.name)
            return best

    def _read(self, records: dict[str, Record], path: Path) -> None:
        for cls, record in records.items():
            plan = MatmulPlan.from_json(record.get("plan"))
            if plan is None or not fits(plan.tiles, self.limits):
                warnings.warn(f"asyncfusion: the matmul tuning file {path} holds no usable "
                              f"plan for {cls!r}; it is tuned again", RuntimeWarning,
                              stacklevel=4)
                continue
            self._plans[cls] = plan
            self.records[cls] = record

    def _tune(self, default: MatmulPlan, options: Sequence[MatmulPlan],
              measure: Callable[[MatmulPlan], float],
              shape: tuple[int, ...]) -> tuple[MatmulPlan, Record]:
        times: dict[str, float | None] = {}
        best, best_s = default, float("inf")
        for plan in dict.fromkeys([default, *options]):  # the default is always timed
            self.runs += 1
            try:
                seconds = measure(plan)
            except Exception as exc:  # noqa: BLE001 - a plan this driver refuses is skipped
                logger.info("matmul plan %s failed: %s", plan.name, exc)
                times[plan.name] = None
                continue
            times[plan.name] = round(seconds * 1e6, 3)
            if seconds < best_s:
                best, best_s = plan, seconds
        return best, {"plan": best.to_json(), "us": times, "shape": list(shape)}
