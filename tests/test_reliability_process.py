"""Whole-process failures end promptly with the library's own errors: no adapter, Ctrl-C
while the default device starts, and os.fork() after GPU use. Each runs in a fresh
interpreter with a timeout, so a hang fails the test instead of the suite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

NO_DRIVER = {"VK_ICD_FILENAMES": "/nonexistent/icd.json", "VK_DRIVER_FILES": "/nonexistent/icd.json",
             "__EGL_VENDOR_LIBRARY_FILENAMES": "/nonexistent/egl.json"}


def run(code: str, env: dict[str, str] | None = None, timeout: float = 60
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("how", ["default", "open_device"])
def test_no_adapter_raises_no_adapter_error_and_the_process_exits(how):
    out = run(f"""
        import anyio, asyncfusion as af
        async def opened():
            async with af.open_device():
                pass
        try:
            if {how!r} == "default":
                (af.tensor([1.0]) * 2).to_data_sync()
            else:
                anyio.run(opened)
        except af.NoAdapterError as exc:
            print("NoAdapterError:", exc)
    """, env=NO_DRIVER, timeout=30)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "NoAdapterError: wgpu found no GPU adapter" in out.stdout
    assert "mesa-vulkan-drivers" in out.stdout


@pytest.mark.parametrize("delay", [0.05, 0.3])
def test_ctrl_c_while_the_default_device_starts_ends_the_process(delay):
    proc = subprocess.Popen(
        [sys.executable, "-c", "import asyncfusion as af\nprint('go', flush=True)\n"
         "print((af.tensor([1.0, 2.0]) * 2).to_data_sync().tolist(), flush=True)\n"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "go"
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    # Interrupted (KeyboardInterrupt) or, if the signal came late, finished: never hung.
    assert proc.returncode in (0, -signal.SIGINT, 1), err[-2000:]
    assert "KeyboardInterrupt" in err or "[2.0, 4.0]" in out


FORK_CHILD = """
    import os, sys, multiprocessing, anyio, asyncfusion as af
    x = af.tensor([1.0, 2.0])
    assert (x * 2).to_data_sync().tolist() == [2.0, 4.0]

    async def opened():
        async with af.open_device() as dev:
            await (af.tensor([3.0], device=dev) * 2).to_data()

    async def numpy_backend():
        async with af.open_device("numpy") as dev:
            return (await (af.tensor([2.0], device=dev) * 3).to_data()).tolist()

    def child(_=None):
        seen = []
        for what, fn in (("reuse", lambda: (x + 1).to_data_sync()),
                         ("default", lambda: af.tensor([5.0]).to_data_sync()),
                         ("open", lambda: anyio.run(opened))):
            try:
                fn()
                seen.append(what + ":worked")
            except af.DeviceClosedError as exc:
                seen.append(what + (":fork" if "fork" in str(exc) else ":" + str(exc)))
        seen.append("numpy:" + str(anyio.run(numpy_backend)))
        return " ".join(seen)

    MODE
    print("parent after:", (x * 3).to_data_sync().tolist())
"""


@pytest.mark.parametrize("mode", ["os.fork", "multiprocessing"])
def test_a_forked_child_gets_a_clear_error_not_a_hang(mode):
    body = ("""
    pid = os.fork()
    if pid == 0:
        print("child:", child(), flush=True)
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0
    """ if mode == "os.fork" else """
    with multiprocessing.get_context("fork").Pool(2) as pool:
        for line in pool.map(child, range(2)):
            print("child:", line, flush=True)
    """)
    out = run(textwrap.dedent(FORK_CHILD).replace("MODE", textwrap.dedent(body)), timeout=90)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("child:")]
    assert lines and all(ln == "child: reuse:fork default:fork open:fork numpy:[6.0]"
                         for ln in lines), out.stdout
    assert "parent after: [3.0, 6.0]" in out.stdout
