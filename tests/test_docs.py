"""The docs tell the truth: the Array API table comes from the code, and the quickstart's
notebook cells run as Jupyter runs them (top-level ``await`` inside a running loop)."""

from __future__ import annotations

import ast
import asyncio
import re
import sys
from pathlib import Path

import pytest

import asyncfusion as af

DOCS = Path(__file__).parent.parent / "docs"
sys.path.insert(0, str(DOCS))

from array_api import STANDARD, coverage, table  # noqa: E402


def _blocks(page: str, section: str) -> list[str]:
    text = (DOCS / page).read_text()
    part = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", part, re.S)


def test_array_api_table_is_generated_from_the_exports():
    cov = coverage(af)
    assert cov["asarray"] == ("function", "`af.asarray`")
    assert cov["concat"] == ("function", "`af.concat`")
    assert cov["exp"] == ("function", "`af.exp`")
    assert cov["astype"] == ("function", "`af.astype`")
    assert cov["multiply"] == ("function", "`af.multiply`")
    assert cov["nextafter"] == ("function", "`af.nextafter`")
    assert cov["matmul"] == ("function", "`af.matmul`")
    assert cov["unique_all"] == ("function", "`af.unique_all` (awaited in an event loop)")
    assert cov["nonzero"] == ("function", "`af.nonzero` (awaited in an event loop)")
    assert cov["searchsorted"] == ("function", "`af.searchsorted`")
    assert not [n for n, (s, _) in cov.items() if s == "missing"]
    standard = {n for names in STANDARD.values() for n in names}
    exported = {n for n in af.__all__ if callable(getattr(af, n))} & standard
    assert exported == {n for n, (s, _) in cov.items() if s == "function"}
    md = table(af)
    assert "| `asarray` | yes | `af.asarray` |" in md and "### Element-wise" in md


def test_every_page_in_the_nav_exists():
    nav = re.findall(r": ([\w/-]+\.md)$", (DOCS.parent / "mkdocs.yml").read_text(), re.M)
    assert len(nav) >= 11
    for page in nav:
        assert (DOCS / page).is_file(), page


def test_notebook_quickstart_runs_with_top_level_await():
    cells = _blocks("quickstart.md", "In a Jupyter notebook (or IPython)")
    assert len(cells) == 4 and any("await" in c for c in cells)
    ns: dict[str, object] = {}
    results = []

    async def notebook() -> None:  # what IPython does with each cell
        for cell in cells:
            *body, last = ast.parse(cell).body
            assert isinstance(last, ast.Expr)  # each cell shows a value
            for node in (ast.Module(body, []), ast.Expression(last.value)):
                mode = "exec" if isinstance(node, ast.Module) else "eval"
                code = compile(node, "<cell>", mode,
                               flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
                out = eval(code, ns)
                if asyncio.iscoroutine(out):
                    out = await out
            results.append(repr(out))
        with pytest.raises(af.BlockingCallError, match="Jupyter"):
            ns["y"].numpy()  # type: ignore[attr-defined]

    asyncio.run(notebook())
    assert "status=queued" in results[0] and "values=" not in results[0]
    assert "values=[" in results[2]
    assert float(results[3]) == pytest.approx(float(ns["values"].sum()), rel=1e-5)


def test_plain_script_quickstart_runs(capsys):
    (block,) = _blocks("quickstart.md", "In a plain script")
    exec(compile(block, "<quickstart>", "exec"), {})
    assert capsys.readouterr().out.count("\n") == 2


def test_the_testing_pages_service_tests_pass(pytester):
    (block,) = _blocks("testing.md", "Testing a service: `asgi_client` and `af_asgi_client`")
    pytester.makepyfile(test_service_docs=block)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-o",
                                          "asyncio_default_fixture_loop_scope=function")
    assert result.ret == 0 and result.parseoutcomes()["passed"] >= 2  # once per backend
