"""Programs several test modules run: the seed's 8-op chain and its numpy twin."""

from __future__ import annotations

import numpy as np

import asyncfusion as af


def chain8(x: af.Tensor) -> af.Tensor:
    """x*0.5, +1, sin, exp, *0.25, +2, cos, abs: the seed's benchmark chain."""
    t = x * 0.5
    t = t + 1.0
    t = t.sin()
    t = t.exp()
    t = t * 0.25
    t = t + 2.0
    t = t.cos()
    return t.abs()


def chain8_np(x: np.ndarray) -> np.ndarray:
    t = np.cos(np.exp(np.sin(x * np.float32(0.5) + np.float32(1))) * np.float32(0.25)
               + np.float32(2))
    return np.abs(t)
