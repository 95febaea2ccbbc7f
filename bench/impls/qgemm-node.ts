// This project in Node: WebGPU through Dawn (GpuContext.gemm, timestamps on: the GPU time of the compute
// pass next to the wall time of upload + pack + gemm + output + readback), and the CPU path (cpuGemm,
// gemmlowp's offset trick, single-threaded JavaScript).

import { cpuGemm } from '../../src/kernels/cpu-js/kernel.ts';
import type { GpuContext } from '../../src/gpu/context.ts';
import type { GemmResult } from '../../src/types.ts';
import { hashBytes, type ShapeData } from '../problems.ts';
import { measure, type RepeatPolicy } from '../timing.ts';
import { bytesOf } from '../verify.ts';
import type { CellOutcome, Runner } from './types.ts';

async function qgemmCell(policy: RepeatPolicy, once: () => Promise<{ result: GemmResult; wallMs: number; gpuMs: number | null }>): Promise<CellOutcome> {
  const hashes: string[] = [];
  const m = await measure(
    policy,
    async () => {
      const { result, wallMs, gpuMs } = await once();
      return { timing: { wallMs, gpuMs }, output: result };
    },
    (out) => hashes.push(hashBytes(bytesOf(out.data))),
  );
  return { wall: m.wall, gpu: m.gpu, output: { data: m.last.data, dtype: m.last.dtype }, hashes };
}

export function qgemmWebgpuNode(ctx: GpuContext, adapter: string, computes: string): Runner {
  return {
    impl: 'qgemm',
    backend: 'webgpu',
    runtime: 'node',
    adapter,
    computes,
    details: `Dawn (dawn.node), dot4 ${ctx.dot4}, GPU time from timestamp queries: ${ctx.device.features.has('timestamp-query') ? 'yes' : 'no'}`,
    run: (data, policy) =>
      qgemmCell(policy, async () => {
        const timing = { gpuMs: null as number | null };
        const t0 = performance.now();
        const result = await ctx.gemm(data.problem, timing);
        return { result, wallMs: performance.now() - t0, gpuMs: timing.gpuMs };
      }),
    close: async () => undefined,
  };
}

export function qgemmCpuNode(computes: string): Runner {
  return {
    impl: 'qgemm',
    backend: 'cpu',
    runtime: 'node',
    adapter: 'cpu',
    computes,
    details: 'cpuGemm: pack with row/column sums, 2x2 register-blocked dot products, output pipeline; one thread',
    run: (data, policy) =>
      qgemmCell(policy, async () => {
        const t0 = performance.now();
        const result = cpuGemm(data.problem);
        return { result, wallMs: performance.now() - t0, gpuMs: null };
      }),
    close: async () => undefined,
  };
}
