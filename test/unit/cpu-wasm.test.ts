// Property tier of the WebAssembly CPU kernels (src/kernels/cpu-wasm/, pack -> gemm -> output all in
// WebAssembly): each kernel this runtime supports, forced, on one thread and on several (worker threads
// over the shared memory), bit for bit against the normative referenceGemm over the shape sweep and odd
// rectangles, every operand type and order, scalar and per-channel zero points, every stage kind (tanh
// included: the JavaScript tail), less-than-8-bit operands with each rounding, and int32 wrap-around.
// Kernels this runtime lacks (relaxed SIMD on Node 20/22) are reported as skipped.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CPU_WASM_KERNELS, wasmCpuCaps } from '../../src/kernels/cpu-wasm/kernel.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { normalizeProblem } from '../../src/spec/problem.ts';
import type { BitDepthRounding, GemmProblem } from '../../src/types.ts';
import { arbCast, arbProblem, arbProblemOfShape, arbStage, describeProblem } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';

const caps = await wasmCpuCaps();
const arbBitDepth = fc.record({
  lhs: fc.integer({ min: 1, max: 8 }),
  rhs: fc.integer({ min: 1, max: 8 }),
  rounding: fc.constantFrom<BitDepthRounding>('nearest', 'probabilistic-addmod', 'probabilistic-xorshift', 'default'),
});
const u8 = (rows: number, cols: number, fill: number, order: 'row-major' | 'col-major' = 'row-major') =>
  ({ data: new Uint8Array(rows * cols).fill(fill), rows, cols, order });

describe.each(CPU_WASM_KERNELS.map((k) => [k.id, k] as const))('%s', (id, kernel) => {
  const supported = kernel.supports(caps, normalizeProblem({ lhs: u8(1, 1, 0), rhs: u8(1, 1, 0) }));
  describe.skipIf(!supported).each([1, 2, 3])('threads %i', (threads) => {
    async function expectSame(p: GemmProblem, note = '') {
      const got = await kernel.run(normalizeProblem(p), { threads });
      const d = diffResults(got, referenceGemm(p));
      if (d) expect.fail(formatMismatch(d, `${id} threads=${threads} ${describeProblem(p)} ${note}`));
    }
    it('over the shape sweep and odd rectangles, every type/order/zero point/stage', async () => {
      await fc.assert(fc.asyncProperty(arbProblem(), (p) => expectSame(p)), { numRuns: 150 });
    });
    it('every stage kind on its own, with and without a final cast', async () => {
      for (const [M, N, K] of [[1, 1, 1], [5, 7, 3], [17, 16, 33], [64, 1, 65], [9, 31, 2]] as const) {
        await fc.assert(fc.asyncProperty(arbProblemOfShape(M, N, K), arbStage(M, N), fc.option(arbCast), (p, stage, cast) =>
          expectSame({ ...p, pipeline: cast ? [stage, cast] : [stage] })), { numRuns: 25 });
      }
    });
    it('less-than-8-bit operands, every rounding', async () => {
      await fc.assert(fc.asyncProperty(arbProblem(), arbBitDepth, (p, bitDepth) =>
        expectSame({ ...p, bitDepth }, `bitDepth=${JSON.stringify(bitDepth)}`)), { numRuns: 80 });
    });
    it('when int32 wraps: K large, extreme zero points, larger shapes', async () => {
      const K = 40000; // 40000 * 255 * 255 > 2^31
      await expectSame({ lhs: u8(2, K, 255), rhs: u8(K, 3, 255, 'col-major') });
      await expectSame({ lhs: u8(3, K, 255), rhs: u8(K, 9, 0), lhsZeroPoint: -2147483648, rhsZeroPoint: 2147483647 });
      await fc.assert(fc.asyncProperty(arbProblem([100, 129, 200]), (p) => expectSame(p)), { numRuns: 6 });
    });
  });
});
