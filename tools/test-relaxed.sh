#!/usr/bin/env bash
# The relaxed-SIMD tier: the CPU kernel tests (test/kernels/cpu-*.test.ts) under a Node whose WebAssembly
# validates relaxed SIMD, so that the kernels built on it run: the 4-bit dot7 kernels (gen-nibble.ts,
# where the engine's 7-bit probe passes) and the relaxed 8-bit kernel forced on 7-bit data. Node 20
# lacks it (there those tests skip), so where the running Node is older than 22 this fetches Node 24's
# binary from the npm registry (package node-linux-<arch>, no install script) into .node24/ (ignored by
# git), once. On failure it prints one line starting with "relaxed:" on stderr and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
NODE=node
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
  ARCH=$(node -p 'process.arch')
  NODE="$PWD/.node24/node_modules/node-linux-$ARCH/bin/node"
  if [ ! -x "$NODE" ]; then
    npm install --prefix .node24 --no-save --no-audit --no-fund --loglevel=error "node-linux-$ARCH@24" >/dev/null ||
      { echo "relaxed: could not fetch node-linux-$ARCH@24 from the npm registry" >&2; exit 1; }
  fi
fi
echo "relaxed-SIMD tier on Node $("$NODE" --version)"
"$NODE" node_modules/vitest/vitest.mjs run test/kernels/cpu-nibble.test.ts test/kernels/cpu-prepack.test.ts test/kernels/cpu-wasm.test.ts
