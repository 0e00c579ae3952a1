"""Reading several tensors with one await: ``v, i = await af.to_data(values, indices)``."""

from __future__ import annotations

import numpy as np

from .._core.errors import DeviceMismatchError
from .._core.tracebacks import clear_read_frames
from ..lazy.tensor import Tensor

__all__ = ["to_data"]


async def to_data(*tensors: Tensor) -> tuple[np.ndarray, ...]:
    """Read several tensors with one await: ``v, i = await af.to_data(values, indices)``.

    All of them are read in one device round (one submission, one wait), instead of one
    round trip each. They must live on one device. Raises the first failure in argument
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
    try:
        out = await dev.read_many(tensors)
    except BaseException as exc:  # cancelled or failed: the traceback keeps no tensor
        clear_read_frames(exc)
        del tensors, t
        raise
    for t, values in zip(tensors, out, strict=True):
        t._keep_host(values)
    return tuple(out)
