// GPU tier: a convolution's lhs packed straight from its NHWC input (GpuContext.packPatches,
// src/pack/patches.wgsl), then multiplied by a filter in ctx.gemm, equals the CPU reference GEMM over the
// patch matrix built here naively, bit for bit: random geometries (batch, odd sizes, channels not a
// multiple of 4, filters 1..3 with dilation, strides 1..3, padding up to the filter's extent), uint8 and
// int8 input, any zero points (the padding value and the GEMM's zero points drawn apart, so the row sums
// the pack writes are checked too), several kernels; and the typed errors of bad geometry.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { type PatchGeometry, patchShape } from '../../src/pack/patches.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import type { GemmProblem } from '../../src/types.ts';
import { expectExact } from '../support/kernel-harness.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

/** Input element (b, ih, iw, c) of patch row (b, oh, ow), column (kh, kw, c), or the pad value. */
function naivePatches(input: Uint8Array | Int8Array, g: PatchGeometry, pad: number): Uint8Array | Int8Array {
  const { rows, cols } = patchShape(g);
  const out = input instanceof Int8Array ? new Int8Array(rows * cols) : new Uint8Array(rows * cols);
  for (let m = 0; m < rows; m++) {
    const [b, oh, ow] = [Math.floor(m / (g.outHeight * g.outWidth)), Math.floor(m / g.outWidth) % g.outHeight, m % g.outWidth];
    for (let k = 0; k < cols; k++) {
      const [kh, kw, c] = [Math.floor(k / (g.filterWidth * g.channels)), Math.floor(k / g.channels) % g.filterWidth, k % g.channels];
      const ih = oh * g.strideHeight - g.padTop + kh * g.dilationHeight;
      const iw = ow * g.strideWidth - g.padLeft + kw * g.dilationWidth;
      const inside = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
      out[m * cols + k] = inside ? input[((b * g.height + ih) * g.width + iw) * g.channels + c] : pad;
    }
  }
  return out;
}

const arbGeometry: fc.Arbitrary<PatchGeometry> = fc
  .record({
    batch: fc.integer({ min: 1, max: 2 }),
    height: fc.integer({ min: 1, max: 9 }),
    width: fc.integer({ min: 1, max: 9 }),
    channels: fc.oneof(fc.integer({ min: 1, max: 9 }), fc.constantFrom(4, 8, 12)), // multiples of 4: the aligned word path
    filterHeight: fc.integer({ min: 1, max: 3 }),
    filterWidth: fc.integer({ min: 1, max: 3 }),
    strideHeight: fc.integer({ min: 1, max: 3 }),
    strideWidth: fc.integer({ min: 1, max: 3 }),
    dilationHeight: fc.integer({ min: 1, max: 2 }),
    dilationWidth: fc.integer({ min: 1, max: 2 }),
    padH: fc.nat(),
    padW: fc.nat(),
  })
  .map(({ padH, padW, ...g }) => {
    // The padding is below the filter's extent; the outputs are as many as fit the padded input.
    const extent = (f: number, d: number) => (f - 1) * d + 1;
    const eh = extent(g.filterHeight, g.dilationHeight);
    const ew = extent(g.filterWidth, g.dilationWidth);
    const padTop = padH % eh;
    const padLeft = padW % ew;
    const outputs = (size: number, pad: number, e: number, s: number) => Math.max(1, Math.floor((size + 2 * pad - e) / s) + 1);
    return {
      ...g,
      padTop,
      padLeft,
      outHeight: Math.min(outputs(g.height, padTop, eh, g.strideHeight), Math.floor((g.height - 1 + padTop) / g.strideHeight) + 1),
      outWidth: Math.min(outputs(g.width, padLeft, ew, g.strideWidth), Math.floor((g.width - 1 + padLeft) / g.strideWidth) + 1),
    };
  });

describe.skipIf(!gpu)('GpuContext.packPatches (implicit im2col) then gemm == CPU reference', () => {
  let ctx: GpuContext;
  beforeAll(async () => {
    ctx = await GpuContext.create({ device: gpu!.device });
  });
  afterAll(() => ctx?.destroy());

  it('random geometries, uint8 and int8 input, any zero points', async () => {
    await fc.assert(
      fc.asyncProperty(
        arbGeometry,
        fc.boolean(),
        fc.integer({ min: 1, max: 9 }),
        fc.integer(),
        fc.integer({ min: -300, max: 300 }),
        fc.integer({ min: -300, max: 300 }),
        async (g, signed, O, seed, lhsZeroPoint, rhsZeroPoint) => {
          const n = g.batch * g.height * g.width * g.channels;
          const byte = (i: number) => (Math.imul(i + 1, 2654435761) ^ seed) >>> 24;
          const input = signed ? Int8Array.from({ length: n }, (_, i) => byte(i) - 128) : Uint8Array.from({ length: n }, (_, i) => byte(i));
          const pad = signed ? (seed & 0xff) - 128 : seed & 0xff;
          const { rows, cols } = patchShape(g);
          const filter = Uint8Array.from({ length: O * cols }, (_, i) => byte(i * 7 + 3));
          const rhs = { data: filter, rows: cols, cols: O, order: 'col-major' as const };
          const packed = await ctx.packPatches(input, g, pad);
          try {
            expect([packed.rows, packed.cols, packed.type]).toEqual([rows, cols, signed ? 'int8' : 'uint8']);
            const got = await ctx.gemm({ lhs: packed, rhs, lhsZeroPoint, rhsZeroPoint });
            const problem: GemmProblem = { lhs: { data: naivePatches(input, g, pad), rows, cols }, rhs, lhsZeroPoint, rhsZeroPoint };
            expectExact(got, problem, `packPatches ${JSON.stringify(g)} pad=${pad} on ${ctx.lastRun.kernel}`);
          } finally {
            packed.destroy();
          }
        },
      ),
      { numRuns: 40, seed: 20261125 },
    );
  });

  it('a geometry the input does not match, a padding past the filter, a zero point out of range: InputError naming the field', async () => {
    const g: PatchGeometry = {
      batch: 1,
      height: 4,
      width: 4,
      channels: 3,
      filterHeight: 3,
      filterWidth: 3,
      strideHeight: 1,
      strideWidth: 1,
      dilationHeight: 1,
      dilationWidth: 1,
      padTop: 1,
      padLeft: 1,
      outHeight: 4,
      outWidth: 4,
    };
    const input = new Uint8Array(48);
    const field = async (p: Promise<unknown>) =>
      (
        (await p.then(
          () => null,
          (e) => e,
        )) as InputError | null
      )?.field;
    await expect(ctx.packPatches(new Uint8Array(47), g, 0)).rejects.toThrow(InputError);
    expect(await field(ctx.packPatches(new Uint8Array(47), g, 0))).toBe('input');
    expect(await field(ctx.packPatches(input, { ...g, padTop: 3 }, 0))).toBe('geometry.padTop');
    expect(await field(ctx.packPatches(input, { ...g, outWidth: 9 }, 0))).toBe('geometry.outWidth');
    expect(await field(ctx.packPatches(input, { ...g, strideHeight: 0 }, 0))).toBe('geometry.strideHeight');
    expect(await field(ctx.packPatches(input, { ...g, channels: 2.5 }, 0))).toBe('geometry.channels');
    expect(await field(ctx.packPatches(input, g, 256))).toBe('zeroPoint');
    expect(await field(ctx.packPatches(new Int8Array(48), g, 128))).toBe('zeroPoint');
  });
});
