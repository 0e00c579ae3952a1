"""The numpy reference backend: every op run eagerly on the host. The test oracle.

It implements the same dtype rules as the device kernels (float32 arithmetic, integer
``**`` through float32 and rounding, NaN-propagating min/max), so a numpy result is the
answer a WGSL kernel must give.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

import numpy as np

from ..dtype import DType
from ..elementwise import BlockLayout
from ..ir import (CatOp, DropOp, ElementwiseOp, InitOp, OperationIr, ReduceOp, ReshapeOp,
                  ScalarIr)
from .base import Handles, MemoryStats, bind_op_table
from .faults import FaultInjector

__all__ = ["NumpyBackend", "NUMPY_ELEMENTWISE", "eval_elementwise"]


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's power for floats; for integers exact wrapping powers by squaring, with a
    negative exponent giving 0 (or +-1 for a base of +-1), as the WGSL kernels do."""
    if a.dtype.kind == "f":
        return np.power(a, b)
    a, b = (np.array(v) for v in np.broadcast_arrays(a, b))
    r = np.ones_like(a)
    x = a.copy()
    e = np.where(b < 0, 0, b).astype(np.int64)
    while (e > 0).any():
        r = np.where(e & 1, r * x, r)
        x = x * x
        e >>= 1
    if a.dtype.kind == "i":
        neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        r = np.where(b < 0, neg, r)
    return r.astype(a.dtype)


def _neg(a: np.ndarray) -> np.ndarray:
    return np.negative(a) if a.dtype != np.uint32 else (np.uint32(0) - a)


NUMPY_ELEMENTWISE: dict[str, Callable[..., np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "pow": _pow,
    "minimum": np.minimum,
    "maximum": np.maximum,
    "neg": _neg,
    "abs": lambda a: a if a.dtype == np.uint32 else np.abs(a),
    "relu": lambda a: np.maximum(a, a.dtype.type(0)),
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sigmoid": lambda a: np.float32(1) / (np.float32(1) + np.exp(-a)),
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_not": np.logical_not,
    "where": lambda c, a, b: np.where(c, a, b),
    "cast": lambda a: a,
}


def eval_elementwise(op: ElementwiseOp, tensors: list[np.ndarray]) -> np.ndarray:
    """Evaluate one element-wise op on host arrays (``tensors`` in arg order)."""
    it = iter(tensors)
    sv = iter(op.scalars)
    args = []
    for a in op.args:
        if isinstance(a, ScalarIr):
            args.append(np.array(next(sv), dtype=a.dtype.np))
        else:
            x = next(it)
            if op.op == "where" and not args:
                args.append(x)  # the condition stays bool
            else:
                args.append(x.astype(op.compute.np, copy=False))
    with np.errstate(all="ignore"):
        r = NUMPY_ELEMENTWISE[op.op](*args)
        return np.asarray(r).astype(op.out.dtype.np, copy=False).reshape(op.out.shape)


def _reduce(op: ReduceOp, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op.op == "sum":
            r = np.sum(x, axis=op.axis, keepdims=op.keepdims, dtype=x.dtype)
        elif op.op == "mean":  # sum / count: np.mean warns on empty input
            count = x.size if op.axis is None else x.shape[op.axis]
            r = np.sum(x.astype(np.float32), axis=op.axis, keepdims=op.keepdims,
                       dtype=np.float32) / np.float32(count)
        elif op.op == "max":
            r = np.max(x, axis=op.axis, keepdims=op.keepdims)
        else:
            r = np.min(x, axis=op.axis, keepdims=op.keepdims)
    return np.asarray(r, dtype=op.out.dtype.np).reshape(op.out.shape)


class NumpyBackend:
    """Runs ops eagerly with numpy; a handle is the ndarray itself."""

    name = "numpy"
    fuses = False
    max_storage_bindings = 1 << 30
    max_buffer_size = 1 << 62

    def __init__(self) -> None:
        self.faults = FaultInjector()
        self._live = 0
        self._live_bytes = 0
        self._allocs = 0
        self._run = bind_op_table(self)

    def _track(self, a: np.ndarray) -> np.ndarray:
        self.faults.check("alloc")
        self._live += 1
        self._live_bytes += a.size * 4
        self._allocs += 1
        return a

    def upload(self, data: np.ndarray) -> np.ndarray:
        return self._track(np.array(data, copy=True))

    def run(self, op: OperationIr, handles: Handles) -> None:
        self._run[type(op)](op, handles)

    def _init(self, op: InitOp, handles: Handles) -> None:
        handles[op.out.id] = self.upload(op.data)

    def _elementwise(self, op: ElementwiseOp, handles: Handles) -> None:
        self.faults.check("launch", (op.op,))
        handles[op.out.id] = self._track(eval_elementwise(op, [handles[t.id] for t in op.inputs()]))

    def _reduce(self, op: ReduceOp, handles: Handles) -> None:
        self.faults.check("launch", (op.op,))
        handles[op.out.id] = self._track(_reduce(op, handles[op.input.id]))

    def _cat(self, op: CatOp, handles: Handles) -> None:
        self.faults.check("launch", ("cat",))
        arrays = [handles[t.id] for t in op.tensors]
        handles[op.out.id] = self._track(np.concatenate(arrays, axis=op.axis))

    def _reshape(self, op: ReshapeOp, handles: Handles) -> None:
        handles[op.out.id] = self._track(handles[op.input.id].reshape(op.out.shape).copy())

    def _drop(self, op: DropOp, handles: Handles) -> None:
        h = handles.pop(op.tensor.id, None)
        if h is not None:
            self.release(h)

    def run_elementwise(self, layout: BlockLayout, handles: Handles, scalars: list[Any]) -> None:
        raise NotImplementedError("the numpy backend does not fuse")

    def release(self, handle: Any) -> None:
        if isinstance(handle, np.ndarray):
            self._live -= 1
            self._live_bytes -= handle.size * 4

    def flush(self) -> None:
        pass

    def stage_read(self, handle: np.ndarray, shape: tuple[int, ...], dtype: DType) -> np.ndarray:
        return handle.copy()

    def finish_read(self, token: np.ndarray) -> np.ndarray:
        return token

    def discard_read(self, token: np.ndarray) -> None:
        pass

    def wait_idle(self) -> None:
        pass

    def memory_stats(self) -> MemoryStats:
        return MemoryStats(self._live, self._live_bytes, 0, 0, self._allocs)

    def close(self) -> None:
        pass
