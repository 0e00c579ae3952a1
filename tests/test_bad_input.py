"""Bad input, refused at the call site; and the edge cases that must work.

Part 1 is a catalogue (``BAD``): each case builds valid inputs, makes ONE bad call and
asserts the exact exception type and that the message names what was wrong. The bad
call sits alone inside ``pytest.raises`` with no ``await`` (except the cases whose bad
call *is* a read), so an error raised later, at read time, fails the case. After every
case the inputs are read back and a small known program is run on the same device:
a refused call must lose nothing.

Part 2 holds the valid edge cases (empty and zero-size tensors, 0-d tensors, NaN and
inf, numpy dtype conversions). Each runs on the wgpu device with fusion, without fusion
and on the numpy reference backend, and is compared with numpy.

Limit cases: this device's real ``max_buffer_size`` (2 GiB on lavapipe) is exceeded
with broadcasts of small inputs, or with shapes so large numpy itself could never
allocate them. To check that every *creation path* consults the limit without touching
GBs of host memory, some cases lower the limit of the device under test to 1 KiB for
the duration of the call (``limit=``); it is restored before the after-check.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

import numpy as np
import pytest

import asyncfusion as af
from asyncfusion.api import creation
from asyncfusion._core.errors import (AxisError, BlockingCallError, DataError, DeviceClosedError,
                                DeviceMismatchError, DTypeError, LimitError, ShapeError)
from tests.conftest import assert_close

NAN, INF = float("nan"), float("inf")
BIG = (2**31, 2**31)  # 2**62 elements: over any device limit, and never allocatable by numpy
N = 2**16  # (1, N) op (N, 1) -> 2**32 elements (16 GiB) from two 256 KiB inputs
KIB = 1024


# ------------------------------------------------------------------------------------------
# The environment a bad case runs in
# ------------------------------------------------------------------------------------------
class Env:
    """The devices of one case, and the inputs it made (to be read back afterwards)."""

    def __init__(self, dev: af.Device, ref: af.Device, other: af.Device | None) -> None:
        self.dev = dev
        self.ref = ref
        self.other = other
        self.kept: list[tuple[af.Tensor, np.ndarray]] = []

    def t(self, data: Any, dtype: Any = np.float32, device: af.Device | None = None) -> af.Tensor:
        """A valid input tensor on ``device`` (default: the device under test)."""
        arr = np.asarray(data, dtype=dtype)
        x = af.tensor(arr, device=device or self.dev)
        self.kept.append((x, arr))
        return x

    def b(self, data: Any) -> af.Tensor:
        return self.t(data, np.bool_)

    def i(self, data: Any) -> af.Tensor:
        return self.t(data, np.int32)

    def u(self, data: Any) -> af.Tensor:
        return self.t(data, np.uint32)

    def ones(self, *shape: int) -> af.Tensor:
        return self.t(np.ones(shape, np.float32))


async def closed_device(e: Env) -> tuple[af.Device, af.Tensor, af.Tensor]:
    """A device that was opened, used and closed; a tensor read on it, and one never run."""
    async with af.open_device() as d:
        read = af.tensor([1.0, 2.0], device=d)
        await read.to_data()
        lazy = read * 2.0
    return d, read, lazy


PROBE_IN = np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32)


async def assert_nothing_lost(e: Env) -> None:
    """Every input of the case still reads back, and each device still computes."""
    for x, arr in e.kept:
        assert_close(await x.to_data(), arr)
    expected = np.exp(PROBE_IN * np.float32(0.5) - np.float32(1.0))
    for device in {id(d): d for d in (e.dev, e.ref, e.other) if d is not None}.values():
        x = af.tensor(PROBE_IN, device=device)
        y = (x * 0.5 - 1.0).exp()
        assert_close(await y.to_data(), expected)
        assert_close(await y.sum().to_data(), expected.sum(dtype=np.float32))
        assert_close(await af.cat([y, x], axis=0).to_data(), np.concatenate([expected, PROBE_IN]))


# ------------------------------------------------------------------------------------------
# The catalogue
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Bad:
    id: str
    setup: Callable[[Env], Any]  # returns the call's arguments (a tuple; may be awaitable)
    call: Callable[..., Any]  # the bad call; returns a coroutine only for read cases
    exc: type[BaseException]
    match: str | Callable[[Env, tuple], str]  # regex, or a function making one
    limit: int | None = None  # lower the device's max_buffer_size during the call
    other: bool = False  # open a second wgpu device as env.other


def lit(*parts: Any) -> str:
    """A regex matching ``parts`` (rendered with str) in this order, anything between."""
    return ".*".join(re.escape(str(p)) for p in parts)


def shapes(a: tuple, b: tuple, op: Callable[[Any, Any], Any], what: str) -> Bad:
    """Two float tensors of shapes ``a`` and ``b`` that do not broadcast."""
    return Bad(f"shape-{what}-{a}-{b}", lambda e: (e.ones(*a), e.ones(*b)), op, ShapeError,
               lit(a, b))


def devices_named(e: Env, args: tuple) -> str:
    first = args[0].device
    second = next(a.device for a in args if isinstance(a, af.Tensor) and a.device is not first)
    return lit(repr(first), repr(second))


def tensor_ids(e: Env, args: tuple) -> str:
    a, b = args
    return lit(f"t{a.id}", f"t{b.id}", repr(a.device), repr(b.device))


def over_limit(shape: tuple, what: str) -> Callable[[Env, tuple], str]:
    nbytes = int(np.prod(shape, dtype=object)) * 4
    return lambda e, args: lit(what, shape, nbytes, e.dev.max_buffer_size)


def limit_of_cat(e: Env, args: tuple) -> str:
    return lit("cat", (300,), 1200, KIB)


BAD: list[Bad] = [
    # -- shapes that do not broadcast, ranks 1 to 4 -----------------------------------------
    shapes((3,), (4,), lambda a, b: a + b, "add-rank1"),
    shapes((2, 3), (3, 2), lambda a, b: a * b, "mul-rank2"),
    shapes((2, 3), (2,), lambda a, b: a - b, "sub-rank2-rank1"),
    shapes((2, 1, 4), (3, 5), lambda a, b: a / b, "div-rank3-rank2"),
    shapes((4, 2, 3, 1), (5, 3, 1), af.maximum, "maximum-rank4-rank3"),
    shapes((0,), (2,), lambda a, b: a < b, "lt-empty-vs-2"),
    shapes((3, 0), (3, 2), af.minimum, "minimum-zero-size"),
    Bad("shape-where-values", lambda e: (e.b([True, False, True]), e.ones(2, 3), e.ones(4)),
        af.where, ShapeError, lit((2, 3), (4,))),
    Bad("shape-cat-differ-outside-axis", lambda e: (e.ones(2, 3), e.ones(2, 4)),
        lambda a, b: af.cat([a, b], axis=0), ShapeError, lit((2, 3), (2, 4), "axis 0")),
    Bad("shape-cat-ranks-differ", lambda e: (e.ones(2, 3), e.ones(3)),
        lambda a, b: af.cat([a, b]), ShapeError, lit("ranks", (2, 3), (3,))),
    Bad("shape-max-of-empty-axis", lambda e: (e.ones(3, 0),), lambda x: x.max(axis=1),
        ShapeError, lit("max", "empty", (3, 0))),
    Bad("shape-min-of-empty-all", lambda e: (e.ones(0),), lambda x: x.min(),
        ShapeError, lit("min", "empty", (0,))),
    # -- dtype combinations refused --------------------------------------------------------
    Bad("dtype-int32-add-uint64", lambda e: (e.i([1, 2]), af.tensor([1, 2], af.uint64,
                                                                     device=e.dev)),
        lambda a, b: a + b, DTypeError, lit("int32", "uint64", "no common integer type")),
    Bad("dtype-uint64-lt-int32", lambda e: (af.tensor([1, 2], af.uint64, device=e.dev),
                                            e.i([1, 2])),
        lambda a, b: a < b, DTypeError, lit("uint64", "int32", "astype(asyncfusion.int64)")),
    Bad("dtype-bool-add-bool", lambda e: (e.b([True]), e.b([False])), lambda a, b: a + b,
        DTypeError, lit("add", "bool")),
    Bad("dtype-bool-mul-float32", lambda e: (e.b([True, False]), e.ones(2)),
        lambda a, b: a * b, DTypeError, lit("bool", "float32")),
    Bad("dtype-bool-add-float-scalar", lambda e: (e.b([True, False]),), lambda a: a + 1.5,
        DTypeError, lit("bool", "1.5")),
    Bad("dtype-bool-neg", lambda e: (e.b([True, False]),), lambda a: -a,
        DTypeError, lit("neg", "bool")),
    Bad("dtype-exp-of-bool", lambda e: (e.b([True, False]),), lambda a: a.exp(),
        DTypeError, lit("exp", "bool")),
    Bad("dtype-sum-of-bool", lambda e: (e.b([True, False]),), lambda a: a.sum(),
        DTypeError, lit("sum", "bool")),
    Bad("dtype-and-of-floats", lambda e: (e.ones(2), e.ones(2)), lambda a, b: a & b,
        DTypeError, lit("and", "bool", "float32")),
    Bad("dtype-invert-of-float", lambda e: (e.ones(2),), lambda a: ~a,
        DTypeError, lit("invert", "integer or bool", "float32")),
    Bad("dtype-or-of-float", lambda e: (e.ones(1), e.ones(1)), lambda a, b: a | b,
        DTypeError, lit("or", "integer or bool", "float32")),
    Bad("dtype-shift-of-bool", lambda e: (e.ones(1) > 0,), lambda a: a << a,
        DTypeError, lit("shift", "integer", "bool")),
    Bad("dtype-logical-xor-of-int32", lambda e: (e.i([1]), e.i([0])), af.logical_xor,
        DTypeError, lit("logical_xor", "bool", "int32")),
    Bad("dtype-where-float-condition", lambda e: (e.ones(2), e.ones(2), e.ones(2)),
        af.where, DTypeError, lit("condition", "bool")),
    Bad("dtype-int32-scalar-out-of-range", lambda e: (e.i([1, 2]),), lambda a: a + 2**40,
        DTypeError, lit(2**40, "int32")),
    Bad("dtype-uint32-negative-scalar", lambda e: (e.u([1, 2]),), lambda a: a * -1,
        DTypeError, lit(-1, "uint32")),
    Bad("dtype-cat-bool-float32", lambda e: (e.ones(2), e.b([True, False])),
        lambda a, b: af.cat([a, b]), DTypeError, lit("float32", "bool", "only combines")),
    Bad("dtype-float64-sigmoid", lambda e: (e.ones(2),),
        lambda a: a.astype("float64").sigmoid(), DTypeError,
        lit("sigmoid", "float64", "asyncfusion.float32")),
    Bad("dtype-complex64-less", lambda e: (e.t([1 + 2j], np.complex64),),
        lambda z: z < z, DTypeError, lit("less", "no order", "af.real(z)")),
    Bad("dtype-complex64-astype-int32", lambda e: (e.t([1 + 2j], np.complex64),),
        lambda z: z.astype(af.int32), DTypeError, lit("complex64", "imaginary", "af.real(z)")),
    # -- tensors of two devices in one op --------------------------------------------------
    Bad("device-add-wgpu-numpy", lambda e: (e.ones(3), e.t([1, 2, 3], device=e.ref)),
        lambda a, b: a + b, DeviceMismatchError, devices_named),
    Bad("device-add-two-wgpu", lambda e: (e.ones(3), e.t([1, 2, 3], device=e.other)),
        lambda a, b: a + b, DeviceMismatchError, devices_named, other=True),
    Bad("device-cat-two-wgpu", lambda e: (e.ones(3), e.t([1, 2, 3], device=e.other)),
        lambda a, b: af.cat([a, b]), DeviceMismatchError, tensor_ids, other=True),
    Bad("device-cat-wgpu-numpy", lambda e: (e.ones(3), e.t([1, 2, 3], device=e.ref)),
        lambda a, b: af.cat([a, b]), DeviceMismatchError, tensor_ids),
    Bad("device-where-value-elsewhere",
        lambda e: (e.b([True, False]), e.t([1, 2], device=e.ref), e.ones(2)),
        af.where, DeviceMismatchError, devices_named),
    # -- data tensor() cannot hold ---------------------------------------------------------
    Bad("data-ragged", lambda e: (e.dev,), lambda d: af.tensor([[1, 2], [3]], device=d),
        DataError, lit("ragged")),
    Bad("data-ragged-deep", lambda e: (e.dev,),
        lambda d: af.tensor([[1.0, 2.0], [3.0, [4.0]]], device=d), DataError, lit("ragged")),
    Bad("data-string", lambda e: (e.dev,), lambda d: af.tensor("abc", device=d),
        DataError, lit("abc")),
    Bad("data-list-of-strings", lambda e: (e.dev,), lambda d: af.tensor(["1", "2"], device=d),
        DataError, lit("<U1")),
    Bad("data-bytes", lambda e: (e.dev,), lambda d: af.tensor(b"xyz", device=d),
        DataError, lit("xyz")),
    Bad("data-none", lambda e: (e.dev,), lambda d: af.tensor(None, device=d),
        DataError, lit("None")),
    Bad("data-list-with-none", lambda e: (e.dev,), lambda d: af.tensor([1.0, None], device=d),
        DataError, lit("object")),
    Bad("data-object", lambda e: (e.dev,), lambda d: af.tensor(object(), device=d),
        DataError, lit("object")),
    Bad("data-dict", lambda e: (e.dev,), lambda d: af.tensor({"a": 1}, device=d),
        DataError, lit("object")),
    Bad("blocking-list-of-tensors", lambda e: (e.ones(2),),  # a plain script reads them
        lambda a: af.tensor([a, a], device=a.device), BlockingCallError,
        lit("np.asarray(t)", "await")),
    Bad("data-a-tensor", lambda e: (e.ones(2),), lambda a: af.tensor(a, device=a.device),
        DataError, lit("Tensor")),
    Bad("data-complex-into-float32", lambda e: (np.array([1 + 2j]), e.dev),
        lambda z, d: af.tensor(z, dtype=af.float32, device=d), DataError,
        lit("complex data", "float32", "imaginary", "asyncfusion.complex64")),
    Bad("data-complex-sort", lambda e: (e.t([1 + 2j, 3j], np.complex64),),
        lambda z: af.sort(z), DTypeError, lit("complex64", "af.real(z)")),
    Bad("data-int64-over-int32", lambda e: (np.array([-5, 2**32], np.int64), e.dev),
        lambda a, d: af.tensor(a, device=d), DataError, lit(-5, 2**32, "int32")),
    Bad("data-int64-under-int32", lambda e: (np.array([-(2**31) - 1, 0], np.int64), e.dev),
        lambda a, d: af.tensor(a, device=d), DataError, lit(-(2**31) - 1, "int32")),
    Bad("data-python-int-over-int32", lambda e: (e.dev,),
        lambda d: af.tensor([1, 2**40], dtype=af.int32, device=d), DataError,
        lit(2**40, "int32")),
    Bad("data-uint64-over-uint32", lambda e: (np.array([2**33], np.uint64), e.dev),
        lambda a, d: af.tensor(a, device=d), DataError, lit(2**33, "uint32")),
    Bad("data-negative-as-uint32", lambda e: (e.dev,),
        lambda d: af.tensor([-1, 3], dtype=af.uint32, device=d), DataError, lit(-1, "uint32")),
    Bad("data-dtype-int8-over-range", lambda e: (e.dev,),
        lambda d: af.tensor([1, 128], dtype="int8", device=d), DataError, lit(128, "int8")),
    Bad("data-dtype-int4-requested", lambda e: (e.dev,),
        lambda d: af.tensor([1], dtype="int4", device=d), DTypeError, lit("int4", "int8")),
    Bad("dtype-float64-scalar-sigmoid", lambda e: (e.dev,),
        lambda d: af.tensor([2.0], dtype=np.float64, device=d).sigmoid(), DTypeError,
        lit("sigmoid", "float64", "asyncfusion.float32")),
    Bad("data-full-value-over-int32", lambda e: (e.dev,),
        lambda d: af.full((2,), 2**40, dtype=af.int32, device=d), DataError,
        lit(2**40, "int32")),
    Bad("data-full-negative-uint32", lambda e: (e.dev,),
        lambda d: af.full((2,), -1, dtype=af.uint32, device=d), DataError, lit(-1, "uint32")),
    # -- invalid axes --------------------------------------------------------------------
    Bad("axis-sum-too-large", lambda e: (e.ones(2, 3),), lambda x: x.sum(axis=2),
        AxisError, lit("sum", "axis 2", "rank 2")),
    Bad("axis-mean-too-negative", lambda e: (e.ones(2, 3),), lambda x: x.mean(axis=-3),
        AxisError, lit("mean", "axis -3", "rank 2")),
    Bad("axis-max-float", lambda e: (e.ones(2, 3),), lambda x: x.max(axis=1.0),
        AxisError, lit("max", "int", "float")),
    Bad("axis-min-str", lambda e: (e.ones(2, 3),), lambda x: x.min(axis="0"),
        AxisError, lit("min", "int", "str")),
    Bad("axis-sum-bool", lambda e: (e.ones(2, 3),), lambda x: x.sum(axis=True),
        AxisError, lit("sum", "int", "bool")),
    Bad("axis-sum-tuple-repeated", lambda e: (e.ones(2, 3),), lambda x: x.sum(axis=(0, 0)),
        AxisError, lit("sum", "axis (0, 0)", "twice")),
    Bad("axis-argmax-tuple", lambda e: (e.ones(2, 3),), lambda x: x.argmax(axis=(0, 1)),
        AxisError, lit("argmax", "one axis", "(0, 1)")),
    Bad("axis-sum-0d", lambda e: (e.t(3.0),), lambda x: x.sum(axis=0),
        AxisError, lit("sum", "0-d", "axis 0")),
    Bad("axis-max-0d-negative", lambda e: (e.t(3.0),), lambda x: x.max(axis=-1),
        AxisError, lit("max", "0-d", "axis -1")),
    Bad("axis-cat-too-large", lambda e: (e.ones(2), e.ones(3)),
        lambda a, b: af.cat([a, b], axis=1), AxisError, lit("cat", "axis 1", "rank 1")),
    Bad("axis-cat-too-negative", lambda e: (e.ones(2), e.ones(3)),
        lambda a, b: af.cat([a, b], axis=-2), AxisError, lit("cat", "axis -2", "rank 1")),
    Bad("axis-cat-float", lambda e: (e.ones(2), e.ones(3)),
        lambda a, b: af.cat([a, b], axis=0.0), AxisError, lit("cat", "int", "float")),
    Bad("axis-cat-0d", lambda e: (e.t(1.0), e.t(2.0)), lambda a, b: af.cat([a, b]),
        AxisError, lit("cat", "0-d", "axis 0")),
    # -- invalid reshape -------------------------------------------------------------------
    Bad("reshape-wrong-size", lambda e: (e.ones(2, 3),), lambda x: x.reshape(4),
        ShapeError, lit((2, 3), "6 elements", (4,))),
    Bad("reshape-wrong-size-inferred", lambda e: (e.ones(2, 3),), lambda x: x.reshape(4, -1),
        ShapeError, lit((2, 3), (4, -1))),
    Bad("reshape-two-minus-one", lambda e: (e.ones(2, 3),), lambda x: x.reshape(-1, -1),
        ShapeError, lit((-1, -1), "one -1")),
    Bad("reshape-negative", lambda e: (e.ones(2, 3),), lambda x: x.reshape((-2, -3)),
        ShapeError, lit((-2, -3))),
    Bad("reshape-float-dim", lambda e: (e.ones(2, 3),), lambda x: x.reshape(2.0, 3),
        ShapeError, lit("ints", "2.0")),
    Bad("reshape-empty-infer", lambda e: (e.ones(0, 3),), lambda x: x.reshape(0, -1),
        ShapeError, lit((0, 3), (0, -1))),
    # -- invalid shapes for creation ---------------------------------------------------------
    Bad("create-zeros-negative", lambda e: (e.dev,), lambda d: af.zeros((-1, 3), device=d),
        ShapeError, lit((-1, 3))),
    Bad("create-full-negative", lambda e: (e.dev,), lambda d: af.full((3, -2), 1.0, device=d),
        ShapeError, lit((3, -2))),
    Bad("create-zeros-float-dim", lambda e: (e.dev,), lambda d: af.zeros((2.5,), device=d),
        ShapeError, lit((2.5,))),
    Bad("create-ones-str-dim", lambda e: (e.dev,), lambda d: af.ones((2, "3"), device=d),
        ShapeError, lit((2, "3"))),
    Bad("create-zeros-none", lambda e: (e.dev,), lambda d: af.zeros(None, device=d),
        ShapeError, lit("None")),
    Bad("create-rand-negative", lambda e: (e.dev,), lambda d: af.rand((-4,), device=d),
        ShapeError, lit((-4,))),
    Bad("create-arange-step-zero", lambda e: (e.dev,), lambda d: af.arange(0, 5, 0, device=d),
        ShapeError, lit("step")),
    # -- over the device's buffer limit (real limit) ----------------------------------------
    Bad("limit-broadcast-add", lambda e: (e.ones(1, N), e.ones(N, 1)), lambda a, b: a + b,
        LimitError, over_limit((N, N), "add")),
    Bad("limit-broadcast-compare", lambda e: (e.ones(1, N), e.ones(N, 1)), lambda a, b: a < b,
        LimitError, over_limit((N, N), "lt")),
    Bad("limit-broadcast-where", lambda e: (e.b(np.ones((N, 1), bool)), e.ones(1, N)),
        lambda c, a: af.where(c, a, 0.0), LimitError, over_limit((N, N), "where")),
    Bad("limit-zeros-huge", lambda e: (e.dev,), lambda d: af.zeros(BIG, device=d),
        LimitError, over_limit(BIG, "")),
    Bad("limit-rand-huge", lambda e: (e.dev,), lambda d: af.rand(BIG, device=d),
        LimitError, over_limit(BIG, "")),
    Bad("limit-tensor-of-broadcast-view",
        lambda e: (np.broadcast_to(np.float32(0), (2**20, 2**20)), e.dev),
        lambda v, d: af.tensor(v, device=d), LimitError, over_limit((2**20, 2**20), "tensor")),
    # -- over the limit, with the device's limit lowered to 1 KiB for the call --------------
    Bad("limit1k-zeros", lambda e: (e.dev,), lambda d: af.zeros((257,), device=d),
        LimitError, lit((257,), 1028, KIB), limit=KIB),
    Bad("limit1k-full", lambda e: (e.dev,), lambda d: af.full((16, 17), 2.0, device=d),
        LimitError, lit((16, 17), 1088, KIB), limit=KIB),
    Bad("limit1k-tensor", lambda e: (np.ones(300, np.float32), e.dev),
        lambda a, d: af.tensor(a, device=d), LimitError, lit((300,), 1200, KIB), limit=KIB),
    Bad("limit1k-arange", lambda e: (e.dev,), lambda d: af.arange(300, device=d),
        LimitError, lit((300,), 1200, KIB), limit=KIB),
    Bad("limit1k-randn", lambda e: (e.dev,), lambda d: af.randn((300,), seed=1, device=d),
        LimitError, lit((300,), 1200, KIB), limit=KIB),
    Bad("limit1k-cat", lambda e: (e.ones(200), e.ones(100)), lambda a, b: af.cat([a, b]),
        LimitError, limit_of_cat, limit=KIB),
    Bad("limit1k-broadcast-mul", lambda e: (e.ones(1, 20), e.ones(20, 1)),
        lambda a, b: a * b, LimitError, lit("mul", (20, 20), 1600, KIB), limit=KIB),
    # -- closed devices --------------------------------------------------------------------
    Bad("closed-tensor", closed_device, lambda d, r, z: af.tensor([1.0], device=d),
        DeviceClosedError, lit("closed")),
    Bad("closed-zeros", closed_device, lambda d, r, z: af.zeros((2,), device=d),
        DeviceClosedError, lit("closed")),
    Bad("closed-op-on-tensor", closed_device, lambda d, r, z: r + 1.0,
        DeviceClosedError, lit("closed")),
    Bad("closed-read-computed", closed_device, lambda d, r, z: r.to_data(),
        DeviceClosedError, lit("closed")),
    Bad("closed-read-lazy", closed_device, lambda d, r, z: z.to_data(),
        DeviceClosedError, lit("closed")),
    Bad("closed-sync", closed_device, lambda d, r, z: d.sync(),
        DeviceClosedError, lit("closed")),
    # -- blocking doors inside a running event loop -----------------------------------------
    Bad("blocking-to-data-sync", lambda e: (e.ones(2) + 1.0,), lambda x: x.to_data_sync(),
        BlockingCallError, lit("to_data_sync", "event loop", "await")),
    Bad("blocking-to-data-sync-numpy", lambda e: (e.t([1.0], device=e.ref),),
        lambda x: x.to_data_sync(), BlockingCallError, lit("to_data_sync", "await")),
    Bad("blocking-sync-blocking", lambda e: (e.dev,), lambda d: d.sync_blocking(),
        BlockingCallError, lit("sync_blocking", "await")),
    # -- Python protocol misuse --------------------------------------------------------------
    Bad("shape-bool-of-tensor", lambda e: (e.ones(2),), bool, ShapeError,
        lit("truth value", "2 elements", "ambiguous")),
    Bad("shape-if-comparison", lambda e: (e.ones(2),), lambda x: bool(x > 0),
        ShapeError, lit("truth value", "ambiguous")),
    Bad("blocking-bool-of-0d", lambda e: (e.t(1.0),), lambda x: not x, BlockingCallError,
        lit("bool(t)", "event loop", "await")),
    Bad("type-len-of-0d", lambda e: (e.t(1.0),), len, TypeError, lit("0-d")),
    Bad("type-add-str", lambda e: (e.ones(2),), lambda x: x + "a", TypeError, lit("str")),
    Bad("type-add-ndarray", lambda e: (e.ones(2),), lambda x: x + np.ones(2),
        TypeError, lit("ndarray")),
    Bad("type-ndarray-radd", lambda e: (e.ones(2),), lambda x: np.ones(2) + x,
        TypeError, lit("ndarray")),
    Bad("type-add-none", lambda e: (e.ones(2),), lambda x: x + None, TypeError, lit("NoneType")),
    Bad("type-cat-empty-list", lambda e: (), lambda: af.cat([]), TypeError, lit("non-empty")),
    Bad("type-cat-non-tensor", lambda e: (e.ones(2),), lambda x: af.cat([x, np.ones(2)]),
        TypeError, lit("Tensors")),
    Bad("type-minimum-no-tensor", lambda e: (), lambda: af.minimum(1.0, 2.0),
        TypeError, lit("Tensor")),
    Bad("type-where-no-value-tensor", lambda e: (e.b([True, False]),),
        lambda c: af.where(c, 1.0, 2.0), TypeError, lit("tensor")),
]


@pytest.mark.parametrize("case", BAD, ids=[c.id for c in BAD])
async def test_bad_input_raises_at_call_site(case: Bad, dev, ref, monkeypatch):
    if case.other:
        async with af.open_device() as other:
            await _run_bad(case, Env(dev, ref, other), monkeypatch)
    else:
        await _run_bad(case, Env(dev, ref, None), monkeypatch)


async def _run_bad(case: Bad, e: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    args = case.setup(e)
    if hasattr(args, "__await__"):
        args = await args
    pattern = case.match(e, args) if callable(case.match) else case.match
    with monkeypatch.context() as m:
        if case.limit is not None:
            m.setattr(e.dev.backend, "max_buffer_size", case.limit)
        with pytest.raises(case.exc, match=pattern) as info:
            result = case.call(*args)  # the bad call itself: no await before it raises
            if hasattr(result, "__await__"):  # only reads return awaitables
                await result
    assert type(info.value) is case.exc, f"raised {type(info.value).__name__}, a subclass"
    await assert_nothing_lost(e)


def test_catalogue_is_complete():
    ids = [c.id for c in BAD]
    assert len(ids) == len(set(ids)) >= 35
    raised = {c.exc for c in BAD}
    assert raised >= {ShapeError, DTypeError, DeviceMismatchError, AxisError, LimitError,
                      DataError, DeviceClosedError, BlockingCallError, TypeError}


# ------------------------------------------------------------------------------------------
# Valid edge cases that must work: the same program with asyncfusion and with numpy
# ------------------------------------------------------------------------------------------
class AFOps:
    """The operations a valid case uses, on asyncfusion tensors."""

    exp = staticmethod(lambda x: x.exp())
    tanh = staticmethod(lambda x: x.tanh())
    relu = staticmethod(lambda x: x.relu())
    minimum = staticmethod(af.minimum)
    maximum = staticmethod(af.maximum)
    where = staticmethod(af.where)
    cat = staticmethod(lambda xs, axis=0: af.cat(xs, axis=axis))
    reshape = staticmethod(lambda x, *shape: x.reshape(*shape))
    sum = staticmethod(lambda x, axis=None, keepdims=False: x.sum(axis, keepdims))
    mean = staticmethod(lambda x, axis=None, keepdims=False: x.mean(axis, keepdims))
    max = staticmethod(lambda x, axis=None, keepdims=False: x.max(axis, keepdims))
    min = staticmethod(lambda x, axis=None, keepdims=False: x.min(axis, keepdims))


class NPOps:
    """The same operations with numpy, with asyncfusion's result dtypes."""

    exp = staticmethod(np.exp)
    tanh = staticmethod(np.tanh)
    relu = staticmethod(lambda x: np.maximum(x, x.dtype.type(0)))
    minimum = staticmethod(np.minimum)
    maximum = staticmethod(np.maximum)
    where = staticmethod(np.where)
    cat = staticmethod(lambda xs, axis=0: np.concatenate(xs, axis=axis))
    reshape = staticmethod(lambda x, *shape: x.reshape(*shape))
    sum = staticmethod(lambda x, axis=None, keepdims=False:
                       np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype))
    mean = staticmethod(lambda x, axis=None, keepdims=False:
                        np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float32))
    max = staticmethod(lambda x, axis=None, keepdims=False: np.max(x, axis=axis, keepdims=keepdims))
    min = staticmethod(lambda x, axis=None, keepdims=False: np.min(x, axis=axis, keepdims=keepdims))


