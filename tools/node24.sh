#!/usr/bin/env bash
# Prints the path of a Node whose relaxed 8-bit dot can be exact (24 or later: Node 22 validates relaxed
# SIMD, but its V8 lowers the dot to a saturating instruction even on AVX-VNNI, so the engine's probe
# rejects it there and the tier would skip the kernel it exists for): the running one, or Node 24's
# binary from the npm registry (package node-linux-<arch>, no install script), fetched once into
# .node24/ (ignored by git). Used by the relaxed-SIMD tier (tools/test-relaxed.sh) and CI's machine line
# (tools/ci-machine.sh). On failure it prints one line starting with "relaxed:" on stderr and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 24 ]; then
  command -v node
  exit 0
fi
ARCH=$(node -p 'process.arch')
NODE="$PWD/.node24/node_modules/node-linux-$ARCH/bin/node"
if [ ! -x "$NODE" ]; then
  npm install --prefix .node24 --no-save --no-audit --no-fund --loglevel=error "node-linux-$ARCH@24" >/dev/null ||
    { echo "relaxed: could not fetch node-linux-$ARCH@24 from the npm registry" >&2; exit 1; }
fi
echo "$NODE"
