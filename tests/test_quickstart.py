"""The seed's programs, end to end, with their launch counts."""

from __future__ import annotations

import numpy as np

import asyncfusion as af

SEED_RESULT = [148.41316, 22026.467, 24154958.0, 195729570000.0]


def small(dev, start: float) -> af.Tensor:
    return af.tensor([start, start + 1, start + 2, start + 3], device=dev)


async def test_seed_first_program_fused(dev):
    a, b, c = small(dev, 1.0), small(dev, 2.0), small(dev, 3.0)
    d = (a * b + c).exp()
    out = await d.to_data()
    np.testing.assert_allclose(out, SEED_RESULT, rtol=1e-6)
    assert dev.stats().launches == 1


async def test_seed_first_program_plain(plain):
    a, b, c = small(plain, 1.0), small(plain, 2.0), small(plain, 3.0)
    out = await ((a * b + c).exp()).to_data()
    np.testing.assert_allclose(out, SEED_RESULT, rtol=1e-6)
    assert plain.stats().launches == 3


async def test_eight_ops_eight_launches_plain_one_fused(dev, plain):
    for device, expected in ((plain, 8), (dev, 1)):
        x = af.tensor(np.linspace(-1, 1, 64, dtype=np.float32), device=device)
        for _ in range(3):
            device.reset_stats()
            y = (((x * 0.5 + 1.0).sin().exp() * 0.25 + 2.0).cos()).abs()
            await y.to_data()
            assert device.stats().launches == expected


def test_blocking_door_in_plain_script():
    # The default device serves scripts with no event loop.
    x = af.tensor([1.0, 2.0, 3.0])
    out = (x * 2.0 + 1.0).to_data_sync()
    np.testing.assert_array_equal(out, np.array([3.0, 5.0, 7.0], dtype=np.float32))


async def test_blocking_door_refuses_inside_event_loop(dev):
    x = af.tensor([1.0], device=dev)
    try:
        x.to_data_sync()
    except af.BlockingCallError as exc:
        assert "await" in str(exc)
    else:
        raise AssertionError("to_data_sync() ran inside an event loop")


def _run_example(name: str, **env: str) -> tuple[str, str]:
    import os
    import subprocess
    import sys
    from pathlib import Path

    path = Path(__file__).parent.parent / "examples" / name
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


def test_quickstart_example_prints_the_seed_trace_to_stderr():
    out, err = _run_example("quickstart.py")
    assert "[block] 3 op(s): Mul(F32), Add(F32), Exp(F32)" in err
    assert err.count("[launch]") == 1 and "[" not in out.replace("[148", "")
    assert "--- result [148.41" in out and "launches: 1" in out


def test_seed_loop_example_shows_eight_versus_one_launch():
    out, _ = _run_example("seed_loop.py")
    assert out.count("8 ops -> 8 launch(es)") == 3
    assert out.count("8 ops -> 1 launch(es)") == 3


def test_trace_env_var_and_take_launches():
    import subprocess
    import sys

    script = ("import asyncfusion as af\n"
              "x = af.tensor([1.0, 2.0])\n"
              "af.take_launches()\n"
              "print((x * 2.0 + 1.0).to_data_sync())\n"
              "print('launches', af.take_launches())\n")
    import os

    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "ASYNCFUSION_TRACE": "1",
                                            "XDG_RUNTIME_DIR": "/no/such/dir"})
    assert proc.returncode == 0, proc.stderr
    assert "[registered] Mul" in proc.stderr and "[launch] elementwise[mul add]" in proc.stderr
    assert "launches 1" in proc.stdout and "[registered]" not in proc.stdout
    assert "XDG_RUNTIME_DIR" not in proc.stderr


def test_trace_through_logging_alone():
    import logging

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    log = logging.getLogger("asyncfusion.trace")
    handler = Keep()
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        x = af.tensor([1.0, 2.0])
        (x * 2.0 + 1.0).to_data_sync()
    finally:
        log.removeHandler(handler)
        log.setLevel(logging.NOTSET)
    assert any(r.startswith("[launch] elementwise[mul add]") for r in records), records