@dataclass(frozen=True)
class Good:
    id: str
    inputs: tuple[np.ndarray, ...]
    fn: Callable[..., Any]  # fn(ops, *tensors) with ops = AFOps or NPOps


def f32(*values: Any) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def zf(*shape: int) -> np.ndarray:
    """A float32 array of ``shape`` with distinct values (empty when a dimension is 0)."""
    return (np.arange(int(np.prod(shape)), dtype=np.float32) * 0.5 - 1.0).reshape(shape)


E0, E30, E03, E20 = zf(0), zf(3, 0), zf(0, 3), zf(2, 0)
S = np.array(3.0, dtype=np.float32)  # a 0-d input
SPECIAL = f32(NAN, INF, -INF, 1.0, -2.0, 0.0, NAN, 3.5)  # 8 values: the vec4 path
SPECIAL5 = f32(NAN, -INF, INF, -1.0, 0.0)  # 5 values: the scalar path

GOOD: list[Good] = [
    # -- empty and zero-size tensors -----------------------------------------------------------
    Good("empty-add", (E0, E0), lambda m, a, b: a + b),
    Good("empty-2d-scalar-ops", (E30,), lambda m, a: a * 2.0 + 1.0),
    Good("empty-exp", (E03,), lambda m, a: m.exp(a)),
    Good("empty-fused-chain", (E30, E30), lambda m, a, b: m.relu(m.exp(a * 2.0 + 1.0) - b)),
    Good("empty-broadcast-row", (E30, zf(0)), lambda m, a, b: a + b),
    Good("empty-broadcast-column", (E30, zf(3, 1)), lambda m, a, b: a * b),
    Good("empty-broadcast-0d", (E20, S), lambda m, a, s: a - s),
    Good("empty-compare-where", (E30, E30), lambda m, a, b: m.where(a > b, a, b)),
    Good("empty-compare-bool", (E03, E03), lambda m, a, b: (a < b) | (a == b)),
    Good("empty-minimum", (E0, E0), lambda m, a, b: m.minimum(a, b)),
    Good("empty-sum-all", (E0,), lambda m, a: m.sum(a)),
    Good("empty-2d-sum-all", (E30,), lambda m, a: m.sum(a)),
    Good("empty-sum-axis1", (E30,), lambda m, a: m.sum(a, axis=1)),
    Good("empty-sum-axis0", (E30,), lambda m, a: m.sum(a, axis=0)),
    Good("empty-sum-keepdims", (E30,), lambda m, a: m.sum(a, axis=1, keepdims=True)),
    Good("empty-int32-sum", (np.zeros(0, np.int32),), lambda m, a: m.sum(a)),
    Good("empty-max-nonempty-axis", (E30,), lambda m, a: m.max(a, axis=0)),
    Good("empty-min-zero-outputs", (E03,), lambda m, a: m.min(a, axis=1)),
    Good("empty-mean-all-is-nan", (E0,), lambda m, a: m.mean(a)),
    Good("empty-cat-axis0", (zf(2, 3), E03, zf(1, 3)), lambda m, a, b, c: m.cat([a, b, c])),
    Good("empty-cat-axis1", (zf(2, 3), E20), lambda m, a, b: m.cat([a, b], axis=1)),
    Good("empty-cat-first-piece", (E03, zf(2, 3)), lambda m, a, b: m.cat([a, b]) * 2.0),
    Good("empty-cat-all-empty", (E03, E03), lambda m, a, b: m.cat([a, b])),
    Good("empty-reshape", (E30,), lambda m, a: m.reshape(m.reshape(a, 0, 3) + 1.0, -1)),
    # -- 0-d tensors ---------------------------------------------------------------------------
    Good("0d-identity", (S,), lambda m, s: s),
    Good("0d-arithmetic", (S, np.array(-0.5, np.float32)), lambda m, s, t: m.exp(s * t) + s),
    Good("0d-broadcast-left", (S, zf(2, 3)), lambda m, s, x: s * x + s),
    Good("0d-broadcast-right", (zf(4,), S), lambda m, x, s: x - s),
    Good("0d-broadcast-compare", (S, zf(4,)), lambda m, s, x: m.where(s > x, x, s)),
    Good("0d-condition", (np.array(True), zf(2, 2), zf(2, 2) + 1.0),
         lambda m, c, a, b: m.where(c, a, b)),
    Good("0d-reductions", (S,), lambda m, s: m.sum(s) + m.max(s) - m.min(s) + m.mean(s)),
    Good("0d-reshape-roundtrip", (S,), lambda m, s: m.reshape(m.reshape(s, 1, 1) * 2.0, ())),
    Good("0d-int32", (np.array(7, np.int32), np.arange(3, dtype=np.int32)),
         lambda m, s, x: s * x - s),
    Good("0d-bool-logic", (np.array(True), np.array([True, False])),
         lambda m, s, x: (s & x) | ~x),
    Good("0d-reduce-to-0d", (zf(5),), lambda m, x: m.sum(x) * m.max(x)),
    # -- NaN and inf ----------------------------------------------------------------------------
    Good("nan-add", (SPECIAL, f32(1, -INF, -INF, NAN, INF, INF, 2, 0)), lambda m, a, b: a + b),
    Good("nan-mul", (SPECIAL, f32(0, 0, 2, INF, -INF, INF, 1, NAN)), lambda m, a, b: a * b),
    Good("nan-scalar-ops", (SPECIAL5,), lambda m, a: a * INF + NAN * 0.0 - a),
    Good("nan-exp", (f32(NAN, INF, -INF, 100.0, -100.0, 0.0, 1.0, NAN),), lambda m, a: m.exp(a)),
    Good("nan-minimum", (SPECIAL, SPECIAL[::-1].copy()), lambda m, a, b: m.minimum(a, b)),
    Good("nan-maximum", (SPECIAL, SPECIAL[::-1].copy()), lambda m, a, b: m.maximum(a, b)),
    Good("nan-minimum-scalar-path", (SPECIAL5, f32(1, NAN, 2, NAN, -INF)),
         lambda m, a, b: m.minimum(a, b)),
    Good("nan-maximum-nan-scalar", (SPECIAL5,), lambda m, a: m.maximum(a, NAN)),
    Good("nan-tanh", (SPECIAL5,), lambda m, a: m.tanh(a)),
    Good("nan-relu", (SPECIAL,), lambda m, a: m.relu(a)),
    Good("nan-relu-scalar-path", (SPECIAL5,), lambda m, a: m.relu(a)),
    Good("nan-fused-chain", (SPECIAL,), lambda m, a: m.relu(m.exp(a * 0.5 + 1.0)) * 2.0),
    Good("nan-compare", (SPECIAL, SPECIAL[::-1].copy()),
         lambda m, a, b: ((a == a) & (a < b)) | (a != b)),
    Good("nan-where", (SPECIAL,), lambda m, a: m.where(a > 0.0, a, NAN)),
    Good("nan-sum-all", (SPECIAL5,), lambda m, a: m.sum(a)),
    Good("inf-sum", (f32(1, INF, 2, 3),), lambda m, a: m.sum(a)),
    Good("inf-minus-inf-sum", (f32(INF, 1, -INF),), lambda m, a: m.sum(a)),
    Good("nan-sum-axis", (f32([NAN, 1, 2], [INF, 1, 2], [1, 2, 3], [INF, -INF, 0]),),
         lambda m, a: m.sum(a, axis=1)),
    Good("nan-max-all", (f32(1, NAN, 3),), lambda m, a: m.max(a)),
    Good("nan-max-first", (f32(NAN, 1, 3, 2),), lambda m, a: m.max(a)),
    Good("nan-max-last", (f32(1, 3, 2, NAN),), lambda m, a: m.max(a)),
    Good("inf-max", (f32(1, INF, 3),), lambda m, a: m.max(a)),
    Good("all-neg-inf-max", (f32(-INF, -INF),), lambda m, a: m.max(a)),
    Good("nan-min-all", (f32(1, -INF, NAN, 0),), lambda m, a: m.min(a)),
    Good("nan-max-axis", (f32([NAN, 1, 2], [3, NAN, 1], [1, 2, NAN], [INF, 0, -INF]),),
         lambda m, a: m.max(a, axis=1)),
    Good("nan-max-axis0", (f32([NAN, 1, 2], [3, NAN, 1], [1, 2, 5], [INF, 0, -INF]),),
         lambda m, a: m.max(a, axis=0)),
    Good("nan-min-axis", (f32([NAN, 1, 2], [3, -INF, 1], [1, 2, NAN]),),
         lambda m, a: m.min(a, axis=1, keepdims=True)),
    Good("nan-mean", (f32(1, NAN, 3),), lambda m, a: m.mean(a)),
]


