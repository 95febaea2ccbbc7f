// Unit tier: the pure dispatch planner (src/gpu/plan.ts) over many limit sets, without a GPU. Each plan
// is checked by replaying it: every packed row, every k of every row, every dst tile and every output
// word is covered exactly once, every binding fits its limit and starts at an aligned offset, and every
// grid fits the workgroup-count limit.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PlanLimits } from '../../src/gpu/caps.ts';
import { alignedUnit, dstLayout, flatDispatches, planElementwise, planGemm, roundUp } from '../../src/gpu/plan.ts';
import { planPack } from '../../src/pack/plan.ts';
import { PACK_FORMATS } from '../../src/pack/formats.ts';
import { LimitExceededError } from '../../src/errors.ts';

const format = PACK_FORMATS['u8k4-r64'];
const limitsOf = (binding: number, wg: number, alignment = 256): PlanLimits => ({
  maxStorageBufferBindingSize: binding,
  maxComputeWorkgroupsPerDimension: wg,
  maxBufferSize: 2 ** 40,
  maxComputeWorkgroupStorageSize: 16384,
  maxComputeInvocationsPerWorkgroup: 256,
  maxComputeWorkgroupSizeX: 256,
  minStorageBufferOffsetAlignment: alignment,
  minUniformBufferOffsetAlignment: 256,
});
const arbLimits = fc.record({
  binding: fc.constantFrom(4096, 32768, 65536, 1 << 20, 2 ** 31),
  wg: fc.constantFrom(1, 2, 3, 7, 65535),
  alignment: fc.constantFrom(4, 32, 256),
});

describe('flatDispatches', () => {
  it('covers 0..total once, each grid within max x max', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 1, max: 40 }), (total, max) => {
        let next = 0;
        for (const d of flatDispatches(total, max)) {
          expect(d.base).toBe(next);
          expect(d.x).toBeLessThanOrEqual(max);
          expect(d.y).toBeLessThanOrEqual(max);
          next += Math.min(d.x * d.y, total - d.base);
        }
        expect(next).toBe(total);
      }),
    );
  });
});

describe('alignedUnit', () => {
  it('is the smallest multiple whose byte size is aligned', () => {
    for (const stride of [1, 3, 64, 100, 1000, 4097]) {
      for (const alignment of [4, 256]) {
        const u = alignedUnit(stride, alignment, 4);
        expect((u * stride) % alignment).toBe(0);
        expect(u % 4).toBe(0);
        for (let c = 4; c < u; c += 4) expect((c * stride) % alignment).not.toBe(0);
      }
    }
  });
});

describe('planPack', () => {
  it('packs every (row, k) exactly once, within every limit', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 700 }),
        fc.boolean(),
        arbLimits,
        (outer, depth, kContiguous, l) => {
          const limits = limitsOf(l.binding, l.wg, l.alignment);
          const stride = kContiguous ? depth : outer;
          const src = { bytes: outer * depth, outerStride: kContiguous ? stride : 1, depthStride: kContiguous ? 1 : stride };
          let plan: ReturnType<typeof planPack>;
          try {
            plan = planPack(src, roundUp(src.bytes, 4), outer, depth, format, limits, 'rhs');
          } catch (e) {
            expect(e).toBeInstanceOf(LimitExceededError);
            return;
          }
          const rowBytes = roundUp(depth, format.depthAlign);
          const seen = new Map<number, number>(); // outer -> k values covered
          for (const d of plan) {
            expect(d.srcBase % l.alignment).toBe(0);
            expect(d.srcSize).toBeLessThanOrEqual(l.binding);
            expect(d.rows * rowBytes).toBeLessThanOrEqual(l.binding);
            expect(d.x).toBeLessThanOrEqual(l.wg);
            expect(d.y).toBeLessThanOrEqual(l.wg);
            for (let w = d.base; w < Math.min(d.base + d.x * d.y, d.rows); w++) {
              const row = d.outerBase + w;
              seen.set(row, (seen.get(row) ?? 0) + (d.depthEnd - d.depthBegin));
              // Every source byte the row needs in this band lies inside the bound range.
              if (row < outer) {
                for (const k of [d.depthBegin, d.depthEnd - 1]) {
                  const byte = row * src.outerStride + k * src.depthStride;
                  expect(byte).toBeGreaterThanOrEqual(d.srcBase);
                  expect(byte).toBeLessThan(d.srcBase + d.srcSize);
                }
              }
            }
          }
          for (let row = 0; row < outer; row++) expect(seen.get(row)).toBe(depth);
          expect(seen.has(outer)).toBe(false); // padding rows are never packed
        },
      ),
      { numRuns: 120 },
    );
  });

  it('a source of exactly maxStorageBufferBindingSize bytes is one band, never refused', () => {
    // lhs [2048, 2] col-major: k strided by 2048 bytes, 4096 bytes in all (too few k for a k-sliced band)
    const plan = planPack({ bytes: 4096, outerStride: 1, depthStride: 2048 }, 4096, 2048, 2, format, limitsOf(4096, 65535), 'lhs');
    expect(new Set(plan.map((d) => d.srcBase))).toEqual(new Set([0]));
    expect(plan.every((d) => d.srcSize === 4096 && d.depthBegin === 0 && d.depthEnd === 2)).toBe(true);
  });

  it('k-sliced bands start on whole packed words (4 k per u32, 8 for 4-bit values)', () => {
    for (const id of ['u8k4-r64', 'u4k8-r64'] as const) {
      const f = PACK_FORMATS[id];
      const plan = planPack(
        { bytes: 112 * 256, outerStride: 1, depthStride: 112 },
        112 * 256,
        112,
        256,
        f,
        limitsOf(16384, 65535, 32),
        'rhs',
      );
      expect(plan.length).toBeGreaterThan(1);
      for (const d of plan) expect(d.depthBegin % (32 / f.valueBits), id).toBe(0);
    }
  });
});

