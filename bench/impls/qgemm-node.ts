// This project in Node: WebGPU through Dawn (GpuContext.gemm, timestamps on: the GPU time of the compute
// pass next to the wall time of upload + pack + gemm + output + readback), and the CPU path: the kernel
// `backend: 'cpu'` picks (src/kernels/registry.ts: WebAssembly SIMD on worker threads where it can, or
// QGEMM_KERNEL=<id>), timed per call from the GemmProblem to the dst array, normalization included.

import { readyCpuCaps } from '../../src/kernels/cpu-caps.ts';
import { selectCpuKernel } from '../../src/kernels/registry.ts';
import { normalizeProblem } from '../../src/spec/problem.ts';
import type { GpuContext } from '../../src/gpu/context.ts';
import type { GemmResult } from '../../src/types.ts';
import { hashBytes, type ShapeData } from '../problems.ts';
import { measure, type RepeatPolicy } from '../timing.ts';
import { bytesOf } from '../verify.ts';
import type { CellOutcome, Runner } from './types.ts';

async function qgemmCell(
  policy: RepeatPolicy,
  once: () => Promise<{ result: GemmResult; wallMs: number; gpuMs: number | null }>,
): Promise<CellOutcome> {
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

const KERNEL_DETAILS: Record<string, string> = {
  'cpu-wasm-relaxed': 'WebAssembly relaxed SIMD (8-bit dot products, proven exact here), 6x8 micro-kernel',
  'cpu-wasm-simd': 'WebAssembly SIMD, operands widened to 16 bits (i32x4.dot_i16x8_s), 4x8 micro-kernel',
  'cpu-js': 'JavaScript: pack with row/column sums, 2x2 register-blocked dot products; one thread',
};

export async function qgemmCpuNode(computes: string): Promise<Runner> {
  const caps = await readyCpuCaps();
  const kernelFor = (data: ShapeData) => selectCpuKernel(caps, normalizeProblem(data.problem));
  const probe = makeProbe();
  const id = kernelFor(probe).id;
  const threads = id === 'cpu-js' ? 1 : caps.threads;
  return {
    impl: 'qgemm',
    backend: 'cpu',
    runtime: 'node',
    adapter: 'cpu',
    computes,
    details:
      `${id}: ${KERNEL_DETAILS[id]}; pack, GEMM and output stage ${id === 'cpu-js' ? 'in JavaScript' : `in WebAssembly on ${threads} thread(s)`}` +
      (id.startsWith('cpu-wasm') ? `; relaxed SIMD: ${caps.relaxedNote}; Node ${process.version}` : ''),
    run: (data, policy) =>
      qgemmCell(policy, async () => {
        const t0 = performance.now();
        const p = normalizeProblem(data.problem);
        const result = await kernelFor(data).run(p, {});
        return { result, wallMs: performance.now() - t0, gpuMs: null };
      }),
    close: async () => undefined,
  };
}

/** A one-element problem, to name the kernel in the row's details. */
function makeProbe(): ShapeData {
  const one = { data: new Uint8Array(1), rows: 1, cols: 1, order: 'row-major' as const };
  return { problem: { lhs: one, rhs: one } } as ShapeData;
}
