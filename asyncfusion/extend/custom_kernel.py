"""Opaque custom kernels: a user's whole WGSL compute shader as one op.

Besides :func:`asyncfusion.elementwise_op` (an expression that fuses), a kernel written in
full runs as its own launch, in stream order::

    scale_add = af.custom_kernel(
        "scale_add", wgsl=WGSL, inputs=2,
        outputs=lambda a, b, n, k: (a.shape, a.dtype),    # the output shape/dtype rule
        workgroups=lambda a, b, n, k: -(-n // 64),
        numpy=lambda a, b, k: a * k + b)                  # the twin numpy devices run
    y = scale_add(x, z, params=(n, 2.0))

Bindings, all in ``@group(0)``: ``@binding(0)`` is a uniform block holding ``params``
(4-byte words: ints as ``u32``/``i32``, floats as ``f32``, in order; declare a struct of
those fields, or leave it out), then one ``var<storage, read>`` per input from
``@binding(1)`` and one ``var<storage, read_write>`` per output after them. The entry
point is ``main``. Inputs are dense (views are copied first); bools are ``u32`` words.
Bound buffers may be longer than the tensor: use sizes from ``params``, not
``arrayLength``.

A WGSL error raises :class:`KernelCompileError`, with wgpu's error text, at
``custom_kernel(...)`` where a wgpu device is already open in the process, and otherwise
at the first call on a wgpu device; bindings that do not match the ones above raise it at
the first call (the shader is compiled into a pipeline on the calling thread then, and
cached by text, as every pipeline is). The op takes part in liveness like any other (its inputs' last uses
free them, unused outputs are freed) and in fault isolation: if it fails when it runs,
only its outputs and what depends on them are poisoned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.dtype import DType, as_dtype
from .._core.errors import (AsyncFusionError, LimitError, OptionError, ShapeError,
                            device_mismatch)
from ..engine.memory import Storage
from ..ir import ExternOp, numel
from ..lazy.tensor import Tensor
from ..runtime import Device, default_device

__all__ = ["custom_kernel", "CustomKernel", "KernelCompileError", "Spec"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class KernelCompileError(AsyncFusionError, ValueError):
    """Raised when a custom kernel's WGSL does not compile, or its bindings do not match
    the ones asyncfusion binds; the message holds wgpu's error text."""


@dataclass(frozen=True, slots=True)
class Spec:
    """What the output and workgroup rules see of each input: its shape and dtype."""

    shape: tuple[int, ...]
    dtype: DType


