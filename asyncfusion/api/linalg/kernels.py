"""The device path: the small-matrix kernels, each one launch for a whole batch.

:func:`launch` records one of the WGSL kernels of :mod:`.wgsl` and :mod:`.wgsl_jacobi`
as a :func:`~asyncfusion.custom_kernel` on a dense ``(batch, ...)`` input: one workgroup
a matrix (over x, and y past 65,535). Its outputs come back in order, scratch ones
included (unused, they are freed when the op has run). :func:`on_device` says which
calls take this path: a wgpu device, a non-empty batch and sides of at most ``MAX_N``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..._core.dtype import DType
from ...extend.custom_kernel import CustomKernel, Spec, custom_kernel
from ...lazy.tensor import Tensor
from . import wgsl, wgsl_jacobi

__all__ = ["launch", "on_device", "MAX_N", "MAX_RHS"]

MAX_N = wgsl.MAX_N
MAX_RHS = 256  # right-hand sides a solve takes on the device (its loops stay short)
_MAX_X = 65535

Outs = list[tuple[tuple[int, ...], DType]]


def on_device(x: Tensor, batch: int, *sides: int) -> bool:
    """Whether ``batch`` matrices of ``sides`` run on the device (else on the host)."""
    return (x.device.backend.name == "wgpu" and batch > 0
            and all(1 <= s <= MAX_N for s in sides))


def _groups(*args: Spec | int) -> tuple[int, int]:
    batch = next(a for a in args if isinstance(a, int))
    return min(batch, _MAX_X), -(-batch // _MAX_X)


def _cholesky(dt: DType, b: int, n: int, upper: int) -> Outs:
    return [((b, n, n), dt)]


def _lu(mode: str) -> Callable[..., Outs]:
    def rule(dt: DType, b: int, n: int, k: int) -> Outs:
        if mode == "det":
            return [((b, n, n), dt), ((b, n), dt), ((b,), dt)]
        return [((b, n, n), dt), ((b, n, k), dt)]
    return rule


def _qr(dt: DType, b: int, m: int, n: int, qc: int, rr: int) -> Outs:
    return [((b, m, qc), dt), ((b, rr, n), dt), ((b, m, n), dt), ((b, min(m, n), m), dt)]


def _eigh(vectors: bool) -> Callable[..., Outs]:
    def rule(dt: DType, b: int, n: int, nn: int) -> Outs:
        if vectors:
            return [((b, n), dt), ((b, n, n), dt), ((b, 2 * n, n), dt)]
        return [((b, n), dt), ((b, n, n), dt)]
    return rule


def _svd(vectors: bool) -> Callable[..., Outs]:
    def rule(dt: DType, b: int, m: int, n: int, rows: int, cols: int, nn: int, tr: int,
             pc: int) -> Outs:
        if vectors:
            return [((b, cols), dt), ((b, rows, pc), dt), ((b, cols, cols), dt),
                    ((b, rows * cols + cols * cols), dt)]
        return [((b, cols), dt), ((b, rows * cols), dt)]
    return rule


def _family(name: str, variant: str, t: str) -> tuple[str, int, Callable[..., Outs]]:
    """The WGSL text, the input count and the output rule of kernel ``name``."""
    if name == "cholesky":
        return wgsl.cholesky(t), 1, _cholesky
    if name == "lu":
        return wgsl.lu(t, variant), 2 if variant == "solve" else 1, _lu(variant)
    if name == "qr":
        return wgsl.qr(t), 1, _qr
    if name == "eigh":
        return wgsl_jacobi.eigh(t, variant == "vectors"), 1, _eigh(variant == "vectors")
    assert name == "svd"
    return wgsl_jacobi.svd(t, variant == "vectors"), 1, _svd(variant == "vectors")


@functools.cache
def _kernel(name: str, variant: str, dtype: DType) -> CustomKernel:
    t = "f64" if dtype is DType.float64 else "f32"
    text, inputs, rule = _family(name, variant, t)

    def outputs(*args: Spec | int) -> Outs:
        ints = [a for a in args if isinstance(a, int)]
        return rule(dtype, *ints)

    return custom_kernel(f"linalg_{name}_{variant}_{t}", wgsl=text, inputs=inputs,
                         outputs=outputs, workgroups=_groups)


def launch(name: str, variant: str, inputs: tuple[Tensor, ...],
           params: tuple[int, ...]) -> tuple[Tensor, ...]:
    """Record kernel ``name`` (``variant``) on ``inputs`` (dense, batch first, float32 or
    float64) with ``params`` (the batch first): its outputs."""
    got = _kernel(name, variant, inputs[0].dtype)(*inputs, params=params)
    return got if isinstance(got, tuple) else (got,)
