"""Top-k along the last axis on the device: block-local selection, then merges.

Every element becomes a pair: its order-preserving key (:mod:`asyncfusion.api.sortkeys`;
mode 3, descending with NaN first, for the largest, mode 0 for the smallest) and its
position in the row. Pairs compare by key, then position, so all differ and the first
``k`` are a stable sort's.

One custom kernel (:func:`~asyncfusion.custom_kernel`) runs every level, all rows at
once: each workgroup takes a *segment* of its row and keeps the ``k`` best pairs of it
in workgroup memory. Slots ``[0, kk)`` hold the best so far, sorted (``kk``: ``k``
rounded up to a power of two); a round reads one element a thread. The first round
keeps every pair; after it, one that beats the ``k``-th best is appended after the kept
ones (a workgroup atomic); when the next round might not fit, and at the end, a bitonic
sort of the slots in use (kept and appended, up to a power of two) makes the best
``kk`` the new kept ones. Random data rarely beats the ``k``-th best for long, so most
rounds are a read and a compare. Rows of at most 128 take one round: a workgroup holds
``256 / lanes`` of them, each with a team of ``lanes`` threads (a power of two) and its
own slots. Level one reads the values; each segment writes its ``k`` pairs, sorted; the
next level reads those candidates the same way; the last level (one segment a row)
writes the values (read at the winning positions) and the positions.

:func:`plan` picks the segment length: at least ``_MIN_SEG`` and ``4 * kk``, doubled
until the levels are three at most (rows of 16M elements and ``k = 1024``: three
levels; top-5 of 1M: two). ``k`` is at most what the adapter's workgroup memory holds
(:func:`max_k`, ``K_MAX`` where it has room); beyond it ``topk`` sorts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.dtype import DType
from ..extend.custom_kernel import CustomKernel, Spec, custom_kernel
from ..ir import numel
from ..lazy.tensor import Tensor
from .sortkeys import KIND, keys_np, wgsl_key

__all__ = ["top_k", "plan", "launches", "max_k", "K_MAX"]

K_MAX = 1024  # the most a workgroup keeps (topk sorts for more)
_WG = 256  # threads a workgroup: every adapter has them
_MIN_SEG = 4096  # elements a workgroup takes at least: a wave of them for rows of 1M
_MAX_SEG = 1 << 20  # 4096 rounds a workgroup: far below lavapipe's 65,535 iterations
_MAX_LEVELS = 3
_MAX_X = 65535
_WIDE = frozenset({"float64", "int64", "uint64"})


def _pow2(k: int) -> int:
    return 1 << max(0, (k - 1).bit_length())


def _slots(k: int) -> int:
    """Pairs a workgroup holds: the kept ``kk``, and room for a round after them."""
    return max(2 * _WG, 2 * _pow2(k))


def _shared_bytes(k: int, wide: bool) -> int:
    return _slots(k) * (12 if wide else 8) + 8


def max_k(backend: Any, dtype: DType) -> int:
    """The largest ``k`` :func:`top_k` takes for ``dtype`` on ``backend``: ``K_MAX``, or
    less where its workgroup memory is smaller (numpy devices: ``K_MAX``)."""
    if backend.name != "wgpu":
        return K_MAX
    room = backend.limits["max-compute-workgroup-storage-size"]
    k = K_MAX
    while k > 1 and _shared_bytes(k, KIND[dtype] in _WIDE) > room:
        k //= 2
    return k


def plan(n: int, k: int) -> tuple[int, list[int]]:
    """The segment length for rows of ``n`` and the input length of each level (``n``,
    then the candidates of the level before): the shortest segment of ``_MIN_SEG`` and
    ``4 * kk`` or more that takes ``_MAX_LEVELS`` at most."""
    seg = max(_MIN_SEG, 4 * _pow2(k))
    while True:
        lengths = [n]
        while lengths[-1] > seg:
            lengths.append(-(-lengths[-1] // seg) * k)
        if len(lengths) <= _MAX_LEVELS or seg >= _MAX_SEG:
            return seg, lengths
        seg *= 2


@dataclass(frozen=True, slots=True)
class _Variant:
    """One kernel text: the source family, whether it reads the values (the first
    level) and whether it writes the result (the last level), and its slots."""

    kind: str
    first: bool
    last: bool
    slots: int

    @property
    def wide(self) -> bool:
        return self.kind in _WIDE


_PARAMS = """
struct P { n: u32, m: u32, seg: u32, segs: u32, groups: u32, k: u32, kk: u32, mode: u32,
           lanes: u32 }
