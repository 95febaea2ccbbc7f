// Property tier for the CPU kernels: every kernel of the registry's CPU_KERNELS that supports the case,
// forced in turn, against the naive normative reference (ruy's test loop over paths): the shape sweep and
// odd rectangles, every operand type, storage order, zero-point form and stage kind, int32 wrap, and
// less-than-8-bit operands with every rounding; the WebAssembly kernels (src/kernels/cpu-wasm/, where this
// runtime has WebAssembly SIMD) on one, two and three threads. A kernel added to the registry is covered
// here at once; test/kernels/cpu-wasm.test.ts holds what only the WebAssembly kernels have.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readyCpuCaps } from '../../src/kernels/cpu-caps.ts';
import { CPU_WASM_KERNELS } from '../../src/kernels/cpu-wasm/kernel.ts';
import { CPU_KERNELS } from '../../src/kernels/registry.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { normalizeProblem } from '../../src/spec/problem.ts';
import type { BitDepthRounding, GemmProblem } from '../../src/types.ts';
import { arbCast, arbProblem, arbProblemOfShape, arbStage, describeProblem } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';

const arbBitDepth = fc.record({
  lhs: fc.integer({ min: 1, max: 8 }),
  rhs: fc.integer({ min: 1, max: 8 }),
  rounding: fc.constantFrom<BitDepthRounding>('nearest', 'probabilistic-addmod', 'probabilistic-xorshift', 'default'),
});

// The WebAssembly kernels' capabilities are known once their module is compiled and probed.
const caps = await readyCpuCaps();

/** The WebAssembly kernels split a GEMM over threads; the others run on one. */
const threadCounts = (k: (typeof CPU_KERNELS)[number]) => (CPU_WASM_KERNELS.includes(k) ? [1, 2, 3] : [1]);
const cases = CPU_KERNELS.flatMap((k) => threadCounts(k).map((threads) => [k.id, threads, k] as const));

describe.each(cases)('CPU kernel %s on %i thread(s) == reference', (id, threads, kernel) => {
  const check = async (problem: GemmProblem) => {
    const p = normalizeProblem(problem);
    if (!kernel.supports(caps, p)) return;
    const d = diffResults(await kernel.run(p, { threads }), referenceGemm(problem));
    if (d)
      expect.fail(
        formatMismatch(
          d,
          `${id} threads=${threads} ${describeProblem(problem)}${problem.bitDepth ? ` bitDepth=${JSON.stringify(problem.bitDepth)}` : ''}`,
        ),
      );
  };

  it('random problems over the shape sweep and odd rectangles', async () => {
    await fc.assert(
      fc.asyncProperty(arbProblem(), (p) => check(p)),
      { numRuns: 150 },
    );
  });
  it('every stage kind on its own, with and without a final cast', async () => {
    for (const [M, N, K] of [
      [1, 1, 1],
      [5, 7, 3],
      [17, 16, 33],
      [64, 1, 65],
      [9, 31, 2],
    ] as const) {
      await fc.assert(
        fc.asyncProperty(arbProblemOfShape(M, N, K), arbStage(M, N), fc.option(arbCast), (p, stage, cast) =>
          check({ ...p, pipeline: cast ? [stage, cast] : [stage] }),
        ),
        { numRuns: 30 },
      );
    }
  });
  it('int32 wrap: K = 40000 of 255s with extreme zero points', async () => {
    const K = 40000;
    const lhs = { data: new Uint8Array(2 * K).fill(255), rows: 2, cols: K, order: 'row-major' as const };
    const rhs = { data: new Uint8Array(3 * K).fill(255), rows: K, cols: 3, order: 'col-major' as const };
    for (const [zL, zR] of [
      [0, 0],
      [-2147483648, 5],
      [2147483647, -2147483648],
    ])
      await check({ lhs, rhs, lhsZeroPoint: zL, rhsZeroPoint: zR });
  });
  it('less-than-8-bit operands, every rounding', async () => {
    await fc.assert(
      fc.asyncProperty(arbProblem(), arbBitDepth, (p, bitDepth) => check({ ...p, bitDepth })),
      { numRuns: 80 },
    );
  });
});
