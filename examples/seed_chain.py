"""The seed's 8-op element-wise chain, shared by the examples, the tests and bench/.

``chain`` works on asyncfusion and torch tensors alike; ``chain_np`` is the same chain in
numpy, float32 all the way (scalars are float32 too).
"""

from typing import Any

import numpy as np

CHAIN_OPS = 8


def chain(x: Any) -> Any:
    """x*0.5, +1, sin, exp, *0.25, +2, cos, abs."""
    t = x * 0.5
    t = t + 1.0
    t = t.sin()
    t = t.exp()
    t = t * 0.25
    t = t + 2.0
    t = t.cos()
    return abs(t)


_HALF, _ONE, _QUARTER, _TWO = (np.float32(v) for v in (0.5, 1.0, 0.25, 2.0))


def chain_np(x: np.ndarray) -> np.ndarray:
    return np.abs(np.cos(np.exp(np.sin(x * _HALF + _ONE)) * _QUARTER + _TWO))
