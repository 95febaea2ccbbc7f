// CpuCaps: what this JavaScript runtime offers the CPU kernels (pack -> gemm -> output on the CPU),
// computed once: WebAssembly SIMD, relaxed SIMD (proven exact: src/kernels/cpu-wasm/engine.ts),
// threads and shared memory. The left half of the CPU rows of the kernel registry's choice table
// (./registry.ts). Finding them compiles the WebAssembly module and probes it, so it is asynchronous:
// `readyCpuCaps()` probes once and reports the current configuration on every call; `cpuCaps()` returns
// what it last found (JavaScript only until then).

import { wasmCpuCaps } from './cpu-wasm/kernel.ts';
import type { CpuCaps } from './types.ts';

/** relaxedNote: why relaxed SIMD is off, or how it was proven; threadsNote: why a page runs one thread over a shared memory (its workers cannot start). */
export type CpuCapsReport = CpuCaps & { relaxedNote: string; threadsNote?: string };

const BEFORE: CpuCapsReport = { wasmSimd: false, relaxedSimd: false, threads: 1, sharedMemory: false, relaxedNote: 'not probed yet' };
let caps: CpuCapsReport | null = null;

/** What the last readyCpuCaps() found (JavaScript only before the first). */
export function cpuCaps(): CpuCapsReport {
  return caps ?? BEFORE;
}

/**
 * The runtime's CPU capabilities as configured now: the probe runs once (the engine keeps it), and
 * each call reads the current configuration (configureCpu's threads and relaxed SIMD).
 */
export async function readyCpuCaps(): Promise<CpuCapsReport> {
  caps = await wasmCpuCaps();
  return caps;
}
