"""WGSL of the small-matrix kernels: one workgroup per matrix, the whole batch at once.

Every kernel here runs ``WG`` threads on one matrix of a batch (workgroup ``b``, spread
over x and y past 65,535) and works in its output buffers (storage memory: a float64
64 x 64 matrix alone fills lavapipe's 32 KiB of workgroup memory), with ``sync()``
(a storage and a workgroup barrier) between the steps that read what others wrote.
Decisions that depend on data (a pivot, convergence) reach every thread through
``workgroupUniformLoad``, so barriers stay in uniform control flow. Texts are written
once for ``T`` (``f32`` or ``f64``); :func:`typed` puts the type in.

* :func:`cholesky`: right-looking Cholesky–Banachiewicz, in place in ``L`` (``upper``:
  the same on the transposed index, reading A's upper triangle, as numpy).
* :func:`lu`: LU with partial pivoting, in place in a scratch copy; ``det`` writes U's
  diagonal and the permutation's parity, ``solve`` and ``inv`` eliminate the right-hand
  sides alongside (the identity, for ``inv``) and substitute back, a thread a column.
* :func:`qr`: Householder reflections as LAPACK's (``R``'s diagonal ``-sign(x0) |x|``, no
  reflection where the column below the diagonal is zero), then ``Q`` from the identity.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["WG", "MAX_N", "typed", "cholesky", "lu", "qr", "header"]

WG = 64  # threads a workgroup: one a row or a column of the largest matrix
MAX_N = 64  # the largest matrix side the kernels take

_EPS = {"f32": "1.1920929e-07", "f64": "2.220446049250313e-16"}


def typed(text: str, t: str) -> str:
    """``text`` with ``T`` as ``t`` (``f32`` or ``f64``), ``U`` as the unsigned integer of
    its width, ``SIGN`` its sign bit and ``EPS`` its machine epsilon."""
    wide = t == "f64"
    return (text.replace("{T}", t).replace("{U}", "u64" if wide else "u32")
            .replace("{SIGN}", "0x8000000000000000lu" if wide else "0x80000000u")
            .replace("{EPS}", f"{t}({_EPS[t]})"))


def header(fields: str, ins: Sequence[str], outs: Sequence[str]) -> str:
    """The params struct (``batch`` first, then ``fields``), the bindings (``name`` of
    element type ``T`` each), ``sync`` and the start of ``main``: ``t`` the thread,
    ``b`` the matrix (workgroups past the batch return at once)."""
    lines = [f"struct P {{ batch: u32, {fields} }}",
             "@group(0) @binding(0) var<uniform> p: P;"]
    for k, name in enumerate(ins, start=1):
        lines.append(f"@group(0) @binding({k}) var<storage, read> {name}: array<{{T}}>;")
    for k, name in enumerate(outs, start=len(ins) + 1):
        lines.append(f"@group(0) @binding({k}) var<storage, read_write> {name}: array<{{T}}>;")
    return "\n".join(lines) + f"""
const WG: u32 = {WG}u;
fn sync() {{
    storageBarrier();
    workgroupBarrier();
}}
"""


_MAIN = f"""
@compute @workgroup_size({WG})
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let b = wid.x + wid.y * nwg.x;
    if (b >= p.batch) {{ return; }}
"""


def cholesky(t: str) -> str:
    """``l`` (n x n) with ``A = L L^T`` (``upper``: ``l`` holds ``U = L^T``)."""
    return typed(header("n: u32, upper: u32", ["a"], ["l"]) + """
