"""Every op against the numpy reference backend, over dtypes and broadcast shapes.

Each test builds the same program on the wgpu device (fused and plain) and on the numpy
backend, reads all three, and compares. Float tolerance: rtol 1e-5 for arithmetic,
2e-5 for transcendental functions (WGSL's exp/sin/cos/tanh are not correctly rounded).
"""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af
from tests.conftest import assert_close

SHAPES = [((5,), (5,)), ((2, 3), (3,)), ((4, 1), (1, 6)), ((), (7,)), ((2, 1, 3), (2, 4, 1))]
BINARY = ["add", "sub", "mul", "div", "pow", "minimum", "maximum"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]
UNARY_FLOAT = ["exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid"]
UNARY_NUMERIC = ["neg", "abs", "relu"]
NUMERIC = [af.float32, af.int32, af.uint32]


def sample(dtype: af.DType, shape, seed: int, positive: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype is af.bool_:
        return rng.random(shape) < 0.5
    if dtype is af.float32:
        lo = 0.25 if positive else -3.0
        return rng.uniform(lo, 3.0, shape).astype(np.float32)
    lo = 1 if positive or dtype is af.uint32 else -9
    return rng.integers(lo, 10, shape).astype(dtype.np)


def apply(name: str, *args):
    ops = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "div": lambda a, b: a / b, "pow": lambda a, b: a ** b,
           "minimum": af.minimum, "maximum": af.maximum,
           "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
           "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
           "and": lambda a, b: a & b, "or": lambda a, b: a | b, "not": lambda a: ~a,
           "neg": lambda a: -a, "abs": abs}
    if name in ops:
        return ops[name](*args)
    return getattr(args[0], name)()


async def run_everywhere(devices, build, *arrays):
    """Build the program from ``arrays`` on each device; return the read results."""
    results = []
    for device in devices:
        tensors = [af.tensor(a, device=device) for a in arrays]
        results.append(await build(*tensors).to_data())
    return results


