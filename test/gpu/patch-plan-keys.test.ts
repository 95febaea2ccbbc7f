// A convolution's patch input in a GPU call plan's key (src/problem/snapshot.ts operandKey): the same
// bytes as a uint8 and then as an int8 input, with the same zero point, are two problems; the second call
// makes a new plan and is exact (a key that held the input by a mark served the first plan, wrong).

import { afterAll, describe, expect, it } from 'vitest';
import { type PatchGeometry, patchShape, im2col } from '../../src/pack/patches.ts';
import { type GemmTrace, GpuContext } from '../../src/scheduler/context.ts';
import { expectExact } from '../support/kernel-harness.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

describe.skipIf(!gpu)('patch plans keyed by the input type alone', () => {
  it('a uint8 input, then an int8 one with the same bytes and zero point: a new plan, exact', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    const g: PatchGeometry = {
      batch: 1,
      height: 5,
      width: 5,
      channels: 3,
      filterHeight: 3,
      filterWidth: 3,
      strideHeight: 1,
      strideWidth: 1,
      dilationHeight: 1,
      dilationWidth: 1,
      padTop: 1,
      padLeft: 1,
      outHeight: 5,
      outWidth: 5,
    };
    const { rows, cols } = patchShape(g);
    const rhs = {
      data: Uint8Array.from({ length: cols * 7 }, (_, j) => (j * 29 + 5) & 0xff),
      rows: cols,
      cols: 7,
      order: 'col-major' as const,
    };
    const weights = await ctx.prepack('rhs', rhs);
    const u = Uint8Array.from({ length: 75 }, (_, j) => (j * 97 + 3) & 0xff);
    const plans: string[] = [];
    for (const input of [u, u, new Int8Array(u.buffer)]) {
      const got = await ctx.gemm(
        { lhs: { input, geometry: g, zeroPoint: 9 }, rhs: weights, lhsZeroPoint: 9, rhsZeroPoint: 77 },
        undefined,
        {
          onTrace: (t: GemmTrace) => plans.push(t.plan),
        },
      );
      expectExact(got, { lhs: { data: im2col(input, g, 9), rows, cols }, rhs, lhsZeroPoint: 9, rhsZeroPoint: 77 }, input.constructor.name);
    }
    expect(plans).toEqual(['new', 'hit', 'new']);
    weights.destroy();
    ctx.destroy();
  });
});