describe('planGemm', () => {
  it('dispatches every live tile exactly once, bindings within the limit', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 300 }),
        fc.constantFrom('int32', 'uint8', 'int16'),
        fc.constantFrom('row-major', 'col-major'),
        fc.constantFrom([4, 16], [32, 32], [64, 64]),
        arbLimits,
        (M, N, K, dstType, dstOrder, [tileM, tileN], l) => {
          const limits = limitsOf(l.binding, l.wg, l.alignment);
          const shape = { M, N, K, dstType, dstOrder } as const;
          let plan: ReturnType<typeof planGemm>;
          try {
            plan = planGemm(shape, format, tileM, tileN, limits);
          } catch (e) {
            expect(e).toBeInstanceOf(LimitExceededError);
            return;
          }
          const dst = dstLayout(shape);
          const rowBytes = roundUp(K, format.depthAlign);
          const tiles = new Set<string>();
          for (const d of plan) {
            expect(d.rows * rowBytes).toBeLessThanOrEqual(l.binding);
            expect(d.cols * rowBytes).toBeLessThanOrEqual(l.binding);
            expect(d.dstSize).toBeLessThanOrEqual(roundUp(l.binding, 4));
            expect(d.dstOffset + d.dstSize).toBeLessThanOrEqual(roundUp(dst.bytes, 4));
            expect(d.x).toBeLessThanOrEqual(l.wg);
            expect(d.y).toBeLessThanOrEqual(l.wg);
            const tilesN = d.liveCols / tileN;
            for (let t = d.base; t < Math.min(d.base + d.x * d.y, tilesN * (d.liveRows / tileM)); t++) {
              const key = `${d.m0 + Math.floor(t / tilesN) * tileM},${d.n0 + (t % tilesN) * tileN}`;
              expect(tiles.has(key)).toBe(false);
              tiles.add(key);
            }
          }
          expect(tiles.size).toBe(Math.ceil(M / tileM) * Math.ceil(N / tileN));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('planElementwise', () => {
  it('covers every output word once, in aligned bands within the limit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100000 }), arbLimits, (words, l) => {
        const limits = limitsOf(l.binding, Math.max(l.wg, 2), l.alignment);
        let covered = 0;
        for (const d of planElementwise(words, [16, 16], 64, limits)) {
          expect((d.wordBegin * 4) % l.alignment).toBe(0);
          expect(d.words * 4).toBeLessThanOrEqual(l.binding);
          if (d.base === 0) {
            expect(d.wordBegin).toBe(covered);
            covered += d.words;
          }
          expect(d.x).toBeLessThanOrEqual(Math.max(l.wg, 2));
        }
        expect(covered).toBe(words);
      }),
    );
  });
  it('refuses an input larger than a binding', () => {
    expect(() => planElementwise(10, [1 << 20, 4], 64, limitsOf(4096, 10))).toThrow(LimitExceededError);
  });
  it('an offset alignment above the binding size: one band at offset 0 where the output fits, else a typed refusal', () => {
    // 512-byte alignment, 256-byte bindings: no aligned band but the first fits (the band step was 0, a loop without end)
    expect(planElementwise(2, [8, 8], 64, limitsOf(256, 10, 512)).map((d) => [d.wordBegin, d.words])).toEqual([[0, 2]]);
    expect(planElementwise(64, [8, 8], 64, limitsOf(256, 10, 512)).map((d) => [d.wordBegin, d.words])).toEqual([[0, 64]]);
    expect(() => planElementwise(65, [8, 8], 64, limitsOf(256, 10, 512))).toThrow(
      expect.objectContaining({ name: 'LimitExceededError', limit: 'maxStorageBufferBindingSize' }),
    );
  });
});
