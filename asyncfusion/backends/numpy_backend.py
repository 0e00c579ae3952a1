"""The numpy backend: interprets the kernel IR on the host. The test oracle.

It runs the very kernels the wgpu backend renders — loads through index maps, the body
phase by phase, each reduction between two phases, stores through index maps — with each primitive's numpy function from the
registry, so a fused program and its unfused ops can both be checked against plain numpy.
Buffers are byte arrays; storage words have the device's types (bool as uint32).
"""

from __future__ import annotations

import numpy as np

from .._core.dtype import DType, to_storage
from ..ir import Layout, numel
from ..kernel import Arg, Kernel, LaunchArgs, Level, Load
from ..ops import PRIMITIVES, REDUCTIONS
from .base import MemoryStats, host_view
from .faults import FaultInjector

__all__ = ["NumpyBackend", "HostBuffer"]


class HostBuffer:
    __slots__ = ("data", "nbytes")

    def __init__(self, nbytes: int, data: np.ndarray | None = None) -> None:
        self.data = np.zeros(-(-nbytes // 4) * 4, dtype=np.uint8) if data is None else data
        self.nbytes = nbytes

    def words(self, dtype: DType) -> np.ndarray:
        return self.data.view(dtype.storage_np)


def _index(shape: tuple[int, ...], offset: int, strides: tuple[int, ...]) -> np.ndarray:
    """Storage word of every element of ``shape`` under (offset, strides)."""
    idx = np.full((1,) * len(shape), offset, dtype=np.int64)
    for d, (size, s) in enumerate(zip(shape, strides, strict=True)):
        if s:
            axis = [1] * len(shape)
            axis[d] = size
            idx = idx + (np.arange(size, dtype=np.int64) * s).reshape(axis)
    return np.broadcast_to(idx, shape)


def _from_words(words: np.ndarray, dtype: DType) -> np.ndarray:
    """Storage words as values (int8's and int16's 32-bit lanes as int8, int16)."""
    return words != 0 if dtype is DType.bool else words.astype(dtype.np, copy=False)


def _to_words(values: np.ndarray, dtype: DType) -> np.ndarray:
    return np.asarray(values, dtype=dtype.np).astype(dtype.storage_np)


class _Run:
    """One launch being interpreted."""

    def __init__(self, kernel: Kernel, args: LaunchArgs, loads: list[HostBuffer]) -> None:
        self.kernel = kernel
        self.args = args
        self.space = args.shape
        reduced = kernel.reduced or (False,) * kernel.rank
        self.keep = tuple(1 if r else s for s, r in zip(self.space, reduced, strict=True))
        self.axes = tuple(d for d, r in enumerate(reduced) if r)
        self.maps = iter(args.maps)
        self.inputs: list[np.ndarray] = []
        bound = iter(loads)  # iota loads, last, are bound to no buffer
        for k, ld in enumerate(kernel.loads):
            self.inputs.append(self._load(k, ld, None if ld.iota is not None else next(bound)))
        if next(bound, None) is not None:
            raise ValueError("a launch got more buffers than its kernel binds")
        self.values: list[np.ndarray] = []
        self.results: list[np.ndarray] = []  # per reduction, kept dims

    def _load(self, k: int, ld: Load, buf: HostBuffer | None) -> np.ndarray:
        if buf is None:
            return self._iota(ld, self._words(k, ld))
        words = buf.words(ld.dtype)
        if ld.dense:
            return _from_words(words[:numel(self.space)].reshape(self.space), ld.dtype)
        return _from_words(words[self._words(k, ld)], ld.dtype)

    def _iota(self, ld: Load, at: np.ndarray) -> np.ndarray:
        """An arange's values at storage words ``at``: start + word * step in its dtype."""
        assert ld.iota is not None
        start, step = (np.array(self.args.scalars[s], dtype=ld.dtype.np) for s in ld.iota)
        return start + at.astype(ld.dtype.np) * step

    def _words(self, k: int, ld: Load) -> np.ndarray:
        """The storage word load ``k`` reads at each element of its level's shape."""
        if ld.dense:
            return np.arange(numel(self.space), dtype=np.int64).reshape(self.space)
        offset, strides = next(self.maps)
        shape = self.keep if ld.level is Level.OUT else self.space
        if self.kernel.matmul and k < 2:  # an operand: (batch..., M, 1, K) or (..., 1, N, K)
            r = len(shape)
            shape = tuple(1 if d == r - 2 - k else s for d, s in enumerate(shape))
        if ld.gather is None:
            return _index(shape, offset, strides)
        j, d, s = ld.gather
        size = int(self.args.scalars[s])
        at = self.inputs[j].astype(np.int64)
        at = np.clip(np.where(at < 0, at + size, at), 0, size - 1)
        plain = tuple(0 if e == d else st for e, st in enumerate(strides))
        return _index(shape, offset, plain) + at * strides[d]

    def _matmul(self) -> np.ndarray:
        """The operands' product over K, kept as a trailing axis of size 1."""
        red = self.kernel.reduce
        assert red is not None
        a, b = (self.inputs[k].astype(red.acc.np, copy=False) for k in (0, 1))
        out = np.matmul(a[..., :, 0, :], np.swapaxes(b[..., 0, :, :], -1, -2))
        return np.asarray(out).astype(red.out.np)[..., None]

    def operand(self, a: Arg) -> np.ndarray:
        if a.kind == "in":
            return self.inputs[a.index]
        if a.kind == "v":
            return self.values[a.index]
        if a.kind == "r":
            return self.results[a.index]
        dt = self.kernel.scalars[a.index]
        return np.array(self.args.scalars[a.index], dtype=dt.np)

    def run(self) -> None:
        k = self.kernel
        values: list[np.ndarray] = [np.empty(0)] * len(k.body)
        self.values = values
        with np.errstate(all="ignore"):
            for phase in range(len(k.reduces) + 1):
                if k.matmul:  # its product is the reduction; its body past it, the epilogue
                    if phase:
                        self.results.append(self._matmul())
                elif phase:
                    red = k.reduces[phase - 1]
                    self.results.append(REDUCTIONS[red.op].numpy(
                        self.operand(red.value).astype(red.acc.np, copy=False),
                        self.axes).astype(red.out.np))
                for j, ins in enumerate(k.body):
                    if ins.phase == phase and not (k.matmul and ins.level is Level.ROW):
                        values[j] = self._eval(ins.op, ins.compute, ins.out, ins.args)

    def _eval(self, op: str, compute: DType, out: DType, args: tuple[Arg, ...]) -> np.ndarray:
        vals: list[np.ndarray] = []
        for a in args:
            x = self.operand(a)
            if op == "cast" or (op == "where" and not vals):
                vals.append(x)  # the rule converts / the condition stays bool
            else:
                vals.append(x.astype(compute.np, copy=False))
        r = PRIMITIVES[op].numpy(*vals)
        return np.asarray(r).astype(out.np, copy=False)


class NumpyBackend:
    """Interprets kernels with numpy; a buffer is a byte array on the host."""

    name = "numpy"
    fuses = True
    max_storage_bindings = 1 << 30
    max_buffer_size = 1 << 62
    max_binding = max_buffer_size
    storage_align = 4
    dtypes = frozenset(DType)

    def __init__(self) -> None:
        self.faults = FaultInjector()
        self._live = 0
        self._live_bytes = 0
        self._allocs = 0

    def alloc(self, nbytes: int) -> HostBuffer:
        self.faults.check("alloc")
        self._live += 1
        self._live_bytes += nbytes
        self._allocs += 1
        return HostBuffer(nbytes)

    def free(self, buffer: HostBuffer) -> None:
        self._live -= 1
        self._live_bytes -= buffer.nbytes

    def upload(self, data: np.ndarray) -> HostBuffer:
        raw = to_storage(data)
        buf = self.alloc(raw.nbytes)
        buf.data[:raw.nbytes] = raw.reshape(-1).view(np.uint8)
        return buf

    def sub(self, buffer: HostBuffer, offset: int, nbytes: int) -> HostBuffer:
        return HostBuffer(nbytes, buffer.data[offset:offset + -(-nbytes // 4) * 4])

    def copy(self, src: HostBuffer, dst: HostBuffer, nbytes: int, dst_offset: int) -> None:
        dst.data[dst_offset:dst_offset + nbytes] = src.data[:nbytes]

    def launch(self, kernel: Kernel, args: LaunchArgs, loads: list[HostBuffer],
               stores: list[HostBuffer]) -> None:
        self.faults.check("launch", kernel.names)
        if not numel(args.shape) and (not kernel.reduces or 0 in [
                s for s, r in zip(args.shape, kernel.reduced, strict=True) if not r]):
            return  # nothing to compute (a reduction of empty rows still writes them)
        run = _Run(kernel, args, loads)
        run.run()
        n_store_maps = sum(1 for s in kernel.stores if not s.dense)
        store_maps = list(args.maps[len(args.maps) - n_store_maps:])
        for st, buf in zip(kernel.stores, stores, strict=True):
            level_shape = run.keep if st.level is Level.OUT else args.shape
            value = np.broadcast_to(run.operand(st.value), level_shape)
            words = buf.words(st.dtype)
            if st.dense:
                flat = _to_words(value, st.dtype).reshape(-1)
                words[:flat.size] = flat
            else:
                offset, strides = store_maps.pop(0)
                words[_index(level_shape, offset, strides)] = _to_words(value, st.dtype)

    def flush(self) -> None:
        pass

    def stage_read(self, buffer: HostBuffer, layout: Layout, dtype: DType) -> np.ndarray:
        first, end = layout.span()
        return host_view(buffer.words(dtype)[first:end].copy(), first, layout, dtype)

    def finish_read(self, token: np.ndarray) -> np.ndarray:
        return token

    def discard_read(self, token: np.ndarray) -> None:
        pass

    def wait_idle(self) -> None:
        pass

    def prepare(self) -> None:
        pass

    def empty_cache(self) -> None:
        pass  # freed host buffers go back to numpy at once: there is no cache

    def memory_stats(self) -> MemoryStats:
        return MemoryStats(self._live, self._live_bytes, 0, 0, self._allocs)

    def close(self) -> None:
        pass

    lost: str | None = None  # host memory is never lost

    def lose(self, reason: str) -> None:
        raise TypeError("only the wgpu backend has a GPU device to lose")
