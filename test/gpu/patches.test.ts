// GPU tier: a convolution's lhs packed straight from its NHWC input (GpuContext.packPatches,
// src/pack/patches.wgsl), then multiplied by a filter in ctx.gemm, equals the CPU reference GEMM over the
// patch matrix built here naively, bit for bit: random geometries (batch, odd sizes, channels not a
// multiple of 4, filters 1..3 with dilation, strides 1..3, padding up to the filter's extent), uint8 and
// int8 input, any zero points (the padding value and the GEMM's zero points drawn apart, so the row sums
// the pack writes are checked too), several kernels; and the typed errors of bad geometry. The same
// patches given to ctx.gemm as the lhs ({ input, geometry, zeroPoint }: packed in the GEMM's own pass, as
// conv2d runs) at the edges: channels 1-10, 15-17, 31-33, input zero points across the range, a CPU or
// GPU input (a GpuMatrix with a row stride), in one submission. The dot4-tiled kernels gather those
// patches themselves (src/kernels/dot4-lhs-patches.wgsl, no pack dispatch): the registry's tilings and a
// seeded sample of the tuner's (QGEMM_DOT4_SAMPLE, QGEMM_DOT4_SEED as in ./dot4-family.test.ts), each
// on layers that take both gather paths (whole words; bytes), several tiles, int8 and a strided GPU input;
// so do the subgroup-matrix kernel (emulated) and dot4-wide, at sampled tilings (QGEMM_SGMAT_SAMPLE), and
// under lowered limits with two bands. A repeated convolution call with a prepacked filter runs its plan
// (src/scheduler/call-plan.ts) on each path (gathered, packed first, a 1x1 layer's input as a plain lhs),
// in ctx.gemm and gemmOnGpu, with a CPU input written on each replay or a GPU input read where it is:
// exact on new and in-place-edited input, and a new plan for another geometry, zero point, input type
// (alone too) or GPU input.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InputError, LimitExceededError } from '../../src/errors.ts';
import { type Dot4TiledConfig, dot4TiledKernel } from '../../src/kernels/dot4-tiled/kernel.ts';
import { type Dot4WideConfig, dot4WideKernel } from '../../src/kernels/dot4-wide/kernel.ts';
import { bandedKernel, dot4KernelSource, dot4TileLoopBody } from '../../src/kernels/banded.ts';
import dot4Gemm from '../../src/kernels/dot4-tiled/gemm.wgsl?raw';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import type { SplitKDispatch } from '../../src/kernels/splitk/partition.ts';
import { configLabel, EMULATED_CONFIGS, sgmatEmulatedKernel } from '../../src/kernels/sgmat/emulation.ts';
import { DEFAULT_TILING, SPLITK_TILING } from '../../src/kernels/sgmat/config.ts';
import { verifyGpuKernel } from '../../src/verify.ts';
import { verifyConvProblems } from '../../src/verify-problems.ts';
import { type PatchGeometry, patchShape } from '../../src/pack/patches.ts';
import {
  createGpuContextAsHardware,
  createGpuContextWith,
  type GemmTrace,
  GpuContext,
  type GpuMatrix,
} from '../../src/scheduler/context.ts';
import { Rng } from '../../tools/random.ts';
import type { GemmProblem } from '../../src/types.ts';
import { rejectedField } from '../support/errors.ts';
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

/** Channels at the edges of the packed word (1-10) and of 16 and 32 (15-17, 31-33). */
const edgeChannels = fc.constantFrom(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 17, 31, 32, 33);

