"""One path for every element-wise spelling: ``af.f(a, b)``, the operator ``a op b``, its
reflected form ``scalar op t`` and the Tensor method all record the same op, so a
Python scalar on either side gives numpy's answer. A call without a tensor raises a
TypeError that says to make one with ``asyncfusion.tensor``. The layers import
downward only (``_core`` < ``lazy`` < ``extend`` < ``api``)."""

from __future__ import annotations

import ast
import inspect
import operator
import os
import pathlib
from pathlib import Path

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.api import elementwise as elementwise_api
from asyncfusion.api import methods
from asyncfusion.ops import PRIMITIVES

PACKAGE = pathlib.Path(af.__file__).parent

# (asyncfusion name, numpy's function, the operator spelling or None)
BINARY = [
    ("add", np.add, operator.add), ("subtract", np.subtract, operator.sub),
    ("multiply", np.multiply, operator.mul), ("divide", np.divide, operator.truediv),
    ("floor_divide", np.floor_divide, operator.floordiv),
    ("remainder", np.remainder, operator.mod), ("pow", np.power, operator.pow),
    ("maximum", np.maximum, None), ("minimum", np.minimum, None),
    ("hypot", np.hypot, None), ("atan2", np.arctan2, None), ("copysign", np.copysign, None),
    ("logaddexp", np.logaddexp, None), ("less", np.less, operator.lt),
    ("greater_equal", np.greater_equal, operator.ge), ("equal", np.equal, operator.eq),
]
HOST = np.array([1.5, -2.25, 3.0, -0.5], np.float32)


async def test_scalar_first_and_scalar_second_match_numpy(ref):
    t = af.tensor(HOST, device=ref)
    for name, npf, op in BINARY:
        fn = getattr(af, name)
        for s in (2.0, -3):
            with np.errstate(all="ignore"):  # (-3) ** 1.5: NaN, as numpy gives
                left, right = npf(np.float32(s), HOST), npf(HOST, np.float32(s))
            forms = {"f(s, t)": (fn(s, t), left), "f(t, s)": (fn(t, s), right)}
            if op is not None:
                forms["s op t"] = (op(s, t), left)
                forms["t op s"] = (op(t, s), right)
            for form, (got, want) in forms.items():
                np.testing.assert_allclose(await got.to_data(), want, rtol=2e-6,
                                           err_msg=f"{name}: {form} with {s!r}")


async def test_the_reported_scalar_first_calls(dev):
    t = af.tensor(HOST, device=dev)
    i = af.tensor(np.array([3, -4, 7, 2], np.int32), device=dev)
    np.testing.assert_array_equal(await af.floor_divide(5.0, t).to_data(),
                                  np.floor_divide(np.float32(5.0), HOST))
    np.testing.assert_array_equal(await af.remainder(-5, i).to_data(),
                                  np.remainder(-5, np.array([3, -4, 7, 2], np.int32)))
    np.testing.assert_array_equal(await (7 // i).to_data(),
                                  7 // np.array([3, -4, 7, 2], np.int32))


@pytest.mark.parametrize("name,op", [("exp", "exp"), ("expm1", "expm1"), ("sqrt", "sqrt"),
                                     ("negative", r"neg \(-x\)"), ("floor", "floor")])
def test_a_unary_function_of_a_scalar_says_to_make_a_tensor(name, op):
    with pytest.raises(TypeError, match=rf"^{op}: needs an asyncfusion Tensor, not float; "
                                        r"make one with asyncfusion\.tensor"):
        getattr(af, name)(1.0)


@pytest.mark.parametrize("name", ["add", "floor_divide", "remainder", "hypot"])
def test_two_scalars_say_to_make_a_tensor(name):
    with pytest.raises(TypeError, match=r"at least one operand must be an asyncfusion "
                                        r"Tensor, got float and int.*asyncfusion\.tensor"):
        getattr(af, name)(5.0, 2)


def test_operators_and_methods_are_the_functions():
    assert af.Tensor.__add__ is af.add
    assert af.Tensor.__floordiv__ is af.floor_divide
    assert af.Tensor.__mod__ is af.remainder
    assert af.Tensor.__lt__ is af.less
    assert af.Tensor.__neg__ is af.negative
    assert af.Tensor.exp is af.exp
    assert af.Tensor.max is af.max


def _declared_methods() -> set[str]:
    """The names lazy/tensor.py declares for type checkers under ``TYPE_CHECKING``."""
    tree = ast.parse((PACKAGE / "lazy" / "tensor.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    block = next(n for n in cls.body if isinstance(n, ast.If)
                 and ast.unparse(n.test) == "TYPE_CHECKING")
    return {n.name for n in block.body if isinstance(n, ast.FunctionDef)}


def test_every_declared_method_is_bound_and_nothing_else():
    declared = _declared_methods()
    assert declared == set(methods.BOUND)
    for name in declared:
        assert name in vars(af.Tensor), name


def _imports(path: pathlib.Path) -> list[tuple[str, bool]]:
    """(the package-relative module, whether the import sits in a function) of a file."""
    tree = ast.parse(path.read_text())
    inner = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef,
                                                              ast.AsyncFunctionDef))
             for n in ast.walk(f)}
    rel = path.relative_to(PACKAGE).with_suffix("").parts[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(rel[:len(rel) - (node.level - 1)])
            mod = ".".join(base + ([node.module] if node.module else []))
            out += [(mod, id(node) in inner)] if node.module else [
                (".".join(base + [a.name]), id(node) in inner) for a in node.names]
    return out


@pytest.mark.parametrize("layer,above", [
    ("_core", ("lazy", "extend", "api", "runtime", "engine", "ir", "primitives")),
    ("lazy", ("extend", "api")),
    ("extend", ("api",)),
])
def test_the_front_end_layers_import_downward(layer, above):
    for path in (PACKAGE / layer).glob("*.py"):
        for mod, _ in _imports(path):
            assert not mod.split(".")[0] in above, f"{path.name} imports {mod}"


def test_no_front_end_module_imports_the_package_inside_a_function():
    for layer in ("_core", "lazy", "api"):
        for path in (PACKAGE / layer).glob("*.py"):
            inner = [mod for mod, nested in _imports(path) if nested]
            assert not inner, f"{layer}/{path.name} imports {inner} inside a function"


def test_the_element_wise_stub_is_written_from_the_registry():
    """``api/elementwise.pyi`` (what type checkers read) is the registry's current text;
    regenerate it with ASYNCFUSION_REGEN_GOLDEN=1 after adding an op."""
    path = Path(elementwise_api.__file__).with_suffix(".pyi")
    if os.environ.get("ASYNCFUSION_REGEN_GOLDEN"):
        path.write_text(elementwise_api.stub())
    assert path.read_text() == elementwise_api.stub(), "regenerate elementwise.pyi"


def test_every_op_with_a_docstring_is_a_public_function_of_the_package():
    public = {p.public: p for p in PRIMITIVES.values() if p.doc}
    assert public and set(public) <= set(af.__all__)
    for name, p in public.items():
        fn = getattr(af, name)
        assert fn.__doc__ == p.doc and fn.__name__ == name
        assert len(inspect.signature(fn).parameters) == p.arity
    internal = [p.name for p in PRIMITIVES.values() if not p.doc]
    assert "cast" in internal and not any(hasattr(af, n) for n in ("cast", "copy"))
