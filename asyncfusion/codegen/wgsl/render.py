"""WGSL from the kernel IR, piece by piece: declarations, index maps, body, reduction.

Op expressions come from their lowerings (:mod:`.lowering`); this module only lays out the
kernel around them. Sizes, strides, offsets and scalars are never literals: they are
read from the uniform ``params`` block (:mod:`.params`), so one text serves every
size — but for a reduction's row schedule, which its launch chooses. Element-wise kernels
run a thread per element (or per ``vec4``); reduction kernels give each output row
``tpr`` threads of a workgroup (a constant of the text) and run their phases in turn
(see :mod:`asyncfusion.kernel.rows`): a pass over the row folding in registers, the
partials combined across the row — by subgroup shuffles alone where the row's threads
are one subgroup or part of one (several rows per subgroup, no barrier), then through
workgroup memory where a row spans subgroups (one barrier), or by a tree in workgroup
memory where the adapter has no subgroup operations — the row values (OUT) and their
stores, then the next phase's pass: over values held in registers since the first pass
(slot by slot, written out, at constant indices), or over the row read again. A thread
keeps several loads of a row in flight: a pass that reads the row again takes ``UNROLL``
of its positions per loop trip, a held pass loads all its positions before working on
them; where a launch's rows allow it (:class:`RowWords`), a position is a ``vec4`` word
of four elements.
"""

from __future__ import annotations

from collections.abc import Callable

from ..._core.dtype import DType
from ...kernel import Arg, Instr, Kernel, Level, Reduce
from ...kernel.rows import Phase, RowValues, RowWords, row_phases
from ...ops import REDUCTIONS
from .lowering import (COMBINES, HELPERS, HELPERS_F64, HELPERS_FMA, HELPERS_WIDE, LOWERINGS,
                       identity)
from .params import HEAD_WORDS, param
from .types import STORAGE_TYPE, WGSL_TYPE, Ty, convert, enables, isnan

__all__ = ["render", "enables", "RowWords", "INNER_STEPS", "UNROLL"]

INNER_STEPS = 1024  # lavapipe stops loops at 65,535 iterations: nest them
UNROLL = 4  # positions of a row a thread reads at once in a pass that reads it again
_MIN_SUBGROUP = 4  # WebGPU's least subgroup size: a row of at most 4 lanes fits any


