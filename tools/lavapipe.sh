#!/usr/bin/env bash
# Fetches lavapipe (Mesa's software Vulkan driver) from Mesa >= 26, the first release whose lavapipe
# offers VK_KHR_cooperative_matrix, so that Dawn exposes WebGPU subgroup matrices (M8 N8 K8, u8->u32 and
# i8->i32) on a machine with no GPU. The tests use it to run the subgroup-matrix GEMM kernel with the
# real builtins. Debian's trixie-backports carries Mesa 26; its driver needs trixie's glibc, libstdc++
# and LLVM, so those few packages are fetched too, by name, with a private apt configuration, and
# unpacked with `dpkg -x` into .lavapipe/ (ignored by git). Nothing is installed into the system.
# Idempotent: when .lavapipe/ready exists nothing is fetched. Prints the root folder on stdout.
# On failure it prints one line starting with "lavapipe:" on stderr and exits 1.
#
# Usage: tools/lavapipe.sh            fetch if needed, print the root
#        tools/lavapipe.sh --env      fetch if needed, print `export` lines for VK_* and MESA_*
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD/.lavapipe"
fail() { echo "lavapipe: $*" >&2; exit 1; }

if [ ! -f "$ROOT/ready" ]; then
  command -v apt-get >/dev/null && command -v dpkg >/dev/null || fail "needs apt-get and dpkg (a Debian-like system)"
  [ "$(dpkg --print-architecture)" = amd64 ] || fail "only amd64 is supported (found $(dpkg --print-architecture))"
  rm -rf "$ROOT.tmp"
  A="$ROOT.tmp/apt"
  mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc/preferences.d" "$A/etc/sources.list.d" "$ROOT.tmp/debs" "$ROOT.tmp/root"
  # The Debian mirror the machine already uses (deb.debian.org when none is found).
  MIRROR=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
    grep -E '^[[:space:]]*(URIs:|deb[[:space:]])' | grep -oE 'https?://[^ ]+/debian/?' | head -n1 || true)
  MIRROR=${MIRROR:-http://deb.debian.org/debian}
  KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -f "$KEYRING" ] || fail "no Debian archive keyring at $KEYRING"
  cat > "$A/sources.list" <<SRC
deb [signed-by=$KEYRING] $MIRROR trixie main
deb [signed-by=$KEYRING] $MIRROR trixie-backports main
SRC
  cat > "$A/apt.conf" <<CONF
Dir::Etc::SourceList "$A/sources.list";
Dir::Etc::SourceParts "$A/etc/sources.list.d";
Dir::Etc::Preferences "$A/etc/preferences";
Dir::Etc::PreferencesParts "$A/etc/preferences.d";
Dir::State::Lists "$A/lists";
Dir::State::status "/dev/null";
Dir::Cache "$A/cache";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
Acquire::Languages "none";
CONF
  export APT_CONFIG="$A/apt.conf"
  apt-get -qq -o APT::Update::Error-Mode=any update >"$A/update.log" 2>&1 || fail "apt-get update of trixie/trixie-backports from $MIRROR failed (see $A/update.log)"
  pkgs=(mesa-vulkan-drivers/trixie-backports libc6/trixie libstdc++6/trixie libgcc-s1/trixie libllvm19/trixie libz3-4/trixie libdisplay-info2/trixie)
  (cd "$ROOT.tmp/debs" && apt-get -qq download "${pkgs[@]}") >"$A/download.log" 2>&1 || fail "apt-get download ${pkgs[*]} failed (see $A/download.log)"
  ver=$(dpkg-deb -f "$ROOT.tmp"/debs/mesa-vulkan-drivers_*.deb Version)
  [ "${ver%%.*}" -ge 26 ] 2>/dev/null || fail "mesa-vulkan-drivers $ver from trixie-backports is older than 26 (no cooperative matrices)"
  for f in "$ROOT.tmp"/debs/*.deb; do dpkg -x "$f" "$ROOT.tmp/root" || fail "dpkg -x $f failed"; done
  lib="$ROOT/root/usr/lib/x86_64-linux-gnu"
  [ -f "$ROOT.tmp/root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so" ] || fail "libvulkan_lvp.so missing from mesa-vulkan-drivers $ver"
  rm -rf "$ROOT.tmp/apt" "$ROOT.tmp/debs"
  cat > "$ROOT.tmp/lvp_icd.json" <<JSON
{"file_format_version": "1.0.1", "ICD": {"library_path": "$lib/libvulkan_lvp.so", "api_version": "1.4.0"}}
JSON
  echo "$ver" > "$ROOT.tmp/mesa-version"
  rm -rf "$ROOT" && mv "$ROOT.tmp" "$ROOT"
  touch "$ROOT/ready"
fi

if [ "${1:-}" = --env ]; then
  echo "export VK_DRIVER_FILES='$ROOT/lvp_icd.json' VK_ICD_FILENAMES='$ROOT/lvp_icd.json' MESA_SHADER_CACHE_DIR='${TMPDIR:-/tmp}/qgemm-lavapipe-cache'"
else
  echo "$ROOT"
fi
