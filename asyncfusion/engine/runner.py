"""``Fusion`` and ``Plain``: run a segment of queued ops through a cached plan.

``Fusion(backend)`` explores each new relative signature into fused kernels once and
replays the stored plan afterwards (no exploring, no lowering, no WGSL). ``Plain`` builds
plans of one kernel per op — the seed's ``dispatch<cubecl<wgpu>>`` — through the same
cache, so the two differ only in what the explorer may fuse.
"""

from __future__ import annotations

from collections.abc import Callable
from ..backends.base import Backend
from ..fusers import ElementwiseFuser, Fuser, MatmulFuser, ReduceFuser
from ..ir import OperationIr, Renumber
from ..trace import Counters
from .explorer import explore
from .memory import Memory
from .plan import Context, PlanKey, Step, single_step

__all__ = ["Runner", "Fusion", "Plain"]


class Runner:
    fuse = False

    def __init__(self, backend: Backend, counters: Counters, max_ops: int = 64,
                 max_plans: int = 4096) -> None:
        self.backend = backend
        self.counters = counters
        self.max_plans = max_plans
        # debug mode: shown every segment's (key, plan, ops, ids) (engine/kept.py)
        self.observe: Callable[[PlanKey, list[Step], list[OperationIr], list[int]],
                               None] | None = None
        # A full cache forgets its least recently used plan, found by the stamp of each
        # plan's last lookup (not move_to_end, which hashes the deep key again per hit).
        self.plans: dict[PlanKey, list[Step]] = {}
        self._used: dict[int, int] = {}  # id(plan) -> the number of its last lookup
        self._lookups = 0
        self.fusers: list[Fuser] = [ElementwiseFuser(backend.max_storage_bindings, max_ops),
                                    ReduceFuser(backend.max_storage_bindings, max_ops),
                                    MatmulFuser(backend.max_storage_bindings, max_ops)]

    def plan(self, ops: list[OperationIr], rel: dict[int, int]) -> list[Step]:
        if self.fuse:
            return explore(ops, self.fusers, rel)
        return [single_step(ops, i, rel) for i in range(len(ops))]

    def run(self, ops: list[OperationIr], memory: Memory) -> None:
        plan, ids = self.lookup(ops)[1:]
        ctx = Context(memory, self.counters)
        for step in plan:
            step.run(ops, ids, ctx)

    def lookup(self, ops: list[OperationIr]) -> tuple[PlanKey, list[Step], list[int]]:
        """(relative signature, its cached plan, the segment's tensor id per relative id):
        segments of equal signature share the plan, whatever their ids."""
        rn = Renumber()
        key = tuple([op.signature(rn) for op in ops])
        self.counters.signed_ops += len(ops)
        plan = self.plans.get(key)
        if plan is None:
            self.counters.plan_cache_misses += 1
            plan = self.plan(ops, rn.rel)
            if len(self.plans) >= self.max_plans:
                self._evict()
            self.plans[key] = plan
        else:
            self.counters.plan_cache_hits += 1
        self._lookups += 1
        self._used[id(plan)] = self._lookups
        if self.observe is not None:
            self.observe(key, plan, ops, rn.ids)
        return key, plan, rn.ids

    def _evict(self) -> None:
        """Forget the least recently used plan (a scan: only when the cache is full)."""
        used = self._used
        key, plan = min(self.plans.items(), key=lambda kv: used[id(kv[1])])
        del self.plans[key], used[id(plan)]


class Fusion(Runner):
    """The seed's ``dispatch<fusion<cubecl<wgpu>>>``: fused kernels, cached plans."""

    fuse = True


class Plain(Runner):
    """One kernel per op, in order."""