class _Writer:
    def __init__(self, kernel: Kernel, workgroup: int, subgroups: bool,
                 vec_loads: frozenset[int] = frozenset(), words: RowWords | None = None,
                 folds: bool = True, fma: bool = False) -> None:
        self.k = kernel
        self.folds = folds  # the compiler folds x - x: see types.Ty
        self.fma = fma  # the compiler's fma is fused: the math helpers use it
        self.row_words = words
        if words is not None:
            vec_loads = vec_loads | words.loads
        self.vec_loads = vec_loads  # loads bound as vec4 words whatever the kernel's vec4
        self.wg = workgroup
        self.subgroups = subgroups
        self.v4 = kernel.vec4
        self.lines: list[str] = []
        rank = kernel.rank
        maps = [i for i, ld in enumerate(kernel.loads) if not ld.dense]
        self.load_map = {k: HEAD_WORDS + rank + n * (rank + 1) for n, k in enumerate(maps)}
        stores = [j for j, st in enumerate(kernel.stores) if not st.dense]
        first = HEAD_WORDS + rank + len(maps) * (rank + 1)
        self.store_map = {j: first + n * (rank + 1) for n, j in enumerate(stores)}
        self._deps: dict[int, frozenset[int] | None] = {}  # body value -> its scalars
        self.scalar_words: list[int] = []  # each scalar's first word (64-bit ones take two)
        word = first + len(stores) * (rank + 1)
        for dt in kernel.scalars:
            self.scalar_words.append(word)
            word += 2 if dt.itemsize == 8 else 1
        self.words = word
        self.written = {st.inplace for st in kernel.stores if st.inplace is not None}
        self.folded = [d for d, r in enumerate(kernel.reduced) if r]
        self.bases: set[int] = set()  # loads whose per-row index part b{i} is in scope
        self.held_pass = False  # rendering a held pass: its loads were prefetched
        self.tpr = 1  # threads per row of a reduction
        self.sfx = ""  # appended to register names (the slow tail's scalar copies)
        self.domains: list[str] | None = None  # split ops' fast domains, where collected
        self.loaded: list[int] = []  # loads emitted so far

    def emit(self, line: str, depth: int = 1) -> None:
        self.lines.append("  " * depth + line)

    def thread_entry(self, wg: int) -> None:
        """``main`` of a kernel of one thread per element, in workgroups of ``wg`` on a
        2-D grid: ``i`` is the thread's element."""
        self.emit(f"@compute @workgroup_size({wg})", 0)
        self.emit("fn main(@builtin(global_invocation_id) gid: vec3<u32>, "
                  "@builtin(num_workgroups) nwg: vec3<u32>) {", 0)
        self.emit(f"let i = gid.x + gid.y * nwg.x * {wg}u;")

    # -- declarations --------------------------------------------------------------------
    def declare(self) -> None:
        k = self.k
        self.emit(f"struct Params {{ w: array<vec4<u32>, {(self.words + 3) // 4}> }}", 0)
        self.emit("@group(0) @binding(0) var<uniform> params: Params;", 0)
        binding = 1
        for i, ld in enumerate(k.loads):
            if ld.iota is not None:
                continue  # computed from its index (iota loads come last)
            word = STORAGE_TYPE[ld.dtype]
            if (self.v4 and ld.dense) or i in self.vec_loads:
                word = f"vec4<{word}>"
            access = "read_write" if i in self.written else "read"
            self.emit(f"@group(0) @binding({binding}) var<storage, {access}> in{i}: "
                      f"array<{word}>;", 0)
            binding += 1
        for j, st in enumerate(k.stores):
            if st.inplace is not None:
                continue
            t = STORAGE_TYPE[st.dtype]
            if self.v4 or (self.row_words is not None and j in self.row_words.stores):
                t = f"vec4<{t}>"
            self.emit(f"@group(0) @binding({binding}) var<storage, read_write> out{j}: "
                      f"array<{t}>;", 0)
            binding += 1
        helpers = {h for i in k.body for h in LOWERINGS[i.op].helpers}
        texts = HELPERS_FMA if self.fma else HELPERS
        for h in sorted(helpers & texts.keys()):  # the rest exist in 64 bits only
            self.lines.append(texts[h].rstrip())
        wide = {h for i in k.body if i.compute.itemsize == 8 for h in LOWERINGS[i.op].helpers}
        for h in sorted(wide & HELPERS_WIDE.keys()):
            self.lines.append(HELPERS_WIDE[h].rstrip())
        f64 = {h for i in k.body if i.compute is DType.float64 for h in LOWERINGS[i.op].helpers}
        for h in sorted(f64 & HELPERS_F64.keys()):
            self.lines.append(HELPERS_F64[h].rstrip())

    # -- values --------------------------------------------------------------------------
    def dtype_of(self, a: Arg) -> DType:
        k = self.k
        if a.kind == "in":
            return k.loads[a.index].dtype
        if a.kind == "v":
            return k.body[a.index].out
        if a.kind == "r":
            return k.reduces[a.index].out
        return k.scalars[a.index]

    def expr(self, a: Arg) -> str:
        if a.kind != "s" and self.v4 and self.row_words is not None and self._of_row(a):
            return Ty(self.dtype_of(a), True).const(self.name(a))  # a row value, splat
        if a.kind != "s":
            return self.name(a)
        dt = self.k.scalars[a.index]
        word = self.scalar_words[a.index]
        raw = param(word)
        # naga has no vec2<u32> bitcast; the mask keeps a low word >= 2**31 positive
        wide = f"((i64({param(word + 1)}) << 32u) | (i64({raw}) & 0xffffffffli))"
        s = {DType.float32: f"bitcast<f32>({raw})", DType.int32: f"bitcast<i32>({raw})",
             DType.uint32: raw, DType.bool: f"({raw} != 0u)",
             DType.float16: f"f16(bitcast<f32>({raw}))", DType.int64: wide,
             DType.uint64: f"bitcast<u64>({wide})", DType.float64: f"bitcast<f64>({wide})"}[dt]
        return Ty(dt, self.v4).const(s) if self.v4 else s

    def name(self, a: Arg) -> str:
        """The register of load, body value or reduction result ``a``."""
        return {"in": "a", "v": "v", "r": "res"}[a.kind] + (
            _nth(a.index) if a.kind == "r" else str(a.index)) + self.sfx

    def _of_row(self, a: Arg) -> bool:
        """One value per output row (a result, an ``OUT`` load or instruction)?"""
        if a.kind == "in":
            return self.k.loads[a.index].level is Level.OUT
        return a.kind == "r" or self.k.body[a.index].level is Level.OUT

    def index(self, word: int, dims: range | list[int], at: tuple[int, str] | None = None) -> str:
        """The storage word at coordinates ``c{d}`` (``at``: dimension d at an i32 value)."""
        return f"u32({self.offset(word, dims, at)})"

    def offset(self, word: int, dims: range | list[int],
               at: tuple[int, str] | None = None) -> str:
        """:meth:`index` as an i32 expression."""
        terms = [f"bitcast<i32>({param(word)})"]
        terms += [f"{at[1] if at is not None and at[0] == d else f'i32(c{d})'} * "
                  f"bitcast<i32>({param(word + 1 + d)})" for d in dims]
        return " + ".join(terms)

    def lanes(self, word: int, at: str) -> list[str]:
        """The words of a vec4 position's four elements, the first at i32 ``at``: steps
        of the last folded dimension's stride."""
        step = f"bitcast<i32>({param(word + 1 + self.folded[-1])})"
        return [f"u32({at})"] + [f"u32({at} + {m}{step})" for m in ("", "2 * ", "3 * ")]

    def load(self, i: int, depth: int, dims: range | list[int]) -> None:
        ld = self.k.loads[i]
        if ld.gather is not None:
            j, d, s = ld.gather
            size = self.expr(Arg("s", s))
            self.emit(f"let g{i} = clamp(select(a{j}, a{j} + {size}, a{j} < 0), 0, {size} - 1);",
                      depth)
            raw = self.word(i, self.index(self.load_map[i], dims, (d, f'g{i}')))
        elif ld.dense:
            raw = self.word(i, "i")
        elif self.row_words is not None and i in self.bases:  # a pass over vec4 positions
            word = self.load_map[i]
            at = " + ".join([f"b{i}"] + [f"i32(c{d}) * bitcast<i32>({param(word + 1 + d)})"
                                         for d in self.folded])
            if i in self.row_words.loads:
                raw = f"in{i}[u32({at}) / 4u]"
            else:
                self.emit(f"let e{i} = {at};", depth)
                raw = (f"vec4<{STORAGE_TYPE[ld.dtype]}>("
                       f"{', '.join(f'in{i}[{w}]' for w in self.lanes(word, f'e{i}'))})")
        elif self.v4:  # a single broadcast element
            one = self.word(i, self.index(self.load_map[i], []), False)
            raw = f"vec4<{STORAGE_TYPE[ld.dtype]}>({one})"
        elif i in self.bases:  # a reduction's row: the kept dimensions' part is hoisted
            word = self.load_map[i]
            terms = [f"b{i}"] + [f"i32(c{d}) * bitcast<i32>({param(word + 1 + d)})"
                                 for d in self.folded]
            raw = self.word(i, f"u32({' + '.join(terms)})")
        else:
            raw = self.word(i, self.index(self.load_map[i], dims))
        if ld.dtype is DType.bool:
            raw = f"({raw} != {'vec4<u32>(0u)' if self.v4 else '0u'})"
        self.emit(f"let a{i} = {raw};", depth)
        self.loaded.append(i)

    def word(self, i: int, at: str, v4: bool | None = None) -> str:
        """Load ``i``'s word ``at`` (in ``vec4`` words where the kernel is vec4 and the
        load dense); an iota load's is computed: start + word * step."""
        ld = self.k.loads[i]
        if ld.iota is None:
            return f"in{i}[{at}]"
        v4 = self.v4 and ld.dense if v4 is None else v4
        if v4:  # the 4 elements of vec4 word ``at``
            at = f"(vec4<u32>({at} * 4u) + vec4<u32>(0u, 1u, 2u, 3u))"
        start, step = (self.expr(Arg("s", s)) for s in ld.iota)
        if self.v4 and not v4:  # a broadcast element of a vec4 kernel: one lane's value
            start, step = f"{start}.x", f"{step}.x"
        return f"({start} + {convert(at, DType.uint32, Ty(ld.dtype, v4))} * {step})"

    def instr(self, j: int, depth: int) -> None:
        ins = self.k.body[j]
        ty = Ty(ins.compute, self.v4, self.folds and self._may_cancel(ins))
        args: list[str] = []
        for a in ins.args:
            e = self.expr(a)
            as_is = ins.op == "cast" or (ins.op == "where" and not args)  # rule converts
            src = self.dtype_of(a)
            if src is not ins.compute and (not as_is or (ins.op == "cast" and src.is_int and
                                                         ins.compute.itemsize == 8)):
                e = convert(e, src, ty)
            args.append(e)
        lw = LOWERINGS[ins.op]
        if self.domains is not None and lw.fast is not None and lw.domain is not None \
                and ty.vec4 and ins.compute is DType.float32:
            e = lw.fast(args, ty)
            self.domains.append(lw.domain.format(x=args[0]))
        else:
            e = lw.wgsl(args, ty)
        if ins.out is not ins.compute and ins.out is not DType.bool:  # float16, int16 ...
            e = convert(e, ins.compute, ty.of(ins.out))  # ... from their 32-bit lane
        self.emit(f"let v{j}{self.sfx} = {e};", depth)

    def _may_cancel(self, ins: Instr) -> bool:
        """Whether a compiler that folds ``x - x`` could prove ``ins``'s operands equal
        (or opposite). A scalar is a parameter word read at run time, so ``x + s`` or
        ``x - s`` cannot fold unless ``x`` is itself computed from that scalar."""
        if ins.op not in ("add", "sub") or len(ins.args) != 2:
            return True
        scalars = [a for a in ins.args if a.kind == "s"]
        if len(scalars) != 1:
            return True
        other = ins.args[1] if ins.args[0].kind == "s" else ins.args[0]
        deps = self._scalars_in(other)
        return deps is None or scalars[0].index in deps

    def _scalars_in(self, a: Arg) -> frozenset[int] | None:
        """The scalars that operand ``a`` is computed from (None: not known)."""
        if a.kind == "s":
            return frozenset((a.index,))
        if a.kind == "in":
            ld = self.k.loads[a.index]
            return frozenset((*(ld.iota or ()), *((ld.gather[2],) if ld.gather else ())))
        if a.kind != "v":
            return None
        known = self._deps.get(a.index)
        if known is None and a.index not in self._deps:
            parts = [self._scalars_in(b) for b in self.k.body[a.index].args]
            known = None if any(p is None for p in parts) else frozenset().union(
                *(p for p in parts if p is not None))
            self._deps[a.index] = known
        return known

    def store(self, j: int, index: str, depth: int, lanes: list[str] | None = None,
              lane: str | None = None) -> None:
        """Store ``j`` at word ``index`` (its element ``lane`` where given), or a vec4 value
        as four scalars at ``lanes``."""
        st = self.k.stores[j]
        e = self.expr(st.value)
        if self.dtype_of(st.value) is not st.dtype:
            e = convert(e, self.dtype_of(st.value), Ty(st.dtype, self.v4))
        if st.dtype is DType.bool:
            e = (f"select(vec4<u32>(0u), vec4<u32>(1u), {e})" if self.v4
                 else f"select(0u, 1u, {e})")
        name = f"in{st.inplace}" if st.inplace is not None else f"out{j}"
        if lane is not None:
            index = f"{index}][{lane}"
        if lanes is None:
            self.emit(f"{name}[{index}] = {e};", depth)
            return
        self.emit(f"let s{j} = {e};", depth)
        for c, at in zip("xyzw", lanes, strict=True):
            self.emit(f"{name}[{at}] = s{j}.{c};", depth)

    def level(self, level: Level, depth: int, dims: range | list[int],
              loads: tuple[Level, ...]) -> None:
        """Emit the loads and instructions of ``level`` (in body order)."""
        needed = {a.index for ins in self.k.body if ins.level is level
                  for a in ins.args if a.kind == "in"}
        needed |= {st.value.index for st in self.k.stores
                   if st.level is level and st.value.kind == "in"}
        needed |= {g[0] for i in needed if (g := self.k.loads[i].gather) is not None}
        for i in sorted(needed):
            if self.k.loads[i].level in loads:
                self.load(i, depth, dims)
        for j, ins in enumerate(self.k.body):
            if ins.level is level:
                self.instr(j, depth)

    def coords(self, dims: list[int], var: str, depth: int) -> None:
        """``c{d}`` for ``dims`` (last fastest) from the linear index ``var``."""
        if not dims:
            return
        self.emit(f"var q_{var} = {var};", depth)
        for d in reversed(dims[1:]):
            w = param(HEAD_WORDS + d)
            self.emit(f"let c{d} = q_{var} % {w}; q_{var} = q_{var} / {w};", depth)
        self.emit(f"let c{dims[0]} = q_{var};", depth)

    # -- element-wise schedule -----------------------------------------------------------
    def elementwise(self) -> None:
        k = self.k
        self.thread_entry(self.wg)
        self.emit(f"if (i >= {param(0)}) {{ return; }}")
        strided = any(not ld.dense for ld in k.loads) or any(not s.dense for s in k.stores)
        dims = list(range(k.rank))
        if strided and not self.v4:
            self.coords(dims, "i", 1)
        split = [ins for ins in k.body if LOWERINGS[ins.op].domain is not None
                 and ins.compute is DType.float32]
        if self.v4 and len(split) > 1 and all(st.dense for st in k.stores):
            self.domains = []
        self.level(Level.ROW, 1, dims, (Level.ROW,))
        for j, st in enumerate(k.stores):
            self.store(j, "i" if st.dense else self.index(self.store_map[j], dims), 1)
        if self.domains:
            self.slow_tail()
        self.emit("}", 0)

    def slow_tail(self) -> None:
        """One check of every split op's fast domain (:attr:`domains`, collected as the
        ops were written with their fast paths alone), and, for the lanes outside any,
        the kernel again in scalars, its math whole (fast or slow per lane), stored over
        the vec4 result one lane per trip. A kernel of several split ops tests once and
        holds one slow path, where each op's own ``vec4`` helper would test and hold its
        own (its code, though never run, slows the fast path on NVIDIA)."""
        ok = " & ".join(f"({d})" for d in self.domains or ())
        self.emit(f"let ok = {ok};")
        self.emit("if (!all(ok)) {")
        self.emit("var bad = !ok;", 2)
        self.emit("loop {", 2)
        self.emit("if (!any(bad)) { break; }", 3)
        self.emit("let l = select(select(select(3u, 2u, bad.z), 1u, bad.y), 0u, bad.x);", 3)
        self.v4, self.sfx, self.domains = False, "_l", None
        for i in dict.fromkeys(self.loaded):
            self.emit(f"let a{i}_l = a{i}[l];", 3)
        for j in range(len(self.k.body)):
            self.instr(j, 3)
        for j in range(len(self.k.stores)):
            self.store(j, "i", 3, lane="l")
        self.v4, self.sfx = True, ""
        self.emit("bad[l] = false;", 3)
        self.emit("}", 2)
        self.emit("}")

    # -- reduction schedule --------------------------------------------------------------
    def reduction(self, slots: int, tpr: int) -> None:
        """Phase by phase (see :mod:`asyncfusion.kernel.rows`): a pass over each row,
        its fold combined across the row's ``tpr`` threads, the row values and their
        stores; ``slots`` > 0 holds values between passes in ``slots`` registers per
        thread."""
        k = self.k
        wg = self.wg
        assert tpr >= 1 and wg % tpr == 0 and tpr & (tpr - 1) == 0, (tpr, wg)
        self.tpr = tpr
        kept = [d for d, r in enumerate(k.reduced) if not r]
        phases = row_phases(k, slots > 0)
        for p, red in enumerate(k.reduces):
            self.emit(f"var<workgroup> red_v{_nth(p)}: array<{WGSL_TYPE[red.acc]}, {wg}>;", 0)
            if REDUCTIONS[red.op].arg:
                self.emit(f"var<workgroup> red_i{_nth(p)}: array<u32, {wg}>;", 0)
                self._better(red.acc, REDUCTIONS[red.op].better == "gt")
        self.emit(f"@compute @workgroup_size({wg})", 0)
        sgs = ", @builtin(subgroup_size) sgs: u32" if self.subgroups else ""
        self.emit("fn main(@builtin(local_invocation_index) lid: u32, "
                  "@builtin(workgroup_id) wid: vec3<u32>, "
                  f"@builtin(num_workgroups) nwg: vec3<u32>{sgs}) {{", 0)
        self.emit(f"let n_out = {param(0)};")
        self.emit(f"let n_red = {param(1)};")
        self.emit(f"const tpr = {tpr}u;")  # threads per row, chosen at launch
        self.emit("let slot = lid / tpr;")
        self.emit("let lane = lid % tpr;")
        self.emit(f"let row = (wid.x + wid.y * nwg.x) * {wg // tpr}u + slot;")
        self.emit("let valid = row < n_out;")
        if self.row_words is not None:
            self.emit("let n_w = n_red / 4u;")  # the row's vec4 positions
        for a in (a for ph in phases for a in ph.hold):
            t = Ty(self.dtype_of(a), self.row_words is not None).t
            self.emit(f"var h_{self.name(a)}: array<{t}, {slots}>;")
        for ph in phases:
            if ph.index:
                self._combine(ph.index - 1)
            if ph.out_stores:
                self.emit("if (valid && lane == 0u) {")
                self.coords(kept, "row", 2)
                for d in range(k.rank):
                    if k.reduced[d]:  # a strided (batched) store's index reads them
                        self.emit(f"let c{d} = 0u;", 2)
                self._row_values(ph.out_rows, kept, 2)
                for j in ph.out_stores:
                    st = k.stores[j]
                    self.store(j, "row" if st.dense else self.index(self.store_map[j],
                                                                    range(k.rank)), 2)
                self.emit("}")
            if ph.has_pass:
                self._pass(ph, kept, slots)
        self.emit("}", 0)

    def _pass(self, ph: Phase, kept: list[int], slots: int) -> None:
        """One pass of phase ``ph`` over each row, folding into its accumulator."""
        k = self.k
        n = _nth(ph.index)
        if ph.fold:
            red = k.reduces[ph.index]
            spec = REDUCTIONS[red.op]
            self.emit(f"var acc{n}: {WGSL_TYPE[red.acc]} = {identity(spec.identity, red.acc)};")
            if spec.arg:
                self.emit(f"var acc_i{n}: u32 = 0xffffffffu;")
        self.emit("if (valid) {")
        self.coords(kept, "row", 2)
        self.row_bases(kept, ph.loads, 2)
        self._row_values(ph.rows, kept, 2)
        folded = self.folded
        self.v4 = self.row_words is not None
        self.held_pass = slots > 0
        pos, count = ("w", "n_w") if self.v4 else ("r", "n_red")
        if slots:  # the pass's loads first, all in flight at once; then its work
            for i in ph.loads:
                t = Ty(k.loads[i].dtype, self.v4).t
                self.emit(f"var l_a{i}: array<{t}, {slots}>;", 2)
            for work in ((self._prefetch,) if ph.loads else ()) + (self._element,):
                for j in range(slots):  # written out: registers at constant indices
                    self.emit(f"if (lane + {j * self.tpr}u < {count}) {{", 2)
                    self.emit(f"let j = {j}u;", 3)
                    self.emit(f"let {pos} = lane + {j * self.tpr}u;", 3)
                    work(ph, folded, 3)
                    self.emit("}", 2)
        else:
            self._row_loop(2, pos, count, lambda depth: self._element(ph, folded, depth))
        self.v4 = False
        self.emit("}")

    def _element(self, ph: Phase, folded: list[int], depth: int) -> None:
        """The work of one element ``r`` of the row in pass ``ph`` (of the four elements
        of vec4 position ``w``, from ``r``, where the launch reads the row in words)."""
        k = self.k
        words = self.row_words
        self._position(folded, depth)
        for a in ph.held:
            self.emit(f"let {self.name(a)} = h_{self.name(a)}[j];", depth)
        for i in ph.loads:
            if self.held_pass:
                self.emit(f"let a{i} = l_a{i}[j];", depth)
            else:
                self.load(i, depth, range(k.rank))
        for j in ph.instrs:
            self.instr(j, depth)
        for j in ph.stores:
            word = self.store_map[j]
            if words is None:
                self.store(j, self.index(word, range(k.rank)), depth)
            elif j in words.stores:
                self.store(j, f"{self.index(word, range(k.rank))} / 4u", depth)
            else:
                self.emit(f"let e_s{j} = {self.offset(word, range(k.rank))};", depth)
                self.store(j, "", depth, self.lanes(word, f"e_s{j}"))
        for a in ph.hold:
            self.emit(f"h_{self.name(a)}[j] = {self.name(a)};", depth)
        if ph.fold:
            red = k.reduces[ph.index]
            x = self.expr(red.value)
            if red.src is DType.bool:
                x = (f"select(vec4<u32>(0u), vec4<u32>(1u), {x})" if self.v4
                     else f"select(0u, 1u, {x})")
            elif red.src is not red.acc:
                x = convert(x, red.src, Ty(red.acc, self.v4))
            self.emit(f"let x = {x};", depth)
            n = _nth(ph.index)
            acc = (f"acc{n}", f"acc_i{n}")
            if words is None:
                self._fold_pair(red, acc, ("x", "r"), depth)
            else:  # the word's four lanes, in order
                for m, c in enumerate("xyzw"):
                    self._fold_pair(red, acc, (f"x.{c}", f"r + {m}u" if m else "r"), depth)

    def _position(self, folded: list[int], depth: int) -> None:
        """``r`` (from vec4 position ``w`` where the launch reads words) and its ``c{d}``."""
        if self.row_words is not None:
            self.emit("let r = w * 4u;", depth)
        self.coords(folded, "r", depth)

    def _prefetch(self, ph: Phase, folded: list[int], depth: int) -> None:
        """The loads of held pass ``ph`` at slot ``j``, into ``l_a{i}[j]``."""
        self._position(folded, depth)
        for i in ph.loads:
            self.load(i, depth, range(self.k.rank))
            self.emit(f"l_a{i}[j] = a{i};", depth)

    def _row_values(self, rows: RowValues, kept: list[int], depth: int) -> None:
        """The reductions' results, per-row loads and ``OUT`` work ``rows`` names, in the
        row's scope (every thread of the row computes them: they are few)."""
        for p in rows.results:
            red = self.k.reduces[p]
            n = _nth(p)
            first = f"row_v{n}"
            if REDUCTIONS[red.op].arg:
                res = f"i32(row_i{n})"
            elif red.out is DType.bool:
                res = f"({first} != 0u)"
            elif red.out is not red.acc:  # float16 folded in float32, int16 in int32
                res = convert(first, red.acc, Ty(red.out, False))
            else:
                res = first
            self.emit(f"let res{n} = {res};", depth)
        for i in rows.loads:  # zero strides along the reduced dimensions
            self.load(i, depth, kept)
        for j in rows.instrs:
            self.instr(j, depth)

    def _fold_pair(self, red: Reduce, a: tuple[str, str], b: tuple[str, str],
                   depth: int) -> None:
        """``a = combine(a, b)`` for registers or shared slots (value, index) ``a``, ``b``."""
        spec = REDUCTIONS[red.op]
        if spec.arg:
            self.emit(f"if (af_better({b[0]}, {b[1]}, {a[0]}, {a[1]})) {{ {a[0]} = {b[0]}; "
                      f"{a[1]} = {b[1]}; }}", depth)
        else:
            self.emit(f"{a[0]} = {COMBINES[red.op](a[0], b[0], red.acc)};", depth)

    def _combine(self, p: int) -> None:
        """Reduction ``p``'s partials combined per row into ``row_v`` (``row_i``), which
        every thread of the row then holds: by subgroup shuffles where the adapter has
        them (32-bit accumulators), else by a tree in workgroup memory."""
        n = _nth(p)
        if self.tpr > 1 and self.subgroups and self.k.reduces[p].acc.itemsize == 4:
            self._combine_subgroups(p)
        elif self.tpr > 1:
            self._combine_tree(p)
        self.emit(f"let row_v{n} = acc{n};")
        if REDUCTIONS[self.k.reduces[p].op].arg:
            self.emit(f"let row_i{n} = acc_i{n};")

    def _pairs(self, p: int, at: str) -> tuple[str, str]:
        n = _nth(p)
        return f"red_v{n}[{at}]", f"red_i{n}[{at}]"

    def _take(self, p: int, at: str, depth: int = 1) -> None:
        """``acc = `` shared slot ``at`` of reduction ``p``."""
        n = _nth(p)
        v, i = self._pairs(p, at)
        self.emit(f"acc{n} = {v};", depth)
        if REDUCTIONS[self.k.reduces[p].op].arg:
            self.emit(f"acc_i{n} = {i};", depth)

    def _combine_tree(self, p: int) -> None:
        """Each thread's partial to workgroup memory, then a tree per row (a barrier a
        level): where there are no subgroup operations, or for 64-bit accumulators."""
        n = _nth(p)
        v, i = self._pairs(p, "lid")
        self.emit(f"{v} = acc{n};")
        if REDUCTIONS[self.k.reduces[p].op].arg:
            self.emit(f"{i} = acc_i{n};")
        self.emit("workgroupBarrier();")
        self.emit("for (var s = tpr / 2u; s > 0u; s = s / 2u) {")
        self.emit("if (lane < s) {", 2)
        self._fold_pair(self.k.reduces[p], self._pairs(p, "lid"), self._pairs(p, "lid + s"), 3)
        self.emit("}", 2)
        self.emit("workgroupBarrier();", 2)
        self.emit("}")
        self._take(p, "lid - lane")

    def _combine_subgroups(self, p: int) -> None:
        """A butterfly of subgroup shuffles across the row's lanes (no barrier: a row of
        at most a subgroup's lanes ends here, in registers); a row over several
        subgroups then meets their partials in workgroup memory (one barrier), each
        thread folding them all."""
        n = _nth(p)
        red = self.k.reduces[p]
        arg = REDUCTIONS[red.op].arg
        s = self.tpr // 2
        while s:  # a block per step (the subgroup may be narrower than the row)
            self.emit(f"if ({s}u < sgs) {{" if s >= _MIN_SUBGROUP else "{")
            self.emit(f"let o = subgroupShuffleXor(acc{n}, {s}u);", 2)
            if arg:
                self.emit(f"let oi = subgroupShuffleXor(acc_i{n}, {s}u);", 2)
            self._fold_pair(red, (f"acc{n}", f"acc_i{n}"), ("o", "oi"), 2)
            self.emit("}")
            s //= 2
        if self.tpr <= _MIN_SUBGROUP:
            return
        self.emit("if (tpr > sgs) {")  # uniform: every thread sees the same sgs
        self.emit("let parts = tpr / sgs;", 2)
        v, i = self._pairs(p, "lid / sgs")
        self.emit("if (lid % sgs == 0u) {", 2)
        self.emit(f"{v} = acc{n};", 3)
        if arg:
            self.emit(f"{i} = acc_i{n};", 3)
        self.emit("}", 2)
        self.emit("workgroupBarrier();", 2)
        self._take(p, "slot * parts", 2)
        self.emit("for (var m = 1u; m < parts; m = m + 1u) {", 2)
        self._fold_pair(red, (f"acc{n}", f"acc_i{n}"), self._pairs(p, "slot * parts + m"), 3)
        self.emit("}", 2)
        self.emit("}")

    def row_bases(self, kept: list[int], loads: tuple[int, ...], depth: int) -> None:
        """Per row, once: each strided element load's offset plus its kept dimensions'
        terms (``b{i}``), so the loop over the row adds only the folded ones."""
        for i in loads:
            ld = self.k.loads[i]
            if ld.dense or ld.gather is not None:
                continue
            word = self.load_map[i]
            terms = [f"bitcast<i32>({param(word)})"]
            terms += [f"i32(c{d}) * bitcast<i32>({param(word + 1 + d)})" for d in kept]
            self.emit(f"let b{i} = {' + '.join(terms)};", depth)
            self.bases.add(i)

    def _row_loop(self, depth: int, pos: str, count: str,
                  inner: Callable[[int], None]) -> None:
        """This thread's positions ``pos`` of the row (``lane`` and every ``tpr``-th after,
        up to ``count``), ``UNROLL`` at a time while they last: their loads are
        independent, so a thread has ``UNROLL`` of them in flight."""
        self.emit(f"for (var p0 = lane; p0 < {count}; p0 = p0 + tpr * {INNER_STEPS}u) {{",
                  depth)
        self.emit(f"let p1 = min({count}, p0 + tpr * {INNER_STEPS}u);", depth + 1)
        self.emit("var p = p0;", depth + 1)
        self.emit(f"for (; p + {UNROLL - 1}u * tpr < p1; p = p + {UNROLL}u * tpr) {{", depth + 1)
        for m in range(UNROLL):
            self.emit("{", depth + 2)
            self.emit(f"let {pos} = p{f' + {m}u * tpr' if m else ''};", depth + 3)
            inner(depth + 3)
            self.emit("}", depth + 2)
        self.emit("}", depth + 1)
        self.emit("for (; p < p1; p = p + tpr) {", depth + 1)
        self.emit(f"let {pos} = p;", depth + 2)
        inner(depth + 2)
        self.emit("}", depth + 1)
        self.emit("}", depth)

    def _better(self, dt: DType, greater: bool) -> None:
        """``af_better(x, xi, a, ai)``: does (x, xi) beat (a, ai)? NaN first, then the
        larger (smaller) value, then the lower index — numpy's argmax/argmin."""
        t = WGSL_TYPE[dt]
        cmp = ">" if greater else "<"
        self.emit(f"fn af_better(x: {t}, xi: u32, a: {t}, ai: u32) -> bool {{", 0)
        if dt.is_float:
            self.emit(f"let xn = {isnan('x', False, dt)};")
            self.emit(f"let an = {isnan('a', False, dt)};")
            self.emit("if (xn || an) { return xn && (!an || xi < ai); }")
        self.emit(f"return x {cmp} a || (x == a && xi < ai);")
        self.emit("}", 0)


