"""The cyclic garbage collector and a device's rounds.

Python's collector walks every tracked object of the process in a full collection. A
process that serves tensors has imported a lot (torch, a web framework, a model's host
data: hundreds of thousands of objects), and a busy device makes objects fast enough to
set off a full collection every few hundred requests: each walks that whole heap again
(tens of milliseconds with torch loaded) while the event loop waits. The first device
that opens in a process collects once and then freezes what survived
(:func:`gc.freeze`): those objects stay out of later collections, as servers do after
they preload an application. Objects made afterwards are collected as usual.
``open_device(freeze_gc=False)`` leaves the collector alone.

Frozen objects are invisible to :func:`gc.get_referrers`: a tool that asks it about
objects made before the freeze (hypothesis's ``register_random`` does, for the random
that trio registers when hypothesis is imported) finds none. Import such tools before
the first device opens, or open it with ``freeze_gc=False``.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["freeze_survivors"]

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