class CustomKernel:
    """A registered WGSL compute kernel; call it on tensors to record one launch."""

    def __init__(self, name: str, wgsl: str, inputs: int,
                 outputs: Callable[..., object], workgroups: Callable[..., object],
                 numpy: Callable[..., object] | None) -> None:
        self.name = name
        self.title = f"custom[{name}]"
        self.key = self  # plans are cached per kernel
        self.wgsl = wgsl
        self.n_inputs = inputs
        self.output_rule = outputs
        self.workgroup_rule = workgroups
        self.twin = numpy
        self._derived: dict[tuple[object, ...], tuple[np.ndarray,
                                                      list[tuple[tuple[int, ...], DType]],
                                                      tuple[int, int, int]]] = {}

    def __repr__(self) -> str:
        return f"<asyncfusion custom kernel {self.name!r}>"

    def __call__(self, *tensors: Tensor,
                 params: Sequence[int | float | bool] = ()) -> Tensor | tuple[Tensor, ...]:
        """Record the kernel on ``tensors``; returns its output (a tuple when the output
        rule gives several)."""
        if len(tensors) != self.n_inputs:
            raise TypeError(f"custom kernel {self.name!r} takes {self.n_inputs} input "
                            f"tensor(s), got {len(tensors)}")
        for t in tensors:
            if type(t) is not Tensor:
                raise TypeError(f"custom kernel {self.name!r} takes asyncfusion Tensors, not "
                                f"{type(t).__name__}; convert with asyncfusion.asarray()")
        dev = tensors[0].device if tensors else _default()
        for t in tensors:
            if t.device is not dev:
                raise device_mismatch(f"custom kernel {self.name!r}: t{t.id}", dev, t.device)
        backend = dev.backend
        limits: dict[str, int] = getattr(backend, "limits", {})
        key: tuple[object, ...] | None = (
            tuple([(t.shape, t.dtype) for t in tensors]),
            tuple([(type(p), p) for p in params]), backend.name, backend.max_binding,
            limits.get("max-compute-workgroups-per-dimension"))
        try:
            derived = self._derived.get(key)  # type: ignore[arg-type]
        except TypeError:  # an unhashable param: _derive says what params may be
            key = derived = None
        if derived is None:
            derived = self._derive(tensors, params, dev)
            if key is not None:
                if len(self._derived) >= 256:
                    self._derived.clear()
                self._derived[key] = derived
        words, outs, groups = derived
        dense = [t if t.layout is None else t.contiguous() for t in tensors]
        results = [Tensor(shape, dtype, dev) for shape, dtype in outs]
        out_irs = tuple(r.out_ir() for r in results)
        op = ExternOp(self, tuple(t.ir() for t in dense), out_irs,
                      (words, groups, tuple(params)))
        dev.register(op, tuple(t.id for t in dense), out_irs[0])
        return results[0] if len(results) == 1 else tuple(results)

    def _derive(self, tensors: tuple[Tensor, ...], params: Sequence[int | float | bool],
                dev: Device) -> tuple[np.ndarray, list[tuple[tuple[int, ...], DType]],
                                      tuple[int, int, int]]:
        """(param words, outputs, workgroups) of a call: its rules' answers, checked, and
        the kernel compiled for the device (once per call signature: ``__call__`` keeps
        them by input shapes and dtypes, params and backend)."""
        backend = dev.backend
        words = _param_words(self.name, params)
        specs = [Spec(t.shape, t.dtype) for t in tensors]
        outs = _outputs(self.name, self.output_rule(*specs, *params))
        for shape, dtype in [(t.shape, t.dtype) for t in tensors] + outs:
            if numel(shape) * dtype.itemsize > backend.max_binding:
                raise LimitError(f"custom kernel {self.name!r}: a {dtype.label} tensor of "
                                 f"shape {shape} is larger than one storage binding "
                                 f"(max-storage-buffer-binding-size: {backend.max_binding} "
                                 "bytes), and a custom kernel binds its tensors whole; give "
                                 "it slices of at most that many bytes and combine them")
        if backend.name == "wgpu":
            groups = _groups(self.name, self.workgroup_rule(*specs, *params),
                             _limits(backend)["max-compute-workgroups-per-dimension"])
            self._compile(backend, len(outs))
        else:
            if self.twin is None:
                raise TypeError(
                    f"custom kernel {self.name!r} has no numpy twin, so it cannot run on "
                    f"{dev!r}; pass numpy=<the same function on numpy arrays> to "
                    "custom_kernel, or use a wgpu device")
            groups = (0, 0, 0)
        return words, outs, groups

    def _compile(self, backend: Any, n_outputs: int) -> None:
        """Compile (once per text: the runtime's pipeline cache) with the bindings we use."""
        storage = ["read"] * self.n_inputs + ["read_write"] * n_outputs
        try:
            backend.rt.pipeline(self.wgsl, storage, checked=True)
        except Exception as exc:  # noqa: BLE001 - wgpu's GPUValidationError, with the text
            raise KernelCompileError(
                f"custom kernel {self.name!r} does not compile: {exc}\nBindings expected: "
                f"@group(0) @binding(0) var<uniform> (params), then {self.n_inputs} "
                f"var<storage, read> input(s) from @binding(1), then {n_outputs} "
                "var<storage, read_write> output(s); entry point 'main'") from exc

    # -- run (executor thread), through ExternStep -------------------------------------
    def run(self, backend: Any, loads: list[Any], op: ExternOp) -> list[Storage]:
        words, groups, params = op.args
        if backend.name != "wgpu":
            return self._run_twin(backend, loads, op, params)
        stores = [backend.alloc(numel(t.shape) * t.dtype.itemsize) for t in op.outs]
        try:
            backend.launch_wgsl(self.wgsl, self.title, loads, stores, words, groups)
        except BaseException:
            for b in stores:
                backend.free(b)
            raise
        return [Storage(b) for b in stores]

    def _run_twin(self, backend: Any, loads: list[Any], op: ExternOp,
                  params: tuple[Any, ...]) -> list[Storage]:
        assert self.twin is not None
        backend.faults.check("launch", (self.title,))
        arrays = []
        for t, buf in zip(op.ins, loads, strict=True):
            words = buf.words(t.dtype)[:numel(t.shape)].reshape(t.shape)
            arrays.append(words != 0 if t.dtype is DType.bool else
                          words.astype(t.dtype.np, copy=False))
        got = self.twin(*arrays, *params)
        values = list(got) if isinstance(got, (tuple, list)) else [got]
        if len(values) != len(op.outs):
            raise ValueError(f"the numpy twin of custom kernel {self.name!r} returned "
                             f"{len(values)} array(s) for {len(op.outs)} output(s)")
        made = []
        for t, v in zip(op.outs, values, strict=True):
            arr = np.asarray(v)
            if arr.shape != t.shape:
                raise ValueError(f"the numpy twin of custom kernel {self.name!r} returned "
                                 f"shape {arr.shape} where the output rule gave {t.shape}")
            buf = backend.alloc(numel(t.shape) * t.dtype.itemsize)
            buf.words(t.dtype)[:arr.size] = arr.astype(t.dtype.np).reshape(-1).astype(
                t.dtype.storage_np)
            made.append(Storage(buf))
        return made


