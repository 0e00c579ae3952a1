"""The standard's keywords: every keyword array-api-strict's function of a standard name
accepts, asyncfusion's accepts too (checked with ``inspect.signature``), and the ones
that were missing do what the standard says (``reshape(copy=)``, ``sum``/``prod``'s
``dtype=``, ``sort``/``argsort``'s ``stable=``, ``full``'s ``fill_value=``); ``concat``
and ``stack`` promote mixed dtypes as ``result_type`` does. Fused, plain and on the
numpy backend, against array-api-strict."""

from __future__ import annotations

import inspect

import array_api_strict as xp
import numpy as np
import pytest

import asyncfusion as af
from tests.test_array_api import NAMES

KEYWORD = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@pytest.fixture
def devices(dev, plain, ref):
    return dev, plain, ref


def keywords(fn: object) -> dict[str, object]:
    """The parameters ``fn`` takes by name, and their defaults."""
    params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
    return {p.name: p.default for p in params if p.kind in KEYWORD}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_every_standard_keyword_is_accepted(name):
    want = keywords(getattr(xp, name))
    got = keywords(getattr(af, name))
    assert set(want) <= set(got), f"{name}: {set(want) - set(got)} missing"
    for key, default in want.items():  # the standard's defaults (array-api-strict marks
        if default in (None, inspect.Parameter.empty) or type(default).__module__.startswith(
                "array_api_strict"):  # "not given" with a sentinel of its own)
            continue
        assert got[key] == default, (name, key)


def test_signatures_of_the_method_wrappers_are_honest():
    assert list(keywords(af.max)) == ["axis", "keepdims"]
    assert inspect.signature(af.sum).parameters["x"].kind is inspect.Parameter.POSITIONAL_ONLY
    with pytest.raises(TypeError):
        af.max(af.zeros((2,)), dtype=af.float32)  # not a keyword of max: refused


async def read(*ts):
    return [await t.to_data() for t in ts]


async def test_reshape_copy(devices):
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    for d in devices:
        x = af.tensor(h, device=d)
        got = await read(af.reshape(x, (4, 3), copy=None), af.reshape(x, (2, -1), copy=True),
                         af.reshape(x, [12], copy=False), af.reshape(x.mT, (12,)),
                         af.reshape(x.mT, (12,), copy=True))
        wants = [xp.reshape(xp.asarray(h), s) for s in ((4, 3), (2, 6), (12,))]
        wants += [xp.reshape(xp.matrix_transpose(xp.asarray(h)), (12,))] * 2
        for g, w in zip(got, wants, strict=True):
            np.testing.assert_array_equal(g, np.asarray(w))
        with pytest.raises(af.ShapeError, match=r"\(4, 3\).*copy=False.*contiguous") as err:
            af.reshape(x.mT, (12,), copy=False)  # a transposed layout needs a copy
        assert isinstance(err.value, ValueError)  # the standard's ValueError
        with pytest.raises(af.ShapeError, match="cannot reshape"):
            af.reshape(x, (5,), copy=False)


async def test_sum_and_prod_take_dtype(devices):
    h = np.array([[1.5, 2.25, 3.0], [4.0, 0.5, 1e-8]], np.float32)
    k = np.array([[300, -2, 7], [11, 300, 5]], np.int16)
    for d in devices:
        x, i = af.tensor(h, device=d), af.tensor(k, device=d)
        results = [af.sum(x, dtype=af.float64), af.sum(x, axis=1, dtype=af.float64,
                                                       keepdims=True),
                   af.prod(x, axis=0, dtype=af.float32), af.sum(i, axis=0),
                   af.prod(i, dtype=af.int64), af.prod(i, axis=1, dtype=af.int16),
                   af.sum(i, axis=(0, 1), dtype=af.float32)]
        hx, hi = xp.asarray(h), xp.asarray(k)
        wants = [xp.sum(hx, dtype=xp.float64), xp.sum(hx, axis=1, dtype=xp.float64,
                                                      keepdims=True),
                 xp.prod(hx, axis=0, dtype=xp.float32), xp.sum(hi, axis=0, dtype=xp.int32),
                 xp.prod(hi, dtype=xp.int64), xp.prod(hi, axis=1, dtype=xp.int16),
                 xp.sum(xp.astype(hi, xp.float32), axis=(0, 1))]
        got = await read(*results)
        for r, g, w in zip(results, got, wants, strict=True):
            w = np.asarray(w)
            assert r.dtype.label == w.dtype.name and g.dtype == w.dtype, (d, r.dtype, w.dtype)
            np.testing.assert_allclose(g, w, rtol=1e-6)


