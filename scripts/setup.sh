#!/usr/bin/env bash
# Make .venv with asyncfusion (and, with "test" or "docs", those tools), and make sure wgpu
# has an adapter: where none is found, scripts/install_driver.sh says what it will install
# and installs Debian's mesa-vulkan-drivers (lavapipe, a CPU Vulkan driver) with apt-get;
# ASYNCFUSION_NO_APT=1 turns that off.
set -euo pipefail
cd "$(dirname "$0")/.."
extra=${1:-}
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
spec="."
[ -n "$extra" ] && spec=".[$extra]"
echo "installing asyncfusion${extra:+ with its $extra tools} into .venv (log: .venv/pip.log)"
if ! .venv/bin/python -m pip install -e "$spec" > .venv/pip.log 2>&1; then
  cat .venv/pip.log >&2
  exit 1
fi
if ! .venv/bin/python scripts/ensure_adapter.py; then
  bash scripts/install_driver.sh
  .venv/bin/python scripts/ensure_adapter.py || {
    echo "still no adapter after installing mesa-vulkan-drivers" >&2; exit 1; }
fi
