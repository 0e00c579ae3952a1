"""WGSL for matmul kernels: a register-tiled product with the epilogue in its store.

One workgroup computes a ``tm`` x ``tn`` tile of one output matrix; each thread an
``rm`` x ``rn`` block of it, held as ``vec4`` accumulators (rows of 4 columns). K runs in
steps of ``tk`` through workgroup memory, double-buffered: each thread fetches its part
of the next step into registers while the workgroup multiplies the current one, then
writes it to the other buffer — one barrier per step. Both operands sit in workgroup
memory k-major as ``vec4`` along M (A) or N (B), so a thread reads its 4-row (4-column)
groups with ``vec4`` loads; its groups are spaced a warp's width apart, so threads side
by side read adjacent ``vec4`` words.

Global reads take 4 consecutive elements of one operand per chunk, along the operand's
contiguous axis (:attr:`MatmulTiles.a_k`, :attr:`MatmulTiles.b_k`), so neighbouring
threads read neighbouring words. Where the layout allows (unit stride on that axis, its
extent, the offset and every other stride multiples of 4) a chunk is one ``vec4`` load
of a buffer bound as ``array<vec4<T>>``; otherwise it is 4 guarded scalar loads through
the strides. Reads past the matrix give zeros, stores past it are skipped: any shape.

Split-K (:class:`MatmulShader` stages): for few output tiles over a long K, the
``partial`` stage gives each workgroup one tile and one slice of K (``kc`` elements, head
word 3) and writes its sums, without the epilogue, to a scratch buffer bound after the
kernel's own (slice-major, rows padded to a multiple of 4); the ``sum`` stage, a thread
per output element, adds the slices in order and runs the epilogue and the stores.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...kernel import Kernel, LaunchArgs, Level
from .params import HEAD_WORDS, param
from .render import INNER_STEPS, _Writer
from .types import WGSL_TYPE, enables

__all__ = ["MatmulTiles", "MatmulShader", "with_layout", "render_matmul", "valid_tiles"]

# The stages of a matmul: the whole product with its epilogue in one kernel, or a split-K
# pass of partial sums over slices of K, then their sum with the epilogue.
STAGES = ("whole", "partial", "sum")


@dataclass(frozen=True, slots=True)
class MatmulTiles:
    """A matmul schedule: a ``tm`` x ``tn`` output tile per workgroup, K in steps of
    ``tk`` through (double-buffered) workgroup memory, an ``rm`` x ``rn`` block of it per
    thread (multiples of 4). How each operand is read: ``a_k`` (A along K, else along M),
    ``b_k`` (B along K, else along N), ``a_vec``/``b_vec`` (as ``vec4`` words); ``even``:
    the tiles divide M, N and K, so no read of a tile can fall outside the matrices and
    the reads go unguarded."""

    tm: int
    tn: int
    tk: int
    rm: int
    rn: int
    a_k: bool = True
    b_k: bool = False
    a_vec: bool = False
    b_vec: bool = False
    even: bool = False

    def __post_init__(self) -> None:
        assert valid_tiles(self.tm, self.tn, self.tk, self.rm, self.rn), self

    @property
    def name(self) -> str:
        return f"{self.tm}x{self.tn}x{self.tk}/{self.rm}x{self.rn}"

    @property
    def threads(self) -> int:
        return (self.tm // self.rm) * (self.tn // self.rn)

    def chunks(self, size: int) -> int:
        """Chunks of 4 elements each thread loads of an operand's ``size`` x ``tk`` slice."""
        return size * self.tk // (4 * self.threads)

    @property
    def shared_bytes(self) -> int:
        return 2 * (self.tm + self.tn) * self.tk * 4


