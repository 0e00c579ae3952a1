"""WGSL of the Jacobi kernels: symmetric eigenproblems and singular values.

Both sweep over pairs of indices in the round-robin order (the circle method: ``nn / 2``
disjoint pairs a round, ``nn - 1`` rounds a sweep, ``nn`` the size rounded up to even;
a pair holding the padding index is skipped), so a round's rotations are computed by
one thread a pair (two for the SVD's dot products) and applied by one thread a row or a
column, all at once. A pair is rotated only where it is not yet orthogonal to working
precision: ``|a_pq| > eps |A|_F`` (eigh), ``|u_p . u_q| > sqrt(rows) eps |u_p| |u_q|``
(svd, as LAPACK's ``gesvj``); a sweep that rotates nothing ends the work, and at most
``SWEEPS`` run (each loop of a kernel stays below the 65,535 iterations that lavapipe
runs of it in one invocation, its entries summed).

* :func:`eigh`: two-sided cyclic Jacobi on the symmetric matrix that A's lower triangle
  defines (as numpy reads it), ``A <- J^T A J``, ``V <- V J``; the eigenvalues are
  sorted ascending (their order-preserving integer keys ranked, so each lands once) with
  their vectors.
* :func:`svd`: one-sided Jacobi (Hestenes) on the columns of the tall one of ``A`` and
  ``A^T``, ``U <- U J``, ``V <- V J``, until its columns are orthogonal; the singular
  values are the columns' norms, sorted descending. Columns whose norm vanishes, and
  for ``full_matrices`` the columns past ``min(m, n)``, are completed to an orthonormal
  basis: the unit vector least in the span of the columns before, orthogonalized twice
  against them (classical Gram–Schmidt, twice).
"""

from __future__ import annotations

from .wgsl import header, typed

__all__ = ["eigh", "svd", "SWEEPS"]

SWEEPS = 24
UNROLL = 8  # pairs (and rows of a dot product) a loop iteration takes

_COMMON = """
fn up_key(x: {T}) -> {U} {
    let u = bitcast<{U}>(x);
    return select(u | {SIGN}, ~u, (u & {SIGN}) != {U}(0));
}
fn pair(q: u32, r: u32) -> u32 {
    if (q == 0u) { return 0u; }
    return 1u + (q - 1u + r) % (p.nn - 1u);
}
var<workgroup> rc: array<vec2<{T}>, 32>;
var<workgroup> ri: array<vec2<u32>, 32>;
var<workgroup> rotated: atomic<u32>;
var<workgroup> again: u32;
fn rotation(app: {T}, aqq: {T}, apq: {T}, tol: {T}) -> vec2<{T}> {
    if (!(abs(apq) > tol)) { return vec2<{T}>({T}(1.0), {T}(0.0)); }
    let tau = (aqq - app) / ({T}(2.0) * apq);
    let tt = select({T}(-1.0), {T}(1.0), tau >= {T}(0.0)) / (abs(tau) + sqrt({T}(1.0) + tau * tau));
    let c = {T}(1.0) / sqrt({T}(1.0) + tt * tt);
    atomicStore(&rotated, 1u);
    return vec2<{T}>(c, tt * c);
}
// columns i and j of row ``row`` of the matrix at ``base`` (``width`` columns) by pair q
fn rot_cols(base: u32, row: u32, q: u32, width: u32) {
    if (q >= p.nn / 2u || ri[q].y >= width) { return; }
    let i = base + row * width + ri[q].x;
    let j = base + row * width + ri[q].y;
    let x = s[i];
    let y = s[j];
    s[i] = rc[q].x * x - rc[q].y * y;
    s[j] = rc[q].y * x + rc[q].x * y;
}
"""

_SWEEP_END = """
        if (t == 0u) {
            again = atomicLoad(&rotated);
            atomicStore(&rotated, 0u);
        }
        if (workgroupUniformLoad(&again) == 0u) { break; }
    }
"""


