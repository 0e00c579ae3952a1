"""A read that ends in an exception leaves no tensor in the exception's traceback.

asyncio keeps a cancelled task's ``CancelledError`` (so does a task that failed), and its
traceback keeps every frame the exception unwound, locals and all. The frames of a read
(``Tensor.to_data`` down to the device server's request) name the tensor being read, so
a task object that outlives the read (``for t in tasks: t.cancel()`` leaves the last one
in ``t``) would keep that tensor, and its device memory, for as long as it lives.
"""

from __future__ import annotations

import contextlib

__all__ = ["clear_read_frames"]

_PACKAGE = __name__.partition(".")[0] + "."  # every module of the package


def clear_read_frames(exc: BaseException) -> None:
    """Clear the locals of asyncfusion's frames in ``exc``'s traceback. Each one that the
    exception has unwound is finished; the frame handling ``exc`` still runs (clearing it
    raises), so it deletes its own tensors before it re-raises."""
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if str(frame.f_globals.get("__name__", "")).startswith(_PACKAGE):
            with contextlib.suppress(RuntimeError):  # the handling frame: still running
                frame.clear()
        tb = tb.tb_next
