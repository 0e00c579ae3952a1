"""Debug-mode checks (``ASYNCFUSION_DEBUG=1``; the test suite turns it on).

They guard the two promises that are easy to break by accident: nothing that blocks on
the GPU runs on an event-loop thread, and the server never awaits while it holds the
stream lock. They also point at a cost that is easy to miss: a large intermediate of a
fused kernel that a local still names across an ``await`` is written to memory
(:class:`IntermediateKeptWarning`, see ``engine/kept.py``).
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings

__all__ = ["DEBUG", "KEPT_BYTES", "IntermediateKeptWarning", "in_event_loop",
           "assert_off_loop", "user_site", "warn_kept"]

DEBUG = os.environ.get("ASYNCFUSION_DEBUG", "") not in ("", "0")
# the size from which a kept intermediate is worth a warning (ASYNCFUSION_DEBUG_KEPT_BYTES)
KEPT_BYTES = int(os.environ.get("ASYNCFUSION_DEBUG_KEPT_BYTES", "") or 64 << 20)

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


class IntermediateKeptWarning(UserWarning):
    """Debug mode: a large intermediate of a fused kernel was written to device memory only
    because a reference to it (a local named across an ``await``) kept it alive. ``del``
    the name before the await, or compute the value inside a helper function, so that
    the kernel keeps it in registers."""


def in_event_loop() -> bool:
    """True when called from inside a running asyncio or trio event loop."""
    if asyncio._get_running_loop() is not None:
        return True
    trio = sys.modules.get("trio")
    try:
        return trio is not None and bool(trio.lowlevel.in_trio_run())
    except AttributeError:  # trio half imported by another thread: not running here
        return False


def assert_off_loop(what: str) -> None:
    if DEBUG and in_event_loop():
        raise AssertionError(f"{what} blocks and was called on an event-loop thread")


def user_site() -> tuple[str, int]:
    """(file, line) of the innermost caller outside asyncfusion (the user's code)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno


def warn_kept(found: list[tuple[str, str, int]]) -> None:
    """Issue each (message, file, line) as an :class:`IntermediateKeptWarning` at the line
    that made the tensor (from the task that read the round's results)."""
    for message, filename, lineno in found:
        warnings.warn_explicit(message, IntermediateKeptWarning, filename, lineno)
