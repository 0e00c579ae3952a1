"""The registration fast path: scalars that need no check or rounding go in as they are
(positions cached per op and operand types); every other scalar still takes the checked
path. numpy is the oracle; results must not depend on which call filled the cache."""

from __future__ import annotations

import numpy as np
import pytest

import asyncfusion as af

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
async def test_float_scalars_on_both_sides_match_numpy(ref, dtype):
    x = RNG.standard_normal(7).astype(dtype)
    t = af.tensor(x, dtype=np.dtype(dtype).name, device=ref)  # float64 only when asked for
    for s in (0.1, 3.0, -2.5):  # float16: the scalar is rounded to float16 first
        for got, want in ((t * s, x * dtype(s)), (s - t, dtype(s) - x),
                          (af.where(t > 0, s, t), np.where(x > 0, dtype(s), x))):
            out = await got.to_data()
            assert out.dtype == want.dtype
            np.testing.assert_array_equal(out, want)


async def test_scalar_types_of_one_op_do_not_share_a_cache_entry(ref):
    x = np.array([1.5, -2.0, 3.25], np.float16)
    t = af.tensor(x, device=ref)
    near = 1 + 2**-11  # float16 rounds it to 1.0; unrounded, 1.5 * near rounds up
    for s in (near, np.float64(near), True, near):
        want = x * np.float16(s)  # True: 1
        np.testing.assert_array_equal(await (t * s).to_data(), want)


async def test_bool_scalars_go_in_unchanged(ref):
    b = np.array([True, False, True])
    t = af.tensor(b, device=ref)
    np.testing.assert_array_equal(await (t & True).to_data(), b & True)
    np.testing.assert_array_equal(await (t | False).to_data(), b | False)
    f = af.tensor(np.array([1.0, 2.0], np.float32), device=ref)
    np.testing.assert_array_equal(await (f * True).to_data(), np.array([1.0, 2.0], np.float32))


async def test_checked_scalars_still_raise_at_the_call(ref):
    i = af.tensor(np.array([1, 2], np.int32), device=ref)
    f = af.tensor(np.array([1.0, 2.0], np.float32), device=ref)
    i + 1, f + 1.0  # fill the cache with values that pass
    with pytest.raises(af.DTypeError, match="does not fit"):
        i + 2**40
    with pytest.raises(OverflowError, match="too large"):
        f + 10**400


def _record(dev, fn, *args):
    """The op record and input ids a call appended to ``dev``'s registration log."""
    before = len(dev.streams.log)
    out = fn(*args)
    assert len(dev.streams.log) == before + 1
    _, _, op, inputs, out_ir = dev.streams.log[-1]
    return out, op, tuple(inputs), out_ir


def _shape_of(op, ids):
    """An op record with its tensors named by position in the call, not by id."""
    slots = tuple((ids.index(a.id) if hasattr(a, "id") else None, a.dtype,
                   getattr(a, "shape", None), getattr(a, "status", None)) for a in op.args)
    return (op.op, op.compute, slots, op.scalars, op.out.dtype, op.out.shape, op.out.status)


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "bool", "float16"])
async def test_the_short_path_records_what_the_whole_way_records(ref, dtype):
    # unary/binary (record.py) take a shorter path for calls learned from one that went
    # the whole way (elementwise): every op of the registry, on tensors of one shape and
    # with bool and float scalars, must record the same op, inputs and output.
    from asyncfusion.lazy import record
    from asyncfusion.ops import PRIMITIVES

    x = af.tensor(np.array([1, 0, 3, 2], dtype=dtype), device=ref)
    y = af.tensor(np.array([2, 1, 1, 0], dtype=dtype), device=ref)
    m = af.tensor(np.arange(8).reshape(2, 1, 4).astype(dtype), device=ref)
    c = af.tensor(np.array([[1], [0], [2]], dtype=dtype), device=ref)
    compared = 0
    for p in PRIMITIVES.values():
        if not p.doc or p.arity > 2:
            continue
        fn = getattr(af, p.public)
        seconds = [(x,), (y,)] if p.arity == 1 else [(x, y), (y, x), (x, 2.5), (y, True),
                                                           (2.5, x), (False, y), (m, x),
                                                           (x, m), (c, x), (m, c)]
        for args in seconds:
            try:
                _, whole, ids, _ = _record(ref, record.elementwise, p.name, *args)
            except (af.DTypeError, TypeError):
                continue  # refused the whole way: refused the short way too
            for _ in range(2):  # the first call learns, the second takes the short path
                _, short, sids, _ = _record(ref, fn, *args)
                ours = [a.id for a in args if isinstance(a, af.Tensor)]
                assert list(sids) == ours == list(ids)
                assert _shape_of(short, sids) == _shape_of(whole, ids), (p.name, args)
            compared += 1
    assert compared > 20
    short = {k: v for k, v in record._SHORT.items() if v is not None}
    assert short and not [k for k, v in short.items() if k[0] == "pow" or v[1] is af.int64]
    assert [k for k in record._SHORT if k[0] == "pow"]  # learned as "the whole way"
    await ref.sync()


async def test_calls_the_short_path_does_not_learn_still_raise_and_broadcast(ref):
    f = af.tensor(np.ones((2, 3), np.float32), device=ref)
    row = af.tensor(np.arange(3, dtype=np.float32), device=ref)
    i = af.tensor(np.array([1, 2], np.int8), device=ref)
    for _ in range(2):
        np.testing.assert_array_equal(await (f + row).to_data(), np.ones((2, 3)) + np.arange(3))
        with pytest.raises(af.DTypeError, match="does not fit"):
            i + 300
        with pytest.raises(af.ShapeError, match=r"\(2, 3\) and \(2,\) do not broadcast"):
            f + row[:2]
        np.testing.assert_array_equal(await (f ** 2).to_data(), np.ones((2, 3)))


async def test_a_square_exponent_records_square_by_either_path(ref):
    f = af.tensor(np.array([1.5, -2.0], np.float32), device=ref)
    i = af.tensor(np.array([3, -4], np.int32), device=ref)
    for x, e, op in ((f, 2, "square"), (f, 2.0, "square"), (i, 2, "square"), (i, 2.0, "pow"),
                     (f, 3, "pow")):
        for _ in range(2):  # the whole way, then the short one
            out, rec, _, _ = _record(ref, lambda: x ** e)
            assert rec.op == op, (x.dtype, e)
            np.testing.assert_allclose(await out.to_data(), np.asarray(await x.to_data()) ** e)


async def test_a_broadcast_larger_than_the_largest_buffer_raises_on_either_path(dev):
    col, row = af.zeros((2**16, 1), device=dev), af.zeros((1, 2**16), device=dev)
    col + col  # learns add of two float32 tensors
    for _ in range(2):
        with pytest.raises(af.LimitError, match="largest buffer"):
            col + row
    np.testing.assert_array_equal(await (col[:2] + row[:, :3]).to_data(), np.zeros((2, 3)))
