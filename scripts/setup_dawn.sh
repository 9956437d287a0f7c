#!/usr/bin/env bash
# What the dawn WebGPU implementation (Dawn through Node, npm `webgpu`; `--implementation dawn`)
# needs, without touching what wgpu uses:
#
#   1. the pinned Node packages (verify/gpu/dawn/package-lock.json: `webgpu`, which ships
#      dawn.node, and `onnxruntime-web`, whose WebGPU kernels the ort.* kernels verify) installed
#      with `npm ci` into verify/gpu/dawn/node_modules;
#   2. a Vulkan driver Dawn accepts. Debian 12's Mesa 22.3 lavapipe lacks features Dawn
#      requires (it returns no adapter), so Mesa 25's lavapipe is downloaded from
#      bookworm-backports with a private apt state and unpacked, not installed, into
#      $VERIFY_CACHE/mesa-bpo, with an ICD file whose library_path is absolute. wgpu keeps
#      the system Mesa; only Dawn's Node process is pointed at this one.
#
# Chromium's SwiftShader (/usr/lib/chromium/vk_swiftshader_icd.json, no shader-f16) is used
# when Mesa 25 cannot be had. Idempotent: a second run checks and returns in about a second.
# Never fatal for the wgpu implementation: without Node or a driver it says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup(dawn): %s\n' "$*" >&2; }
CACHE=${VERIFY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/verify}
MESA=$CACHE/mesa-bpo
MESA_LIB=$MESA/usr/lib/x86_64-linux-gnu
NODE_DIR=verify/gpu/dawn

# -- 1. Node packages ----------------------------------------------------------------------------
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  say "Node.js and npm not found: the dawn implementation is unavailable (install nodejs >= 18 and npm, then rerun)"
  exit 0
fi
lock_sum=$(sha256sum "$NODE_DIR/package-lock.json" | cut -d' ' -f1)
stamp="$NODE_DIR/node_modules/.verify-lock-sha256"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$lock_sum" ]; then
  say "node packages up to date ($NODE_DIR/node_modules)"
else
  pinned() { sed -n "s/.*\"$1\": \"\(.*\)\".*/\1/p" "$NODE_DIR/package.json"; }
  say "installing node packages with npm ci ($NODE_DIR/package-lock.json: webgpu $(pinned webgpu), onnxruntime-web $(pinned onnxruntime-web))"
  (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$lock_sum" > "$stamp"
fi

# -- 2. Mesa 25 lavapipe, unpacked ---------------------------------------------------------------
icd=$MESA/lvp_icd.json
if [ -f "$icd" ] && [ -f "$MESA_LIB/libvulkan_lvp.so" ]; then
  say "Mesa lavapipe for Dawn present ($(cat "$MESA/VERSION" 2>/dev/null || echo '?'), $MESA)"
  exit 0
fi
if [ "$(uname -m)" != x86_64 ] || ! command -v apt-get >/dev/null 2>&1 || ! grep -qs bookworm /etc/os-release; then
  say "not Debian 12 on x86_64: Mesa 25 is not downloaded; Dawn uses the system Vulkan drivers or Chromium's SwiftShader"
  exit 0
fi

# The machine's configured Debian mirror, from deb822 .sources or a classic sources.list.
mirror=$(
  { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
    grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}'; } |
  grep -v -e security -e '^$' | grep -i debian | head -n 1 || true
)
mirror=${mirror:-http://deb.debian.org/debian}
apt_state=$CACHE/apt-bpo
mkdir -p "$apt_state/lists/partial" "$apt_state/cache/archives/partial" "$apt_state/debs"
echo "deb $mirror bookworm-backports main" > "$apt_state/sources.list"
APT=(-o "Dir::Etc::SourceList=$apt_state/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o "Dir::State::Lists=$apt_state/lists" -o "Dir::Cache=$apt_state/cache" -o Debug::NoLocking=1
     -o APT::Sandbox::User=root)
say "downloading Mesa lavapipe from $mirror bookworm-backports (private apt state in $apt_state; nothing installed system-wide)"
if ! apt-get "${APT[@]}" -qq update >/dev/null 2>&1; then
  say "could not read bookworm-backports from $mirror: Dawn falls back to Chromium's SwiftShader (no shader-f16)"
  exit 0
fi
rm -f "$apt_state"/debs/*.deb
if ! (cd "$apt_state/debs" && apt-get "${APT[@]}" -qq download \
        mesa-vulkan-drivers/bookworm-backports libdrm2/bookworm-backports libdrm-amdgpu1/bookworm-backports >/dev/null 2>&1); then
  say "could not download mesa-vulkan-drivers from bookworm-backports: Dawn falls back to Chromium's SwiftShader (no shader-f16)"
  exit 0
fi
rm -rf "$MESA.partial"
for deb in "$apt_state"/debs/*.deb; do dpkg -x "$deb" "$MESA.partial"; done
version=$(dpkg-deb -f "$apt_state"/debs/mesa-vulkan-drivers_*.deb Version)
cat > "$MESA.partial/lvp_icd.json" <<JSON
{"file_format_version": "1.0.0", "ICD": {"library_path": "$MESA_LIB/libvulkan_lvp.so", "api_version": "1.3"}}
JSON
echo "$version" > "$MESA.partial/VERSION"
rm -rf "$MESA" && mv "$MESA.partial" "$MESA"
say "Mesa lavapipe $version unpacked into $MESA (Dawn's Node process gets VK_ICD_FILENAMES=$icd)"
