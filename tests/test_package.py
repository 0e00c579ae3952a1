"""What a user installs: metadata, license, typing marker, diagnostics, set-up messages."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import asyncfusion as af

ROOT = Path(__file__).parent.parent


def test_version_license_and_typing_marker():
    meta = importlib.metadata.metadata("asyncfusion")
    assert af.__version__ == importlib.metadata.version("asyncfusion") == meta["Version"]
    assert meta["License-Expression"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert importlib.resources.files("asyncfusion").joinpath("py.typed").is_file()
    classifiers = meta.get_all("Classifier")
    assert "Typing :: Typed" in classifiers and "Framework :: Trio" in classifiers
    assert meta.get_all("Project-URL")


def test_trio_extra_and_the_pytest_plugin_entry_point():
    meta = importlib.metadata.metadata("asyncfusion")
    assert "trio" in meta.get_all("Provides-Extra")
    assert any("extra == \"trio\"" in r for r in meta.get_all("Requires-Dist"))
    plugins = importlib.metadata.entry_points(group="pytest11")
    assert any(ep.value == "asyncfusion.pytest_plugin" for ep in plugins)


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    return subprocess.run(args, capture_output=True, text=True, timeout=60, env={**full, **env})


@pytest.mark.parametrize("xdg", [None, "/no/such/dir"], ids=["unset", "invalid"])
def test_python_m_asyncfusion_reports_adapter_and_versions_without_noise(xdg):
    proc = _run([sys.executable, "-m", "asyncfusion"], **({"XDG_RUNTIME_DIR": xdg} if xdg else {}))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no XDG_RUNTIME_DIR (or any other) noise
    out = proc.stdout
    assert out.startswith(f"asyncfusion {af.__version__}\n")
    for needle in ("numpy ", "wgpu 0.", "wgpu-native ", "adapter ", "driver ", "shader-f16 ",
                   "subgroup ", "max-storage-buffers-per-shader-stage"):
        assert needle in out, needle


def test_python_m_asyncfusion_json():
    proc = _run([sys.executable, "-m", "asyncfusion", "--json"])
    data = json.loads(proc.stdout)
    assert data["asyncfusion"] == af.__version__ and data["versions"]["numpy"]
    assert data["adapter"]["limits"]["max-compute-workgroups-per-dimension"] >= 65535
    assert set(data["adapter"]["features"]) >= {"shader-f16", "subgroup"}


def _fake_apt(tmp_path: Path) -> Path:
    """A PATH dir whose apt-get only records its arguments (and sudo just runs it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("apt-get", f"echo \"apt-get $*\" >> {tmp_path / 'apt.log'}"),
                       ("sudo", 'exec "$@"')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def test_driver_install_says_what_it_will_run_before_apt_get(tmp_path):
    bin_dir = _fake_apt(tmp_path)
    proc = _run(["bash", str(ROOT / "scripts" / "install_driver.sh")],
                PATH=f"{bin_dir}:{os.environ['PATH']}", ASYNCFUSION_NO_APT="0")
    assert proc.returncode == 0, proc.stderr
    assert "About to run (set ASYNCFUSION_NO_APT=1 to skip)" in proc.stdout
    assert "apt-get install -y -qq mesa-vulkan-drivers" in proc.stdout
    calls = (tmp_path / "apt.log").read_text().splitlines()
    assert calls == ["apt-get update -qq", "apt-get install -y -qq mesa-vulkan-drivers"]


def test_driver_install_is_off_with_asyncfusion_no_apt(tmp_path):
    bin_dir = _fake_apt(tmp_path)
    proc = _run(["bash", str(ROOT / "scripts" / "install_driver.sh")],
                PATH=f"{bin_dir}:{os.environ['PATH']}", ASYNCFUSION_NO_APT="1")
    assert proc.returncode == 1
    assert "ASYNCFUSION_NO_APT is set" in proc.stderr and "mesa-vulkan-drivers" in proc.stderr
    assert not (tmp_path / "apt.log").exists()
