"""Device options are defined and checked once (``DeviceOptions``): every way to open a
device takes the same keywords and refuses the same bad ones, naming them."""

from __future__ import annotations

import pytest

import asyncfusion as af
from asyncfusion.runtime.collector import YOUNG_AT


def test_the_options_are_one_dataclass_that_devices_keep():
    dev = af.Device("numpy", max_round=7, max_wait_ms=2.5)
    assert dev.options == af.DeviceOptions(backend="numpy", max_round=7, max_wait_ms=2.5)
    with pytest.raises(Exception):  # frozen: a device's options never change under it
        dev.options.max_round = 8  # type: ignore[misc]


async def test_an_unknown_option_is_named_with_the_known_ones():
    with pytest.raises(TypeError, match=r"unknown device option 'max_rounds'.*max_round"):
        async with af.open_device("numpy", max_rounds=3):
            pass
    with pytest.raises(TypeError, match=r"unknown device options 'a', 'b'"):
        af.Device("numpy", a=1, b=2)


@pytest.mark.parametrize("options, error, text", [
    ({"max_round": 0}, ValueError, r"max_round must be at least 1 \(or None: no limit\)"),
    ({"max_storage_bindings": 2}, ValueError, "max_storage_bindings must be at least 4"),
    ({"workgroup": True}, TypeError, "workgroup must be an int or None"),
    ({"flush_threshold": None}, TypeError, "flush_threshold must be an int, not None"),
    ({"cache_bytes": -1}, ValueError, "cache_bytes must be 0 or more"),
    ({"retry_after": 0}, ValueError, "retry_after must be a positive number"),
    ({"max_wait_ms": float("inf")}, ValueError, "max_wait_ms must be a number"),
    ({"fusion": 1}, TypeError, "fusion must be True or False"),
    ({"freeze_gc": "yes"}, TypeError, "freeze_gc must be True or False"),
])
def test_bad_values_are_refused_naming_the_option(options, error, text):
    with pytest.raises(error, match=text):
        af.DeviceOptions(backend="numpy", **options)
    with pytest.raises(error, match=text):
        af.Device("numpy", **options)


def test_an_unknown_backend_says_which_exist():
    with pytest.raises(af.OptionError, match=r"unknown backend 'cuda'; use 'wgpu' .*NVIDIA"
                                             r".* or 'numpy'.*af\.open_device\('wgpu'\)"):
        af.DeviceOptions(backend="cuda")
    with pytest.raises(af.InputError, match="unknown backend 'metal'"):
        af.Device("metal")


_FREEZE_PROBE = """
import gc, sys, anyio, asyncfusion as af
held = [[i] for i in range(10_000)]  # imported objects, say
async def main():
    young = gc.get_threshold()[0]
    async with af.open_device("numpy", freeze_gc=sys.argv[1] == "on"):
        pass
    print(young, gc.get_threshold()[0])
    async with af.open_device("numpy"):
        pass
    print(gc.get_freeze_count())
anyio.run(main)
"""


@pytest.mark.parametrize("flag", ["on", "off"])
def test_the_first_device_freezes_what_the_process_made_before_it(flag):
    """freeze_gc: the first device of a process collects and freezes the survivors (the
    10,000 lists made before it among them) once; a later device freezes nothing more.
    Off, the first device leaves the collector alone (and the second, on, freezes). On,
    it also spaces young collections out to YOUNG_AT new objects; off, the threshold
    stays Python's."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _FREEZE_PROBE, flag], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    frozen = int(proc.stdout.split()[-1])
    assert frozen >= 10_000
    before, after = (int(v) for v in proc.stdout.split()[:2])
    assert before < YOUNG_AT  # Python's default, 700 (2000 from 3.13)
    assert after == (YOUNG_AT if flag == "on" else before)
    if flag == "on":  # the second device froze nothing: the count is the first one's
        assert frozen < 10_000 + 200_000
