// Property tier for the CPU kernels: every kernel of the registry's CPU_KERNELS that supports the case,
// forced in turn, against the naive normative reference (ruy's test loop over paths): the shape sweep and
// odd rectangles, every operand type, storage order, zero-point form and stage kind, int32 wrap, and
// less-than-8-bit operands with every rounding; the WebAssembly kernels (src/kernels/cpu-wasm/, where this
// runtime has WebAssembly SIMD) on one, two and three threads. A kernel added to the registry is covered
// here at once (the cases shared with the GPU suites: test/support/kernel-harness.ts);
// test/kernels/cpu-wasm.test.ts holds what only the WebAssembly kernels have.

import { describe, it } from 'vitest';
import { readyCpuCaps } from '../../src/kernels/cpu-caps.ts';
import { CPU_WASM_KERNELS } from '../../src/kernels/cpu-wasm/kernel.ts';
import { CPU_KERNELS } from '../../src/kernels/registry.ts';
import { normalizeProblem } from '../../src/problem/problem.ts';
import type { GemmProblem } from '../../src/types.ts';
import { expectExact, kernelProperties } from '../support/kernel-harness.ts';

// The WebAssembly kernels' capabilities are known once their module is compiled and probed.
const caps = await readyCpuCaps();

/** The WebAssembly kernels split a GEMM over threads; the others run on one. */
const threadCounts = (k: (typeof CPU_KERNELS)[number]) => (CPU_WASM_KERNELS.includes(k) ? [1, 2, 3] : [1]);
const cases = CPU_KERNELS.flatMap((k) => threadCounts(k).map((threads) => [k.id, threads, k] as const));

describe.each(cases)('CPU kernel %s on %i thread(s) == reference', (id, threads, kernel) => {
  const check = async (problem: GemmProblem) => {
    const p = normalizeProblem(problem);
    if (!kernel.supports(caps, p)) return;
    expectExact(await kernel.run(p, { threads }), problem, `${id} threads=${threads}`);
  };

  kernelProperties(check, {
    sweep: 150,
    stages: 30,
    stageShapes: [
      [1, 1, 1],
      [5, 7, 3],
      [17, 16, 33],
      [64, 1, 65],
      [9, 31, 2],
    ],
    bitDepth: 80,
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
});
