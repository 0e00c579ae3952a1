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
