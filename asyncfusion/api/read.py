"""Reading several tensors with one await: ``v, i = await af.to_data(values, indices)``."""

from __future__ import annotations

import numpy as np

from .._core.errors import DeviceMismatchError
from .._core.tracebacks import clear_read_frames
from ..lazy.complex_tensor import ComplexTensor
from ..lazy.tensor import Tensor

__all__ = ["to_data"]


async def to_data(*tensors: Tensor) -> tuple[np.ndarray, ...]:
    """Read several tensors with one await: ``v, i = await af.to_data(values, indices)``.

    All of them are read in one device round (one submission, one wait), instead of one
    round trip each (a complex tensor's two parts too). They must live on one device. Raises the first failure in argument
    order; a cancelled call withdraws every read."""
    if not tensors:
        raise TypeError("to_data() needs at least one tensor: await af.to_data(a, b, ...)")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"to_data() reads asyncfusion Tensors, not {type(t).__name__}")
    dev = tensors[0].device
    if any(t.device is not dev for t in tensors):
        raise DeviceMismatchError(
            "to_data() got tensors of different devices; read each device's tensors with "
            "its own to_data() call (they may run concurrently in a task group)")
    flat = tuple(p for t in tensors for p in (
        (t.real, t.imag) if isinstance(t, ComplexTensor) else (t,)))  # a complex: its parts
    try:
        got = iter(await dev.read_many(flat))
    except BaseException as exc:  # cancelled or failed: the traceback keeps no tensor
        clear_read_frames(exc)
        del tensors, t, flat
        raise
    out: list[np.ndarray] = []
    for t in tensors:
        if isinstance(t, ComplexTensor):
            out.append(t._join(next(got), next(got)))
        else:
            values = next(got)
            t._keep_host(values)
            out.append(values)
    return tuple(out)
