// What one GEMM call records: the GPU time it measured (GemmTiming), what it ran (LastRun) and, while a
// call plan is being made (./plans.ts), the buffers it owns and the commands of its compute pass, taken by
// a recording pass for replay (./call-plan.ts). ./gemm.ts runGemm writes them; nothing here knows a kernel.

import type { BufferPool } from '../gpu/pool.ts';
import type { Staging } from '../gpu/readback.ts';
import type { UniformArena } from '../gpu/uniforms.ts';

export interface GemmTiming {
  /** GPU time of the compute pass (timestamp queries), or null where unavailable. */
  gpuMs: number | null;
}

/** What a GEMM ran: its kernel and how it was split (for tests, the benchmark and the curious). */
export interface LastRun {
  kernel: string | null;
  packDispatches: number;
  gemmDispatches: number;
  /** True where the kernel gathered a convolution's lhs from its input itself (no patch pack dispatch). */
  patchesGathered: boolean;
}

/** A command of a compute pass: the method and its arguments. */
type Command = [name: string, args: unknown[]];

/** What a plan owns while it is being made (./gemm.ts runGemm allocates through it). */
export interface PlanBuilder {
  readonly pool: BufferPool;
  readonly uniforms: UniformArena;
  readonly staging: Staging;
  readonly commands: Command[];
}

/** A compute pass that records every command it forwards, for replay into a later call's pass. */
export function recordingPass(pass: GPUComputePassEncoder, commands: Command[]): GPUComputePassEncoder {
  return new Proxy(pass, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        commands.push([String(prop), args]);
        return value.apply(target, args);
      };
    },
  });
}
