#!/usr/bin/env bash
# One line up front in CI's log, so that a failure can be read against its machine: the CPU model, the
# flags that decide the CPU path's speed and, through the engine's relaxed-SIMD probe, which kernel runs
# (avx2, avx_vnni, avx512_vnni, amx_int8), and for each tier its Node and the CPU kernel gemm('cpu')
# picks there (registry.ts: cpu-wasm-relaxed where the relaxed dot is proven exact, else cpu-wasm-simd),
# with the engine's note. Needs the Node bundle (dist/node/index.js); usage: tools/ci-machine.sh TIER=NODE...
set -uo pipefail
cd "$(dirname "$0")/.."
model=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | tr ' ' '\n' | grep -xE 'avx2|avx_vnni|avx512_vnni|amx_int8' | paste -sd, -)
line="machine: ${model:-unknown CPU} ($(nproc) cores; ${flags:-none of avx2, avx_vnni, avx512_vnni, amx_int8})"
for tier in "$@"; do
  node=${tier#*=}
  kernel=$("$node" --input-type=module -e "
    const q = await import('./dist/node/index.js');
    let id = '?';
    const one = { data: new Uint8Array(1), rows: 1, cols: 1 };
    await q.gemm({ lhs: one, rhs: one }, { backend: 'cpu', onKernel: (k) => (id = k) });
    const c = await q.readyCpuCaps();
    console.log(id + ' (relaxed SIMD: ' + c.relaxedNote + ')');
    process.exit(0);" 2>&1 | tail -n 1)
  line+="; ${tier%%=*} on Node $("$node" --version): ${kernel}"
done
echo "$line"
