"""Process environment fixes applied before wgpu loads.

Mesa's Vulkan and EGL drivers print ``error: XDG_RUNTIME_DIR is invalid or not set in
the environment.`` (several times) when that variable does not name an existing
directory, which is the case in containers, CI jobs and ssh sessions without a login
manager. A compute program needs no runtime directory, so where it is missing or invalid
asyncfusion points it at a private one (``$TMPDIR/asyncfusion-runtime-<uid>``, mode 0700)
before any driver is loaded. A valid value is left untouched.
"""

from __future__ import annotations

import os
import sys
import tempfile

__all__ = ["ensure_runtime_dir"]


def ensure_runtime_dir() -> None:
    """Give the process a valid ``XDG_RUNTIME_DIR`` on Linux when it has none."""
    if not sys.platform.startswith("linux"):
        return
    current = os.environ.get("XDG_RUNTIME_DIR", "")
    if current and os.path.isdir(current):
        return
    tmp = tempfile.gettempdir()
    private = os.path.join(tmp, f"asyncfusion-runtime-{os.getuid()}")
    try:
        os.makedirs(private, mode=0o700, exist_ok=True)
    except OSError:  # a read-only or foreign temp dir: any existing directory will do
        private = tmp
    os.environ["XDG_RUNTIME_DIR"] = private