def _unrolled(call: str) -> str:
    """``call`` (of ``q``) for ``UNROLL`` consecutive pairs: loop iterations are what
    lavapipe counts."""
    return " ".join(call.replace("q,", f"q + {u}u,") for u in range(UNROLL))


def _step(text: str) -> str:
    """``text`` with the unrolled loops' step in."""
    return text.replace("UNROLL", f"{UNROLL}u")


def _main() -> str:
    return f"""const SWEEPS: u32 = {SWEEPS}u;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
    let b = wid.x + wid.y * nwg.x;
    if (b >= p.batch) {{ return; }}
"""


_PAIRS = """
            let q = t % half;
            let i = min(pair(q, r), pair(p.nn - 1u - q, r));
            let j = max(pair(q, r), pair(p.nn - 1u - q, r));"""


def eigh(t: str, vectors: bool) -> str:
    """Eigenvalues ``w`` (n, ascending) of each symmetric ``a`` (n x n) and, with
    ``vectors``, ``vecs`` (n x n, a column each); scratch ``s`` (A, then V)."""
    outs = ["w", "vecs", "s"] if vectors else ["w", "s"]
    v_init = """
        s[vb + e] = select({T}(0.0), {T}(1.0), i == j);""" if vectors else ""
    v_cols = _unrolled("rot_cols(vb, row, q, n);") if vectors else ""
    v_out = """
        for (var row = 0u; row < n; row++) { vecs[ab + row * n + rank] = s[vb + row * n + i]; }""" \
        if vectors else ""
    return typed(_step(header("n: u32, nn: u32", ["a"], outs) + _COMMON + """
var<workgroup> dg: array<{T}, 64>;
// rows i and j of column ``col`` of A by pair q
fn rot_rows(base: u32, col: u32, q: u32, n: u32) {
    if (q >= p.nn / 2u || ri[q].y >= n) { return; }
    let i = base + ri[q].x * n + col;
    let j = base + ri[q].y * n + col;
    let x = s[i];
    let y = s[j];
    s[i] = rc[q].x * x - rc[q].y * y;
    s[j] = rc[q].y * x + rc[q].x * y;
}
""" + _main() + f"""
    let n = p.n;
    let ab = b * n * n;
    let sb = b * n * n * {2 if vectors else 1}u;
    let vb = sb + n * n;
    var sq = {{T}}(0.0);
    for (var e = t; e < n * n; e += WG) {{
        let i = e / n;
        let j = e % n;
        let x = a[ab + max(i, j) * n + min(i, j)];
        s[sb + e] = x;
        sq += x * x;""" + v_init + """
    }
    dg[t] = sq;
    sync();
    if (t == 0u) {
        var acc = {T}(0.0);
        for (var q = 0u; q < WG; q++) { acc += dg[q]; }
        dg[0] = acc;
    }
    let tol = {EPS} * sqrt(workgroupUniformLoad(&dg[0]));
    let half = p.nn / 2u;
    for (var sweep = 0u; sweep < SWEEPS; sweep++) {
        for (var r = 0u; r + 1u < p.nn; r++) {
            if (t < half) {""" + _PAIRS + """
                var cs = vec2<{T}>({T}(1.0), {T}(0.0));
                if (j < n) {
                    cs = rotation(s[sb + i * n + i], s[sb + j * n + j], s[sb + i * n + j], tol);
                }
                rc[t] = cs;
                ri[t] = vec2<u32>(i, j);
            }
            sync();
            for (var row = t; row < n; row += WG) {
                for (var q = 0u; q < half; q += UNROLL) { """ + _unrolled("rot_cols(sb, row, q, n);")
                 + v_cols + """ }
            }
            sync();
            for (var col = t; col < n; col += WG) {
                for (var q = 0u; q < half; q += UNROLL) { """ + _unrolled("rot_rows(sb, col, q, n);")
                 + """ }
            }
            sync();
        }""" + _SWEEP_END + """
    for (var i = t; i < n; i += WG) { dg[i] = s[sb + i * n + i]; }
    workgroupBarrier();
    for (var i = t; i < n; i += WG) {
        let ki = up_key(dg[i]);
        var rank = 0u;
        for (var q = 0u; q < n; q++) {
            let kq = up_key(dg[q]);
            if (kq < ki || (kq == ki && q < i)) { rank++; }
        }
        w[b * n + rank] = dg[i];""" + v_out + """
    }
}
"""), t)