def custom_kernel(name: str, *, wgsl: str, inputs: int, outputs: Callable[..., object],
                  workgroups: Callable[..., object],
                  numpy: Callable[..., object] | None = None) -> CustomKernel:
    """Register an opaque WGSL compute kernel (see the module docs for its bindings).

    :param inputs: how many input tensors it reads.
    :param outputs: the output rule: called with one :class:`Spec` per input and then the
        call's ``params``, returns ``(shape, dtype)``, or a list of them (one per output
        binding).
    :param workgroups: called likewise, returns how many workgroups to launch: an int or
        up to 3 of them (x, y, z), at most the adapter's per-dimension limit.
    :param numpy: the same computation on numpy arrays, called with the inputs then the
        call's ``params``; numpy devices run it (without it the kernel refuses them).
    """
    if not _NAME.match(name):
        raise OptionError(f"kernel name {name!r} must be lower_snake_case")
    if not isinstance(wgsl, str):
        raise TypeError(f"wgsl must be the text of a WGSL compute shader, not {wgsl!r}")
    if not isinstance(inputs, int) or isinstance(inputs, bool) or inputs < 0:
        raise TypeError(f"inputs must be the number of input tensors, not {inputs!r}")
    for what, fn in (("outputs", outputs), ("workgroups", workgroups)):
        if not callable(fn):
            raise TypeError(f"{what} must be a function of the inputs' Specs, not {fn!r}")
    if numpy is not None and not callable(numpy):
        raise TypeError(f"numpy must be a function on numpy arrays, not {numpy!r}")
    _check_now(name, wgsl)
    return CustomKernel(name, wgsl, inputs, outputs, workgroups, numpy)


def _check_now(name: str, wgsl: str) -> None:
    """Compile the shader at registration where a wgpu device is already set up in this
    process (creating one here would put an adapter's set-up into an import); the call
    checks it again, with its bindings, in any case."""
    try:
        from ..backends.wgpu.runtime import live_runtime
    except ImportError:  # no wgpu in this environment: the numpy devices need no shader
        return
    rt = live_runtime()
    if rt is None:
        return
    try:
        rt.check_shader(wgsl)
    except Exception as exc:  # noqa: BLE001 - wgpu's GPUValidationError, with the text
        raise KernelCompileError(f"custom kernel {name!r} does not compile: {exc}") from exc


def _default() -> Device:
    return default_device()


def _limits(backend: object) -> dict[str, int]:
    """The adapter limits of a wgpu backend (the one kind a WGSL kernel runs on)."""
    limits: dict[str, int] = getattr(backend, "limits")
    return limits


def _outputs(name: str, rule: Any) -> list[tuple[tuple[int, ...], DType]]:
    items = rule if isinstance(rule, list) else [rule]
    if not items:
        raise ShapeError(f"custom kernel {name!r}: the output rule gave no outputs; a "
                         "kernel must write at least one tensor")
    outs = []
    for item in items:
        try:
            shape, dtype = item
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError) as exc:
            raise ShapeError(f"custom kernel {name!r}: the output rule must give (shape, "
                             f"dtype) or a list of them, not {item!r}") from exc
        if any(d < 0 for d in shape):
            raise ShapeError(f"custom kernel {name!r}: output shape {shape} has a negative "
                             "dimension")
        outs.append((shape, as_dtype(dtype)))
    return outs


def _groups(name: str, got: Any, limit: int) -> tuple[int, int, int]:
    g = (got,) if isinstance(got, int) else tuple(got)
    if not 1 <= len(g) <= 3 or not all(isinstance(x, int) and x >= 0 for x in g):
        raise OptionError(f"custom kernel {name!r}: the workgroups rule must give an int or "
                          f"up to 3 non-negative ints, not {got!r}")
    if any(x > limit for x in g):
        raise LimitError(f"custom kernel {name!r}: {g} workgroups exceed the adapter's "
                         f"{limit} per dimension; spread them over y and z")
    x, y, z = (g + (1, 1))[:3]
    return x, y, z


def _param_words(name: str, params: Sequence[object]) -> np.ndarray:
    words = []
    for p in params:
        if isinstance(p, (bool, np.bool_)):
            words.append(int(p))
        elif isinstance(p, (int, np.integer)):
            if not -(2**31) <= int(p) < 2**32:
                raise OptionError(f"custom kernel {name!r}: param {p} does not fit in 32 bits")
            words.append(int(p) & 0xFFFFFFFF)
        elif isinstance(p, (float, np.floating)):
            words.append(int(np.float32(p).view(np.uint32)))
        else:
            raise TypeError(f"custom kernel {name!r}: params are ints, floats and bools, "
                            f"not {type(p).__name__}")
    out = np.zeros(max(4, -(-len(words) // 4) * 4), dtype=np.uint32)
    out[:len(words)] = words
    return out
