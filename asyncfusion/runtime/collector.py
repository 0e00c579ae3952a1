"""The cyclic garbage collector and a device's rounds.

Python's collector walks every tracked object of the process in a full collection. A
process that serves tensors has imported a lot (torch, a web framework, a model's host
data: hundreds of thousands of objects), and a busy device makes objects fast enough to
set off a full collection every few hundred requests: each walks that whole heap again
(tens of milliseconds with torch loaded) while the event loop waits. The first device
that opens in a process collects once and then freezes what survived
(:func:`gc.freeze`): those objects stay out of later collections, as servers do after
they preload an application. Objects made afterwards are collected as usual, but a
device spaces young collections out to 10,000 new objects (:data:`YOUNG_AT`; Python's
default is 700). A busy device makes several tracked records per op: at 700, a young
collection ran every few dozen ops and promoted records that were about to die, and the
older generations then filled fast enough to set off full collections over every live
task. On the 2-core lavapipe box, 10,000 concurrent one-read tasks of a 10-op chain take
350 µs each at 10,000 against 600 at 700 (200 with the collector off); 1000 tasks of the
seed chain 220 ms against 240-300, 100 tasks 18 against 24 ms. The threshold is only
raised, never lowered, as the GIL's switch interval is.
``open_device(freeze_gc=False)`` leaves the collector alone.

Frozen objects are invisible to :func:`gc.get_referrers`: a tool that asks it about
objects made before the freeze (hypothesis's ``register_random`` does, for the random
that trio registers when hypothesis is imported) finds none. Import such tools before
the first device opens, or open it with ``freeze_gc=False``.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["YOUNG_AT", "freeze_survivors", "space_young_collections"]

YOUNG_AT = 10_000  # new tracked objects between young collections (Python's default: 700)

_lock = threading.Lock()
_done = False


def freeze_survivors() -> bool:
    """Collect, then move every surviving object out of the collector's sight, once per
    process; whether this call did it (any thread; it blocks for one full collection)."""
    global _done
    with _lock:
        if _done:
            return False
        _done = True
        gc.collect()
        gc.freeze()
        return True


def space_young_collections() -> None:
    """Raise the young generation's threshold to :data:`YOUNG_AT` where it is lower (and
    the collector's thresholds are on: 0 means a program turned them off)."""
    young, middle, old = gc.get_threshold()
    if 0 < young < YOUNG_AT:
        gc.set_threshold(YOUNG_AT, middle, old)