_COMPLETE = """
    for (var e = t; e < rows * (pc - cols); e += WG) {
        pm[pb + (e / (pc - cols)) * pc + cols + e % (pc - cols)] = {T}(0.0);
    }
    if (t == 0u) {
        var good = 0u;
        for (var c = 0u; c < cols; c++) { good += select(0u, 1u, sg[c] > top * {EPS} * {EPS}); }
        start = good;
    }
    sync();
    for (var q = workgroupUniformLoad(&start); q < pc; q++) {
        for (var k = t; k < rows; k += WG) {
            var acc = {T}(0.0);
            for (var j = 0u; j < q; j++) { let x = pm[pb + k * pc + j]; acc += x * x; }
            sg[k] = {T}(1.0) - acc;
        }
        workgroupBarrier();
        if (t == 0u) {
            var best = 0u;
            for (var k = 1u; k < rows; k++) { if (sg[k] > sg[best]) { best = k; } }
            start = best;
        }
        let e = workgroupUniformLoad(&start);
        for (var row = t; row < rows; row += WG) {
            var x = select({T}(0.0), {T}(1.0), row == e);
            for (var j = 0u; j < q; j++) { x -= pm[pb + e * pc + j] * pm[pb + row * pc + j]; }
            pm[pb + row * pc + q] = x;
        }
        sync();
        for (var j = t; j < q; j += WG) {
            var d = {T}(0.0);
            for (var row = 0u; row < rows; row++) { d += pm[pb + row * pc + j] * pm[pb + row * pc + q]; }
            sg[j] = d;
        }
        sync();
        for (var row = t; row < rows; row += WG) {
            var x = pm[pb + row * pc + q];
            for (var j = 0u; j < q; j++) { x -= sg[j] * pm[pb + row * pc + j]; }
            pm[pb + row * pc + q] = x;
        }
        sync();
        if (t == 0u) {
            var acc = {T}(0.0);
            for (var row = 0u; row < rows; row++) { let x = pm[pb + row * pc + q]; acc += x * x; }
            sg[0] = sqrt(acc);
        }
        workgroupBarrier();
        let nrm = sg[0];
        for (var row = t; row < rows; row += WG) { pm[pb + row * pc + q] = pm[pb + row * pc + q] / nrm; }
        sync();
    }
"""


