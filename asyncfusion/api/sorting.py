"""Sorting long rows on the device: a bitonic sorting network over (key, index) pairs.

Every element of a row becomes a pair: a 32-bit *key* whose unsigned order is the order
wanted (:mod:`asyncfusion.api.sortkeys`: NaN last, or first for a top-k where NaN counts as
the largest) and its position in the row. Pairs compare by key, then by position, so all
pairs differ and the result is the stable order. Rows are padded to a power of two with
pairs that sort after every element.

The network runs in three custom kernels (:func:`~asyncfusion.custom_kernel`), every
launch over all rows at once:

* ``bitonic_block``: each workgroup sorts a block of ``_BLOCK`` pairs in workgroup memory
  (every stage of the network whose pairs lie inside a block), reading the values;
* ``bitonic_step``: one global compare-exchange step (pairs ``_BLOCK`` or more apart);
* ``bitonic_merge``: the in-block steps of one later stage, again in workgroup memory.

A row of ``P = 2**p`` padded elements costs ``1 + sum over stages 2**(b+1)..P of
(log2(stage) - b + 1)`` launches (``_BLOCK = 2**b``): 1 up to 2048 elements, 3 at 4096,
55 at 2**20, all in one submission. :func:`sorted_pairs` gives the sorted positions;
``argsort`` and ``sort`` (:mod:`asyncfusion.api.indexing`) use it for 32-bit dtypes (float16,
bool and the 8- and 16-bit integers through their 32-bit forms), and ``topk`` for more than
:mod:`asyncfusion.api.selection` keeps in a workgroup (:func:`top_positions`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._core.dtype import DType
from ..extend.custom_kernel import CustomKernel, custom_kernel
from ..lazy.tensor import Tensor
from .sortkeys import KIND, keys_np, wgsl_key

__all__ = ["sorted_pairs", "top_positions", "SORTABLE", "launches"]

_WG = 256
_BLOCK = 2048  # pairs one workgroup sorts in workgroup memory (16 KiB of keys + indices)
_MAX_X = 65535
_WIDEN = {DType.float16: DType.float32, DType.bool: DType.uint32} | {
    d: d.lane for d in DType if d.lane is not d}  # sorted through their 32-bit forms
SORTABLE = frozenset({DType.float32, DType.int32, DType.uint32, *_WIDEN})
_PAD = 0xFFFFFFFF  # padding's key: last (ties go by position, and padding's come last)

# params: n (row length), p (padded length), rows, block (pairs per workgroup, a power of
# two <= _BLOCK), k_lo, k_hi (the stages this launch runs), j (the step, bitonic_step),
# desc: the key's mode (asyncfusion.api.sortkeys).
_PARAMS = """
struct P { n: u32, p: u32, rows: u32, block: u32, k_lo: u32, k_hi: u32, j: u32, desc: u32 }
@group(0) @binding(0) var<uniform> prm: P;
"""

_LESS = """
fn less(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
    return ka < kb || (ka == kb && ia < ib);
}
"""

_SHARED_NETWORK = """
var<workgroup> sk: array<u32, {block}>;
var<workgroup> si: array<u32, {block}>;

fn local_steps(t: u32, base: u32, k: u32, j0: u32) {{
    for (var j = j0; j > 0u; j = j >> 1u) {{
        workgroupBarrier();
        for (var m = t; m < prm.block / 2u; m = m + {wg}u) {{
            let i = 2u * m - (m & (j - 1u));
            let l = i | j;
            let up = ((base + i) & k) == 0u;
            let swap = select(less(sk[i], si[i], sk[l], si[l]),
                              less(sk[l], si[l], sk[i], si[i]), up);
            if (swap) {{
                let tk = sk[i]; sk[i] = sk[l]; sk[l] = tk;
                let ti = si[i]; si[i] = si[l]; si[l] = ti;
            }}
        }}
    }}
    workgroupBarrier();
}}

fn stages(t: u32, base: u32) {{
    for (var k = prm.k_lo; k <= prm.k_hi; k = k << 1u) {{
        local_steps(t, base, k, min(k, prm.block) >> 1u);
    }}
}}
"""

_GROUP_ID = """
    let w = wid.x + wid.y * nwg.x;
    let blocks = prm.p / prm.block;
    if (w >= prm.rows * blocks) { return; }
    let row = w / blocks;
    let base = (w % blocks) * prm.block;
