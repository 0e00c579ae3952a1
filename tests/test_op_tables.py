"""The op registry and the WGSL lowerings name the same ops, and the registry and the IR
stand apart from code generation."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.codegen.wgsl.lowering import (COMBINES, HELPERS, HELPERS_F64, HELPERS_WIDE,
                                               LOWERINGS, identity)
from asyncfusion.codegen.wgsl.math_f32 import NEEDS_F32
from asyncfusion.codegen.wgsl.math_f64 import NEEDS_F64
from asyncfusion.codegen.wgsl.types import Ty
from asyncfusion._core.dtype import DType
from asyncfusion.ops import PRIMITIVES, REDUCTIONS, Identity

PACKAGE = Path(af.__file__).parent


def test_every_op_has_a_lowering_and_every_lowering_an_op() -> None:
    assert sorted(set(PRIMITIVES) - set(LOWERINGS)) == []
    assert sorted(set(LOWERINGS) - set(PRIMITIVES)) == []


def test_every_reduction_but_the_arg_ones_has_a_fold() -> None:
    plain = {name for name, r in REDUCTIONS.items() if not r.arg}
    assert set(COMBINES) == plain
    assert {"argmax", "argmin"} <= set(REDUCTIONS) - set(COMBINES)


def test_every_helper_named_is_written_somewhere() -> None:
    written = HELPERS.keys() | HELPERS_WIDE.keys() | HELPERS_F64.keys()
    named = {h for lw in LOWERINGS.values() for h in lw.helpers}
    named |= {h for needs in (NEEDS_F32, NEEDS_F64) for k, v in needs.items() for h in (k, *v)}
    assert sorted(named - written) == []


def _imports(path: Path) -> set[str]:
    """The absolute module names a file of the package imports."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    here = parts[:-1]  # the package the file sits in
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else ()
            found.add(".".join((*base, node.module or "")).rstrip("."))
    return found


@pytest.mark.parametrize("folder, banned", [
    ("ops", ("asyncfusion.codegen", "asyncfusion.backends", "asyncfusion.kernel")),
    ("ir", ("asyncfusion.ops", "asyncfusion.codegen", "asyncfusion.backends")),
])
def test_registry_and_ir_import_no_code_generation(folder: str, banned: tuple[str, ...]) -> None:
    files = sorted((PACKAGE / folder).glob("*.py"))
    assert files
    bad = {f.name: m for f in files for m in _imports(f) if m.startswith(banned)}
    assert bad == {}


def test_the_registry_holds_no_wgsl() -> None:
    text = "\n".join(f.read_text() for f in (PACKAGE / "ops").glob("*.py"))
    for word in ("bitcast<", "vec4<", "fn af_", "select("):
        assert word not in text


def test_a_custom_op_enters_both_tables() -> None:
    twice = af.elementwise_op("op_tables_twice", wgsl="({0} * {T}(2.0))",
                              numpy=lambda a: a * np.float32(2))
    assert twice.__name__ == "op_tables_twice"
    entry = PRIMITIVES["op_tables_twice"]
    assert (entry.arity, entry.rule, entry.wide) == (1, "float", False)
    assert LOWERINGS["op_tables_twice"].wgsl(["x"], Ty(DType.float32, True)) == (
        "((x * vec4<f32>(2.0)))")
    before = set(LOWERINGS)
    with pytest.raises(ValueError, match="exists already"):
        af.elementwise_op("sum", wgsl="{0}", numpy=lambda a: a)
    assert set(LOWERINGS) == before and "sum" not in PRIMITIVES


def test_identities_are_written_per_accumulator_dtype() -> None:
    assert identity(Identity.ZERO, DType.float32) == "f32(0)"
    assert identity(Identity.ONE, DType.uint32) == "u32(1)"
    assert identity(Identity.LOWEST, DType.int32) == "i32(-2147483647 - 1)"
    assert identity(Identity.HIGHEST, DType.float64) == "bitcast<f64>(0x7ff0000000000000li)"
    assert REDUCTIONS["argmax"].identity is REDUCTIONS["max"].identity is Identity.LOWEST
    assert REDUCTIONS["argmin"].identity is REDUCTIONS["min"].identity is Identity.HIGHEST
    # the identity is what numpy's own fold of nothing gives, where numpy has one
    for name in ("sum", "prod", "any", "all"):
        empty = REDUCTIONS[name].numpy(np.zeros((0,), np.float32), (0,))
        expect = {Identity.ZERO: 0, Identity.ONE: 1}[REDUCTIONS[name].identity]
        assert float(empty[0]) == expect


def test_a_reduction_names_what_folds_its_partials_in_the_registry():
    """A split reduction combines chunks with the entry's ``combine``: an element-wise op,
    or for an arg reduction its value's reduction (and ``better`` a comparison)."""
    for r in REDUCTIONS.values():
        if r.arg:
            assert r.combine in REDUCTIONS and not REDUCTIONS[r.combine].arg
            assert r.better in ("gt", "lt") and PRIMITIVES[r.better].rule == "compare"
            assert not r.empty
        else:
            assert PRIMITIVES[r.combine].arity == 2 and r.better is None
            folded = PRIMITIVES[r.combine].numpy
            x = np.array([3, 1, 2], np.int32) if not r.logical else np.array([1, 0, 1], bool)
            whole = r.numpy(x, (0,))[0]
            assert folded(r.numpy(x[:1], (0,))[0], r.numpy(x[1:], (0,))[0]) == whole
