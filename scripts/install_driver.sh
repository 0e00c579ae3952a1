#!/usr/bin/env bash
# Install a CPU Vulkan driver (Debian's mesa-vulkan-drivers: lavapipe) with apt-get, after
# saying what will run. ASYNCFUSION_NO_APT=1 turns the install off: then this only says
# what to install, and fails.
set -euo pipefail
pkg=mesa-vulkan-drivers
if [ "${ASYNCFUSION_NO_APT:-0}" != "0" ]; then
  echo "No GPU adapter found, and ASYNCFUSION_NO_APT is set, so nothing is installed." \
       "Install a Vulkan driver (Debian/Ubuntu: apt-get install $pkg, a CPU driver)" \
       "and run this again." >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "No GPU adapter, and no apt-get to install one. Install a Vulkan driver" \
       "(Linux: Mesa's lavapipe, package $pkg) and run this again." >&2
  exit 1
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "No GPU adapter found. About to run (set ASYNCFUSION_NO_APT=1 to skip):"
echo "  ${SUDO:+$SUDO }apt-get update -qq"
echo "  ${SUDO:+$SUDO }apt-get install -y -qq $pkg   # lavapipe, a CPU Vulkan driver"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$pkg" >/dev/null