def valid_tiles(tm: int, tn: int, tk: int, rm: int, rn: int) -> bool:
    """Whether these sizes make a schedule: positive, blocks of multiples of 4 that divide
    the tile, and every thread loading whole chunks of 4 of both operands' slices."""
    if min(tm, tn, tk, rm, rn) <= 0 or rm % 4 or rn % 4 or tk % 4 or tm % rm or tn % rn:
        return False
    threads = (tm // rm) * (tn // rn)
    return all(size * tk % (4 * threads) == 0 for size in (tm, tn))


@dataclass(frozen=True, slots=True)
class MatmulShader:
    """One matmul kernel text: its schedule and its stage (see :data:`STAGES`); the
    ``sum`` stage runs a thread per output element in workgroups of ``workgroup``."""

    tiles: MatmulTiles
    stage: str = "whole"
    workgroup: int = 0

    def __post_init__(self) -> None:
        assert self.stage in STAGES and (self.stage != "sum" or self.workgroup > 0)


def _reads(offset: int, strides: tuple[int, ...], wide: int, k: int, n_wide: int,
           n_k: int) -> tuple[bool, bool]:
    """(along K, as vec4) for an operand with ``strides`` over (batch..., M, N, K) whose
    matrix dimensions are ``wide`` (M or N) and ``k``."""
    along_k = abs(strides[k]) <= abs(strides[wide]) or n_wide == 1
    axis, extent = (k, n_k) if along_k else (wide, n_wide)
    others = [s for d, s in enumerate(strides) if d != axis]
    vec = (strides[axis] == 1 and extent % 4 == 0 and offset % 4 == 0
           and all(s % 4 == 0 for s in others))
    return along_k, vec


def with_layout(tiles: MatmulTiles, args: LaunchArgs) -> MatmulTiles:
    """``tiles`` reading A and B the way their layouts in ``args`` allow."""
    *_, m, n, k = args.shape
    nb = len(args.shape) - 3
    a_k, a_vec = _reads(*args.maps[0], nb, nb + 2, m, k)
    b_k, b_vec = _reads(*args.maps[1], nb + 1, nb + 2, n, k)
    even = m % tiles.tm == 0 and n % tiles.tn == 0 and k % tiles.tk == 0
    return MatmulTiles(tiles.tm, tiles.tn, tiles.tk, tiles.rm, tiles.rn, a_k, b_k, a_vec,
                       b_vec, even)


class _MatmulWriter(_Writer):
    def __init__(self, kernel: Kernel, shader: MatmulShader) -> None:
        t = shader.tiles
        vec = frozenset(i for i, v in enumerate((t.a_vec, t.b_vec)) if v)
        if shader.stage == "sum":  # reads the partial sums: the operands are not read
            vec = frozenset()
        super().__init__(kernel, t.threads, False, vec)
        self.t = t
        self.stage = shader.stage
        self.sum_wg = shader.workgroup
        red = kernel.reduce
        assert red is not None
        self.acc_t = WGSL_TYPE[red.acc]
        self.v_t = f"vec4<{self.acc_t}>"
        self.res_t = WGSL_TYPE[red.out]  # float16 operands accumulate in float32
        nb = kernel.rank - 3
        self.m_d, self.n_d, self.k_d = nb, nb + 1, nb + 2

    def render(self) -> None:
        t, k = self.t, self.k
        m_d, n_d, k_d, nb = self.m_d, self.n_d, self.k_d, k.rank - 3
        self.emit(f"var<workgroup> sa: array<{self.v_t}, {2 * t.tk * t.tm // 4}>;", 0)
        self.emit(f"var<workgroup> sb: array<{self.v_t}, {2 * t.tk * t.tn // 4}>;", 0)
        self.emit(f"@compute @workgroup_size({t.threads})", 0)
        self.emit("fn main(@builtin(local_invocation_index) lid: u32, "
                  "@builtin(workgroup_id) wid: vec3<u32>, "
                  "@builtin(num_workgroups) nwg: vec3<u32>) {", 0)
        self.emit(f"let n_m = {param(HEAD_WORDS + m_d)};")
        self.emit(f"let n_n = {param(HEAD_WORDS + n_d)};")
        self.emit(f"let n_k = {param(HEAD_WORDS + k_d)};")
        self.emit(f"let tiles_n = {param(2)};")
        self.emit(f"let tiles_mn = {param(1)} * tiles_n;")
        self.emit("var tile = wid.x + wid.y * nwg.x;")
        if self.stage == "partial":  # tiles of slice 0, then of slice 1, ...
            self.emit(f"let kc = {param(3)};")
            self.emit(f"let tiles_all = {param(0)} * tiles_mn;")
            self.emit("if (tile >= tiles_all * ((n_k + kc - 1u) / kc)) { return; }")
            self.emit("let slice = tile / tiles_all;")
            self.emit("tile = tile % tiles_all;")
            self.emit("let k_lo = slice * kc;")
            self.emit("let k_hi = min(n_k, k_lo + kc);")
        else:
            self.emit(f"if (tile >= {param(0)} * tiles_mn) {{ return; }}")
            self.emit("let k_lo = 0u;")
            self.emit("let k_hi = n_k;")
        self.emit("let batch = tile / tiles_mn;")
        self.emit(f"let row0 = (tile % tiles_mn) / tiles_n * {t.tm}u;")
        self.emit(f"let col0 = tile % tiles_n * {t.tn}u;")
        self.coords(list(range(nb)), "batch", 1)
        for i, (name, wide) in enumerate((("a", m_d), ("b", n_d))):
            w = self.load_map[i]
            terms = [f"bitcast<i32>({param(w)})"] + [
                f"i32(c{d}) * bitcast<i32>({param(w + 1 + d)})" for d in range(nb)]
            self.emit(f"let {name}_base = {' + '.join(terms)};")
            self.emit(f"let {name}_w = bitcast<i32>({param(w + 1 + wide)});")
            self.emit(f"let {name}_k = bitcast<i32>({param(w + 1 + k_d)});")
        tx = t.tn // t.rn
        self.emit(f"let tx = lid % {tx}u;")
        self.emit(f"let ty = lid / {tx}u;")
        for i in range(t.rm):
            for g in range(t.rn // 4):
                self.emit(f"var c{i}_{g} = {self.v_t}();")
        for op, size in (("a", t.tm), ("b", t.tn)):
            for c in range(t.chunks(size)):
                self.emit(f"var p{op}{c} = {self.v_t}();")
        self.emit(f"let n_t = (k_hi - k_lo + {t.tk - 1}u) / {t.tk}u;")
        self.emit("if (n_t > 0u) {")
        self._fetch("k_lo", 2)
        self._stage("0u", 2)
        self.emit("}")
        self.emit("workgroupBarrier();")
        # lavapipe stops loops at 65,535 iterations: nest them
        self.emit(f"for (var t1 = 0u; t1 < n_t; t1 = t1 + {INNER_STEPS}u) {{")
        self.emit(f"let t2 = min(n_t, t1 + {INNER_STEPS}u);", 2)
        self.emit("for (var s = t1; s < t2; s = s + 1u) {", 2)
        self.emit("let buf = s & 1u;", 3)
        self.emit("let more = s + 1u < n_t;", 3)
        self.emit("if (more) {", 3)
        self._fetch(f"k_lo + (s + 1u) * {t.tk}u", 4)
        self.emit("}", 3)
        self._multiply(3)
        self.emit("if (more) {", 3)
        self._stage("1u - buf", 4)
        self.emit("}", 3)
        self.emit("workgroupBarrier();", 3)
        self.emit("}", 2)
        self.emit("}")
        if self.stage == "partial":
            self._partial_store()
        else:
            self._epilogue()
        self.emit("}", 0)

    # -- global memory to registers ------------------------------------------------------
    def _chunk(self, op: str, c: int) -> tuple[str, str, bool]:
        """(wide coordinate, k coordinate) of chunk ``c`` of this thread's part of the
        tile, and whether it runs along K."""
        t = self.t
        size = t.tm if op == "a" else t.tn
        along_k = t.a_k if op == "a" else t.b_k
        e = f"(lid + {c * t.threads}u)" if c else "lid"
        if along_k:  # tk / 4 chunks per row (column) of the tile
            return f"{e} / {t.tk // 4}u", f"{e} % {t.tk // 4}u * 4u", True
        return f"{e} % {size // 4}u * 4u", f"{e} / {size // 4}u", False

    def _fetch(self, k0: str, depth: int) -> None:
        """This thread's chunks of the K step at ``k0`` into registers ``p{a,b}{c}``."""
        t = self.t
        for op, size, vec in (("a", t.tm, t.a_vec), ("b", t.tn, t.b_vec)):
            origin, bound = ("row0", "n_m") if op == "a" else ("col0", "n_n")
            src = "in0" if op == "a" else "in1"
            for c in range(t.chunks(size)):
                wide, kk, along_k = self._chunk(op, c)
                self.emit("{", depth)
                d = depth + 1
                self.emit(f"let g = {origin} + {wide}; let gk = {k0} + {kk};", d)
                at = f"{op}_base + i32(g) * {op}_w + i32(gk) * {op}_k"
                if vec and t.even:  # every chunk is inside
                    self.emit(f"p{op}{c} = {self.v_t}({src}[u32({at}) / 4u]);", d)
                elif vec:  # the chunk is all inside or all outside: its axis' extent % 4 == 0
                    self.emit(f"p{op}{c} = {self.v_t}();", d)
                    self.emit(f"if (g < {bound} && gk < k_hi) {{ p{op}{c} = {self.v_t}("
                              f"{src}[u32({at}) / 4u]); }}", d)
                else:
                    step = f"{op}_k" if along_k else f"{op}_w"
                    self.emit(f"var v = {self.v_t}();", d)
                    for j in range(4):  # unrolled: constant lanes keep v in registers
                        g_j, k_j = ("g", f"gk + {j}u") if along_k else (f"g + {j}u", "gk")
                        load = f"v[{j}] = {self.acc_t}({src}[u32({at} + {j} * {step})]);"
                        self.emit(load if t.even else
                                  f"if ({g_j} < {bound} && {k_j} < k_hi) {{ {load} }}", d)
                    self.emit(f"p{op}{c} = v;", d)
                self.emit("}", depth)

    def _stage(self, buf: str, depth: int) -> None:
        """The registers ``p{a,b}{c}`` into workgroup buffer ``buf``: k-major, vec4 along
        the tile's wide axis (chunks read along K are transposed on the way)."""
        t = self.t
        for op, size in (("a", t.tm), ("b", t.tn)):
            sh = "s" + op
            for c in range(t.chunks(size)):
                wide, kk, along_k = self._chunk(op, c)
                self.emit("{", depth)
                d = depth + 1
                self.emit(f"let w = {wide}; let kk = {kk};", d)
                at = f"({buf}) * {t.tk * size // 4}u + kk * {size // 4}u + w / 4u"
                if along_k:
                    for j in range(4):
                        self.emit(f"{sh}[{at} + {j * size // 4}u][w % 4u] = p{op}{c}[{j}];", d)
                else:
                    self.emit(f"{sh}[{at}] = p{op}{c};", d)
                self.emit("}", depth)

    # -- the product ---------------------------------------------------------------------
    def _multiply(self, depth: int) -> None:
        """Each thread's rows (4 per vec4 group, groups ``tm / rm`` vec4 words apart)
        times its columns, for every k of the step in buffer ``buf``."""
        t = self.t
        ty_n, tx_n = t.tm // t.rm, t.tn // t.rn
        self.emit(f"let a0 = buf * {t.tk * t.tm // 4}u + ty;", depth)
        self.emit(f"let b0 = buf * {t.tk * t.tn // 4}u + tx;", depth)
        for kk in range(t.tk):
            for g in range(t.rm // 4):
                self.emit(f"let x{kk}_{g} = sa[a0 + {kk * t.tm // 4 + g * ty_n}u];", depth)
            for g in range(t.rn // 4):
                self.emit(f"let y{kk}_{g} = sb[b0 + {kk * t.tn // 4 + g * tx_n}u];", depth)
            for i in range(t.rm):
                x = f"x{kk}_{i // 4}[{i % 4}]"
                for g in range(t.rn // 4):
                    self.emit(f"c{i}_{g} = c{i}_{g} + {x} * y{kk}_{g};", depth)

    # -- the store -----------------------------------------------------------------------
    def _epilogue(self) -> None:
        """Per element of the thread's block: the OUT work, then the stores."""
        t, k = self.t, self.k
        m_d, n_d, k_d = self.m_d, self.n_d, self.k_d
        ty_n, tx_n = t.tm // t.rm, t.tn // t.rn
        for i in range(t.rm):  # unrolled: the accumulators stay in registers
            self.emit("{")
            self.emit(f"let c{m_d} = row0 + {4 * (i // 4 * ty_n)}u + ty * 4u + {i % 4}u;", 2)
            self.emit(f"if (c{m_d} < n_m) {{", 2)
            for g in range(t.rn // 4):
                for j in range(4):
                    self.emit("{", 3)
                    self.emit(f"let c{n_d} = col0 + {4 * g * tx_n + j}u + tx * 4u;", 4)
                    self.emit(f"if (c{n_d} < n_n) {{", 4)
                    self.emit(f"let c{k_d} = 0u;", 5)
                    self.emit(f"let res = {self.res_t}(c{i}_{g}[{j}]);", 5)
                    self.level(Level.OUT, 5, list(range(k.rank)), (Level.OUT,))
                    self.emit(f"let row = (batch * n_m + c{m_d}) * n_n + c{n_d};", 5)
                    for s, st in enumerate(k.stores):
                        if st.level is Level.OUT:
                            self.store(s, "row", 5)
                    self.emit("}", 4)
                    self.emit("}", 3)
            self.emit("}", 2)
            self.emit("}")

    # -- split-K -------------------------------------------------------------------------
    def declare_partials(self) -> None:
        """The scratch buffer of partial sums, bound after the kernel's buffers: ``vec4``
        words in the partial stage (a thread's 4 columns), elements in the sum stage."""
        k = self.k
        binding = 1 + sum(ld.iota is None for ld in k.loads) + sum(
            st.inplace is None for st in k.stores)
        word = self.v_t if self.stage == "partial" else self.acc_t
        self.emit(f"@group(0) @binding({binding}) var<storage, read_write> part: "
                  f"array<{word}>;", 0)

    def _partials_at(self) -> None:
        """``n_pad`` (a row of the scratch buffer) and ``slice_len`` (one slice of it)."""
        self.emit("let n_pad = (n_n + 3u) / 4u * 4u;")
        self.emit(f"let slice_len = {param(0)} * n_m * n_pad;")

    def _partial_store(self) -> None:
        """The accumulators, as they are, into this slice's part of the scratch buffer."""
        t = self.t
        ty_n, tx_n = t.tm // t.rm, t.tn // t.rn
        self._partials_at()
        for i in range(t.rm):
            self.emit("{")
            self.emit(f"let m = row0 + {4 * (i // 4 * ty_n)}u + ty * 4u + {i % 4}u;", 2)
            self.emit("if (m < n_m) {", 2)
            self.emit("let at = slice * slice_len + (batch * n_m + m) * n_pad;", 3)
            for g in range(t.rn // 4):
                self.emit(f"let n{g} = col0 + {4 * g * tx_n}u + tx * 4u;", 3)
                self.emit(f"if (n{g} < n_n) {{ part[(at + n{g}) / 4u] = c{i}_{g}; }}", 3)
            self.emit("}", 2)
            self.emit("}")

    def render_sum(self) -> None:
        """A thread per output element: the slices' partial sums added in slice order,
        then the epilogue and the stores."""
        k = self.k
        m_d, n_d, k_d, nb = self.m_d, self.n_d, self.k_d, k.rank - 3
        self.thread_entry(self.sum_wg)
        self.emit(f"let n_m = {param(HEAD_WORDS + m_d)};")
        self.emit(f"let n_n = {param(HEAD_WORDS + n_d)};")
        self.emit(f"let n_k = {param(HEAD_WORDS + k_d)};")
        self.emit(f"if (i >= {param(0)} * n_m * n_n) {{ return; }}")
        self.emit(f"let c{n_d} = i % n_n;")
        self.emit(f"let c{m_d} = i / n_n % n_m;")
        self.emit("let batch = i / n_n / n_m;")
        self.coords(list(range(nb)), "batch", 1)
        self._partials_at()
        self.emit(f"let kc = {param(3)};")
        self.emit(f"let at = (batch * n_m + c{m_d}) * n_pad + c{n_d};")
        self.emit(f"var acc = {self.acc_t}();")
        self.emit("for (var s = 0u; s < (n_k + kc - 1u) / kc; s = s + 1u) {")
        self.emit("acc = acc + part[s * slice_len + at];", 2)
        self.emit("}")
        self.emit(f"let c{k_d} = 0u;")
        self.emit(f"let res = {self.res_t}(acc);")
        self.level(Level.OUT, 1, list(range(k.rank)), (Level.OUT,))
        for s, st in enumerate(k.stores):
            if st.level is Level.OUT:
                self.store(s, "i", 1)
        self.emit("}", 0)


def render_matmul(kernel: Kernel, shader: MatmulShader) -> str:
    """The WGSL text of matmul ``kernel``'s stage ``shader``."""
    w = _MatmulWriter(kernel, shader)
    w.declare()
    if shader.stage != "whole":
        w.declare_partials()
    if shader.stage == "sum":
        w.render_sum()
    else:
        w.render()
    return enables(kernel) + "\n".join(w.lines) + "\n"