def expected_of(case: Good) -> np.ndarray:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of empty: NaN, as numpy says
        return np.asarray(case.fn(NPOps, *case.inputs))


@pytest.mark.parametrize("case", GOOD, ids=[c.id for c in GOOD])
async def test_edge_case_matches_numpy(case: Good, dev, plain, ref):
    expected = expected_of(case)
    wrong = []
    for device in (dev, plain, ref):
        tensors = [af.tensor(a, device=device) for a in case.inputs]
        out = case.fn(AFOps, *tensors)
        assert (out.shape, out.dtype.np) == (expected.shape, expected.dtype), repr(device)
        try:
            actual = await out.to_data()
            assert_close(actual, expected)
        except af.ExecutionError as exc:
            wrong.append(f"{device!r} failed: {exc}")
        except AssertionError:
            wrong.append(f"{device!r} gave {actual.tolist()}")
    assert not wrong, f"numpy gives {expected.tolist()}; " + "; ".join(wrong)


# -- zero-size and 0-d creation -------------------------------------------------------------
CREATE = [
    ("zeros-(0,)", lambda d: af.zeros((0,), device=d), np.zeros(0, np.float32)),
    ("zeros-(3,0)", lambda d: af.zeros((3, 0), device=d), np.zeros((3, 0), np.float32)),
    ("full-(0,3)-int32", lambda d: af.full((0, 3), 7, dtype=af.int32, device=d),
     np.zeros((0, 3), np.int32)),
    ("ones-0d", lambda d: af.ones((), device=d), np.array(1.0, np.float32)),
    ("arange-empty", lambda d: af.arange(0, device=d), np.zeros(0, np.int32)),
    ("tensor-empty-list", lambda d: af.tensor([], device=d), np.zeros(0, np.float32)),
    ("tensor-empty-rows", lambda d: af.tensor([[], [], []], device=d),
     np.zeros((3, 0), np.float32)),
    ("tensor-0d-float", lambda d: af.tensor(3.0, device=d), np.array(3.0, np.float32)),
    ("tensor-0d-bool", lambda d: af.tensor(True, device=d), np.array(True)),
    ("rand-(0,2)", lambda d: af.rand((0, 2), seed=0, device=d), np.zeros((0, 2), np.float32)),
    ("tensor-nan-inf", lambda d: af.tensor([NAN, INF, -INF], device=d), f32(NAN, INF, -INF)),
]


