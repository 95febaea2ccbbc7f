// Inputs of the GPU path that a fuzz trial found mishandled (src/scheduler/prepack.ts, src/pack/pack.ts):
// ctx.prepack validates side and bitDepth as normalizeProblem does (an InputError naming the field, never
// an internal error), and operands backed by a SharedArrayBuffer work in gemm and prepack, bit for bit
// against the CPU reference (Dawn's writeBuffer takes no shared memory: they are copied in chunks).

import { afterAll, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import type { Operand } from '../../src/types.ts';
import { diffResults } from '../support/compare.ts';
import { getGpu, releaseGpu } from '../gpu/gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

function shared(rows: number, cols: number, seed: number, Ctor: typeof Uint8Array | typeof Int8Array = Uint8Array): Operand {
  const data = new Ctor(new SharedArrayBuffer(rows * cols + 8) as unknown as ArrayBuffer, 3, rows * cols); // an odd offset into the shared buffer
  for (let i = 0; i < data.length; i++) data[i] = (i * 37 + seed * 11) & 0xff;
  return { data, rows, cols };
}

describe.skipIf(!gpu)('GPU inputs', () => {
  it.each([
    ['side', 'middle', undefined],
    ['bitDepth.rhs', 'rhs', { lhs: 8, rhs: 0 }],
    ['bitDepth.rhs', 'rhs', { lhs: 8, rhs: 2.5 }],
    ['bitDepth.rhs', 'rhs', { lhs: 8, rhs: Number.NaN }],
    ['bitDepth.lhs', 'rhs', { lhs: 9, rhs: 9 }],
    ['bitDepth.rounding', 'rhs', { lhs: 8, rhs: 4, rounding: 'up' }],
    ['bitDepth', 'rhs', 5],
  ])('prepack refuses a bad %s', async (field, side, bitDepth) => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    let err: unknown;
    try {
      await ctx.prepack(side as 'rhs', shared(4, 3, 1), bitDepth as never);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).field).toBe(field);
    ctx.destroy();
  });

  it('SharedArrayBuffer operands: gemm and prepack are exact', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    for (const [M, N, K] of [
      [3, 5, 7],
      [16, 17, 33],
    ]) {
      const p = { lhs: shared(M, K, 1), rhs: shared(K, N, 2, Int8Array), lhsZeroPoint: 3, rhsZeroPoint: -2 };
      const want = referenceGemm(p);
      expect(diffResults(await ctx.gemm(p), want)).toBeNull();
      const packed = await ctx.prepack('rhs', p.rhs);
      expect(diffResults(await ctx.gemm({ ...p, rhs: packed }), want)).toBeNull();
      packed.destroy();
    }
    ctx.destroy();
  });
});
