"""Matmul launches: a plan per launch (default or tuned), encoded as one kernel or as a
split-K pair, and the timing of a plan that the tuner asks for.

A plan of one slice is one dispatch: a workgroup per output tile, the epilogue in its
store. A plan split over K is two: a workgroup per tile and slice writing partial sums
to a scratch buffer (taken from the pool, retired once encoded), then a thread per
output element adding them and running the epilogue. Both read the same uniform words;
head word 3 is the slice length (0: not split). Timings run the launch's own kernel on
scratch buffers of the launch's sizes, in a batch of their own, on this (executor)
thread: timestamp queries around one compute pass of several launches where the device
has them, else the wall time of the submission.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..._debug import assert_off_loop
from ...ir import numel
from ...kernel import Kernel, LaunchArgs
from ...codegen.wgsl.autotune import MatmulTuner
from ...codegen.wgsl.matmul import MatmulShader, with_layout
from ...codegen.wgsl.matmul_plan import (MatmulPlan, candidates, default_plan, shape_class,
                                         slice_len)
from ...codegen.wgsl.params import param_bytes
from .runtime import Buffer, Runtime, _Batch
from .timing import GpuTimer

__all__ = ["MatmulLaunch", "MatmulLauncher", "Storage"]

Storage = list[tuple[Buffer, str]]  # a dispatch's buffers and their access, in binding order
_TARGET_S = 0.02  # GPU time one timing of a plan takes, about
_MAX_REPS = 50


@dataclass(frozen=True, slots=True)
class MatmulLaunch:
    """The dispatches of one matmul launch, each (WGSL, uniform bytes, threads), in
    order; ``part_bytes``: the partial sums' scratch buffer (0: K is not split)."""

    dispatches: tuple[tuple[str, bytes, int], ...]
    part_bytes: int