def _nth(p: int) -> str:
    """The suffix of reduction ``p``'s names (none for the first)."""
    return str(p) if p else ""


def render(kernel: Kernel, workgroup: int, subgroups: bool = False, slots: int = 0,
           words: RowWords | None = None, tpr: int = 1, folds: bool = True,
           fma: bool = False) -> str:
    """The WGSL text of one element-wise or reduction kernel; ``subgroups``: the adapter
    has subgroup operations; ``slots``: a reduction holds each row in that many registers
    (positions) per thread between its passes (0: it reads the row again for each pass);
    ``words``: a reduction takes its rows in vec4 positions; ``tpr``: its threads per
    row (a power of two dividing the workgroup, written into the text as a constant, as
    the rows per workgroup are: the held registers' indices and the combine's steps are
    constants too); ``folds``: the adapter's
    compiler folds ``x - x`` (float add/sub then guard IEEE specials); ``fma``: its
    ``fma`` is fused (float32 exp/sin/cos/tan then reduce and evaluate with it:
    ``math_f32.fma_helpers``). Matmul kernels: :mod:`.matmul`."""
    assert not kernel.matmul
    w = _Writer(kernel, workgroup, subgroups, words=words, folds=folds, fma=fma)
    w.declare()
    if not kernel.reduces:
        w.elementwise()
    else:
        w.reduction(slots, tpr)
    return enables(kernel) + "\n".join(w.lines) + "\n"