async def test_sort_and_argsort_take_stable(devices):
    h = np.array([[3, 1, 3, 0, 1], [2, 2, 2, 9, -1]], np.int32)
    for d in devices:
        x = af.tensor(h, device=d)
        got = await read(af.sort(x, stable=True), af.argsort(x, stable=False),
                         af.argsort(x, axis=0, descending=True, stable=True))
        wants = [xp.sort(xp.asarray(h), stable=True), xp.argsort(xp.asarray(h), stable=True),
                 xp.argsort(xp.asarray(h), axis=0, descending=True, stable=True)]
        for g, w in zip(got, wants, strict=True):
            np.testing.assert_array_equal(g, np.asarray(w))


async def test_full_takes_fill_value(devices):
    for d in devices:
        got = await read(af.full((2,), fill_value=7, dtype=af.int16, device=d),
                         af.full_like(af.zeros((3,), device=d), fill_value=2.5))
        np.testing.assert_array_equal(got[0], np.full(2, 7, np.int16))
        np.testing.assert_array_equal(got[1], np.full(3, 2.5, np.float32))


MIXED = [("int16", "int32"), ("uint16", "int16"), ("int32", "uint32"), ("uint16", "uint32"),
         ("float32", "int16"), ("float16", "float32"), ("float32", "float64"),
         ("int64", "uint16"), ("int8", "uint8"), ("uint8", "int16"), ("float16", "uint8"),
         ("int8", "uint32")]


@pytest.mark.parametrize(("a", "b"), MIXED)
async def test_concat_and_stack_promote(devices, a, b):
    ha, hb = np.array([1, 2], a), np.array([3, 250], b)
    wants = [np.concat([ha, hb]), np.stack([hb, ha], axis=1)]  # numpy mixes kinds too
    if "float16" not in (a, b) and a[0] == b[0] or "int" in a and "int" in b:
        xa, xb = xp.asarray(ha), xp.asarray(hb)  # the standard's table, where it has one
        assert np.asarray(xp.concat([xa, xb])).dtype == wants[0].dtype
        assert np.asarray(xp.stack([xb, xa], axis=1)).dtype == wants[1].dtype
    for d in devices:
        ta, tb = (af.tensor(v, getattr(af, v.dtype.name), device=d) for v in (ha, hb))
        results = [af.concat([ta, tb]), af.stack([tb, ta], axis=1)]
        assert af.result_type(ta, tb).label == wants[0].dtype.name
        got = await read(*results)
        for r, g, w in zip(results, got, wants, strict=True):
            assert r.dtype.label == w.dtype.name
            np.testing.assert_array_equal(g, w)


async def test_concat_refuses_int64_where_the_adapter_lacks_it(dev, monkeypatch):
    i, u = af.tensor([1], af.int32, device=dev), af.tensor([2], af.uint32, device=dev)
    monkeypatch.setattr(dev.backend, "dtypes", dev.backend.dtypes - {af.int64, af.uint64,
                                                                     af.float64})
    with pytest.raises(af.DTypeError, match=r"cat: .*int64.*lacks shader-int64.*"
                                            r"astype\(asyncfusion.int32\)"):
        af.concat([i, u])
    with pytest.raises(af.DTypeError, match="bool only combines with bool"):
        af.concat([i, af.tensor([True], device=dev)])
