// The WebAssembly CPU kernels as CpuGemmKernel (src/kernels/types.ts), the whole pack -> gemm -> output
// chain of each in WebAssembly (run.ts): 'cpu-wasm-relaxed' (relaxed-SIMD 8-bit dot products, 6x8
// micro-kernel, only where engine.ts proved them exact) and 'cpu-wasm-simd' (operands widened to 16 bits,
// `i32x4.dot_i16x8_s`, 4x8 micro-kernel or, for a few rows, the direct variant of gen-direct.ts; exact
// everywhere WebAssembly SIMD exists). Both run on the calling thread plus worker threads over a shared
// memory where there is one. Runs on one engine are serialized (they share its memory).

import type { NormalizedProblem } from '../../spec/problem.ts';
import type { GemmResult } from '../../types.ts';
import type { CpuCaps, CpuGemmKernel } from '../types.ts';
import { configureWasm, wasmEngine, wasmThreads, type WasmEngine, type WasmOptions } from './engine.ts';
import type { WasmKernelKind } from './layout.ts';
import { runOnEngine, selfCheck, warmUp, wasmBytesNeeded, wasmRunStats } from './run.ts';

export { configureWasm, wasmRunStats, type WasmOptions };

/** Problems larger than this (in linear-memory bytes) stay with the JavaScript kernel. */
const MAX_BYTES = 2 ** 31;

const engine = () => wasmEngine(selfCheck, (e) => warmUp(e, e.relaxed ? 'relaxed' : 'i16'));
let queue: Promise<unknown> = Promise.resolve();

function serialized<T>(job: () => Promise<T>): Promise<T> {
  const run = queue.then(job, job);
  queue = run.catch(() => undefined);
  return run;
}

/** What this runtime offers the WebAssembly kernels (and how relaxed SIMD was decided). */
export async function wasmCpuCaps(): Promise<CpuCaps & { relaxedNote: string }> {
  const e = await engine();
  if (!e) return { wasmSimd: false, relaxedSimd: false, threads: 1, sharedMemory: false, relaxedNote: 'no WebAssembly SIMD' };
  return { wasmSimd: true, relaxedSimd: e.relaxed !== null, threads: wasmThreads(e), sharedMemory: e.shared, relaxedNote: e.relaxedNote };
}

function wasmKernel(id: string, kind: WasmKernelKind, available: (c: CpuCaps) => boolean): CpuGemmKernel {
  return {
    id,
    backend: 'cpu',
    supports: (caps, p) => available(caps) && wasmBytesNeeded(p.M, p.N, p.K) < MAX_BYTES,
    run: (p: NormalizedProblem, opts: { threads?: number }): Promise<GemmResult> =>
      serialized(async () => {
        const e: WasmEngine | null = await engine();
        if (!e || (kind === 'relaxed' && !e.relaxed)) throw new Error(`qgemm: kernel ${id} is not available in this runtime`);
        return runOnEngine(e, p, kind, opts.threads, wasmThreads(e));
      }),
  };
}

export const CPU_WASM_RELAXED = wasmKernel('cpu-wasm-relaxed', 'relaxed', (c) => c.relaxedSimd);
export const CPU_WASM_SIMD = wasmKernel('cpu-wasm-simd', 'i16', (c) => c.wasmSimd);
/** Fastest first. */
export const CPU_WASM_KERNELS: CpuGemmKernel[] = [CPU_WASM_RELAXED, CPU_WASM_SIMD];