@group(0) @binding(0) var<uniform> prm: P;
"""
# n: the values' row length; m: this level's input row length (n, or candidates);
# seg: a segment's length; segs: segments a row; groups: rows * segs; k, kk; mode;
# lanes: threads a segment (WG, or a power of two as short rows take: WG / lanes rows a
# workgroup, each in its slots)


def _word(v: _Variant) -> str:
    """The WGSL type of a key, and of a value's storage (float16: two values a word)."""
    return "vec2<u32>" if v.wide else "u32"


def _bindings(v: _Variant) -> str:
    w = _word(v)
    ins = ([f"src: array<{w}>"] if v.first else
           [f"ikey: array<{w}>", "iidx: array<u32>"] + [f"src: array<{w}>"] * v.last)
    if v.last:  # two float16 values share a word that two workgroups may write
        outs = [f"ovals: array<{'atomic<u32>' if v.kind == 'half' else w}>"]
    else:
        outs = [f"okey: array<{w}>"]
    lines = [f"var<storage, read> {b}" for b in ins]
    lines += [f"var<storage, read_write> {b}" for b in outs + ["oidx: array<u32>"]]
    return "".join(f"@group(0) @binding({i}) {line};\n" for i, line in enumerate(lines, 1))


def _helpers(v: _Variant) -> str:
    """``before`` (pair order), ``bits`` (a value's raw word or words), ``load`` (this
    level's pair at a row position) and ``put`` (the last level's value)."""
    if v.wide:
        text = """
fn before(ka: vec2<u32>, ia: u32, kb: vec2<u32>, ib: u32) -> bool {
    return ka.y < kb.y || (ka.y == kb.y && (ka.x < kb.x || (ka.x == kb.x && ia < ib)));
}
"""
    else:
        text = """
fn before(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
    return ka < kb || (ka == kb && ia < ib);
}
"""
    kt = _word(v)
    if v.first or v.last:
        read = ("(src[at >> 1u] >> ((at & 1u) << 4u)) & 0xffffu" if v.kind == "half"
                else "src[at]")
        text += f"fn bits(at: u32) -> {kt} {{ return {read}; }}\n"
    if v.first:
        text += wgsl_key(v.kind) + f"""
fn load(row: u32, pos: u32, key: ptr<function, {kt}>) -> u32 {{
    *key = key_{v.kind}(bits(row * prm.n + pos), prm.mode);
    return pos;
}}
"""
    else:
        text += f"""
fn load(row: u32, pos: u32, key: ptr<function, {kt}>) -> u32 {{
    *key = ikey[row * prm.m + pos];
    return iidx[row * prm.m + pos];
}}
"""
    if v.last and v.kind == "half":  # two values a word, written by two workgroups
        text += """
fn put(o: u32, at: u32) {
    let shift = (o & 1u) << 4u;
    atomicAnd(&ovals[o >> 1u], ~(0xffffu << shift));
    atomicOr(&ovals[o >> 1u], bits(at) << shift);
}
"""
    elif v.last:
        text += "fn put(o: u32, at: u32) { ovals[o] = bits(at); }\n"
    return text