fn at(base: u32, i: u32, j: u32) -> u32 {
    if (p.upper != 0u) { return base + j * p.n + i; }
    return base + i * p.n + j;
}
""" + _MAIN + """
    let n = p.n;
    let base = b * n * n;
    for (var e = t; e < n * n; e += WG) {
        let i = e / n;
        let j = e % n;
        l[at(base, i, j)] = select({T}(0.0), a[at(base, i, j)], j <= i);
    }
    sync();
    for (var j = 0u; j < n; j++) {
        let d = sqrt(l[at(base, j, j)]);
        sync();
        if (t == 0u) { l[at(base, j, j)] = d; }
        for (var i = j + 1u + t; i < n; i += WG) { l[at(base, i, j)] = l[at(base, i, j)] / d; }
        sync();
        for (var i = j + 1u + t; i < n; i += WG) {
            let f = l[at(base, i, j)];
            for (var c = j + 1u; c <= i; c++) { l[at(base, i, c)] -= f * l[at(base, c, j)]; }
        }
        sync();
    }
}
""", t)


def lu(t: str, mode: str) -> str:
    """LU of ``a`` into the scratch ``lu``. ``mode`` ``det``: ``diag`` (n) and ``parity``
    (1: the permutation's sign); ``solve``: ``x`` (n x k) solving ``A x = rhs``; ``inv``:
    ``x`` (n x n) the inverse."""
    ins = ["a", "rhs"] if mode == "solve" else ["a"]
    outs = ["lu", "diag", "parity"] if mode == "det" else ["lu", "x"]
    init = {"det": "if (t == 0u) { swaps = 0u; }",
            "solve": "for (var e = t; e < n * k; e += WG) { x[xb + e] = rhs[xb + e]; }",
            "inv": "for (var e = t; e < n * n; e += WG) "
                   "{ x[xb + e] = select({T}(0.0), {T}(1.0), e / n == e % n); }"}[mode]
    swap = ("if (t == 0u) { swaps += 1u; }" if mode == "det" else """
            for (var j = t; j < k; j += WG) {
                let v = x[xb + c * k + j];
                x[xb + c * k + j] = x[xb + r * k + j];
                x[xb + r * k + j] = v;
            }""")
    eliminate = "" if mode == "det" else """
            for (var j = 0u; j < k; j++) { x[xb + i * k + j] -= f * x[xb + c * k + j]; }"""
    finish = """
    for (var i = t; i < n; i += WG) { diag[b * n + i] = lu[base + i * n + i]; }
    if (t == 0u) { parity[b] = select({T}(1.0), {T}(-1.0), (swaps & 1u) == 1u); }""" \
        if mode == "det" else """
    for (var j = t; j < k; j += WG) {
        for (var ii = 0u; ii < n; ii++) {
            let i = n - 1u - ii;
            var s = x[xb + i * k + j];
            for (var q = i + 1u; q < n; q++) { s -= lu[base + i * n + q] * x[xb + q * k + j]; }
            x[xb + i * k + j] = s / lu[base + i * n + i];
        }
    }"""
    return typed(header("n: u32, k: u32", ins, outs) + """
var<workgroup> piv: u32;
var<workgroup> swaps: u32;
""" + _MAIN + """
    let n = p.n;
    let k = p.k;
    let base = b * n * n;
    let xb = b * n * k;
    for (var e = t; e < n * n; e += WG) { lu[base + e] = a[base + e]; }
    """ + init + """
    sync();
    for (var c = 0u; c < n; c++) {
        if (t == 0u) {
            var best = c;
            var bv = abs(lu[base + c * n + c]);
            for (var i = c + 1u; i < n; i++) {
                let v = abs(lu[base + i * n + c]);
                if (v > bv) { best = i; bv = v; }
            }
            piv = best;
        }
        let r = workgroupUniformLoad(&piv);
        if (r != c) {
            for (var j = t; j < n; j += WG) {
                let v = lu[base + c * n + j];
                lu[base + c * n + j] = lu[base + r * n + j];
                lu[base + r * n + j] = v;
            }""" + swap + """
        }
        sync();
        for (var i = c + 1u + t; i < n; i += WG) {
            let d = lu[base + c * n + c];
            let f = select(lu[base + i * n + c] / d, {T}(0.0), d == {T}(0.0));
            lu[base + i * n + c] = f;
            for (var j = c + 1u; j < n; j++) { lu[base + i * n + j] -= f * lu[base + c * n + j]; }"""
                 + eliminate + """
        }
        sync();
    }""" + finish + """
}
""", t)


def qr(t: str) -> str:
    """Householder QR of ``a`` (m x n): ``q`` (m x qc), ``r`` (rr x n); scratch ``w`` (the
    matrix being reduced, m x n) and ``v`` (the reflectors, min(m, n) x m)."""
    return typed(header("m: u32, n: u32, qc: u32, rr: u32", ["a"], ["q", "r", "w", "v"]) + """
var<workgroup> beta: array<{T}, 64>;
var<workgroup> head: {T};
var<workgroup> alpha: {T};
""" + _MAIN + """
    let m = p.m;
    let n = p.n;
    let kk = min(m, n);
    let wb = b * m * n;
    let vb = b * kk * m;
    for (var e = t; e < m * n; e += WG) { w[wb + e] = a[wb + e]; }
    sync();
    for (var j = 0u; j < kk; j++) {
        if (t == 0u) {
            var sub = {T}(0.0);
            for (var i = j + 1u; i < m; i++) { let x = w[wb + i * n + j]; sub += x * x; }
            let x0 = w[wb + j * n + j];
            var bt = {T}(0.0);
            var v0 = {T}(0.0);
            var al = x0;
            if (sub > {T}(0.0)) {
                let nrm = sqrt(x0 * x0 + sub);
                al = select(nrm, -nrm, x0 >= {T}(0.0));
                v0 = x0 - al;
                bt = {T}(2.0) / (v0 * v0 + sub);
            }
            beta[j] = bt;
            head = v0;
            alpha = al;
        }
        workgroupBarrier();
        let bt = beta[j];
        for (var i = j + t; i < m; i += WG) {
            v[vb + j * m + i] = select(w[wb + i * n + j], head, i == j);
        }
        sync();
        for (var c = j + 1u + t; c < n; c += WG) {
            var d = {T}(0.0);
            for (var i = j; i < m; i++) { d += v[vb + j * m + i] * w[wb + i * n + c]; }
            let f = bt * d;
            for (var i = j; i < m; i++) { w[wb + i * n + c] -= f * v[vb + j * m + i]; }
        }
        if (bt != {T}(0.0)) {
            for (var i = j + t; i < m; i += WG) {
                w[wb + i * n + j] = select({T}(0.0), alpha, i == j);
            }
        }
        sync();
    }
    let rb = b * p.rr * n;
    for (var e = t; e < p.rr * n; e += WG) {
        let i = e / n;
        r[rb + e] = select({T}(0.0), w[wb + e], e % n >= i);
    }
    let qc = p.qc;
    let qb = b * m * qc;
    for (var c = t; c < qc; c += WG) {
        for (var i = 0u; i < m; i++) { q[qb + i * qc + c] = select({T}(0.0), {T}(1.0), i == c); }
        for (var jj = 0u; jj < kk; jj++) {
            let j = kk - 1u - jj;
            var d = {T}(0.0);
            for (var i = j; i < m; i++) { d += v[vb + j * m + i] * q[qb + i * qc + c]; }
            let f = beta[j] * d;
            for (var i = j; i < m; i++) { q[qb + i * qc + c] -= f * v[vb + j * m + i]; }
        }
    }
}
""", t)
