#!/usr/bin/env bash
# Build the sdist, unpack it, install it (with its test tools) into a fresh venv, and run a
# smoke subset of the tests it ships: what a packager or a `pip download` user would do.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q build > "$work/pip.log" 2>&1 || { cat "$work/pip.log" >&2; exit 1; }
"$work/venv/bin/python" -m build --sdist --outdir "$work/dist" . > "$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; exit 1; }
sdist=$(ls "$work"/dist/asyncfusion-*.tar.gz)
echo "built $(basename "$sdist") ($(du -k "$sdist" | cut -f1) KiB)"
tar xzf "$sdist" -C "$work"
src=$(ls -d "$work"/asyncfusion-*/)
"$work/venv/bin/python" -m pip install -q "$sdist[test]" > "$work/pip.log" 2>&1 \
  || { cat "$work/pip.log" >&2; exit 1; }
cd "$src"
rm -rf asyncfusion  # tests/ and examples/ from the unpacked sdist, asyncfusion as installed
ASYNCFUSION_DEBUG=1 "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
  tests/test_exports.py tests/test_quickstart.py tests/test_interop.py tests/test_plugin.py \
  tests/test_package.py