_BODY = """
const S: u32 = {slots}u;
const WG: u32 = {wg}u;
const PAD: {kt} = {kt}(0xffffffffu);
var<workgroup> sk: array<{kt}, S>;
var<workgroup> si: array<u32, S>;
var<workgroup> taken: atomic<u32>;
var<workgroup> taken_now: u32;

fn pow2(x: u32) -> u32 {{
    return 1u << (32u - countLeadingZeros(x - 1u));
}}

fn appended(t: u32) -> u32 {{
    workgroupBarrier();
    if (t == 0u) {{ taken_now = atomicLoad(&taken); }}
    return workgroupUniformLoad(&taken_now);
}}

// a team's kept pairs and its ``got`` appended ones sorted in its slots (from ``at``),
// the best kk first: the first ``used`` slots (a power of two that holds them, padded);
// the others are not read again
fn merge(t: u32, lane: u32, at: u32, got: u32, used: u32) {{
    if (t == 0u) {{ atomicStore(&taken, 0u); }}
    for (var e = prm.kk + got + lane; e < used; e = e + prm.lanes) {{
        sk[at + e] = PAD;
        si[at + e] = 0xffffffffu;
    }}
    for (var k = 2u; k <= used; k = k << 1u) {{
        for (var j = k >> 1u; j > 0u; j = j >> 1u) {{
            workgroupBarrier();
            for (var c = lane; c < used / 2u; c = c + prm.lanes) {{
                let i = at + 2u * c - (c & (j - 1u));
                let l = i + j;
                if (before(sk[i], si[i], sk[l], si[l]) != (((i - at) & k) == 0u)) {{
                    let tk = sk[i]; sk[i] = sk[l]; sk[l] = tk;
                    let ti = si[i]; si[i] = si[l]; si[l] = ti;
                }}
            }}
        }}
    }}
    workgroupBarrier();
}}

// A team of prm.lanes threads takes a segment. Several teams share a workgroup only
// where a row is one round (m <= lanes, so one segment a row): they share lo and hi.
@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let teams = WG / prm.lanes;
    let g0 = (wid.x + wid.y * nwg.x) * teams;
    if (g0 >= prm.groups) {{ return; }}
    let team = t / prm.lanes;
    let lane = t % prm.lanes;
    let g = g0 + team;
    let live = g < prm.groups;
    let row = g / prm.segs;
    let lo = (g0 % prm.segs) * prm.seg;
    let hi = min(lo + prm.seg, prm.m);
    let at = team * (S / teams);
    for (var e = lane; e < prm.kk; e = e + prm.lanes) {{
        sk[at + e] = PAD;
        si[at + e] = 0xffffffffu;
    }}
    let first = min(prm.lanes, hi - lo);  // the first round keeps every pair: none to beat
    if (live && lane < first) {{
        var key: {kt};
        si[at + prm.kk + lane] = load(row, lo + lane, &key);
        sk[at + prm.kk + lane] = key;
    }}
    merge(t, lane, at, first, pow2(prm.kk + first));
    var worst_k = sk[at + prm.k - 1u];  // the k-th best so far: a pair must come before it
    var worst_i = si[at + prm.k - 1u];
    for (var base = lo + WG; base < hi; base = base + WG) {{  // one team (lanes = WG)
        let pos = base + t;
        if (pos < hi) {{
            var key: {kt};
            let idx = load(row, pos, &key);
            if (before(key, idx, worst_k, worst_i)) {{
                let slot = prm.kk + atomicAdd(&taken, 1u);
                sk[slot] = key;
                si[slot] = idx;
            }}
        }}
        let got = appended(t);
        if (got > S - prm.kk - WG) {{
            merge(t, t, 0u, got, pow2(prm.kk + got));
            worst_k = sk[prm.k - 1u];
            worst_i = si[prm.k - 1u];
        }}
    }}
    let got = appended(t);
    if (got > 0u) {{
        merge(t, t, 0u, got, pow2(prm.kk + got));
    }}
    if (live) {{
        for (var j = lane; j < prm.k; j = j + prm.lanes) {{
{store}
        }}
    }}
}}
"""

_STORE_PAIRS = """            okey[g * prm.k + j] = sk[at + j];
            oidx[g * prm.k + j] = si[at + j];"""
_STORE_LAST = """            oidx[g * prm.k + j] = si[at + j];
            put(g * prm.k + j, row * prm.n + si[at + j]);"""


def _wgsl(v: _Variant) -> str:
    return (_PARAMS + _bindings(v) + _helpers(v) + _BODY.format(
        slots=v.slots, wg=_WG, kt=_word(v), store=_STORE_LAST if v.last else _STORE_PAIRS))


