"""Creation, manipulation, statistics and utility functions of the Array API against
array-api-strict, fused and plain; and the errors that explain a bad call."""

from __future__ import annotations

import array_api_strict as xp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5
I = np.array([[3, 0, -2, 5], [0, 1, 0, -4], [7, 7, 0, 1]], dtype=np.int32)
V = np.array([1.5, -2.0, 0.0, 4.0, 0.5], dtype=np.float32)
B = np.array([[True, False, True], [False, False, True]])

# (name, tensor inputs, other positional arguments, keyword arguments):
# af.name(*tensors, *args, **kw) must equal xp.name(*arrays, *args, **kw), element by element
# for lists of results. Where array-api-strict gives its default int64, asyncfusion gives
# its default int32.
CASES = [
    ("moveaxis", (X,), (0, -1), {}),
    ("moveaxis", (X,), ((0, 2), (2, 0)), {}),
    ("expand_dims", (X,), (), {"axis": 1}),
    ("permute_dims", (X,), (), {"axes": (2, 0, 1)}),
    ("tile", (I,), ((2, 1, 3),), {}),
    ("tile", (V,), ((3,),), {}),
    ("repeat", (I,), (2,), {"axis": 1}),
    ("repeat", (V,), (3,), {}),
    ("repeat", (I,), (xp.asarray([2, 0, 1]),), {"axis": 0}),
    ("roll", (X,), (), {"shift": 2}),
    ("roll", (X,), (), {"shift": (1, -1), "axis": (0, 2)}),
    ("roll", (I,), (), {"shift": -5, "axis": 1}),
    ("diff", (X,), (), {}),
    ("diff", (I,), (), {"axis": 0, "n": 2}),
    ("tril", (X,), (), {}),
    ("tril", (I,), (), {"k": 1}),
    ("triu", (B,), (), {"k": -1}),
    ("triu", (X,), (), {"k": 2}),
    ("count_nonzero", (I,), (), {}),
    ("count_nonzero", (I,), (), {"axis": 1, "keepdims": True}),
    ("count_nonzero", (B,), (), {"axis": 0}),
    ("vecdot", (X, X[0]), (), {}),
    ("vecdot", (I, I), (), {"axis": -2}),
    ("cumulative_sum", (V,), (), {}),
    ("cumulative_sum", (X,), (), {"axis": 1}),
    ("cumulative_sum", (I,), (), {"axis": 1, "include_initial": True}),
    ("cumulative_prod", (V,), (), {"include_initial": True}),
    ("cumulative_prod", (I,), (), {"axis": 0}),
    ("unstack", (X,), (), {"axis": 1}),
    ("broadcast_arrays", (X, V[:4], I[0:1, 0:1].astype(np.float32)), (), {}),
    ("meshgrid", (V, V[:3], V[:2]), (), {}),
    ("meshgrid", (V, V[:3]), (), {"indexing": "ij"}),
    ("isin", (I, np.array([0, 7, 9], dtype=np.int32)), (), {}),
    ("isin", (I, np.array([5], dtype=np.int32)), (), {"invert": True}),
    ("imag", (V,), (), {}),
]


def _strict_kw(kw: dict) -> dict:
    return {k: (getattr(xp, v) if k == "dtype" else v) for k, v in kw.items()}


def _as_list(out) -> list[np.ndarray]:
    return [np.asarray(o) for o in out] if isinstance(out, (list, tuple)) else [np.asarray(out)]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
async def test_function_matches_array_api_strict(dev, plain, case):
    name, inputs, args, kw = case
    if name == "imag":  # array-api-strict takes complex input only; real input has none
        want = [np.zeros_like(V)]
    elif name == "isin" and kw.get("invert"):  # array-api-strict 2.6.1 ignores invert
        want = [np.isin(*inputs, invert=True)]
    else:
        want = _as_list(getattr(xp, name)(*(xp.asarray(a) for a in inputs), *args,
                                          **_strict_kw(kw)))
    want = [w.astype(np.int32) if w.dtype == np.int64 else w for w in want]
    ours = tuple(np.asarray(a).tolist() if hasattr(a, "__array_namespace__") else a
                 for a in args)
    for d in (dev, plain):
        out = getattr(af, name)(*(af.tensor(a, device=d) for a in inputs), *ours, **kw)
        got = [await t.to_data() for t in (out if isinstance(out, (list, tuple)) else [out])]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, w.dtype, g.shape)
            np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=name)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 70), axis_len=st.integers(1, 3), seed=st.integers(0, 2**16))
async def test_cumulative_sum_of_any_length(dev, n, axis_len, seed):
    x = np.random.default_rng(seed).integers(-9, 10, (axis_len, n)).astype(np.int32)
    got = await af.cumulative_sum(af.tensor(x, device=dev), axis=1).to_data()
    np.testing.assert_array_equal(got, np.cumsum(x, axis=1, dtype=np.int32))


def test_creation_functions(af_device):
    d = af_device
    np.testing.assert_array_equal(af.eye(3, 4, k=-1, device=d).numpy(),
                                  np.eye(3, 4, k=-1, dtype=np.float32))
    assert af.eye(2, dtype=af.int32, device=d).numpy().dtype == np.int32
    np.testing.assert_allclose(af.linspace(-1, 2, 7, device=d).numpy(),
                               np.linspace(-1, 2, 7, dtype=np.float32))
    np.testing.assert_array_equal(af.linspace(0, 9, 4, endpoint=False, dtype=af.int32,
                                              device=d).numpy(), [0, 2, 4, 6])
    assert af.empty((2, 3), device=d).shape == (2, 3)
    t = af.empty_like(af.tensor([1, 2], device=d))
    assert (t.shape, t.dtype) == ((2,), af.int32)
    np.testing.assert_array_equal(af.from_dlpack(np.arange(3, dtype=np.float32),
                                                 device=d).numpy(), [0, 1, 2])
    with pytest.raises(TypeError, match="asarray"):
        af.from_dlpack([1, 2])
    assert af.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
    i = af.tensor(I, device=d)
    assert af.astype(i, af.int32, copy=False) is i and af.astype(i, af.int32) is not i
    np.testing.assert_array_equal(af.astype(i, "float32").numpy(), I.astype(np.float32))


def test_bad_calls_say_what_to_do(af_device):
    x = af.tensor(X, device=af_device)
    with pytest.raises(af.AxisError, match="give axis="):
        af.cumulative_sum(x)
    with pytest.raises(af.ShapeError, match="3 of them"):
        af.repeat(x, [1, 2], axis=1)
    with pytest.raises(TypeError, match="integer dtype"):
        af.repeat(x, af.tensor([1.0, 2.0, 3.0], device=af_device), axis=1)
    with pytest.raises(af.ShapeError, match="at least 2 dimensions"):
        af.tril(x[0, 0])
    with pytest.raises(af.AxisError, match="distinct axes"):
        af.moveaxis(x, (0, 0), (1, 2))
    with pytest.raises(af.ShapeError, match="sizes 4 and 1"):
        af.vecdot(x, af.tensor(V[:1], device=af_device))
    with pytest.raises(ValueError, match="'xy' or 'ij'"):
        af.meshgrid(x[0, 0], indexing="yx")