"""


def _block_wgsl(kind: str) -> str:
    return (_PARAMS + """
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> okey: array<u32>;
@group(0) @binding(3) var<storage, read_write> oidx: array<u32>;
""" + _LESS + wgsl_key(kind) + _SHARED_NETWORK.format(block=_BLOCK, wg=_WG) + f"""
@compute @workgroup_size({_WG})
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{""" + _GROUP_ID + f"""
    for (var e = t; e < prm.block; e = e + {_WG}u) {{
        let pos = base + e;
        if (pos < prm.n) {{
            sk[e] = key_{kind}(src[row * prm.n + pos], prm.desc);
        }} else {{
            sk[e] = 0xffffffffu;
        }}
        si[e] = pos;
    }}
    stages(t, base);
    for (var e = t; e < prm.block; e = e + {_WG}u) {{
        okey[row * prm.p + base + e] = sk[e];
        oidx[row * prm.p + base + e] = si[e];
    }}
}}
""")


_PAIRS_IO = """
@group(0) @binding(1) var<storage, read> ikey: array<u32>;
@group(0) @binding(2) var<storage, read> iidx: array<u32>;
@group(0) @binding(3) var<storage, read_write> okey: array<u32>;
@group(0) @binding(4) var<storage, read_write> oidx: array<u32>;
"""

_MERGE = (_PARAMS + _PAIRS_IO + _LESS + _SHARED_NETWORK.format(block=_BLOCK, wg=_WG) + f"""
@compute @workgroup_size({_WG})
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{""" + _GROUP_ID + f"""
    for (var e = t; e < prm.block; e = e + {_WG}u) {{
        sk[e] = ikey[row * prm.p + base + e];
        si[e] = iidx[row * prm.p + base + e];
    }}
    stages(t, base);
    for (var e = t; e < prm.block; e = e + {_WG}u) {{
        okey[row * prm.p + base + e] = sk[e];
        oidx[row * prm.p + base + e] = si[e];
    }}
}}
""")

_STEP = (_PARAMS + _PAIRS_IO + _LESS + f"""
@compute @workgroup_size({_WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let m = g.x + g.y * nwg.x * {_WG}u;
    let half = prm.p / 2u;
    if (m >= prm.rows * half) {{ return; }}
    let row = m / half;
    let mm = m % half;
    let j = prm.j;
    let i = 2u * mm - (mm & (j - 1u));
    let l = i | j;
    let a = row * prm.p + i;
    let b = row * prm.p + l;
    let ka = ikey[a]; let ia = iidx[a]; let kb = ikey[b]; let ib = iidx[b];
    let up = (i & prm.k_hi) == 0u;
    let swap = select(less(ka, ia, kb, ib), less(kb, ib, ka, ia), up);
    if (swap) {{
        okey[a] = kb; oidx[a] = ib; okey[b] = ka; oidx[b] = ia;
    }} else {{
        okey[a] = ka; oidx[a] = ia; okey[b] = kb; oidx[b] = ib;
    }}
}}
""")


def _spread(groups: int) -> tuple[int, int]:
    return min(groups, _MAX_X), -(-groups // _MAX_X)


# -- numpy twins: the same network on arrays (the reference devices run these) ----------
def _step_np(key: np.ndarray, idx: np.ndarray, k: int, j: int
             ) -> tuple[np.ndarray, np.ndarray]:
    p = key.shape[1]
    i = np.arange(p)
    i = i[(i & j) == 0]
    lo, hi = i, i | j
    ka, kb, ia, ib = key[:, lo], key[:, hi], idx[:, lo], idx[:, hi]
    a_less = (ka < kb) | ((ka == kb) & (ia < ib))
    up = (lo & k) == 0
    swap = np.where(up, ~a_less, a_less)
    key, idx = key.copy(), idx.copy()
    key[:, lo], key[:, hi] = np.where(swap, kb, ka), np.where(swap, ka, kb)
    idx[:, lo], idx[:, hi] = np.where(swap, ib, ia), np.where(swap, ia, ib)
    return key, idx


def _stages_np(key: np.ndarray, idx: np.ndarray, block: int, k_lo: int, k_hi: int
               ) -> tuple[np.ndarray, np.ndarray]:
    k = k_lo
    while k <= k_hi:
        j = min(k, block) // 2
        while j > 0:
            key, idx = _step_np(key, idx, k, j)
            j //= 2
        k *= 2
    return key, idx


def _block_np(kind: str) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    def twin(src: np.ndarray, n: int, p: int, rows: int, block: int, k_lo: int, k_hi: int,
             j: int, desc: int) -> tuple[np.ndarray, np.ndarray]:
        bits = src.reshape(-1).view(np.uint32).reshape(rows, n)
        key = np.full((rows, p), _PAD, np.uint32)
        key[:, :n] = keys_np(bits, kind, desc)
        idx = np.broadcast_to(np.arange(p, dtype=np.uint32), (rows, p))
        key, idx = _stages_np(key, idx, block, k_lo, k_hi)
        return key.reshape(-1), idx.reshape(-1).view(np.int32)
    return twin


def _merge_np(key: np.ndarray, idx: np.ndarray, n: int, p: int, rows: int, block: int,
              k_lo: int, k_hi: int, j: int, desc: int) -> tuple[np.ndarray, np.ndarray]:
    key, idx = _stages_np(key.reshape(rows, p), idx.view(np.uint32).reshape(rows, p),
                          block, k_lo, k_hi)
    return key.reshape(-1), idx.reshape(-1).view(np.int32)


def _step_twin(key: np.ndarray, idx: np.ndarray, n: int, p: int, rows: int, block: int,
               k_lo: int, k_hi: int, j: int, desc: int) -> tuple[np.ndarray, np.ndarray]:
    key, idx = _step_np(key.reshape(rows, p), idx.view(np.uint32).reshape(rows, p), k_hi, j)
    return key.reshape(-1), idx.reshape(-1).view(np.int32)


def _params(args: tuple[object, ...]) -> tuple[int, ...]:
    """A rule's params, after the inputs' Specs: n, p, rows, block, k_lo, k_hi, j, mode."""
    params = tuple(v for v in args[-8:] if isinstance(v, int))
    assert len(params) == 8, args
    return params


def _pair_outputs(*args: object) -> list[tuple[tuple[int, ...], str]]:
    _, p, rows, *_ = _params(args)
    return [((rows * p,), "uint32"), ((rows * p,), "int32")]


def _block_groups(*args: object) -> tuple[int, int]:
    _, p, rows, block, *_ = _params(args)
    return _spread(rows * (p // block))


def _step_groups(*args: object) -> tuple[int, int]:
    _, p, rows, *_ = _params(args)
    return _spread(-(-rows * (p // 2) // _WG))


_BLOCK_KERNELS = {kind: custom_kernel(f"bitonic_block_{kind}", wgsl=_block_wgsl(kind),
                                      inputs=1, outputs=_pair_outputs,
                                      workgroups=_block_groups, numpy=_block_np(kind))
                  for kind in ("float", "int", "uint")}
_MERGE_KERNEL = custom_kernel("bitonic_merge", wgsl=_MERGE, inputs=2, outputs=_pair_outputs,
                              workgroups=_block_groups, numpy=_merge_np)
_STEP_KERNEL = custom_kernel("bitonic_step", wgsl=_STEP, inputs=2, outputs=_pair_outputs,
                             workgroups=_step_groups,
                             numpy=_step_twin)


def launches(n: int) -> int:
    """Kernel launches :func:`sorted_pairs` records for rows of ``n`` elements."""
    p = 1 << max(0, (n - 1).bit_length())
    block = min(p, _BLOCK)
    count, k = 1, 2 * block
    while k <= p:
        count += int(math.log2(k // block)) + 1
        k *= 2
    return count


def _pair(kernel: CustomKernel, ins: tuple[Tensor, ...], params: tuple[int, ...]
          ) -> tuple[Tensor, Tensor]:
    got = kernel(*ins, params=params)
    assert isinstance(got, tuple)
    return got[0], got[1]


def _network(rows: Tensor, mode: int) -> Tensor:
    """Sorted positions of each row of ``rows`` (2-D), padded to ``(r, p)``."""
    x = rows
    if x.dtype in _WIDEN:
        x = x.astype(_WIDEN[x.dtype])
    assert x.ndim == 2 and x.dtype in SORTABLE, (x.shape, x.dtype)
    r, n = x.shape
    p = 1 << max(1, (n - 1).bit_length())
    block = min(p, _BLOCK)
    prm = (n, p, r, block)
    key, idx = _pair(_BLOCK_KERNELS[KIND[x.dtype]], (x,), (*prm, 2, block, 0, mode))
    k = 2 * block
    while k <= p:
        j = k // 2
        while j >= block:
            key, idx = _pair(_STEP_KERNEL, (key, idx), (*prm, k, k, j, mode))
            j //= 2
        key, idx = _pair(_MERGE_KERNEL, (key, idx), (*prm, k, k, 0, mode))
        k *= 2
    del key
    return idx.reshape(r, p)


def sorted_pairs(rows: Tensor, descending: bool = False) -> Tensor:
    """Positions that sort each row of the 2-D tensor ``rows`` (stable; NaN last), as an
    int32 tensor of the same shape."""
    return _network(rows, int(descending))[:, :rows.shape[1]]


def top_positions(rows: Tensor, k: int, largest: bool) -> Tensor:
    """Positions of the ``k`` best of each row of the 2-D tensor ``rows``, best first,
    ties by lower position, NaN the largest value: the rows sorted whole."""
    return _network(rows, 3 if largest else 0)[:, :k]
