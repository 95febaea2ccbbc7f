// The one per-kernel test harness (ruy's test.h over paths), shared by the GPU suites (test/gpu/) and the
// CPU suite (test/kernels/): a problem run on one kernel is compared bit for bit with the normative
// reference, a mismatch reported with its statistics (expectExact); and the property cases every
// kernel runs, whatever its back end (kernelProperties): the shape sweep and odd rectangles, every stage
// kind with and without a cast, less-than-8-bit operands with every rounding. Each suite says how to run
// a problem on its kernel (skipping what the kernel does not support) and how many runs it affords.

import fc from 'fast-check';
import { expect, it } from 'vitest';
import { referenceGemm } from '../../src/reference/gemm.ts';
import type { BitDepthRounding, GemmProblem, GemmResult } from '../../src/types.ts';
import { arbCast, arbProblem, arbProblemOfShape, arbStage, describeProblem } from './arbitraries.ts';
import { diffResults, formatMismatch } from './compare.ts';

export const arbBitDepth = fc.record({
  lhs: fc.integer({ min: 1, max: 8 }),
  rhs: fc.integer({ min: 1, max: 8 }),
  rounding: fc.constantFrom<BitDepthRounding>('nearest', 'probabilistic-addmod', 'probabilistic-xorshift', 'default'),
});

/** Fails with the mismatch's statistics unless `got` equals the reference of p bit for bit. */
export function expectExact(got: GemmResult, p: GemmProblem, context: string): void {
  const d = diffResults(got, referenceGemm(p));
  if (d) expect.fail(formatMismatch(d, `${context} ${describeProblem(p)}${p.bitDepth ? ` bitDepth=${JSON.stringify(p.bitDepth)}` : ''}`));
}

export interface PropertyRuns {
  /** Random problems over the shape sweep and odd rectangles. */
  sweep: number;
  /** Per shape of stageShapes: one stage kind, with or without a final cast. */
  stages: number;
  stageShapes: readonly (readonly [number, number, number])[];
  /** Random problems with less-than-8-bit operands. */
  bitDepth: number;
}

/** The property cases every kernel runs; `run(p)` runs p on the kernel and checks it (expectExact). */
export function kernelProperties(run: (p: GemmProblem) => Promise<void>, runs: PropertyRuns): void {
  it('random problems over the shape sweep and odd rectangles', async () => {
    await fc.assert(
      fc.asyncProperty(arbProblem(), (p) => run(p)),
      { numRuns: runs.sweep },
    );
  });
  it.each(runs.stageShapes.map((s) => [...s]))('every stage kind, with and without a cast, at M=%i N=%i K=%i', async (M, N, K) => {
    await fc.assert(
      fc.asyncProperty(arbProblemOfShape(M, N, K), arbStage(M, N), fc.option(arbCast), (p, stage, cast) =>
        run({ ...p, pipeline: cast ? [stage, cast] : [stage] }),
      ),
      { numRuns: runs.stages },
    );
  });
  it('less-than-8-bit operands, every rounding', async () => {
    await fc.assert(
      fc.asyncProperty(arbProblem(), arbBitDepth, (p, bitDepth) => run({ ...p, bitDepth })),
      { numRuns: runs.bitDepth },
    );
  });
}
