"""numpy functions and ufuncs on tensors follow one rule (``asyncfusion.lazy.numpy_protocols``):
outside an event loop they read the tensors and run numpy; inside one every one of them
raises BlockingCallError naming the awaitable; operators stay the tensor's, with a numpy
scalar or array on either side.
"""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion import BlockingCallError

X = np.array([[1.5, -2.0, 3.0], [0.25, 4.0, -1.0]], dtype=np.float32)

# (a numpy call on a tensor, the same call on the values, the af function it names)
CALLS = [
    (lambda t: np.sum(t), lambda x: np.sum(x), "af.sum"),
    (lambda t: np.mean(t, axis=0), lambda x: np.mean(x, axis=0), "af.mean"),
    (lambda t: np.std(t, ddof=1), lambda x: np.std(x, ddof=1), "af.std"),
    (lambda t: np.max(t, axis=1, keepdims=True), lambda x: np.max(x, axis=1, keepdims=True),
     "af.max"),
    (lambda t: np.exp(t), lambda x: np.exp(x), "af.exp"),
    (lambda t: np.absolute(t), lambda x: np.absolute(x), "af.abs"),
    (lambda t: np.add(t, 1.0), lambda x: np.add(x, 1.0), "af.add"),
    (lambda t: np.concatenate([t, t]), lambda x: np.concatenate([x, x]), "af.concat"),
    (lambda t: np.where(t > 0, t, 0), None, "af.where"),
    (lambda t: np.add(t, np.ones((2, 3), np.float32)),
     lambda x: np.add(x, np.ones((2, 3), np.float32)), "af.add"),
    (lambda t: np.add.reduce(t, axis=1), lambda x: np.add.reduce(x, axis=1), None),
    (lambda t: np.linalg.norm(t), lambda x: np.linalg.norm(x), None),
]
IDS = ["sum", "mean", "std", "max", "exp", "absolute", "add", "concatenate", "where",
       "add(t,ndarray)", "add.reduce", "linalg.norm"]


@pytest.mark.parametrize("call, oracle, _", CALLS, ids=IDS)
def test_outside_a_loop_numpy_reads_the_tensors_and_computes(call, oracle, _):
    t = af.tensor(X)
    got = call(t)
    assert not isinstance(got, af.Tensor)
    if oracle is None:  # np.where(t > 0, ...): the condition is a tensor too
        want = np.where(X > 0, X, 0)
    else:
        want = oracle(X)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_outside_a_loop_np_sum_and_mean_no_longer_trip_on_out_and_dtype():
    t = af.tensor(X)
    assert float(np.sum(t)) == pytest.approx(float(X.sum()))
    assert float(np.mean(t)) == pytest.approx(float(X.mean()))
    assert np.sum(t, dtype=np.float64).dtype == np.float64


def test_numpy_cannot_write_into_a_tensor():
    t = af.tensor(X)
    with pytest.raises(TypeError, match="cannot write into a tensor"):
        np.add(t, 1.0, out=t)
    with pytest.raises(TypeError, match="cannot write into a tensor"):
        np.exp(X, out=(t,))


def test_a_numpy_scalar_on_the_left_records_the_operator():
    t = af.tensor(X)
    for got, want in [(np.float32(2) * t, 2 * X), (np.float32(1) - t, 1 - X),
                      (np.float32(3) / t, 3 / X), (np.float32(0.5) < t, 0.5 < X),
                      (np.float32(1) >= t, 1 >= X)]:
        assert isinstance(got, af.Tensor)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    i = af.tensor([1, 2, 3], dtype=af.int32)
    shifted = np.int32(1) << i
    assert isinstance(shifted, af.Tensor) and shifted.tolist() == [2, 4, 8]


def test_an_array_on_the_left_of_an_operator_is_refused_as_on_the_right():
    t = af.tensor(X)
    for op in (lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a < b):
        with pytest.raises(TypeError, match="wrap arrays"):
            op(t, X)
        with pytest.raises(TypeError, match="wrap arrays"):
            op(X, t)


# numpy 2.4 keeps a reference to a ufunc.reduce operand whose __array_ufunc__ raised
NUMPY_HOLDS_IT = {"add.reduce"}
IN_LOOP = [pytest.param(*c, id=i, marks=[pytest.mark.af_device(leak_check=False)]
                        if i in NUMPY_HOLDS_IT else []) for c, i in zip(CALLS, IDS)]


@pytest.mark.parametrize("call, _, suggests", IN_LOOP)
async def test_inside_a_loop_every_numpy_call_raises_naming_the_awaitable(dev, call, _,
                                                                         suggests):
    t = af.tensor(X, device=dev)
    with pytest.raises(BlockingCallError) as info:
        call(t)
    message = str(info.value)
    del info  # its traceback's frames hold the tensor
    assert "event loop" in message and "await t.to_numpy()" in message
    if suggests is not None:
        assert f"use {suggests}(...)" in message
    else:
        assert "use af." not in message
    np.testing.assert_array_equal(await t.to_data(), X)  # nothing was read or broken


async def test_inside_a_loop_asarray_raises_as_the_functions_do(dev):
    t = af.tensor(X, device=dev)
    with pytest.raises(BlockingCallError, match=r"await t\.to_numpy\(\)"):
        np.asarray(t)


async def test_inside_a_loop_a_numpy_scalar_operator_still_records(dev):
    t = af.tensor(X, device=dev)
    y = np.float32(2) * t + np.float32(1)
    assert isinstance(y, af.Tensor)
    np.testing.assert_allclose(await y.to_data(), 2 * X + 1, rtol=1e-6)