class MatmulLauncher:
    """The matmul launches of one backend: its plans (``tuner``) and their encoding."""

    def __init__(self, rt: Runtime, wgsl: Callable[[Kernel, MatmulShader], str],
                 tuner: MatmulTuner, limits: dict[str, int], gpu: bool) -> None:
        self.rt = rt
        self.wgsl = wgsl
        self.tuner = tuner
        self.limits = limits
        self.gpu = gpu

    def plan(self, kernel: Kernel, args: LaunchArgs, storage: Storage) -> MatmulPlan:
        """The launch's plan: the default, or its shape class's tuned one (timed now,
        on this thread, where the class is new)."""
        *batch, m, n, k = args.shape
        nb = numel(tuple(batch))
        default = default_plan(nb, m, n, k, self.limits, self.gpu)
        if not self.tuner.enabled:
            return default
        out = kernel.reduces[0].out
        cls = shape_class(out, nb, m, n, k, with_layout(default.tiles, args))
        return self.tuner.plan(
            cls, default, lambda: candidates(nb, m, n, k, self.limits),
            lambda p: self.measure(kernel, args, storage, p), (nb, m, n, k))

    def lay_out(self, kernel: Kernel, args: LaunchArgs, plan: MatmulPlan) -> MatmulLaunch:
        """What a launch of ``plan`` dispatches: its WGSL, uniform words and threads per
        dispatch, and the partial sums' bytes where K is split (made once per kernel and
        arguments: the backend keeps it)."""
        *batch_dims, m, n, k = args.shape
        nb = numel(tuple(batch_dims))
        tiles = with_layout(plan.tiles, args)
        count = nb * -(-m // tiles.tm) * -(-n // tiles.tn)
        if not count:
            return MatmulLaunch((), 0)
        kc = slice_len(k, plan.split, tiles.tk) if k else 0
        slices = -(-k // kc) if kc else 1
        # the partial sums fit one binding; a split of one slice is no split
        row = nb * m * (-(-n // 4) * 4) * kernel.reduces[0].acc.itemsize
        while slices > 1 and slices * row > self.rt.max_binding:
            kc = slice_len(k, slices // 2, tiles.tk)
            slices = -(-k // kc)
        wg = self.rt.workgroup
        grid = (nb, -(-m // tiles.tm), -(-n // tiles.tn))
        if slices <= 1:
            params = param_bytes(kernel, args, (*grid, 0))
            return MatmulLaunch(((self.wgsl(kernel, MatmulShader(tiles)), params,
                                  count * wg),), 0)
        params = param_bytes(kernel, args, (*grid, kc))
        return MatmulLaunch(((self.wgsl(kernel, MatmulShader(tiles, "partial")), params,
                              count * slices * wg),
                             (self.wgsl(kernel, MatmulShader(tiles, "sum", wg)), params,
                              nb * m * n)), slices * row)

    def encode(self, batch: _Batch, launch: MatmulLaunch, storage: Storage,
               scratch: Callable[[int], Buffer], retire: Callable[[Buffer], None]) -> int:
        """Encode ``launch`` into ``batch``; the dispatches it took (0: an empty output).
        ``scratch`` gives the split's partial-sum buffer, ``retire`` takes it back once
        encoded."""
        if not launch.part_bytes:
            for wgsl, params, threads in launch.dispatches:
                self.rt.dispatch(batch, wgsl, storage, params, threads)
            return len(launch.dispatches)
        part = scratch(launch.part_bytes)
        with_part = storage + [(part, "read_write")]
        for wgsl, params, threads in launch.dispatches:
            self.rt.dispatch(batch, wgsl, with_part, params, threads)
        retire(part)
        return len(launch.dispatches)

    # -- timing --------------------------------------------------------------------------
    def measure(self, kernel: Kernel, args: LaunchArgs, storage: Storage, plan: MatmulPlan,
                timestamps: bool | None = None) -> float:
        """Seconds one launch of ``plan`` takes, on scratch copies of ``storage``'s
        buffers (their sizes; zeros): GPU time by timestamp queries (``timestamps``
        None: where the device has them), else wall time from submission to done."""
        assert_off_loop("matmul tuning")
        rt = self.rt
        made: list[Buffer] = []

        def buffer(nbytes: int, offset: int = 0) -> Buffer:
            b = Buffer(rt.create_storage(-(-(offset + nbytes) // 16) * 16), nbytes, nbytes,
                       offset)
            made.append(b)
            return b

        bufs = [(buffer(b.capacity, b.offset), access) for b, access in storage]
        fence = rt.create_staging(16)
        if timestamps is None:
            timestamps = "timestamp-query" in rt.features
        batch = rt.new_batch()
        launch = self.lay_out(kernel, args, plan)
        try:
            def run(reps: int, timer: GpuTimer | None) -> float:
                writes: dict[str, object] = {}
                if timer is not None:  # (never the runtime's own timer: a pass of ours)
                    batch.timed, writes = timer.pass_writes(None)
                batch.cpass = rt.encoder(batch).begin_compute_pass(**writes)
                for _ in range(reps):
                    self.encode(batch, launch, bufs, buffer, lambda b: None)
                rt.copy(batch, made[0].gpu, fence, 16)
                with rt.lock:
                    rt.check_alive()
                    start = time.perf_counter()
                    rt.submit(batch)
                rt.read_staging(fence, 16)
                wall = time.perf_counter() - start
                ns = timer.total_ns() if timer is not None else None
                return (ns * 1e-9 if ns else wall) / reps

            once = run(1, None)  # compiles the kernels, warms the GPU
            reps = max(1, min(_MAX_REPS, round(_TARGET_S / max(once, 1e-6))))
            best = float("inf")
            for _ in range(2):
                timer = GpuTimer(rt.device, rt.timestamp_period, True) if timestamps else None
                best = min(best, run(reps, timer))
            return best
        finally:
            for arena, _ in batch.arenas:
                rt.forget_buffer(arena)
                arena.destroy()
            for b in made:
                rt.forget_buffer(b.gpu)
                b.gpu.destroy()
            fence.destroy()
