"""``docs/concepts/numerics.md`` (and the README's copy of its table) says what the code
does: the ulp bounds it lists are the ones the accuracy tests assert, function for
function; its promotion and integer-power rules hold on the device and the numpy
backend."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import asyncfusion as af
from tests import test_numerics_ulp as f32
from tests import test_numerics_ulp64 as f64

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = [ROOT / "docs" / "concepts" / "numerics.md", ROOT / "README.md"]


def documented_bounds(text: str) -> dict[str, dict[str, int]]:
    """The ``| ulp bound | float32 | float64 |`` table: dtype -> function -> bound."""
    lines = [ln.strip() for ln in text.splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| ulp bound |"))
    dtypes = ["float32", "float64"]
    bounds: dict[str, dict[str, int]] = {d: {} for d in dtypes}
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        cells = [c.strip() for c in ln.strip("|").split("|")]
        bound = int(cells[0])
        for dtype, cell in zip(dtypes, cells[1:], strict=True):
            for name in re.findall(r"`([a-z0-9_]+)`", cell):
                assert name not in bounds[dtype], f"{name} listed twice for {dtype}"
                bounds[dtype][name] = bound
    return bounds


def asserted_bounds() -> dict[str, dict[str, int]]:
    """The bounds the accuracy tests assert."""
    out = {}
    for dtype, mod in (("float32", f32), ("float64", f64)):
        table = {name: entry[1] for name, entry in mod.UNARY.items()}
        table.update({name: entry[1] for name, entry in mod.BINARY.items()})
        out[dtype] = table
    return out


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_the_documented_ulp_bounds_are_the_tested_ones(doc):
    assert documented_bounds(doc.read_text()) == asserted_bounds()


def test_the_doc_states_what_the_code_does_for_sin_cos_and_int_promotion():
    text = DOCS[0].read_text()
    assert "GPU's built-in functions" not in text and "lose accuracy for large" not in text
    assert "uint32 gives **int64**" in text
    assert af.result_type(af.int32, af.uint32) is af.int64
    assert af.result_type(af.int16, af.uint32) is af.int64
    with pytest.raises(af.DTypeError, match="no common integer type"):
        af.result_type(af.int32, af.uint64)


async def test_integer_powers_as_the_doc_says(dev, ref):
    for device in (dev, ref):
        x = af.tensor(np.int32([0, 1, -1, -1, 2, -3]), device=device)
        with pytest.raises(af.DataError, match="Integers to negative integer powers are not "
                                               r"allowed.*astype\(asyncfusion.float32\)"):
            x ** -1
        with pytest.raises(af.DataError, match="negative integer powers"):
            af.pow(af.tensor([2], af.uint32, device=device), -2)
        np.testing.assert_array_equal(await (x ** 3).to_data(), np.int32([0, 1, -1, -1, 8, -27]))
        e = af.tensor(np.int32([-1, -2, -2, -3, -1, -2]), device=device)
        np.testing.assert_array_equal(await (x ** e).to_data(), np.int32([0, 1, 1, -1, 0, 0]))
        got = await (x.astype(af.float32) ** -1).to_data()
        with np.errstate(divide="ignore"):
            np.testing.assert_allclose(got, np.float32([0, 1, -1, -1, 2, -3]) ** -1, rtol=1e-6)
