// CpuCaps: what this JavaScript runtime offers the CPU kernels (pack -> gemm -> output on the CPU),
// computed once: WebAssembly SIMD, relaxed SIMD (proven exact: src/kernels/cpu-wasm/engine.ts),
// threads and shared memory. The left half of the CPU rows of the kernel registry's choice table
// (./registry.ts). Finding them compiles the WebAssembly module and probes it, so it is asynchronous:
// `readyCpuCaps()` does it once; `cpuCaps()` returns what is known (JavaScript only until then).

import { wasmCpuCaps } from './cpu-wasm/kernel.ts';
import type { CpuCaps } from './types.ts';

export type CpuCapsReport = CpuCaps & { relaxedNote: string };

const BEFORE: CpuCapsReport = { wasmSimd: false, relaxedSimd: false, threads: 1, sharedMemory: false, relaxedNote: 'not probed yet' };
let caps: CpuCapsReport | null = null;
let ready: Promise<CpuCapsReport> | null = null;

export function cpuCaps(): CpuCapsReport {
  return caps ?? BEFORE;
}

export function readyCpuCaps(): Promise<CpuCapsReport> {
  return (ready ??= wasmCpuCaps().then((c) => (caps = c)));
}
