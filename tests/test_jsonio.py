"""asyncfusion.contrib.jsonio: request fields read strictly, results written by one rule.

Every refusal is a RequestError with its status (400 for the body, 422 for a field), the
field's path, and a message naming the field and the form expected."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import asyncfusion as af
from asyncfusion.contrib.jsonio import RequestError, encode, parse_array, parse_body

QUERY = {"shape": (4,), "dtype": af.float32}
ROWS = {"shape": (None, 3), "dtype": af.float32}


def refused(raw: bytes, key: str = "query", **form) -> RequestError:
    with pytest.raises(RequestError) as info:
        parse_array(parse_body(raw), key, **(form or QUERY))
    return info.value


def strict_json(data: bytes) -> object:
    """Parse as standard JSON: NaN and Infinity literals fail."""
    def no_constants(name: str) -> object:
        raise AssertionError(f"{name} is not JSON")

    return json.loads(data, parse_constant=no_constants)


@pytest.mark.parametrize("raw, says", [
    (b"", "the request body is empty"),
    (b"  \n", "the request body is empty"),
    (b"not json", "not valid JSON (Expecting value at line 1, column 1)"),
    (b'{"query": [1, 2', "not valid JSON"),
    (b'{"query": "\xff"}', "not UTF-8"),
    (b"[" * 100_000, "nested too deeply"),
    (b"[1, 2, 3, 4]", "the request body is a list of 4 items: send a JSON object"),
    (b'"query"', "the request body is a string"),
])
def test_a_bad_body_is_a_400_that_says_what_to_send(raw, says):
    with pytest.raises(RequestError) as info:
        parse_body(raw)
    assert info.value.status == 400 and info.value.field is None
    assert says in str(info.value) and "send a JSON object" in str(info.value)
    assert af.http_status(info.value) == 400  # an InputError: the caller's mistake


@pytest.mark.parametrize("raw, field, says", [
    (b'{"q": [1, 2, 3, 4]}', "query",
     "missing field 'query': expected a list of 4 numbers (float32)"),
    (b'{"query": [1, 2, 3]}', "query",
     "query: expected a list of 4 numbers (float32), got a list of 3 items"),
    (b'{"query": 5}', "query", "got 5"),
    (b'{"query": {"a": 1}}', "query", "got an object"),
    (b'{"query": [1, "2", 3, 4]}', "query[1]",
     "query[1]: expected a number (float32), got a string"),
    (b'{"query": [1, 2, true, 4]}', "query[2]", "got true"),
    (b'{"query": [null, 2, 3, 4]}', "query[0]", "got null"),
    (b'{"query": [1, 2, 3, [4]]}', "query[3]", "got a list of 1 item"),
    (b'{"query": [1, NaN, 3, 4]}', "query[1]", "expected a number (float32), got NaN"),
    (b'{"query": [1, 2, Infinity, 4]}', "query[2]", "got Infinity"),
    (b'{"query": [-Infinity, 2, 3, 4]}', "query[0]", "got -Infinity"),
    (b'{"query": [1, 2, 3, 1e39]}', "query[3]",
     "query[3]: 1e+39 is out of range for float32 (expected finite numbers of magnitude "
     "at most 3.4028235e+38)"),
    (b'{"query": [1, -1e39, 3, 4]}', "query[1]", "-1e+39 is out of range for float32"),
    (b'{"query": [1, 2, 1e400, 4]}', "query[2]",
     "a number beyond float64's range is out of range for float32"),
    (b'{"query": [1, 2, 3, 1' + b"0" * 400 + b"]}", "query[3]",
     "an integer of 401 digits is out of range for float32"),
])
def test_a_bad_field_is_a_422_naming_the_field_and_the_form(raw, field, says):
    err = refused(raw)
    assert err.status == 422 and err.field == field
    assert says in str(err)


@pytest.mark.parametrize("raw, field, says", [
    (b'{"x": [[1, 2, 3], [4, 5]]}', "x[1]",
     "x[1]: expected a list of 3 numbers (float32), got a list of 2 items"),
    (b'{"x": []}', "x", "x: expected a non-empty list of lists of 3 numbers (float32)"),
    (b'{"x": [1, 2, 3]}', "x[0]", "expected a list of 3 numbers (float32), got 1"),
    (b'{"x": [[1, 2, 3], [4, 5, "6"]]}', "x[1][2]", "got a string"),
    (b'{"x": [[1, 2, 3], [4, 5, 1e39]]}', "x[1][2]", "1e+39 is out of range for float32"),
])
def test_ragged_and_nested_fields_name_the_row(raw, field, says):
    err = refused(raw, "x", **ROWS)
    assert (err.status, err.field) == (422, field) and says in str(err)


@pytest.mark.parametrize("raw, dtype, says", [
    (b'{"k": 2.0}', af.int32, "k: expected an integer (int32), got 2.0"),
    (b'{"k": true}', af.int32, "got true"),
    (b'{"k": 2147483648}', af.int32,
     "k: 2147483648 is out of range for int32 (expected integers from -2147483648 to "
     "2147483647)"),
    (b'{"k": -1}', af.uint32, "-1 is out of range for uint32"),
    (b'{"k": 70000}', af.int16, "out of range for int16"),
    (b'{"k": 128}', af.int8, "k: 128 is out of range for int8 (expected integers from -128 to "
     "127)"),
    (b'{"k": 256}', af.uint8, "256 is out of range for uint8"),
    (b'{"k": 1}', af.bool_, "k: expected true or false (bool), got 1"),
    (b'{"k": 1e5}', af.float16, "100000.0 is out of range for float16"),
])
def test_scalars_keep_to_their_dtype(raw, dtype, says):
    err = refused(raw, "k", shape=(), dtype=dtype)
    assert (err.status, err.field) == (422, "k") and says in str(err)


def test_good_fields_become_arrays_of_the_dtype():
    body = parse_body(b'{"query": [1, 2.5, -3, 3.4028235e38], "x": [[1, 2, 3]], '
                      b'"k": -2147483648, "b": [true, false], "h": [65504, 1e-9]}')
    q = parse_array(body, "query", **QUERY)
    assert q.dtype == np.float32 and q.tolist()[:3] == [1.0, 2.5, -3.0]
    assert q[3] == np.finfo(np.float32).max  # the top of the range, written as JSON does
    x = parse_array(body, "x", **ROWS)
    assert x.dtype == np.float32 and x.shape == (1, 3)
    k = parse_array(body, "k", shape=(), dtype="int32")
    assert k.dtype == np.int32 and k.shape == () and int(k) == -2**31
    assert parse_array(body, "b", shape=(2,), dtype=af.bool_).tolist() == [True, False]
    h = parse_array(body, "h", shape=(2,), dtype=af.float16)  # tiny values round to 0
    assert h.dtype == np.float16 and h.tolist() == [65504.0, 0.0]
    assert int(parse_array(body, "missing", shape=(), dtype=af.int32, default=5)) == 5


def test_a_nan_literal_in_a_field_not_read_is_a_float_to_the_reader():
    body = parse_body(b'{"note": NaN, "query": [1, 2, 3, 4]}')
    assert isinstance(body["note"], float) and np.isnan(body["note"])
    assert parse_array(body, "query", **QUERY).tolist() == [1.0, 2.0, 3.0, 4.0]


def test_non_finite_results_are_written_as_null():
    content = {"v": np.array([1.5, np.nan, np.inf, -np.inf], np.float32),
               "s": float("nan"), "n": np.float32("-inf"), "i": np.arange(3, dtype=np.int32),
               "nested": [2.0, (float("inf"), {"deep": float("nan")})], "t": "é"}
    out = encode(content)
    assert out == ('{"v":[1.5,null,null,null],"s":null,"n":null,"i":[0,1,2],'
                   '"nested":[2.0,[null,{"deep":null}]],"t":"é"}').encode()
    assert strict_json(out)["v"] == [1.5, None, None, None]
    assert encode({"v": np.array([[1.0, 2.0]]), "b": np.bool_(True)}) == (
        b'{"v":[[1.0,2.0]],"b":true}')
    with pytest.raises(TypeError, match="set has no JSON form"):
        encode({"x": {1, 2}})


@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1),
                  elements=st.floats(width=32)))
def test_results_round_trip_through_a_request_field(values):
    """What encode writes parse_array reads back the same, with null where a value was
    not finite (and then refused, naming the first such element)."""
    body = strict_json(encode({"a": values}))
    shape = values.shape
    finite = np.isfinite(values)
    if finite.all():
        back = parse_array(body, "a", shape=shape, dtype=af.float32)
        np.testing.assert_array_equal(back, values)
    else:
        with pytest.raises(RequestError) as info:
            parse_array(body, "a", shape=shape, dtype=af.float32)
        first = tuple(int(i) for i in np.argwhere(~finite)[0])
        assert info.value.field == "a" + "".join(f"[{i}]" for i in first)
        assert str(info.value).endswith("got null")
