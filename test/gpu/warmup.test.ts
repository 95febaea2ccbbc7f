// ctx.warmup(): compiling ahead. A warmup of a shape (zero-filled operands) or of a problem runs the
// kernel the registry picks for it; the real call afterwards runs the same kernel and equals the CPU
// reference bit for bit. On SwiftShader (gpu-env.ts). No timing is asserted here: tools/first-call.mjs
// measures what the warmup saves.

import { afterAll, describe, expect, it } from 'vitest';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import type { GemmProblem, OutputStage } from '../../src/types.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

afterAll(releaseGpu);

const pipeline: OutputStage[] = [
  { type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1518500250, exponent: -8, offsetAfterShift: 128, rounding: 'double' },
  { type: 'saturatingCast', to: 'uint8' },
];

describe('GpuContext.warmup', () => {
  it('compiles for a shape; the real call of that shape runs the same kernel, bit-exact', async () => {
    const gpu = await getGpu();
    if (!gpu) return;
    const ctx = await GpuContext.create({ device: gpu.device });
    const [M, N, K] = [7, 5, 33];
    const warmed = await ctx.warmup([{ m: M, n: N, k: K, pipeline }]);
    expect(warmed).toHaveLength(1);
    const problem: GemmProblem = {
      lhs: { data: Uint8Array.from({ length: M * K }, (_, i) => (i * 37) % 256), rows: M, cols: K },
      rhs: { data: Int8Array.from({ length: K * N }, (_, i) => ((i * 53) % 256) - 128), rows: K, cols: N, order: 'col-major' },
      lhsZeroPoint: 3,
      rhsZeroPoint: -5,
      pipeline,
    };
    const got = await ctx.gemm(problem);
    expect(ctx.lastRun.kernel).toBe(warmed[0]);
    expect(Array.from(got.data)).toEqual(Array.from(referenceGemm(problem).data));
    // A problem as it is also warms up, and returns its kernel.
    expect(await ctx.warmup([problem])).toEqual(warmed);
    ctx.destroy();
  });
});