@pytest.mark.parametrize("make,expected", [c[1:] for c in CREATE], ids=[c[0] for c in CREATE])
async def test_zero_size_and_0d_creation(make, expected, dev, ref):
    for device in (dev, ref):
        t = make(device)
        assert (t.shape, t.dtype.np, t.size) == (expected.shape, expected.dtype, expected.size)
        assert_close(await t.to_data(), expected)
        assert_close(await (t == t).to_data(), expected == expected)


# -- numpy dtypes the runtime converts on upload ---------------------------------------------
CONVERSIONS = [
    ("float64", np.array([1.5, -2.25, 1e30, 3.0000001, NAN, -INF], np.float64), af.float32),
    ("float16", np.array([1.5, -2.25, 65504.0], np.float16), af.float16),
    ("python-floats", [0.1, 0.2, 1e-40], af.float32),
    ("int64-at-int32-bounds", np.array([-(2**31), 2**31 - 1, 0, -7], np.int64), af.int32),
    ("python-ints", [[1, -2], [3, 2**31 - 1]], af.int32),
    ("int16", np.array([-32768, 32767], np.int16), af.int16),
    ("int8", np.array([-128, 127], np.int8), af.int8),
    ("uint8", np.array([0, 255], np.uint8), af.uint8),
    ("uint16", np.array([0, 65535], np.uint16), af.uint16),
    ("uint64-in-range", np.array([0, 2**32 - 1], np.uint64), af.uint32),
    ("python-bools", [True, False], af.bool_),
]


@pytest.mark.parametrize("data,dtype", [c[1:] for c in CONVERSIONS],
                         ids=[c[0] for c in CONVERSIONS])
async def test_documented_conversions_keep_values(data, dtype, dev, ref, monkeypatch):
    expected = np.asarray(data).astype(dtype.np)
    if expected.dtype.kind in "iu":  # the conversion is exact
        np.testing.assert_array_equal(expected.astype(np.int64), np.asarray(data, dtype=np.int64))
    narrowed = isinstance(data, np.ndarray) and data.dtype.itemsize == 8
    for device in (dev, ref):
        monkeypatch.setattr(creation, "_WARNED", set())  # each device's call warns again
        with pytest.warns(af.NarrowingWarning) if narrowed else contextlib.nullcontext():
            t = af.tensor(data, device=device)
        assert t.dtype is dtype  # decided at call time
        assert t.shape == expected.shape
        assert_close(await t.to_data(), expected)
        assert_close(await (t == t).to_data(), expected == expected)  # usable in ops
