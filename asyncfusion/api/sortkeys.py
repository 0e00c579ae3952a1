"""Order-preserving keys: each value's bits become an unsigned word whose order is the
order a sort or a top-k wants, in WGSL and on numpy arrays alike.

A *mode* says which order: bit 0 descending (the key inverted), bit 1 NaN first (its
key the smallest; without it, the largest). Floats fold ``-0.0`` onto ``+0.0`` and flip
the magnitude of negatives; signed integers flip the sign bit; unsigned ones keep their
bits. A 32-bit source gives a ``u32`` key, a 64-bit one a ``vec2<u32>`` (low word in
``x``, as storage holds it), a float16 a ``u32`` key holding its 16-bit key in the high
half. Non-NaN floats never get the all-zero or all-one key, so NaN keeps the ends to
itself (integers use the whole range).
"""

from __future__ import annotations

import numpy as np

from .._core.dtype import DType

__all__ = ["KIND", "wgsl_key", "keys_np"]

# the key function of each source family: its WGSL name and the bits it reads
KIND = {DType.float32: "float", DType.int32: "int", DType.uint32: "uint", DType.float16: "half",
        DType.float64: "float64", DType.int64: "int64", DType.uint64: "uint64"}
KIND |= {d: KIND[d.lane] for d in DType if d.lane is not d}  # the narrow ints: their lane's

_WIDE = frozenset({"float64", "int64", "uint64"})
_INF = {16: 0x7C00, 32: 0x7F800000, 64: 0x7FF0000000000000}  # the infinity's bits

_KEYS = {
    "float": """
fn key_float(b0: u32, mode: u32) -> u32 {
    var b = b0;
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return select(0xffffffffu, 0u, (mode & 2u) != 0u);
    }
    if ((b & 0x7fffffffu) == 0u) { b = 0u; }
    let k = select(b ^ 0x80000000u, ~b, (b >> 31u) == 1u);
    return select(k, ~k, (mode & 1u) != 0u);
}
""",
    "int": """
fn key_int(b: u32, mode: u32) -> u32 {
    let k = b ^ 0x80000000u;
    return select(k, ~k, (mode & 1u) != 0u);
}
""",
    "uint": """
fn key_uint(b: u32, mode: u32) -> u32 {
    return select(b, ~b, (mode & 1u) != 0u);
}
""",
    "half": """
fn key_half(h0: u32, mode: u32) -> u32 {
    var h = h0;
    if ((h & 0x7fffu) > 0x7c00u) {
        return select(0xffffffffu, 0u, (mode & 2u) != 0u);
    }
    if ((h & 0x7fffu) == 0u) { h = 0u; }
    let k = select(h ^ 0x8000u, ~h & 0xffffu, (h >> 15u) == 1u) << 16u;
    return select(k, ~k, (mode & 1u) != 0u);
}
""",
    "float64": """
fn key_float64(b0: vec2<u32>, mode: u32) -> vec2<u32> {
    var b = b0;
    let mag = b.y & 0x7fffffffu;
    if (mag > 0x7ff00000u || (mag == 0x7ff00000u && b.x != 0u)) {
        return vec2<u32>(select(0xffffffffu, 0u, (mode & 2u) != 0u));
    }
    if (mag == 0u && b.x == 0u) { b = vec2<u32>(0u); }
    let k = select(vec2<u32>(b.x, b.y ^ 0x80000000u), ~b, (b.y >> 31u) == 1u);
    return select(k, ~k, (mode & 1u) != 0u);
}
""",
    "int64": """
fn key_int64(b: vec2<u32>, mode: u32) -> vec2<u32> {
    let k = vec2<u32>(b.x, b.y ^ 0x80000000u);
    return select(k, ~k, (mode & 1u) != 0u);
}
""",
    "uint64": """
fn key_uint64(b: vec2<u32>, mode: u32) -> vec2<u32> {
    return select(b, ~b, (mode & 1u) != 0u);
}
""",
}


def wgsl_key(kind: str) -> str:
    """The WGSL function ``key_<kind>(bits, mode)`` of a source family (see :data:`KIND`)."""
    return _KEYS[kind]


def keys_np(values: np.ndarray, kind: str, mode: int) -> np.ndarray:
    """The keys of ``values`` (a numpy array of the family's dtype, or its raw bits), as
    uint32 (uint64 for the 64-bit families): the WGSL functions' twin."""
    v = np.ascontiguousarray(values)
    if kind == "half":
        b, width = v.view(np.uint16).astype(np.uint64), 16
    elif kind in _WIDE:
        b, width = v.view(np.uint64).astype(np.uint64), 64
    else:  # the 8- and 16-bit integers through their 32-bit lane
        lane = v.astype(np.int32 if kind == "int" else np.uint32) if v.itemsize < 4 else v
        b, width = lane.view(np.uint32).astype(np.uint64), 32
    ones, top = np.uint64((1 << width) - 1), np.uint64(1 << (width - 1))
    nan = np.zeros(b.shape, bool)
    if kind in ("float", "half", "float64"):
        mag = b & (ones ^ top)
        nan = mag > np.uint64(_INF[width])
        b = np.where(mag == 0, np.uint64(0), b)
        k = np.where(b & top != 0, b ^ ones, b ^ top)
    else:
        k = b ^ top if kind in ("int", "int64") else b
    if kind == "half":  # the 16-bit key in the high half of a 32-bit one
        k, ones = k << np.uint64(16), np.uint64(0xFFFFFFFF)
    if mode & 1:
        k = k ^ ones
    k = np.where(nan, np.uint64(0) if mode & 2 else ones, k)
    return k.astype(np.uint64 if kind in _WIDE else np.uint32)
