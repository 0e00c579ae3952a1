"""The stream lookup and the event-loop check are safe while another thread imports trio."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types


from asyncfusion import _debug
from asyncfusion.engine.streams import StreamId


class _HalfImported(types.ModuleType):
    """What ``sys.modules["trio"]`` is while another thread runs trio's __init__."""

    def __getattr__(self, name: str):
        raise AttributeError(f"partially initialized module 'trio' has no attribute {name!r} "
                             "(most likely due to a circular import)")


def test_a_half_imported_trio_is_not_a_running_trio(monkeypatch):
    monkeypatch.setitem(sys.modules, "trio", _HalfImported("trio"))
    assert StreamId.current()[0] == "thread"
    assert _debug.in_event_loop() is False


def test_registering_ops_while_another_thread_imports_trio():
    # A fresh interpreter, so trio really is imported while ops are registered.
    code = textwrap.dedent("""
        import sys, threading
        import asyncfusion as af
        assert "trio" not in sys.modules
        x = af.tensor([1.0, 2.0])
        errors = []
        def spin():
            try:
                for _ in range(20000):
                    x + 1.0
            except Exception as exc:
                errors.append(exc)
        th = threading.Thread(target=spin)
        th.start()
        import trio
        th.join()
        assert not errors, errors
        print((x + 1.0).to_data_sync().tolist())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[2.0, 3.0]"