def svd(t: str, vectors: bool) -> str:
    """Singular values ``sv`` (cols, descending) of each ``a`` (m x n; its tall form
    ``T``, rows x cols, is ``A^T`` where ``tr``); with ``vectors``, ``pm`` (rows x pc:
    T's left vectors, completed) and ``qm`` (cols x cols: its right vectors). Scratch
    ``s`` (T, then V)."""
    outs = ["sv", "pm", "qm", "s"] if vectors else ["sv", "s"]
    v_init = """
    for (var e = t; e < cols * cols; e += WG) {
        s[vb + e] = select({T}(0.0), {T}(1.0), e / cols == e % cols);
    }""" if vectors else ""
    v_rows = """
            for (var row = t; row < cols; row += WG) {
                for (var q = 0u; q < half; q += UNROLL) { """ + _unrolled(
        "rot_cols(vb, row, q, cols);") + """ }
            }""" if vectors else ""
    v_out = """
        let inv = select({T}(0.0), {T}(1.0) / sg[c], sg[c] > top * {EPS} * {EPS});
        for (var row = 0u; row < rows; row++) { pm[pb + row * pc + rank] = s[sb + row * cols + c] * inv; }
        for (var row = 0u; row < cols; row++) { qm[qb + row * cols + rank] = s[vb + row * cols + c]; }
    }""" + _COMPLETE if vectors else """
    }"""
    scratch = "rows * cols + cols * cols" if vectors else "rows * cols"
    return typed(_step(header("m: u32, n: u32, rows: u32, cols: u32, nn: u32, tr: u32, pc: u32",
                        ["a"], outs) + _COMMON + """
var<workgroup> sg: array<{T}, 64>;
var<workgroup> dots: array<vec3<{T}>, 64>;
var<workgroup> top: {T};
var<workgroup> start: u32;
fn dot3(base: u32, row: u32, hi: u32, i: u32, j: u32) -> vec3<{T}> {
    if (row >= hi) { return vec3<{T}>({T}(0.0)); }
    let x = s[base + row * p.cols + i];
    let y = s[base + row * p.cols + j];
    return vec3<{T}>(x * x, y * y, x * y);
}
""" + _main() + f"""
    let rows = p.rows;
    let cols = p.cols;
    let pc = p.pc;
    let tol = sqrt({{T}}(rows)) * {{EPS}};
    let ab = b * p.m * p.n;
    let sb = b * ({scratch});
    let vb = sb + rows * cols;
    let pb = b * rows * pc;
    let qb = b * cols * cols;
    for (var e = t; e < rows * cols; e += WG) {{
        let r = e / cols;
        let c = e % cols;
        if (p.tr != 0u) {{ s[sb + e] = a[ab + c * p.n + r]; }} else {{ s[sb + e] = a[ab + r * p.n + c]; }}
    }}""" + v_init + """
    sync();
    let half = p.nn / 2u;
    let mid = rows / 2u;
    for (var sweep = 0u; sweep < SWEEPS; sweep++) {
        for (var r = 0u; r + 1u < p.nn; r++) {
            if (t < 2u * half) {""" + _PAIRS + """
                var acc = vec3<{T}>({T}(0.0));
                if (j < cols) {
                    let hi = select(mid, rows, t >= half);
                    for (var row = select(0u, mid, t >= half); row < hi; row += UNROLL) {
                        acc += """ + " + ".join(f"dot3(sb, row + {u}u, hi, i, j)"
                                                for u in range(UNROLL)) + """;
                    }
                }
                dots[t] = acc;
                if (t < half) { ri[q] = vec2<u32>(i, j); }
            }
            workgroupBarrier();
            if (t < half) {
                let d = dots[t] + dots[t + half];
                var cs = vec2<{T}>({T}(1.0), {T}(0.0));
                if (ri[t].y < cols) { cs = rotation(d.x, d.y, d.z, tol * sqrt(d.x) * sqrt(d.y)); }
                rc[t] = cs;
            }
            sync();
            for (var row = t; row < rows; row += WG) {
                for (var q = 0u; q < half; q += UNROLL) { """ + _unrolled(
        "rot_cols(sb, row, q, cols);") + """ }
            }""" + v_rows + """
            sync();
        }""" + _SWEEP_END + """
    for (var c = t; c < cols; c += WG) {
        var acc = {T}(0.0);
        for (var row = 0u; row < rows; row++) { let x = s[sb + row * cols + c]; acc += x * x; }
        sg[c] = sqrt(acc);
    }
    workgroupBarrier();
    if (t == 0u) {
        var mx = {T}(0.0);
        for (var c = 0u; c < cols; c++) { mx = max(mx, sg[c]); }
        top = mx;
    }
    workgroupBarrier();
    for (var c = t; c < cols; c += WG) {
        let kc = bitcast<{U}>(sg[c]) & ~{SIGN};
        var rank = 0u;
        for (var q = 0u; q < cols; q++) {
            let kq = bitcast<{U}>(sg[q]) & ~{SIGN};
            if (kq > kc || (kq == kc && q < c)) { rank++; }
        }
        sv[b * cols + rank] = sg[c];""" + v_out + """
}
"""), t)
