// CpuCaps: what this JavaScript runtime offers the CPU kernels (pack -> gemm -> output on the CPU): WebAssembly
// SIMD, relaxed SIMD (proven exact: src/kernels/cpu-wasm/engine.ts), threads and shared memory. The left
// half of the CPU rows of the kernel registry's choice table (./registry.ts). Finding them compiles the
// WebAssembly module and probes it, so it is asynchronous: `readyCpuCaps()` probes once and reports the
// current configuration on every call.

import { wasmCpuCaps } from './cpu-wasm/kernel.ts';
import type { CpuCaps } from './types.ts';

/** relaxedNote: why relaxed SIMD is off, or how it was proven; threadsNote: why a page runs one thread over a shared memory (its workers cannot start). */
export type CpuCapsReport = CpuCaps & { relaxedNote: string; threadsNote?: string };

/**
 * The runtime's CPU capabilities as configured now: the probe runs once (the engine keeps it), and
 * each call reads the current configuration (configureCpu's threads and relaxed SIMD).
 */
export async function readyCpuCaps(): Promise<CpuCapsReport> {
  return wasmCpuCaps();
}
