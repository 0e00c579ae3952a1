"""Blocking reads of values already on the host: an upload's, a tensor's read before, and
a basic-index view of a small tensor (reading the tensor once). Counted in rounds."""

from __future__ import annotations

import numpy as np

import asyncfusion as af


def test_reading_elements_one_by_one_costs_one_round():
    dev = af.default_device()
    x = af.tensor(np.arange(24, dtype=np.float32).reshape(4, 6))
    y = af.exp(x * 0.1)
    before = dev.stats().rounds
    got = [[float(y[i, j]) for j in range(6)] for i in range(4)]
    assert dev.stats().rounds - before == 1
    np.testing.assert_allclose(got, np.exp(np.arange(24).reshape(4, 6) * 0.1), rtol=1e-6)


def test_an_upload_and_its_views_read_without_a_round():
    dev = af.default_device()
    data = np.arange(10, dtype=np.int32)
    x = af.tensor(data)
    before = dev.stats().rounds
    assert [int(x[i]) for i in range(10)] == data.tolist()
    assert np.asarray(x[2:7:2]).tolist() == [2, 4, 6] and x[None, -1].tolist() == [9]
    assert dev.stats().rounds == before


def test_an_assigned_view_reads_its_new_values_not_its_source():
    x = af.tensor(np.arange(6, dtype=np.float32))
    y = x * 2.0
    v, w = x[1:4], y[1:4]
    v[0], w[1] = 40.0, 50.0
    assert np.asarray(v).tolist() == [40, 2, 3] and np.asarray(w).tolist() == [2, 50, 6]
    assert np.asarray(x).tolist() == [0, 1, 2, 3, 4, 5]
    assert np.asarray(y).tolist() == [0, 2, 4, 6, 8, 10]


def test_a_view_of_a_large_tensor_reads_only_itself():
    dev = af.default_device()
    x = af.arange(5000) * 3
    before = dev.stats().launches
    assert int(x[4999]) == 14997
    assert dev.stats().launches - before == 1  # one kernel: the element, not the 5000


def test_elements_of_a_known_tensor_convert_as_arrays_do():
    x = af.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    rows = np.asarray([[x[i, j] for j in range(3)] for i in range(2)])
    assert rows.dtype == np.float32 and rows.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert np.asarray(x[1, 2]).shape == () and float(x[1, 2]) == 5.0


def test_a_nested_list_of_computed_elements_is_read_in_one_round():
    dev = af.default_device()
    x = af.tensor(np.arange(6, dtype=np.float32))
    y = af.tensor(np.arange(4, dtype=np.float32))
    cells = [[x[i] * y[j] for j in range(4)] for i in range(6)]
    before = dev.stats().rounds
    got = af.asarray(cells)
    assert dev.stats().rounds - before == 1
    assert (got.numpy() == np.outer(np.arange(6), np.arange(4))).all()
    assert np.asarray([[float(c) for c in row] for row in cells]).shape == (6, 4)
    assert dev.stats().rounds - before == 1  # got is an upload and the cells were read
