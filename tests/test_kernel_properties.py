"""Property test: random programs mixing views, element-wise ops and reductions give the
same values fused, plain (one kernel per op), interpreted by the numpy backend, and in
numpy itself. Views (transposes, reversed and stepped slices, reshapes, new axes) feed
element-wise ops and reductions, whose results feed further ops — so loads through index
maps, fused prologues and epilogues, hoisted views and liveness are all exercised."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncfusion as af
from tests.conftest import assert_close

STEP = st.tuples(st.sampled_from(["unary", "binary", "view", "reduce", "softmax"]),
                 st.integers(0, 10**6), st.integers(0, 10**6), st.booleans())


@st.composite
def programs(draw):
    shapes = draw(st.lists(st.sampled_from([(4, 6), (6,), (4, 1), (2, 3, 4), (6, 4)]),
                           min_size=1, max_size=3))
    return shapes, draw(st.lists(STEP, min_size=1, max_size=8)), draw(st.integers(0, 2**16))


def _view(x, a, np_mode):
    nd = x.ndim
    choice = a % 5
    if choice == 0:
        return x.T
    if choice == 1 and nd:
        return x[::-1] if np_mode else x[::-1]
    if choice == 2 and nd and x.shape[-1] > 1:
        return x[..., 1::2]
    if choice == 3:
        return x.reshape(-1)
    return x[None]


def _reduce(x, a, flag, np_mode):
    if not x.ndim:
        return x
    axis = a % x.ndim
    kind = a % 3
    if kind == 0:
        return x.sum(axis=axis, keepdims=flag)
    if kind == 1:
        return x.max(axis=axis, keepdims=flag)
    return x.mean(axis=axis, keepdims=flag)


def _softmax(x, np_mode):
    if not x.ndim:
        return x
    if np_mode:
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    return af.softmax(x)


def run(program, device):
    """The program on ``device`` (None: numpy); returns the values to compare."""
    shapes, steps, seed = program
    rng = np.random.default_rng(seed)
    np_mode = device is None
    nodes = []
    for shape in shapes:
        data = rng.uniform(-2, 2, shape).astype(np.float32)
        nodes.append(data if np_mode else af.tensor(data, device=device))
    for kind, a, b, flag in steps:
        x = nodes[a % len(nodes)]
        if kind == "unary":
            out = [np.tanh, np.sin, np.abs][a % 3](x) if np_mode else \
                [x.tanh, x.sin, x.abs][a % 3]()
        elif kind == "binary":
            y = nodes[b % len(nodes)]
            try:
                np.broadcast_shapes(x.shape, y.shape)
            except ValueError:
                y = y.sum() if y.ndim else y
            out = x * y + 0.5 if flag else x - y
        elif kind == "view":
            out = _view(x, b, np_mode)
        elif kind == "reduce":
            out = _reduce(x, b, flag, np_mode)
        else:
            out = _softmax(x, np_mode)
        nodes.append(out)
    return nodes[-1:] + nodes[len(shapes):-1][:2]


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(program=programs())
async def test_random_view_reduce_programs_fused_equals_plain_equals_numpy(dev, plain, ref,
                                                                           program):
    expected = [np.asarray(v, dtype=np.float32) for v in run(program, None)]
    for device in (dev, plain, ref):
        got = [await t.to_data() for t in run(program, device)]
        for g, e in zip(got, expected, strict=True):
            assert_close(g, e, rtol=2e-4, atol=2e-4)
