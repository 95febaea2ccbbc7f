#!/usr/bin/env bash
# The relaxed-SIMD tier: the CPU kernel tests (test/kernels/cpu-*.test.ts) under a Node whose WebAssembly
# validates relaxed SIMD, so that the kernels built on it run: the relaxed 8-bit kernel where the engine
# proves its dot exact (and its few-row kernels over a prepacked rhs), forced on 7-bit data elsewhere, and
# the 4-bit dot7 kernels (gen-nibble.ts) where the engine's 7-bit probe passes, and the plans and workers
# of a repeated call on that engine. Node 20 lacks it and Node 22 saturates the 8-bit dot (there those
# tests skip), so tools/node24.sh fetches Node 24 where the running Node is older than 24.
set -euo pipefail
cd "$(dirname "$0")/.."
NODE=$(tools/node24.sh)
echo "relaxed-SIMD tier on Node $("$NODE" --version)"
"$NODE" node_modules/vitest/vitest.mjs run test/kernels/cpu-nibble.test.ts test/kernels/cpu-prepack.test.ts test/kernels/cpu-wasm.test.ts \
  test/kernels/cpu-plan.test.ts test/kernels/cpu-workers.test.ts
