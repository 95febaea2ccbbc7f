// GPU tier: the epilogue compiled for the stage kinds a call holds (src/epilogue/epilogue.wgsl STAGE_KINDS,
// src/scheduler/resources.ts prepare). For every op of the output program, a fresh context (so its first
// preparation is specialised to that op alone, or with the clamp of a final cast) runs random problems
// whose pipeline is one stage of that op, on a kernel that rotates through the registry's kernels runnable
// here, and each result equals the CPU reference bit for bit. The whole interpreter is what the sweeps of
// ./gemm.test.ts reach after a context's first two sets of kinds.

import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeStages } from '../../src/epilogue/stages.ts';
import { adapterCaps } from '../../src/gpu/caps.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { normalizeProblem } from '../../src/problem/problem.ts';
import { STAGE_OP } from '../../src/problem/stages/pipeline.ts';
import type { GemmProblem, OutputStage } from '../../src/types.ts';
import { arbCast, arbProblemOfShape, arbStage } from '../support/arbitraries.ts';
import { expectExact } from '../support/kernel-harness.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

const [M, N, K] = [5, 33, 65];
const shape = { M, N, K, dstType: 'int32', dstOrder: 'row-major' } as const;
const caps = gpu ? adapterCaps(gpu.device, gpu.summary, gpu.hasDot4, gpu.adapter?.info) : null;
const kernels = caps ? GPU_KERNELS.filter((k) => k.supports(caps, shape)) : [];

/** The op codes a pipeline lowers to, as the epilogue's STAGE_KINDS bits. */
const kindsOf = (p: GemmProblem) => encodeStages(normalizeProblem(p)).kinds;

const zeros = { lhs: { data: new Uint8Array(M * K), rows: M, cols: K }, rhs: { data: new Uint8Array(K * N), rows: K, cols: N } };
/** Random single stages of op `op`, drawn from arbStage and arbCast (between them every stage type and rounding). */
const arbStageOf = (op: number): fc.Arbitrary<OutputStage> =>
  fc.oneof(arbStage(M, N), arbCast).filter((s) => kindsOf({ ...zeros, pipeline: [s] }) === 1 << op);

describe.skipIf(!gpu)('the epilogue specialised to the stage kinds of a call == CPU reference', () => {
  it.each(Object.entries(STAGE_OP).map(([name, op], i) => [name, op, i] as const))('%s alone', async (_name, op, i) => {
    const kernel = kernels[i % kernels.length];
    const ctx = await GpuContext.create({ device: gpu!.device, kernel: kernel.id });
    try {
      await fc.assert(
        fc.asyncProperty(arbProblemOfShape(M, N, K), arbStageOf(op), fc.option(arbCast), async (p, stage, cast) => {
          const isCast = stage.type === 'saturatingCast' || stage.type === 'truncatingCast';
          const problem = { ...p, pipeline: cast && !isCast ? [stage, cast] : [stage] };
          expect(kindsOf(problem) & (1 << op)).toBe(1 << op);
          expectExact(await ctx.gemm(problem), problem, `${kernel.id} STAGE_KINDS=${kindsOf(problem)}`);
          expect(ctx.lastRun.kernel).toBe(kernel.id);
        }),
        { numRuns: 4 },
      );
    } finally {
      ctx.destroy();
    }
  });
});
