"""Element-wise programs: the kernel IR that both fused and unfused element-wise work lowers to.

An :class:`ElementwiseProgram` is a straight-line list of instructions over one iteration
shape. It is pure structure (dtypes, which dimensions each input spans, which values are
written, which scalars are read) and holds no sizes or values, so equal programs lower to
the same kernel text and share one compiled pipeline. The plain backend builds a program
of one op; the fuser builds one per block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .dtype import DType
from .ir import DropOp, ElementwiseOp, OperationIr, ScalarIr, TensorStatus, numel

__all__ = ["KernelInput", "Instr", "ElementwiseProgram", "BlockLayout", "layout_block"]


@dataclass(frozen=True, slots=True)
class KernelInput:
    """One bound input. ``spans`` marks, per iteration dimension, whether the input varies
    along it; ``None`` means the input has exactly the iteration shape."""

    dtype: DType
    spans: tuple[bool, ...] | None


@dataclass(frozen=True, slots=True)
class Instr:
    """``v{index} = op(args)``; an arg is ("in", k), ("v", j) or ("s", k) for scalar k."""

    op: str
    compute: DType
    out: DType
    args: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class ElementwiseProgram:
    rank: int
    inputs: tuple[KernelInput, ...]
    body: tuple[Instr, ...]
    outputs: tuple[tuple[int, DType], ...]  # (value index, dtype) of each written output
    inplace: tuple[int | None, ...]  # per output: input slot whose buffer it overwrites
    scalars: tuple[DType, ...]
    vec4: bool
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Programs key the kernel caches on every launch: hash the deep structure once.
        object.__setattr__(self, "_hash", hash((self.rank, self.inputs, self.body, self.outputs,
                                                self.inplace, self.scalars, self.vec4)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def storage_bindings(self) -> int:
        return len(self.inputs) + sum(1 for s in self.inplace if s is None)


@dataclass(frozen=True, slots=True)
class BlockLayout:
    """A program plus where its tensors and scalars come from, by position in the block.

    ``inputs[k]`` / ``outputs[j]`` are tensor ids; ``scalar_refs`` index (op, k) pairs in
    the block; ``frees`` lists ids whose buffers are released once the kernel ran.
    """

    program: ElementwiseProgram
    shape: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    scalar_refs: tuple[tuple[int, int], ...]
    frees: tuple[int, ...]


# Interned programs: backends cache per program, and a lookup that finds the very same
# object skips comparing two deep structures.
_PROGRAMS: dict[ElementwiseProgram, ElementwiseProgram] = {}


def _spans(shape: tuple[int, ...], target: tuple[int, ...]) -> tuple[bool, ...] | None:
    if shape == target:
        return None
    pad = len(target) - len(shape)
    return tuple(i >= pad and shape[i - pad] == target[i] and target[i] != 1
                 for i in range(len(target)))


def layout_block(
    ops: list[OperationIr],
    later_reads: frozenset[int] = frozenset(),
    *,
    inplace: bool = True,
) -> BlockLayout:
    """Lower a block of element-wise ops (plus drops) of one output shape to a program.

    An op's output is written only if it is live after the block: read by an op in
    ``later_reads``, or neither read for the last time (ReadWrite) nor dropped inside the
    block. An input read for the last time may lend its buffer to a same-typed output.
    """
    ew = [op for op in ops if isinstance(op, ElementwiseOp)]
    shape = ew[0].out.shape if ew else ()
    values: dict[int, int] = {}  # tensor id -> value index
    in_slot: dict[int, int] = {}
    inputs: list[KernelInput] = []
    input_ids: list[int] = []
    last_rw: set[int] = set()
    dropped: set[int] = set()
    body: list[Instr] = []
    scalar_refs: list[tuple[int, int]] = []
    scalar_types: list[DType] = []
    for pos, op in enumerate(ops):
        if isinstance(op, DropOp):
            dropped.add(op.tensor.id)
            continue
        assert isinstance(op, ElementwiseOp)
        args: list[tuple[str, int]] = []
        k = 0
        for a in op.args:
            if isinstance(a, ScalarIr):
                args.append(("s", len(scalar_refs)))
                scalar_refs.append((pos, k))
                scalar_types.append(a.dtype)
                k += 1
                continue
            if a.status is TensorStatus.READ_WRITE:
                last_rw.add(a.id)
            if a.id in values:
                args.append(("v", values[a.id]))
                continue
            slot = in_slot.get(a.id)
            if slot is None:
                slot = in_slot[a.id] = len(inputs)
                inputs.append(KernelInput(a.dtype, _spans(a.shape, shape)))
                input_ids.append(a.id)
            args.append(("in", slot))
        values[op.out.id] = len(body)
        body.append(Instr(op.op, op.compute, op.out.dtype, tuple(args)))

    dead = last_rw | dropped
    outputs: list[tuple[int, DType]] = []
    output_ids: list[int] = []
    for tid, vi in values.items():
        if tid in later_reads or tid not in dead:
            outputs.append((vi, body[vi].out))
            output_ids.append(tid)

    donors = [s for s, tid in enumerate(input_ids)
              if inplace and tid in last_rw and tid not in later_reads
              and inputs[s].spans is None]
    lent: list[int | None] = []
    for _, dt in outputs:
        slot = next((s for s in donors if inputs[s].dtype.storage == dt.storage), None)
        if slot is not None:
            donors.remove(slot)
        lent.append(slot)
    frees = tuple(tid for s, tid in enumerate(input_ids)
                  if (tid in dead and tid not in later_reads) and s not in lent)
    frees += tuple(tid for tid in dropped if tid not in values and tid not in in_slot)

    n = numel(shape)
    vec4 = n % 4 == 0 and n > 0 and all(
        i.spans is None or not any(i.spans) for i in inputs)
    program = ElementwiseProgram(
        rank=len(shape),
        inputs=tuple(inputs),
        body=tuple(body),
        outputs=tuple(outputs),
        inplace=tuple(lent),
        scalars=tuple(scalar_types),
        vec4=vec4,
    )
    program = _PROGRAMS.setdefault(program, program)  # equal programs: one object
    return BlockLayout(program, shape, tuple(input_ids), tuple(output_ids),
                       tuple(scalar_refs), frees)
