"""The Fusion decorator: wraps a backend that offers fusers; plans are cached by signature.

``Fusion(inner)`` and ``Plain(inner)`` both run a segment of queued ops; ``Plain`` runs
each op as its own launch, ``Fusion`` explores the segment into blocks once per relative
signature and replays the stored plan afterwards (no exploring, no WGSL generation).
"""

from __future__ import annotations

from typing import Any

from ..backends.base import Handles
from ..ir import OperationIr, _Renumber
from ..trace import Counters
from .elementwise import ElementwiseFuser
from .explorer import explore
from .plan import Step, UnfusedStep

__all__ = ["Fusion", "Plain"]


class Plain:
    """Runs every op unfused, in order: the seed's ``dispatch<cubecl<wgpu>>``."""

    def __init__(self, inner: Any, counters: Counters) -> None:
        self.inner = inner
        self.counters = counters

    def run(self, ops: list[OperationIr], handles: Handles) -> None:
        for i in range(len(ops)):
            UnfusedStep(i).run(ops, [], self.inner, handles, self.counters)


class Fusion:
    """The seed's ``dispatch<fusion<cubecl<wgpu>>>``: fused blocks, cached plans."""

    def __init__(self, inner: Any, counters: Counters, max_ops: int = 64,
                 max_plans: int = 4096) -> None:
        if not getattr(inner, "fuses", False):
            raise TypeError(f"backend {inner.name!r} offers no fusers; use Plain(inner)")
        self.inner = inner
        self.counters = counters
        self.fuser = ElementwiseFuser(inner.max_storage_bindings, max_ops)
        self.plans: dict[tuple[Any, ...], list[Step]] = {}
        self.max_plans = max_plans

    def run(self, ops: list[OperationIr], handles: Handles) -> None:
        rn = _Renumber()
        key = tuple(op.signature(rn) for op in ops)
        plan = self.plans.get(key)
        if plan is None:
            self.counters.plan_cache_misses += 1
            plan = explore(ops, self.fuser, rn.rel)
            if len(self.plans) >= self.max_plans:
                self.plans.pop(next(iter(self.plans)))
            self.plans[key] = plan
        else:
            self.counters.plan_cache_hits += 1
        for step in plan:
            step.run(ops, rn.ids, self.inner, handles, self.counters)