# -- numpy twins: the same selection on arrays (the reference devices run these) --------
def _best_np(key: np.ndarray, idx: np.ndarray, seg: int, segs: int, k: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best pairs of each segment of the rows ``(key, idx)``, sorted."""
    rows, m = key.shape
    pk = np.full((rows, segs * seg), ~key.dtype.type(0), key.dtype)
    pi = np.full((rows, segs * seg), 0xFFFFFFFF, np.uint32)
    pk[:, :m], pi[:, :m] = key, idx
    by_seg: list[np.ndarray] = [pk.reshape(rows, segs, seg), pi.reshape(rows, segs, seg)]
    order = np.lexsort(by_seg[::-1], axis=-1)[:, :, :k]
    keys, ids = (np.take_along_axis(a, order, -1).reshape(rows, segs * k) for a in by_seg)
    return keys, ids


def _twin(v: _Variant) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    def run(*args: Any) -> tuple[np.ndarray, np.ndarray]:
        n, m, seg, segs, groups, k, _, mode, _ = args[-9:]
        rows = groups // segs
        if v.first:
            key = keys_np(args[0].reshape(rows, n), v.kind, mode)
            idx = np.broadcast_to(np.arange(n, dtype=np.uint32), (rows, n))
        else:
            key, idx = args[0].reshape(rows, m), args[1].reshape(rows, m).astype(np.uint32)
        key, idx = _best_np(key, idx, seg, segs, k)
        if not v.last:
            return key.reshape(-1), idx.reshape(-1)
        src = args[0 if v.first else 2]
        shape = src.shape[:-1] + (k,)
        values = np.take_along_axis(src.reshape(rows, n), idx.astype(np.int64), 1)
        return values.reshape(shape), idx.astype(np.int32).reshape(shape)
    return run


def _outputs(v: _Variant) -> Callable[..., list[tuple[tuple[int, ...], DType | str]]]:
    def rule(*args: Any) -> list[tuple[tuple[int, ...], DType | str]]:
        groups, k = args[-5], args[-4]
        if v.last:  # one segment a row: groups are the rows, laid out as the source's
            src = args[0 if v.first else 2]
            assert isinstance(src, Spec)
            shape = src.shape[:-1] + (k,)
            return [(shape, src.dtype), (shape, "int32")]
        return [((groups * k,), "uint64" if v.wide else "uint32"), ((groups * k,), "uint32")]
    return rule


def _groups(*args: Any) -> tuple[int, int]:
    wgs = -(-args[-5] // (_WG // args[-1]))  # groups, teams a workgroup
    return min(wgs, _MAX_X), -(-wgs // _MAX_X)


@functools.cache
def _kernel(v: _Variant) -> CustomKernel:
    name = f"topk_{v.kind}_{'first' if v.first else 'merge'}{'_last' if v.last else ''}_{v.slots}"
    inputs = 1 if v.first else 2 + v.last
    return custom_kernel(name, wgsl=_wgsl(v), inputs=inputs, outputs=_outputs(v),
                         workgroups=_groups, numpy=_twin(v))


def top_k(rows: Tensor, k: int, largest: bool) -> tuple[Tensor, Tensor]:
    """The ``k`` best values of each row (along the last axis) of ``rows`` and their
    positions (int32), best first, ties by lower position, NaN the largest value, shaped
    like ``rows`` with ``k`` last; ``k`` at most :func:`max_k`. One launch a level of
    :func:`plan`."""
    n = rows.shape[-1]
    r = numel(rows.shape) // n
    kind = KIND[rows.dtype]
    seg, lengths = plan(n, k)
    mode = 3 if largest else 0  # descending with NaN first; ascending with NaN last
    pairs: tuple[Tensor, ...] = ()
    for level, m in enumerate(lengths):
        segs = -(-m // seg)
        v = _Variant(kind, level == 0, level == len(lengths) - 1, _slots(k))
        ins = (rows,) if v.first else pairs + ((rows,) if v.last else ())
        lanes = min(_WG, _pow2(m))
        got = _kernel(v)(*ins, params=(n, m, seg, segs, r * segs, k, _pow2(k), mode, lanes))
        assert isinstance(got, tuple)
        pairs = got
    return pairs[0], pairs[1]


def launches(n: int, k: int) -> int:
    """Kernel launches :func:`top_k` records for rows of ``n``."""
    return len(plan(n, k)[1])

