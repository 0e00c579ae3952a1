"""The host path of the factorizations: numpy's ``linalg`` inside the device's worker.

An op on this path is one :class:`~asyncfusion.ir.ExternOp` like any other: recorded
lazily, in stream order, its outputs known in shape and dtype at the call. When a round
reaches it, the device's executor thread (never the event loop) reads its inputs (a
staged read and a flush, as every read), runs the numpy function on the whole batch and
uploads the results. A matrix that numpy refuses (not positive-definite, singular, no
convergence) gives NaN in its outputs, as the device kernels' arithmetic does; the other
matrices of the batch are computed as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...backends.base import Backend, Buffer
from ..._core.dtype import DType
from ...engine.memory import Storage
from ...ir import ExternOp
from ...lazy.tensor import Tensor

__all__ = ["HostWork", "host_op", "per_matrix", "Arrays"]

Arrays = tuple[np.ndarray, ...]
Param = int | float | bool | str | None


@dataclass(frozen=True, slots=True)
class HostWork:
    """numpy's ``name`` with ``params`` (the plan-cache key), carried out by ``fn``."""

    name: str
    params: tuple[Param, ...]
    fn: Callable[..., Arrays] = field(compare=False)

    @property
    def key(self) -> HostWork:
        return self

    @property
    def title(self) -> str:
        return f"host[linalg.{self.name}]"

    def run(self, backend: Backend, loads: list[Buffer], op: ExternOp) -> list[Storage]:
        backend.faults.check("launch", (self.title,))
        tokens = [backend.stage_read(buf, t.view, t.dtype)
                  for t, buf in zip(op.ins, loads, strict=True)]
        backend.flush()
        arrays = [backend.finish_read(token) for token in tokens]
        got = self.fn(*arrays, *self.params)
        if len(got) != len(op.outs):
            raise ValueError(f"{self.title} made {len(got)} arrays for {len(op.outs)} outputs")
        return [Storage(backend.upload(np.ascontiguousarray(g, dtype=t.dtype.np)
                                       .reshape(t.shape)))
                for g, t in zip(got, op.outs, strict=True)]


def host_op(name: str, fn: Callable[..., Arrays], params: tuple[Param, ...],
            inputs: Sequence[Tensor],
            outs: Sequence[tuple[tuple[int, ...], DType]]) -> tuple[Tensor, ...]:
    """Record ``fn(*input arrays, *params)`` on the host path; its results, lazy."""
    dev = inputs[0].device
    results = tuple(Tensor(shape, dtype, dev) for shape, dtype in outs)
    out_irs = tuple(r.out_ir() for r in results)
    op = ExternOp(HostWork(name, params, fn), tuple(t.ir() for t in inputs), out_irs, ())
    dev.register(op, tuple(t.id for t in inputs), out_irs[0])
    return results


def per_matrix(fn: Callable[..., Arrays], shapes: Callable[..., Sequence[tuple[int, ...]]]
               ) -> Callable[..., Arrays]:
    """``fn`` on a batch, and where numpy refuses the batch, on each matrix alone: those
    it refuses give NaN (of the shapes ``shapes`` gives for one matrix's inputs)."""
    def run(*args: np.ndarray | Param) -> Arrays:
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        params = args[len(arrays):]
        try:
            return fn(*arrays, *params)
        except np.linalg.LinAlgError:
            pass
        batch = arrays[0].shape[:-2]
        one = [a.reshape((-1,) + a.shape[len(batch):]) for a in arrays]
        rows: list[Arrays] = []
        for i in range(int(np.prod(batch, dtype=np.int64))):
            mats = [a[i] for a in one]
            try:
                rows.append(fn(*mats, *params))
            except np.linalg.LinAlgError:
                rows.append(tuple(np.full(s, np.nan, arrays[0].dtype)
                                  for s in shapes(*mats, *params)))
        return tuple(np.stack([r[k] for r in rows]).reshape(batch + rows[0][k].shape)
                     for k in range(len(rows[0])))
    return run
