"""The explorer: cuts a segment into steps, asking every fuser for the best kernel.

From each fusible op it offers the following ops to every fuser (each takes ops until it
refuses) and keeps the candidate that fuses the most ops into one launch, as Burn's
explorer keeps its best-scoring fuser. An op no fuser covers runs unfused, in order.
"""

from __future__ import annotations

from ..fusers import Candidate, Fuser
from ..ir import OperationIr, TensorStatus
from .plan import KernelStep, OpStep, ReleaseStep, Step, single_step

__all__ = ["explore"]


def explore(ops: list[OperationIr], fusers: list[Fuser], rel: dict[int, int]) -> list[Step]:
    steps: list[Step] = []
    reads: dict[int, set[int]] = {}

    def later_reads(start: int) -> set[int]:
        r = reads.get(start)
        if r is None:
            r = reads[start] = {t.id for op in ops[start:] for t in op.inputs()}
        return r

    i = 0
    while i < len(ops):
        if not ops[i].fusible:
            steps.append(single_step(ops, i, rel))
            i += 1
            continue
        best: Candidate | None = None
        for fuser in fusers:
            fuser.start(ops)
            j = i
            while j < len(ops) and fuser.try_add(j):
                j += 1
            cand = fuser.finish(later_reads)
            if cand is not None and (best is None or cand.score > best.score):
                best = cand
        if best is None or best.score < 1:
            steps.append(single_step(ops, i, rel))
            i += 1
            continue
        steps.extend(OpStep(h, hoisted=True) for h in best.hoisted)
        steps.append(KernelStep.build(best.taken, best.lower(), rel, True))
        last = tuple(rel[t.id] for h in best.hoisted for t in ops[h].inputs()
                     if t.status is TensorStatus.READ_WRITE)
        if last:
            steps.append(ReleaseStep(last))
        i = best.end
    return steps
