// Backend selection for one operation (the entry the CLI and `gemm()` share): 'cpu' runs the fast CPU
// path (src/reference/gemm.ts cpuGemm), 'webgpu' runs pack -> gemm -> output on a WebGPU device
// (software adapters included) and fails clearly without one, 'auto' uses a hardware adapter when
// there is one and the CPU otherwise.

import { NoAdapterError } from '../errors.ts';
import { cpuGemm } from '../reference/gemm.ts';
import type { GemmProblem, GemmResult } from '../types.ts';

export type Backend = 'cpu' | 'webgpu' | 'auto';

export type Op = { op: 'gemm'; problem: GemmProblem };

export async function runOp(op: Op, backend: Backend): Promise<GemmResult> {
  if (backend === 'cpu') return cpuGemm(op.problem);
  throw new NoAdapterError(`backend ${backend} is not available yet`);
}

export async function describeDevice(): Promise<unknown> {
  return { adapter: null };
}