const geometryOf = (channels: fc.Arbitrary<number>): fc.Arbitrary<PatchGeometry> =>
  fc
    .record({
      batch: fc.integer({ min: 1, max: 2 }),
      height: fc.integer({ min: 1, max: 9 }),
      width: fc.integer({ min: 1, max: 9 }),
      channels,
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

// multiples of 4: the aligned word path
const arbGeometry = geometryOf(fc.oneof(fc.integer({ min: 1, max: 9 }), fc.constantFrom(4, 8, 12)));

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
      { numRuns: 20, seed: 20261125 },
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
    const field = rejectedField;
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

describe.skipIf(!gpu)("ctx.gemm with the patches as its lhs (packed in the GEMM's own pass) == CPU reference", () => {
  let ctx: GpuContext;
  beforeAll(async () => {
    ctx = await GpuContext.create({ device: gpu!.device });
  });
  afterAll(() => ctx?.destroy());

  const upload = (input: Uint8Array | Int8Array, g: PatchGeometry, stride: number) => uploadInput(ctx, input, g, stride);

  it('edge channels, strides, dilations, padding, batch, any input zero point, CPU or GPU input', async () => {
    await fc.assert(
      fc.asyncProperty(
        geometryOf(edgeChannels),
        fc.boolean(),
        fc.constantFrom(0, 1, 4),
        fc.integer({ min: 1, max: 9 }),
        fc.integer(),
        fc.integer({ min: -300, max: 300 }),
        async (g, signed, extraStride, O, seed, rhsZeroPoint) => {
          const n = g.batch * g.height * g.width * g.channels;
          const byte = (i: number) => (Math.imul(i + 1, 2654435761) ^ seed) >>> 24;
          const input = signed ? Int8Array.from({ length: n }, (_, i) => byte(i) - 128) : Uint8Array.from({ length: n }, (_, i) => byte(i));
          // The padding value is the input zero point (TFLite), drawn across the type's whole range.
          const zeroPoint = signed ? (seed & 0xff) - 128 : seed & 0xff;
          const { rows, cols } = patchShape(g);
          const filter = Uint8Array.from({ length: O * cols }, (_, i) => byte(i * 7 + 3));
          const rhs = { data: filter, rows: cols, cols: O, order: 'col-major' as const };
          const gpuInput = extraStride > 0 ? upload(input, g, g.channels + extraStride) : null;
          try {
            const lhs = { input: gpuInput ?? input, geometry: g, zeroPoint };
            const got = await ctx.gemm({ lhs, rhs, lhsZeroPoint: zeroPoint, rhsZeroPoint });
            expect(ctx.lastRun.packDispatches).toBeGreaterThan(0);
            const problem: GemmProblem = {
              lhs: { data: naivePatches(input, g, zeroPoint), rows, cols },
              rhs,
              lhsZeroPoint: zeroPoint,
              rhsZeroPoint,
            };
            expectExact(got, problem, `patches lhs ${JSON.stringify(g)} zp=${zeroPoint} stride+${extraStride} on ${ctx.lastRun.kernel}`);
          } finally {
            gpuInput?.buffer.destroy();
          }
        },
      ),
      { numRuns: 24, seed: 20261127 },
    );
  });

  it('one submission for a conv layer, where packPatches then gemm takes two', async () => {
    const g = geometryAt(1, 0);
    const input = Uint8Array.from({ length: 48 }, (_, i) => (i * 37) & 0xff);
    const rhs = { data: Uint8Array.from({ length: 27 * 2 }, (_, i) => i), rows: 27, cols: 2, order: 'col-major' as const };
    const queue = ctx.device.queue;
    const submit = queue.submit.bind(queue);
    let submissions = 0;
    queue.submit = (buffers) => {
      submissions++;
      submit(buffers);
    };
    try {
      await ctx.gemm({ lhs: { input, geometry: g, zeroPoint: 9 }, rhs, lhsZeroPoint: 9 }); // compiles, self-tests
      submissions = 0;
      const fused = await ctx.gemm({ lhs: { input, geometry: g, zeroPoint: 9 }, rhs, lhsZeroPoint: 9 });
      expect(submissions).toBe(1);
      submissions = 0;
      const packed = await ctx.packPatches(input, g, 9);
      const twoPass = await ctx.gemm({ lhs: packed, rhs, lhsZeroPoint: 9 });
      packed.destroy();
      expect(submissions).toBe(2);
      expect(Array.from(fused.data)).toEqual(Array.from(twoPass.data));
    } finally {
      queue.submit = submit;
    }
  });

  // The rules' kernel here, dot4-32x32, gathers the patches itself (bands of the GEMM and grids split),
  // as the subgroup-matrix kernel does (emulated: not in the registry, so given beside it); its '-dd'
  // form, which stages no lhs, packs them first (packed-row chunks and grids split inside the pass).
  const sgmatGathering = sgmatEmulatedKernel(EMULATED_CONFIGS[0]);
  const sgmatPacking = sgmatEmulatedKernel(EMULATED_CONFIGS[0], { tiling: { ...DEFAULT_TILING, rhsDirect: true, lhsDirect: true } });
  it.each([
    ['gathered by dot4-32x32', undefined, 1],
    ['gathered by sgmat-64x64-emulated', sgmatGathering.id, 1],
    ['gathered by dot4-128x128-emulated', 'dot4-128x128-emulated', 1],
    ['packed for sgmat-64x64-dd-emulated', sgmatPacking.id, 3],
  ])('limits lowered, %s; an input above one binding is a LimitExceededError', async (_, kernel, packs) => {
    const small = await createGpuContextWith([sgmatGathering, sgmatPacking, ...GPU_KERNELS], {
      device: gpu!.device,
      kernel,
      limits: { maxStorageBufferBindingSize: 32768, maxComputeWorkgroupsPerDimension: 3 },
    });
    try {
      // 24 x 24 x 3 under 3x3 SAME: 576 packed rows of 64 bytes (two chunks of at most 512), 9-workgroup grids.
      const g = { ...geometryAt(1, 1), height: 24, width: 24, outHeight: 24, outWidth: 24 };
      const input = Uint8Array.from({ length: 24 * 24 * 3 }, (_, i) => (i * 101) & 0xff);
      const rhs = { data: Uint8Array.from({ length: 27 * 3 }, (_, i) => (i * 13) & 0xff), rows: 27, cols: 3, order: 'col-major' as const };
      const got = await small.gemm({ lhs: { input, geometry: g, zeroPoint: 200 }, rhs, lhsZeroPoint: 200, rhsZeroPoint: 5 });
      expect(small.lastRun.packDispatches).toBeGreaterThanOrEqual(packs);
      if (packs === 1) expect(small.lastRun).toMatchObject({ kernel: kernel ?? 'dot4-32x32', packDispatches: 1, patchesGathered: true }); // the rhs's pack only
      const problem: GemmProblem = {
        lhs: { data: naivePatches(input, g, 200), rows: 576, cols: 27 },
        rhs,
        lhsZeroPoint: 200,
        rhsZeroPoint: 5,
      };
      expectExact(got, problem, `patches lhs under lowered limits on ${small.lastRun.kernel}`);
      // 24 x 24 x 64 = 36864 bytes of input, above the 32 KiB binding: typed, before anything is acquired.
      const big = { ...g, channels: 64 };
      const wide = { data: new Uint8Array(576), rows: 576, cols: 1, order: 'col-major' as const };
      await expect(small.gemm({ lhs: { input: new Uint8Array(36864), geometry: big, zeroPoint: 0 }, rhs: wide })).rejects.toThrow(
        LimitExceededError,
      );
      const again = await small.gemm({ lhs: { input, geometry: g, zeroPoint: 200 }, rhs, lhsZeroPoint: 200, rhsZeroPoint: 5 });
      expect(Array.from(again.data)).toEqual(Array.from(got.data));
    } finally {
      small.destroy();
    }
  });

  it('a layer whose packed lhs would exceed maxBufferSize runs gathered; a kernel that packs it first refuses it', async () => {
    // 24 x 24 x 3 under 3x3 SAME: 576 packed rows of 64 bytes = 36864 bytes, above a 32 KiB buffer; the
    // input (1728 bytes), the filter and dst fit.
    const g = { ...geometryAt(1, 1), height: 24, width: 24, outHeight: 24, outWidth: 24 };
    const input = Uint8Array.from({ length: 24 * 24 * 3 }, (_, i) => (i * 53) & 0xff);
    const rhs = { data: Uint8Array.from({ length: 27 * 5 }, (_, i) => (i * 17) & 0xff), rows: 27, cols: 5, order: 'col-major' as const };
    const p = { lhs: { input, geometry: g, zeroPoint: 31 }, rhs, lhsZeroPoint: 31, rhsZeroPoint: 140 };
    const limits = { maxBufferSize: 32768 };
    const gathering = await GpuContext.create({ device: gpu!.device, limits });
    const dd = sgmatEmulatedKernel(EMULATED_CONFIGS[0], { tiling: { ...DEFAULT_TILING, rhsDirect: true, lhsDirect: true } });
    const packing = await createGpuContextWith([dd, ...GPU_KERNELS], { device: gpu!.device, limits, kernel: dd.id });
    try {
      const got = await gathering.gemm(p);
      expect(gathering.lastRun).toMatchObject({ kernel: 'dot4-32x32', patchesGathered: true });
      expectExact(got, { ...p, lhs: { data: naivePatches(input, g, 31), rows: 576, cols: 27 } }, 'gathered above maxBufferSize');
      const e = await packing.gemm(p).catch((x) => x);
      expect(e).toBeInstanceOf(LimitExceededError);
      expect((e as Error).message).toMatch(/packed lhs needs 36864 bytes, above maxBufferSize 32768/); // 576 rows of 64 bytes
    } finally {
      gathering.destroy();
      packing.destroy();
    }
  });

  it('bad patches: InputError naming the field under lhs; patches as rhs or at 4 bits refused', async () => {
    const g = geometryAt(1, 1);
    const input = new Uint8Array(48);
    const rhs = { data: new Uint8Array(27), rows: 27, cols: 1, order: 'col-major' as const };
    const field = rejectedField;
    const run = (lhs: object, extra: object = {}) => ctx.gemm({ lhs, rhs, ...extra } as Parameters<GpuContext['gemm']>[0]);
    expect(await field(run({ input: new Uint8Array(47), geometry: g, zeroPoint: 0 }))).toBe('lhs.input');
    expect(await field(run({ input, geometry: { ...g, padTop: 3 }, zeroPoint: 0 }))).toBe('lhs.geometry.padTop');
    expect(await field(run({ input, geometry: { ...g, channels: 2.5 }, zeroPoint: 0 }))).toBe('lhs.geometry.channels');
    expect(await field(run({ input, geometry: g, zeroPoint: 256 }))).toBe('lhs.zeroPoint');
    expect(await field(run({ input: [1, 2], geometry: g, zeroPoint: 0 }))).toBe('lhs.input');
    // A key a geometry or a GpuMatrix does not have (a misspelling would be passed over): named.
    expect(await field(run({ input, geometry: { ...g, padBottom: 1 }, zeroPoint: 0 }))).toBe('lhs.geometry.padBottom');
    const gpuInput = uploadInput(ctx, input, g, g.channels);
    try {
      expect(await field(run({ input: { ...gpuInput, offset: 4 }, geometry: g, zeroPoint: 0 }))).toBe('lhs.input.offset');
      const lhs = { buffer: gpuInput.buffer, rows: 4, cols: 12, order: 'row-major', dtype: 'uint8', strid: 12 };
      expect(await field(ctx.gemm({ lhs, rhs: { data: new Uint8Array(12), rows: 12, cols: 1 } } as never))).toBe('lhs.strid');
    } finally {
      gpuInput.buffer.destroy();
    }
    expect(await field(run({ input, geometry: g, zeroPoint: 0 }, { bitDepth: { lhs: 4, rhs: 8 } }))).toBe('bitDepth.lhs');
    const asRhs = ctx.gemm({ lhs: { data: new Uint8Array(27), rows: 1, cols: 27 }, rhs: { input, geometry: g, zeroPoint: 0 } } as never);
    expect(await field(asRhs)).toBe('rhs');
  });
});

/** Whole tiles of invocations per tile row: the dot4-tiled tilings with a form that gathers the patches. */
const gathers = (c: Dot4TiledConfig) => c.tileN % ((c.threadM ?? 4) * (c.threadN ?? 4)) === 0;
const tiledPool: Dot4TiledConfig[] = [];
for (const vecWords of [1, 2, 4] as const)
  for (const [threadM, threadN] of [
    [4, 4],
    [4, 8],
    [8, 4],
    [8, 8],
  ] as const)
    for (const tileM of [32, 64] as const)
      for (const tileN of [32, 64] as const)
        for (const tileKW of [4, 8, 16] as const) {
          const c = { tileM, tileN, tileKW, vecWords, threadM, threadN };
          if (gathers(c)) tiledPool.push(c);
        }
const sample = process.env.QGEMM_DOT4_SAMPLE ?? '3';
const rng = new Rng(Number(process.env.QGEMM_DOT4_SEED ?? 34));
const sampled = sample === 'all' ? tiledPool : rng.sample(tiledPool, Number(sample));
/**
 * The subgroup-matrix kernel's gathering form (src/kernels/sgmat/sgmat-lhs-patches.wgsl), emulated: u8 at
 * 16x16x32 and 8x8x8 and i8 at 16x16x32 on the default tiling, then a seeded one of the others (16x8x32;
 * 128x64, 64x128 and '-dr' tilings): QGEMM_SGMAT_SAMPLE ('all' for every one) and QGEMM_SGMAT_SEED, as
 * in ./sgmat-family.test.ts. The dot4-wide forms likewise: the registry's tiling and a seeded other.
 */
const [u8, u8Narrow, u8Small, i8] = EMULATED_CONFIGS;
const sgmatGatherKernels = [u8, u8Small, i8].map((c) => sgmatEmulatedKernel(c, { id: `sgmat-64x64-emulated-${configLabel(c)}` }));
const sgmatOthers = [
  sgmatEmulatedKernel(u8Narrow, { id: `sgmat-64x64-emulated-${configLabel(u8Narrow)}` }),
  sgmatEmulatedKernel(u8, { tiling: { tileM: 128, tileN: 64, sgRows: 4, sgCols: 2, kStep: 64, buffers: 1 } }),
  sgmatEmulatedKernel(i8, { tiling: { tileM: 64, tileN: 128, sgRows: 2, sgCols: 4, kStep: 128, buffers: 1 } }),
  sgmatEmulatedKernel(u8Small, { tiling: { ...DEFAULT_TILING, rhsDirect: true } }), // '-dr': right fragments from storage
];
const wideOthers = [
  { threadsX: 8, threadsY: 16, tileKW: 8, vecWords: 2 },
  { threadsX: 8, threadsY: 16, tileKW: 8, vecWords: 1, threadM: 4, threadN: 8 },
].map((c) => dot4WideKernel('emulated', c as Dot4WideConfig));
const allForms = (process.env.QGEMM_SGMAT_SAMPLE ?? '1') === 'all';
const formSeed = Number(process.env.QGEMM_SGMAT_SEED ?? 34);
const pick = <T>(xs: T[]): T[] => (allForms ? xs : [xs[formSeed % xs.length]]);
const gatherCases = [
  ...(gpu?.hasDot4 ? (['emulated', 'native'] as const) : (['emulated'] as const)).flatMap((dot4) => [
    dot4TiledKernel(32, dot4),
    dot4TiledKernel(64, dot4),
    ...sampled.map((c) => dot4TiledKernel(64, dot4, c)),
  ]),
  ...sgmatGatherKernels,
  ...pick(sgmatOthers),
  dot4WideKernel('emulated'),
  ...pick(wideOthers),
].map((k) => [k.id, k] as const);

/** A SAME convolution of `filter` x `filter` at `stride` and `dilation` on a batch x size x size x channels input. */
function sameLayer(batch: number, size: number, channels: number, filter: number, stride: number, dilation: number): PatchGeometry {
  const out = Math.ceil(size / stride);
  const extent = (filter - 1) * dilation + 1;
  const pad = Math.max(0, (out - 1) * stride + extent - size);
  const half = Math.floor(pad / 2);
  return {
    batch,
    height: size,
    width: size,
    channels,
    filterHeight: filter,
    filterWidth: filter,
    strideHeight: stride,
    strideWidth: stride,
    dilationHeight: dilation,
    dilationWidth: dilation,
    padTop: half,
    padLeft: half,
    outHeight: out,
    outWidth: out,
  };
}

describe.skipIf(!gpu)('dot4-tiled and sgmat gathering the patches themselves (no pack dispatch) == CPU reference', () => {
  // [geometry, output channels, int8 input, extra bytes between the pixels of a GPU input (0: a CPU input)]
  const layers: [PatchGeometry, number, boolean, number][] = [
    [sameLayer(1, 9, 8, 3, 1, 1), 65, false, 0], // whole words, 81 rows, 3 column tiles of 32
    [sameLayer(2, 7, 3, 3, 2, 2), 33, true, 0], // bytes: 3 channels, stride and dilation 2, batch 2
    [sameLayer(1, 10, 12, 1, 1, 1), 17, true, 4], // a 1x1 filter on a GPU input whose pixels are 16 bytes apart
    [sameLayer(1, 6, 5, 3, 1, 1), 40, false, 3], // bytes from a GPU input 8 bytes apart
    [sameLayer(2, 5, 32, 3, 2, 1), 20, true, 4], // 16-byte pieces of one tap (patchPiece), batch 2, stride 2, pixels 36 bytes apart
  ];
  it.each(gatherCases)('%s', async (id, kernel) => {
    const ctx = await createGpuContextWith([kernel, ...GPU_KERNELS], { device: gpu!.device, kernel: id });
    try {
      for (const [i, [g, O, signed, extra]] of layers.entries()) {
        const n = g.batch * g.height * g.width * g.channels;
        const byte = (j: number) => (Math.imul(j + 1 + 7919 * i, 2654435761) >>> 24) & 0xff;
        const input = signed ? Int8Array.from({ length: n }, (_, j) => byte(j) - 128) : Uint8Array.from({ length: n }, (_, j) => byte(j));
        const zeroPoint = signed ? -17 + 40 * (i % 4) : 3 + 77 * i;
        const { rows, cols } = patchShape(g);
        const filter = Uint8Array.from({ length: O * cols }, (_, j) => byte(j * 5 + 11));
        const rhs = { data: filter, rows: cols, cols: O, order: 'col-major' as const };
        const rhsZeroPoint = 131 - 50 * i; // the row sums the kernel computes are weighed in
        const weights = await ctx.prepack('rhs', rhs);
        const gpuInput = extra ? uploadInput(ctx, input, g, g.channels + extra) : null;
        try {
          const got = await ctx.gemm({
            lhs: { input: gpuInput ?? input, geometry: g, zeroPoint },
            rhs: weights,
            lhsZeroPoint: zeroPoint,
            rhsZeroPoint,
          });
          expect(ctx.lastRun).toMatchObject({ kernel: id, packDispatches: 0 });
          const lhs = { data: naivePatches(input, g, zeroPoint), rows, cols };
          expectExact(got, { lhs, rhs, lhsZeroPoint: zeroPoint, rhsZeroPoint }, `${id} gathering ${JSON.stringify(g)} x ${O}`);
        } finally {
          weights.destroy();
          gpuInput?.buffer.destroy();
        }
      }
    } finally {
      ctx.destroy();
    }
  });
});

// Split-K gathers too: each slice's partial pass gathers its k range and sums its rows into the workspace,
// the reduce pass adds the slices' row sums for the epilogue (src/kernels/splitk/; the subgroup-matrix
// kernel's i8 fragments add each slice's part of the row-sum correction). Deep layers with few tiles, so
// that even a software adapter's plan cuts K into two slices or more (asserted): whole words and bytes,
// two row tiles of 32, a strided GPU input, a column-major dst, 8- and 4-bit rhs. The emulated
// subgroup-matrix forms: u8 and i8 at 16x16x32, then one of u8 at 8x8x8 and the 4-bit rhs, seeded
// (QGEMM_SGMAT_SAMPLE=all: both).
const sgmatSplits = [
  ...[u8, i8, u8Small].map((c) => sgmatEmulatedKernel(c, { tiling: SPLITK_TILING, id: `sgmat-64x64-sk-emulated-${configLabel(c)}` })),
  sgmatEmulatedKernel(i8, { tiling: SPLITK_TILING, rhsBits: 4, id: `sgmat-64x64-sk-u4-emulated-${configLabel(i8)}` }),
];
const splitCases = [
  ...(gpu?.hasDot4 ? GPU_KERNELS.filter((k) => k.id.startsWith('splitk-')) : []),
  ...(allForms ? sgmatSplits : [sgmatSplits[0], sgmatSplits[1], sgmatSplits[2 + (formSeed % 2)]]),
].map((k) => [k.id, k, k.rhsPackFormat?.startsWith('u4') ? 4 : 8] as const);
describe.skipIf(!gpu)('split-K gathering the patches of each K slice == CPU reference', () => {
  // [geometry, output channels, int8 input, extra bytes between the pixels of a GPU input, column-major dst]
  const layers: [PatchGeometry, number, boolean, number, boolean][] = [
    [sameLayer(1, 5, 128, 3, 1, 1), 40, false, 0, false], // whole words, K = 1152
    [sameLayer(2, 4, 115, 3, 2, 1), 36, true, 4, true], // bytes from a GPU input 119 bytes a pixel, batch 2, stride 2
    [sameLayer(1, 7, 256, 3, 1, 1), 24, true, 0, false], // 49 rows: two row tiles, K = 2304
  ];
  it.each(splitCases)('%s', async (id, kernel, rhsBits) => {
    const ctx = await createGpuContextWith([...sgmatSplits, ...GPU_KERNELS], { device: gpu!.device, kernel: id });
    try {
      for (const [i, [g, O, signed, extra, colMajor]] of layers.entries()) {
        const n = g.batch * g.height * g.width * g.channels;
        const byte = (j: number) => (Math.imul(j + 3 + 4001 * i, 2654435761) >>> 24) & 0xff;
        const input = signed ? Int8Array.from({ length: n }, (_, j) => byte(j) - 128) : Uint8Array.from({ length: n }, (_, j) => byte(j));
        const zeroPoint = signed ? 23 - 61 * i : 250 - 90 * i;
        const { rows, cols } = patchShape(g);
        const splits = (
          kernel.plan({ M: rows, N: O, K: cols, dstType: 'int32', dstOrder: 'row-major' }, ctx.limits, ctx.caps)[0] as SplitKDispatch
        ).splits;
        expect(splits, `${JSON.stringify(g)}: slices`).toBeGreaterThanOrEqual(2);
        const filter = Uint8Array.from({ length: O * cols }, (_, j) => byte(j * 3 + 5) >> (rhsBits === 4 ? 4 : 0));
        const rhs = { data: filter, rows: cols, cols: O, order: 'col-major' as const };
        const common = {
          rhs,
          lhsZeroPoint: zeroPoint,
          rhsZeroPoint: rhsBits === 4 ? 9 : 140 - 30 * i, // the row sums the slices compute are weighed in
          dstOrder: colMajor ? ('col-major' as const) : ('row-major' as const),
          ...(rhsBits === 4 ? { bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' as const } } : {}),
        };
        const gpuInput = extra ? uploadInput(ctx, input, g, g.channels + extra) : null;
        try {
          const got = await ctx.gemm({ ...common, lhs: { input: gpuInput ?? input, geometry: g, zeroPoint } });
          expect(ctx.lastRun).toMatchObject({ kernel: id, patchesGathered: true });
          const lhs = { data: naivePatches(input, g, zeroPoint), rows, cols };
          expectExact(got, { ...common, lhs }, `${id} gathering ${JSON.stringify(g)} x ${O} in ${splits} slices`);
        } finally {
          gpuInput?.buffer.destroy();
        }
      }
    } finally {
      ctx.destroy();
    }
  });
  // A band whose raw sums alone fill the binding (32 rows x 256 columns of int32 in 32 KiB, K 64) leaves
  // no room for a gathered lhs's row sums: the scheduler packs the patches first and runs the plain form
  // (its workspace holds the raw sums only), exact, never a LimitExceededError or a validation error.
  it.skipIf(!gpu?.hasDot4)('splitk-32x32: where the gathered workspace exceeds a binding, the patches are packed first', async () => {
    const limits = { maxStorageBufferBindingSize: 32768 };
    const ctx = await GpuContext.create({ device: gpu!.device, kernel: 'splitk-32x32', limits });
    try {
      const g = { ...sameLayer(1, 7, 64, 1, 1, 1), height: 1, outHeight: 1 }; // 7 pixels of 64 channels
      const input = Uint8Array.from({ length: 7 * 64 }, (_, j) => (j * 71 + 5) & 0xff);
      const rhs = {
        data: Uint8Array.from({ length: 64 * 256 }, (_, j) => (j * 13 + 2) & 0xff),
        rows: 64,
        cols: 256,
        order: 'col-major' as const,
      };
      const common = { rhs, lhsZeroPoint: 17, rhsZeroPoint: 201, dstOrder: 'col-major' as const };
      const got = await ctx.gemm({ ...common, lhs: { input, geometry: g, zeroPoint: 17 } });
      expect(ctx.lastRun).toMatchObject({ kernel: 'splitk-32x32', patchesGathered: false, packDispatches: 2 });
      expectExact(got, { ...common, lhs: { data: naivePatches(input, g, 17), rows: 7, cols: 64 } }, 'split-K, patches packed first');
    } finally {
      ctx.destroy();
    }
  });

  // Lowered limits: two 64-row bands of 2304 packed bytes fit a 192 KiB binding, three do not, so the plan
  // runs two bands (each its slices, then its reduce, sharing one workspace) and splits the grids.
  it.each(splitCases.filter(([id]) => !id.includes('-u4')))('%s in two bands under lowered limits', async (id, kernel) => {
    const limits = { maxStorageBufferBindingSize: 196608, maxComputeWorkgroupsPerDimension: 3 };
    const ctx = await createGpuContextWith([...sgmatSplits, ...GPU_KERNELS], { device: gpu!.device, kernel: id, limits });
    try {
      const g = sameLayer(1, 9, 256, 3, 1, 1); // 81 rows, K 2304
      const input = Uint8Array.from({ length: 9 * 9 * 256 }, (_, j) => (Math.imul(j + 11, 2654435761) >>> 24) & 0xff);
      const rhs = {
        data: Uint8Array.from({ length: 2304 * 40 }, (_, j) => (j * 29 + 7) & 0xff),
        rows: 2304,
        cols: 40,
        order: 'col-major' as const,
      };
      const plan = kernel.plan(
        { M: 81, N: 40, K: 2304, dstType: 'int32', dstOrder: 'row-major' },
        ctx.limits,
        ctx.caps,
      ) as SplitKDispatch[];
      expect(new Set(plan.map((d) => d.m0)).size, 'bands').toBeGreaterThanOrEqual(2);
      expect(Math.max(...plan.map((d) => d.splits)), 'slices').toBeGreaterThanOrEqual(2);
      const common = { rhs, lhsZeroPoint: 66, rhsZeroPoint: 190 };
      const got = await ctx.gemm({ ...common, lhs: { input, geometry: g, zeroPoint: 66 } });
      expect(ctx.lastRun).toMatchObject({ kernel: id, patchesGathered: true });
      expectExact(got, { ...common, lhs: { data: naivePatches(input, g, 66), rows: 81, cols: 2304 } }, `${id} gathering in bands`);
    } finally {
      ctx.destroy();
    }
  });
});

// A layer at M <= 4 on the gemv (src/kernels/gemv/gemv-lhs-patches.wgsl): each 16-byte chunk gathered
// from the input and summed for the row sums, one dispatch, no pack. Offered on the configurations of a
// hardware adapter only (a software one packs the patches first: asserted). Every gemv kernel the adapter
// runs (subgroup and workgroup reductions, 8- and 4-bit rhs, the manual dot4); M 1 to 4 (4: the row sums
// reduced on their own) and 9 (three row groups); whole 16-byte pieces of one tap, words, bytes; padding, stride, dilation, batch;
// K past the last chunk; strided GPU inputs; a column-major dst.
describe.skipIf(!gpu)('the gemv gathering the patches of a layer at M <= 4 == CPU reference', () => {
  // [geometry, output channels, int8 input, extra bytes between the pixels of a GPU input, column-major dst]
  const layers: [PatchGeometry, number, boolean, number, boolean][] = [
    [sameLayer(1, 2, 8, 3, 1, 1), 13, false, 0, false], // M 4, words, K 72: a chunk half past K
    [sameLayer(1, 3, 16, 3, 2, 1), 9, true, 0, true], // M 4 at stride 2: 16-byte pieces of one tap, column-major dst
    [sameLayer(3, 1, 3, 3, 1, 1), 20, true, 0, false], // M 3: bytes, every tap but the centre in the padding
    [{ ...sameLayer(2, 3, 5, 2, 1, 2), padTop: 0, padLeft: 0, outHeight: 1, outWidth: 1 }, 6, false, 0, false], // M 2: dilation 2, no padding
    [sameLayer(1, 2, 32, 3, 1, 1), 17, true, 4, false], // pieces from a GPU input 36 bytes a pixel
    [sameLayer(1, 1, 6, 3, 1, 1), 5, false, 3, true], // M 1: bytes from a GPU input 9 bytes a pixel
    [sameLayer(1, 3, 4, 3, 1, 1), 7, true, 0, false], // M 9 (forced: the gemv runs any M), row groups 4, 4 and 1
  ];
  const gemvs = GPU_KERNELS.filter((k) => k.id.startsWith('gemv'));
  it.each(gemvs.map((k) => [k.id, k] as const))('%s', async (id, kernel) => {
    const ctx = await createGpuContextAsHardware({ device: gpu!.device, kernel: id });
    const rhsBits = kernel.rhsPackFormat?.startsWith('u4') ? 4 : 8;
    try {
      for (const [i, [g, O, signed, extra, colMajor]] of layers.entries()) {
        const { rows, cols } = patchShape(g);
        const n = g.batch * g.height * g.width * g.channels;
        const byte = (j: number) => (Math.imul(j + 13 + 3571 * i, 2654435761) >>> 24) & 0xff;
        const input = signed ? Int8Array.from({ length: n }, (_, j) => byte(j) - 128) : Uint8Array.from({ length: n }, (_, j) => byte(j));
        const zeroPoint = signed ? 41 - 23 * i : (7 + 45 * i) % 256; // what the padding holds, in the row sums too
        const filter = Uint8Array.from({ length: O * cols }, (_, j) => byte(j * 5 + 2) >> (rhsBits === 4 ? 4 : 0));
        const rhs = { data: filter, rows: cols, cols: O, order: 'col-major' as const };
        const bitDepth = rhsBits === 4 ? { bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' as const } } : {};
        const common = {
          lhsZeroPoint: zeroPoint,
          rhsZeroPoint: rhsBits === 4 ? 6 : 199 - 33 * i, // the row sums the kernel computes are weighed in
          dstOrder: colMajor ? ('col-major' as const) : ('row-major' as const),
          ...bitDepth,
        };
        const weights = await ctx.prepack('rhs', rhs, bitDepth.bitDepth);
        const gpuInput = extra ? uploadInput(ctx, input, g, g.channels + extra) : null;
        try {
          const got = await ctx.gemm({ ...common, rhs: weights, lhs: { input: gpuInput ?? input, geometry: g, zeroPoint } });
          expect(ctx.lastRun).toMatchObject({ kernel: id, packDispatches: 0, patchesGathered: true });
          const lhs = { data: naivePatches(input, g, zeroPoint), rows, cols };
          expectExact(got, { ...common, rhs, lhs }, `${id} gathering ${JSON.stringify(g)} x ${O}`);
        } finally {
          weights.destroy();
          gpuInput?.buffer.destroy();
        }
      }
    } finally {
      ctx.destroy();
    }
  });

  // Lowered limits: a forced gemv on 169 rows of 64 packed bytes (K 36) under an 8 KiB binding (which
  // the prepacked filter's 128 padded rows fill) runs two bands (128 and 41 rows), and each band's gather
  // starts at its first row.
  it('gemv in two bands under lowered limits', async () => {
    const limits = { maxStorageBufferBindingSize: 8192 };
    const ctx = await createGpuContextAsHardware({ device: gpu!.device, kernel: 'gemv-workgroup', limits });
    try {
      const g = sameLayer(1, 13, 4, 3, 1, 1); // M 169, K 36
      const kernel = GPU_KERNELS.find((k) => k.id === 'gemv-workgroup')!;
      const plan = kernel.plan({ M: 169, N: 3, K: 36, dstType: 'int32', dstOrder: 'row-major' }, ctx.limits);
      expect(new Set(plan.map((d) => d.m0)).size, 'bands').toBe(2);
      const input = Uint8Array.from({ length: 13 * 13 * 4 }, (_, j) => (j * 53 + 9) & 0xff);
      const rhs = {
        data: Uint8Array.from({ length: 36 * 3 }, (_, j) => (j * 17 + 1) & 0xff),
        rows: 36,
        cols: 3,
        order: 'col-major' as const,
      };
      const common = { lhsZeroPoint: 12, rhsZeroPoint: 250 };
      const weights = await ctx.prepack('rhs', rhs);
      const got = await ctx.gemm({ ...common, rhs: weights, lhs: { input, geometry: g, zeroPoint: 12 } }).finally(() => weights.destroy());
      expect(ctx.lastRun).toMatchObject({ kernel: 'gemv-workgroup', packDispatches: 0, patchesGathered: true });
      expectExact(got, { ...common, rhs, lhs: { data: naivePatches(input, g, 12), rows: 169, cols: 36 } }, 'gemv gathering in bands');
    } finally {
      ctx.destroy();
    }
  });

  it('the gemv on this adapter: a software one packs the patches first (a rebuild per workgroup runs at CPU speed there)', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    try {
      const g = sameLayer(1, 2, 8, 3, 1, 1);
      const input = Uint8Array.from({ length: 32 }, (_, j) => (j * 37 + 5) & 0xff);
      const rhs = {
        data: Uint8Array.from({ length: 72 * 11 }, (_, j) => (j * 13) & 0xff),
        rows: 72,
        cols: 11,
        order: 'col-major' as const,
      };
      const common = { rhs, lhsZeroPoint: 90, rhsZeroPoint: 30 };
      const weights = await ctx.prepack('rhs', rhs);
      const got = await ctx.gemm({ ...common, rhs: weights, lhs: { input, geometry: g, zeroPoint: 90 } }).finally(() => weights.destroy());
      expect(ctx.lastRun).toMatchObject({
        kernel: expect.stringMatching(/^gemv/),
        packDispatches: ctx.caps.slowCompiler ? 1 : 0,
        patchesGathered: !ctx.caps.slowCompiler,
      });
      expectExact(got, { ...common, lhs: { data: naivePatches(input, g, 90), rows: 4, cols: 72 } }, 'gemv on this adapter');
    } finally {
      ctx.destroy();
    }
  });
});

// Patches that are the input itself (a 1x1 filter at stride 1, or one the size of the image; no padding:
// src/pack/patches.ts patchesAreInput) go to a kernel that reads them unpacked or does not gather as a
// plain lhs: the gemv of a classifier's last convolution reads it unpacked, with no pack dispatch and no
// gather (on the configurations of a hardware adapter: a software one keeps the lhs pack). Other
// geometries get the gemv's gather.
describe.skipIf(!gpu)('patches that are the input itself, on kernels that do not gather them', () => {
  const layer = (batch: number, h: number, w: number, c: number, f: number, same: boolean): PatchGeometry => {
    const g = sameLayer(batch, h, c, f, 1, 1);
    return same ? { ...g, width: w } : { ...g, width: w, padTop: 0, padLeft: 0, outHeight: h - f + 1, outWidth: w - f + 1 };
  };
  // [geometry, output channels, int8 input, extra bytes between the pixels of a GPU input, gathered]
  const cases: [string, PatchGeometry, number, boolean, number, boolean][] = [
    ['pixels: a 1x1 filter on 2 x 2 x 40', layer(1, 2, 2, 40, 1, false), 37, true, 0, false],
    ['images: a 3x3 filter on three 3 x 3 x 8 images', layer(3, 3, 3, 8, 3, false), 70, false, 0, false],
    ['pixels from a GPU input 28 bytes a pixel', layer(1, 1, 3, 24, 1, false), 9, false, 4, false],
    ['a 3x3 SAME filter on 2 x 2 x 8: the gather', layer(1, 2, 2, 8, 3, true), 16, true, 0, true],
  ];
  it.each(cases)('%s', async (name, g, O, signed, extra, gathered) => {
    const ctx = await createGpuContextAsHardware({ device: gpu!.device });
    try {
      const n = g.batch * g.height * g.width * g.channels;
      const byte = (j: number) => (Math.imul(j + 5, 2654435761) >>> 24) & 0xff;
      const input = signed ? Int8Array.from({ length: n }, (_, j) => byte(j) - 128) : Uint8Array.from({ length: n }, (_, j) => byte(j));
      const zeroPoint = signed ? -9 : 201;
      const { rows, cols } = patchShape(g);
      const rhs = {
        data: Uint8Array.from({ length: O * cols }, (_, j) => byte(j * 7 + 1)),
        rows: cols,
        cols: O,
        order: 'col-major' as const,
      };
      const weights = await ctx.prepack('rhs', rhs);
      const gpuInput = extra ? uploadInput(ctx, input, g, g.channels + extra) : null;
      try {
        const common = { lhsZeroPoint: zeroPoint, rhsZeroPoint: 100 };
        const got = await ctx.gemm({ ...common, rhs: weights, lhs: { input: gpuInput ?? input, geometry: g, zeroPoint } });
        expect(ctx.lastRun).toMatchObject({ kernel: expect.stringMatching(/^gemv/), packDispatches: 0, patchesGathered: gathered });
        expectExact(got, { ...common, rhs, lhs: { data: naivePatches(input, g, zeroPoint), rows, cols } }, name);
      } finally {
        weights.destroy();
        gpuInput?.buffer.destroy();
      }
    } finally {
      ctx.destroy();
    }
  });

  it("a '-dd' tiling (no gather) takes a 1x1 layer's input as its lhs, packed as any lhs", async () => {
    const dd = sgmatEmulatedKernel(EMULATED_CONFIGS[0], { tiling: { ...DEFAULT_TILING, rhsDirect: true, lhsDirect: true } });
    const ctx = await createGpuContextWith([dd, ...GPU_KERNELS], { device: gpu!.device, kernel: dd.id });
    try {
      const g = { ...sameLayer(2, 8, 20, 1, 1, 1), padTop: 0, padLeft: 0 }; // 128 pixels of 20 channels
      const input = Uint8Array.from({ length: 2 * 8 * 8 * 20 }, (_, j) => (j * 31 + 3) & 0xff);
      const rhs = {
        data: Uint8Array.from({ length: 20 * 70 }, (_, j) => (j * 11) & 0xff),
        rows: 20,
        cols: 70,
        order: 'col-major' as const,
      };
      const common = { rhs, lhsZeroPoint: 128, rhsZeroPoint: 3 };
      const got = await ctx.gemm({ ...common, lhs: { input, geometry: g, zeroPoint: 128 } });
      expect(ctx.lastRun).toMatchObject({ kernel: dd.id, patchesGathered: false });
      expectExact(got, { ...common, lhs: { data: input, rows: 128, cols: 20 } }, '1x1 on a -dd tiling');
    } finally {
      ctx.destroy();
    }
  });
});

/** gemmOnGpu plans a context holds (src/scheduler/plans.ts sizeOnGpu). */
const plansOnGpu = (ctx: GpuContext) => (ctx as unknown as { resources: { plans: { sizeOnGpu: number } } }).resources.plans.sizeOnGpu;

describe.skipIf(!gpu)('a repeated convolution call with a prepacked filter runs its plan, never a stale one', () => {
  // The paths of a patches lhs: gathered by the kernel (dot4-32x32), packed first in the pass (the '-dd'
  // tiling), and a 1x1 layer's input taken as a plain lhs (the gemv on a hardware-rules context).
  const dd = sgmatEmulatedKernel(EMULATED_CONFIGS[0], { tiling: { ...DEFAULT_TILING, rhsDirect: true, lhsDirect: true } });
  const paths = [
    ['gathered', () => GpuContext.create({ device: gpu!.device }), sameLayer(2, 5, 6, 3, 1, 1), true],
    [
      'packed first',
      () => createGpuContextWith([dd, ...GPU_KERNELS], { device: gpu!.device, kernel: dd.id }),
      sameLayer(1, 6, 5, 3, 2, 1),
      false,
    ],
    [
      'a 1x1 layer as a plain lhs',
      () => createGpuContextAsHardware({ device: gpu!.device }),
      { ...sameLayer(1, 2, 12, 1, 1, 1), padTop: 0, padLeft: 0 },
      false,
    ],
  ] as const;

  it("keys a geometry or a GpuMatrix by what a read by name finds: a class's getters, a prototype's fields", async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    const plain = (s: number): PatchGeometry => ({ ...sameLayer(1, 6, 4, 3, s, 1) });
    class Geometry {
      readonly #s: number;
      constructor(s: number) {
        this.#s = s;
      }
      get stride() {
        return this.#s;
      }
    }
    for (const f of Object.keys(plain(1)) as (keyof PatchGeometry)[])
      Object.defineProperty(Geometry.prototype, f, {
        get(this: Geometry) {
          return plain(this.stride)[f];
        },
      });
    const { cols } = patchShape(plain(1));
    const rhs = {
      data: Uint8Array.from({ length: cols * 5 }, (_, j) => (j * 37 + 11) & 0xff),
      rows: cols,
      cols: 5,
      order: 'col-major' as const,
    };
    const weights = await ctx.prepack('rhs', rhs);
    const input = Uint8Array.from({ length: 6 * 6 * 4 }, (_, j) => (j * 91 + 7) & 0xff);
    const plans: string[] = [];
    try {
      for (const [what, make] of [
        ['a class with getters', (s: number) => new Geometry(s) as unknown as PatchGeometry],
        ['a prototype', (s: number) => Object.create(plain(s)) as PatchGeometry],
      ] as const) {
        for (const s of [1, 2]) {
          const got = await ctx.gemm({ lhs: { input, geometry: make(s), zeroPoint: 9 }, rhs: weights, rhsZeroPoint: 77 }, undefined, {
            onTrace: (t) => plans.push(t.plan),
          });
          const shape = patchShape(plain(s));
          const lhs = { data: naivePatches(input, plain(s), 9), rows: shape.rows, cols: shape.cols };
          expectExact(got, { lhs, rhs, lhsZeroPoint: 0, rhsZeroPoint: 77 }, `${what}, stride ${s}`);
        }
      }
      expect(plans.splice(0)).toEqual(['new', 'new', 'new', 'new']);
      // A GpuMatrix lhs given by a view's getters: its rows keyed too (same buffer, dtype and stride).
      const bytes = Uint8Array.from({ length: 4 * cols }, (_, j) => (j * 13 + 1) & 0xff);
      const buffer = ctx.device.createBuffer({ size: bytes.length, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      ctx.device.queue.writeBuffer(buffer, 0, bytes);
      const view = (rows: number) => {
        const m = { buffer, rows, cols, order: 'row-major', dtype: 'uint8', stride: cols };
        return Object.create(m) as GpuMatrix; // every field inherited
      };
      try {
        for (const rows of [4, 4, 4, 2]) {
          const got = await ctx.gemm({ lhs: view(rows), rhs: weights, rhsZeroPoint: 77 }, undefined, {
            onTrace: (t) => plans.push(t.plan),
          });
          expectExact(got, { lhs: { data: bytes.subarray(0, rows * cols), rows, cols }, rhs, rhsZeroPoint: 77 }, `a view of ${rows} rows`);
        }
        expect(plans.splice(0)).toEqual(['none', 'new', 'hit', 'new']);
      } finally {
        buffer.destroy();
      }
    } finally {
      weights.destroy();
      ctx.destroy();
    }
  });

  it.each(paths)('%s: ctx.gemm with a CPU input, gemmOnGpu with a CPU or a GPU input', async (_, create, g, gathered) => {
    const ctx = await create();
    const { rows, cols } = patchShape(g);
    const n = g.batch * g.height * g.width * g.channels;
    const O = 11;
    const rhs = {
      data: Uint8Array.from({ length: cols * O }, (_, j) => (j * 29 + 5) & 0xff),
      rows: cols,
      cols: O,
      order: 'col-major' as const,
    };
    const weights = await ctx.prepack('rhs', rhs);
    const inputOf = (seed: number, signed = false) => {
      const bytes = Uint8Array.from({ length: n }, (_, j) => (Math.imul(j + seed, 2654435761) >>> 24) & 0xff);
      return signed ? new Int8Array(bytes.buffer) : bytes;
    };
    const plans: string[] = [];
    const onTrace = (t: GemmTrace) => plans.push(t.plan);
    const run = async (input: Uint8Array | Int8Array, geometry: PatchGeometry, zeroPoint: number, what: string) => {
      const got = await ctx.gemm(
        { lhs: { input, geometry, zeroPoint }, rhs: weights, lhsZeroPoint: zeroPoint, rhsZeroPoint: 77 },
        undefined,
        {
          onTrace,
        },
      );
      const shape = patchShape(geometry);
      const lhs = { data: naivePatches(input, geometry, zeroPoint), rows: shape.rows, cols: shape.cols };
      expectExact(got, { lhs, rhs, lhsZeroPoint: zeroPoint, rhsZeroPoint: 77 }, `${what} on ${ctx.lastRun.kernel}`);
    };
    try {
      const input = inputOf(1);
      for (let i = 0; i < 3; i++) await run(i === 0 ? input : inputOf(10 + i), g, 9, `call ${i}`);
      expect(ctx.lastRun.patchesGathered).toBe(gathered);
      input.fill(250); // the same array, edited in place: a hit that reads the new bytes
      await run(input, g, 9, 'input edited in place');
      expect(plans.splice(0)).toEqual(['new', 'hit', 'hit', 'hit']);
      // The input's type alone changed (the same zero point): a new plan, not the uint8 one.
      await run(inputOf(1, true), g, 9, 'int8 input, the same zero point');
      expect(plans.splice(0)).toEqual(['new']);
      // Another geometry of the same input (one output row fewer), zero point or input type: each a new plan.
      await run(inputOf(4), { ...g, outHeight: g.outHeight - 1 }, 9, 'one output row fewer');
      await run(inputOf(2), g, 200, 'zero point 200');
      await run(inputOf(3, true), g, -5, 'int8 input');
      expect(plans.splice(0)).toEqual(['new', 'new', 'new']);

      // gemmOnGpu: a CPU input written on each replay; a GPU input read where it is, its new bytes included.
      const onGpu = async (input: Uint8Array | GpuMatrix, data: Uint8Array, what: string) => {
        const m = await ctx.gemmOnGpu({ lhs: { input, geometry: g, zeroPoint: 9 }, rhs: weights, lhsZeroPoint: 9, rhsZeroPoint: 77 });
        const got = await ctx.read(m);
        ctx.releaseMatrix(m);
        expectExact(got, { lhs: { data: naivePatches(data, g, 9), rows, cols }, rhs, lhsZeroPoint: 9, rhsZeroPoint: 77 }, what);
      };
      for (let i = 0; i < 3; i++) {
        const data = inputOf(20 + i) as Uint8Array;
        await onGpu(data, data, `gemmOnGpu, CPU input ${i}`);
      }
      const gpuInput = uploadInput(ctx, inputOf(30), g, g.channels);
      const other = uploadInput(ctx, inputOf(31), g, g.channels);
      try {
        // A GPU input: no plan at its first call, one at its second (a buffer read in place), then replays.
        const before = plansOnGpu(ctx);
        await onGpu(gpuInput, inputOf(30) as Uint8Array, 'gemmOnGpu, GPU input');
        expect(plansOnGpu(ctx)).toBe(before);
        await onGpu(gpuInput, inputOf(30) as Uint8Array, 'gemmOnGpu, GPU input again');
        const made = plansOnGpu(ctx);
        expect(made).toBe(before + 1);
        for (let i = 0; i < 2; i++) {
          const data = inputOf(40 + i) as Uint8Array;
          ctx.device.queue.writeBuffer(gpuInput.buffer, 0, data.buffer as ArrayBuffer);
          await onGpu(gpuInput, data, `gemmOnGpu, GPU input rewritten ${i}`);
        }
        expect(plansOnGpu(ctx)).toBe(made); // replayed: no plan made
        await onGpu(other, inputOf(31) as Uint8Array, 'gemmOnGpu, another GPU input');
        // ctx.gemm reading a GPU input back (a Sequential's last conv layer): planned the same way.
        for (let i = 0; i < 3; i++) {
          const data = inputOf(50 + i) as Uint8Array;
          ctx.device.queue.writeBuffer(gpuInput.buffer, 0, data.buffer as ArrayBuffer);
          const got = await ctx.gemm(
            { lhs: { input: gpuInput, geometry: g, zeroPoint: 9 }, rhs: weights, lhsZeroPoint: 9, rhsZeroPoint: 77 },
            undefined,
            {
              onTrace,
            },
          );
          expectExact(
            got,
            { lhs: { data: naivePatches(data, g, 9), rows, cols }, rhs, lhsZeroPoint: 9, rhsZeroPoint: 77 },
            `gemm, GPU input ${i}`,
          );
        }
        expect(plans.splice(0)).toEqual(['new', 'hit', 'hit']); // the buffer was seen: a plan at once
      } finally {
        gpuInput.buffer.destroy();
        other.buffer.destroy();
      }
    } finally {
      weights.destroy();
      ctx.destroy();
    }
  });
});

describe.skipIf(!gpu)("verify's convolution layers check the gathered form", () => {
  it('dot4-32x32-emulated exact on them; a planted bug in its gather (a row sum one byte short) is a convolution mismatch', async () => {
    const conv = verifyConvProblems();
    const good = dot4TiledKernel(32, 'emulated');
    const row = await verifyGpuKernel(gpu!.device, good, [], { kernels: [good, ...GPU_KERNELS], conv });
    expect([row.problems, row.mismatches, row.detail]).toEqual([conv.length, 0, '']);
    const gather = dot4KernelSource('dot4-tiled-patches', [dot4TileLoopBody.patches, dot4Gemm], 4, 4, 4, 'emulated');
    const planted = gather.replace('lhsRowSum += dot4(word, 0x01010101u);', 'lhsRowSum += dot4(word, 0x01010100u);');
    expect(planted).not.toBe(gather);
    const mutant = bandedKernel({
      id: 'dot4-32x32-gather-mutant',
      source: dot4KernelSource('dot4-tiled', [dot4TileLoopBody.packed, dot4Gemm], 4, 4, 4, 'emulated'),
      patchSource: planted,
      entryPoint: 'gemm',
      overrides: { TILE_M: 32, TILE_N: 32, TILE_KW: 16 },
      tileM: 32,
      tileN: 32,
      supports: () => true,
    });
    const bad = await verifyGpuKernel(gpu!.device, mutant, [], { kernels: [mutant, ...GPU_KERNELS], conv });
    expect(bad.mismatches).toBeGreaterThan(0);
    expect(bad.detail).toMatch(/^convolution problem \d+ \(\d+x\d+x\d+\): \d+ of \d+ elements differ/);
  });
});

/** The input as a GpuMatrix [pixels, channels] of `ctx`'s device whose rows lie `stride` bytes apart. */
function uploadInput(ctx: GpuContext, input: Uint8Array | Int8Array, g: PatchGeometry, stride: number): GpuMatrix {
  const pixels = g.batch * g.height * g.width;
  const bytes = new Uint8Array(Math.ceil((pixels * stride) / 4) * 4);
  for (let p = 0; p < pixels; p++) bytes.set(new Uint8Array(input.buffer, input.byteOffset + p * g.channels, g.channels), p * stride);
  const buffer = ctx.device.createBuffer({ size: bytes.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  ctx.device.queue.writeBuffer(buffer, 0, bytes);
  const dtype = input instanceof Int8Array ? 'int8' : 'uint8';
  return { buffer, rows: pixels, cols: g.channels, order: 'row-major', dtype, stride };
}

/** A 4x4x3 input under a 3x3 filter at stride 1, padding `pad` on top and left (16 outputs). */
function geometryAt(batch: number, pad: number): PatchGeometry {
  return {
    batch,
    height: 4,
    width: 4,
    channels: 3,
    filterHeight: 3,
    filterWidth: 3,
    strideHeight: 1,
    strideWidth: 1,
    dilationHeight: 1,
    dilationWidth: 1,
    padTop: pad,
    padLeft: pad,
    outHeight: 4 - 2 + 2 * pad,
    outWidth: 4 - 2 + 2 * pad,
  };
}
