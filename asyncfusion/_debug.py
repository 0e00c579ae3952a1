"""Debug-mode checks (``ASYNCFUSION_DEBUG=1``; the test suite turns it on).

They guard the two promises that are easy to break by accident: nothing that blocks on
the GPU runs on an event-loop thread, and the server never awaits while it holds the
stream lock.
"""

from __future__ import annotations

import asyncio
import os
import sys

__all__ = ["DEBUG", "in_event_loop", "assert_off_loop"]

DEBUG = os.environ.get("ASYNCFUSION_DEBUG", "") not in ("", "0")


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