def check(results, rtol=1e-5):
    expected = results[-1]
    for actual in results[:-1]:
        assert_close(actual, expected, rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("opname", BINARY)
async def test_binary_ops(dev, plain, ref, opname):
    for dtype in NUMERIC:
        for i, (sa, sb) in enumerate(SHAPES):
            positive = opname in ("pow", "div")
            a = sample(dtype, sa, i, positive=opname == "pow")
            b = sample(dtype, sb, i + 100, positive=positive)
            if opname == "pow":
                b = (b % 3).astype(dtype.np)
            res = await run_everywhere([dev, plain, ref], lambda x, y: apply(opname, x, y), a, b)
            check(res, rtol=3e-5 if opname == "pow" else 1e-5)


@pytest.mark.parametrize("opname", COMPARE)
async def test_comparisons(dev, plain, ref, opname):
    for dtype in NUMERIC + [af.bool_]:
        for i, (sa, sb) in enumerate(SHAPES):
            a, b = sample(dtype, sa, i), sample(dtype, sb, i)
            res = await run_everywhere([dev, plain, ref], lambda x, y: apply(opname, x, y), a, b)
            assert res[0].dtype == np.bool_
            check(res)


@pytest.mark.parametrize("opname", UNARY_FLOAT + UNARY_NUMERIC)
async def test_unary_ops(dev, plain, ref, opname):
    dtypes = NUMERIC if opname in UNARY_NUMERIC + ["exp", "sin"] else [af.float32, af.int32]
    for dtype in dtypes:
        a = sample(dtype, (3, 5), 7, positive=opname in ("log", "sqrt"))
        res = await run_everywhere([dev, plain, ref], lambda x: apply(opname, x), a)
        check(res, rtol=2e-5)


async def test_scalars_on_either_side(dev, ref):
    x = sample(af.float32, (6,), 1, positive=True)
    i = sample(af.int32, (6,), 2, positive=True)
    programs = [
        lambda t: 2.0 - t, lambda t: t - 2, lambda t: 3 * t, lambda t: 1.5 / t,
        lambda t: t ** 2, lambda t: 2.0 ** t, lambda t: t * 0.5 + 1, lambda t: 10 / (t + 1),
        lambda t: (t > 1.5) & (t < 2.5), lambda t: af.maximum(t, 1.0), lambda t: af.minimum(2, t),
    ]
    for data in (x, i):
        for build in programs:
            check(await run_everywhere([dev, ref], build, data))


async def test_logical_ops_and_where(dev, plain, ref):
    for i, (sa, sb) in enumerate(SHAPES):
        a, b = sample(af.bool_, sa, i), sample(af.bool_, sb, i + 1)
        for name in ("and", "or", "eq", "ne"):
            check(await run_everywhere([dev, plain, ref], lambda x, y: apply(name, x, y), a, b))
        check(await run_everywhere([dev, plain, ref], lambda x: ~x, a))
        x, y = sample(af.float32, sa, i), sample(af.float32, sb, i + 2)
        check(await run_everywhere([dev, plain, ref], lambda c, p, q: af.where(c, p, q),
                                   sample(af.bool_, sa, 3), x, y))
        check(await run_everywhere([dev, ref], lambda c, p: af.where(c, p, -1.0),
                                   sample(af.bool_, sa, 3), x))


@pytest.mark.parametrize("src", [af.float32, af.int32, af.uint32, af.bool_])
async def test_astype(dev, plain, ref, src):
    data = sample(src, (4, 3), 5, positive=src is not af.float32)
    for dst in (af.float32, af.int32, af.uint32, af.bool_):
        if src is af.float32 and dst is af.uint32:
            data = np.abs(data)
        res = await run_everywhere([dev, plain, ref], lambda t: t.astype(dst), data)
        assert res[0].dtype == dst.np
        check(res)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
async def test_reductions(dev, ref, op):
    for dtype in (af.float32, af.int32):
        data = sample(dtype, (3, 4, 5), 11)
        for axis in (None, 0, 1, 2, -1):
            for keepdims in (False, True):
                res = await run_everywhere(
                    [dev, ref], lambda t: getattr(t, op)(axis=axis, keepdims=keepdims), data)
                check(res, rtol=1e-4)


async def test_cat_and_reshape(dev, plain, ref):
    for axis in (0, 1, -1):
        a = sample(af.float32, (2, 3), 1)
        b = sample(af.float32, (2, 3), 2)
        res = await run_everywhere([dev, plain, ref], lambda x, y: af.cat([x, y * 2.0], axis), a, b)
        check(res)
    res = await run_everywhere([dev, ref], lambda x: (x.reshape(3, -1) + 1).reshape(-1),
                               sample(af.int32, (2, 6), 4))
    check(res)


async def test_creation_functions(dev, ref):
    for device in (dev, ref):
        checks = [
            (af.zeros((2, 3), device=device), np.zeros((2, 3), np.float32)),
            (af.ones(4, af.int32, device=device), np.ones(4, np.int32)),
            (af.full((2,), 7, af.uint32, device=device), np.full((2,), 7, np.uint32)),
            (af.arange(5, device=device), np.arange(5, dtype=np.int32)),
            (af.arange(0.0, 1.0, 0.25, device=device), np.arange(0, 1, 0.25, dtype=np.float32)),
            (af.rand((3, 2), seed=4, device=device),
             np.random.default_rng(4).random((3, 2), dtype=np.float32)),
            (af.randn(5, seed=9, device=device),
             np.random.default_rng(9).standard_normal(5, dtype=np.float32)),
            (af.tensor(True, device=device), np.array(True)),
            (af.tensor([[1, 2], [3, 4]], device=device), np.array([[1, 2], [3, 4]], np.int32)),
        ]
        for t, expected in checks:
            assert t.shape == expected.shape and t.dtype.np == expected.dtype
            assert_close(await t.to_data(), expected)


def test_shape_and_dtype_known_before_running():
    dev = af.Device("numpy")  # no server needed: nothing is read
    a = af.tensor(np.zeros((4, 1), np.float32), device=dev)
    b = af.tensor(np.zeros((3,), np.int32), device=dev)
    c = (a + b) > 0
    assert c.shape == (4, 3) and c.dtype is af.bool_
    assert (a.sum(axis=0)).shape == (1,) and a.mean().shape == ()
    assert af.cat([a, a], axis=1).shape == (4, 2)


async def test_reductions_over_long_axes(dev, ref):
    # A long axis is folded in chunked passes (one thread looping over it stops at 65535
    # iterations on lavapipe).
    for shape, axis in (((100_003,), None), ((70_001, 2), 0), ((3, 66_000), 1)):
        data = sample(af.float32, shape, 21, positive=True)
        for op in ("sum", "mean", "max", "min"):
            res = await run_everywhere([dev, ref], lambda t: getattr(t, op)(axis=axis), data)
            check(res, rtol=1e-4)
    ints = sample(af.int32, (200_000,), 3)
    check(await run_everywhere([dev, ref], lambda t: t.sum(), ints))


async def test_float_pow_edge_cases_follow_numpy(dev, ref):
    base = np.array([0.0, 2.0, 4.0, 1.0, -2.0, -2.0, 0.0], np.float32)
    exp_ = np.array([-1.0, -1.0, -0.5, np.nan, 3.0, 0.5, 0.0], np.float32)
    res = await run_everywhere([dev, ref], lambda a, b: a ** b, base, exp_)
    check(res)
    with np.errstate(all="ignore"):
        assert_close(res[0], np.power(base, exp_))


async def test_integer_pow_is_exact_and_wraps_like_numpy(dev, plain, ref):
    a = np.array([5, 7, 2, 0, -1, -3, 1, 3], np.int32)
    b = np.array([11, 11, 30, 3, 3, 3, 5, 0], np.int32)
    res = await run_everywhere([dev, plain, ref], lambda x, y: x ** y, a, b)
    check(res)
    assert_close(res[0], a ** b)  # numpy's own integer power, wrapping included
    # a negative exponent held in a tensor (a Python int one raises: tests/test_numerics_doc.py)
    res = await run_everywhere([dev, ref], lambda x, y: x ** y, np.array([1, -1, 2, 0], np.int32),
                               np.array([-1, -1, -1, -1], np.int32))
    check(res)
    np.testing.assert_array_equal(res[0], [1, -1, 0, 0])
