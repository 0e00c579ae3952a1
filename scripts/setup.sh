#!/usr/bin/env bash
# Make .venv with asyncfusion (and, with "test", its test tools), and make sure wgpu has an
# adapter: where none is found, install Debian's mesa-vulkan-drivers (lavapipe, a CPU Vulkan
# driver) when we can, otherwise say what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
extra=${1:-}
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
spec="."
[ "$extra" = "test" ] && spec=".[test]"
echo "installing asyncfusion${extra:+ with its $extra tools} into .venv (log: .venv/pip.log)"
if ! .venv/bin/python -m pip install -e "$spec" > .venv/pip.log 2>&1; then
  cat .venv/pip.log >&2
  exit 1
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
if ! .venv/bin/python scripts/ensure_adapter.py; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "installing mesa-vulkan-drivers (lavapipe) for a CPU Vulkan adapter..."
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mesa-vulkan-drivers >/dev/null
    .venv/bin/python scripts/ensure_adapter.py || {
      echo "still no adapter after installing mesa-vulkan-drivers"; exit 1; }
  else
    echo "No GPU adapter, and no apt-get to install one. Install a Vulkan driver" \
         "(Linux: Mesa's lavapipe, package mesa-vulkan-drivers) and run this again." >&2
    exit 1
  fi
fi
