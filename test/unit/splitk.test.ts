// Unit tier: the split-K planning of the small-M kernels (src/kernels/splitk/partition.ts), without a
// GPU: slice counts by grid size, depth and workspace budget; every k step covered once; bands,
// dispatches and workspace within lowered binding and workgroup-count limits.

import { describe, expect, it } from 'vitest';
import { PACK_FORMATS } from '../../src/pack/formats.ts';
import {
  MIN_STEPS_PER_SPLIT,
  planSplitK,
  prefersSplitK,
  REDUCE_THREADS,
  type SplitKDispatch,
  SPLITK_STEP,
  SPLITK_TILE,
  splitKPartition,
  workgroupTarget,
  workspaceBytes,
} from '../../src/kernels/splitk/partition.ts';
import { splitGeometry } from '../../src/kernels/sgmat/split-k.ts';
import { DEFAULT_TILING, SPLITK_TILING } from '../../src/kernels/sgmat/config.ts';
import { selfTestProblems } from '../../src/scheduler/self-test.ts';
import { sgmatSplitKKernel } from '../../src/kernels/sgmat/kernel.ts';
import { h100Caps, testLimits } from '../support/caps.ts';

const limits = testLimits;
const shape = (M: number, N: number, K: number, dstOrder: 'row-major' | 'col-major' = 'row-major') => ({
  M,
  N,
  K,
  dstType: 'int32' as const,
  dstOrder,
});

describe('splitKPartition', () => {
  it('fills the target with slices of at least MIN_STEPS_PER_SPLIT steps, covering every step once', () => {
    for (const tiles of [1, 3, 32, 128, 1000]) {
      for (const K of [1, 64, 255, 256, 1000, 4096, 11008, 34000]) {
        for (const rows of [32, 64, 128]) {
          const { splits, stepsPerSplit } = splitKPartition(tiles, rows, K, 1024);
          const steps = Math.ceil(K / SPLITK_STEP);
          expect(splits).toBeGreaterThanOrEqual(1);
          expect(splits * stepsPerSplit).toBeGreaterThanOrEqual(steps); // covered
          expect((splits - 1) * stepsPerSplit).toBeLessThan(steps); // no empty slice
          if (splits > 1) {
            expect(stepsPerSplit).toBeGreaterThanOrEqual(MIN_STEPS_PER_SPLIT);
            expect(tiles * splits).toBeLessThanOrEqual(1024 + tiles * 1);
            expect(splits * rows * 16).toBeLessThanOrEqual(K + 16 * rows * 1); // workspace traffic <= rhs bytes / 4
          }
        }
      }
    }
  });
  it('examples: 16x4096x4096 and 128x4096x4096 on a large GPU', () => {
    expect(splitKPartition(128, 32, 4096, 1024)).toEqual({ splits: 8, stepsPerSplit: 8 });
    expect(splitKPartition(512, 128, 4096, 1024)).toEqual({ splits: 2, stepsPerSplit: 32 });
    expect(splitKPartition(4096, 128, 4096, 1024).splits).toBe(1);
    expect(splitKPartition(1, 32, 34000, 8, 3).splits).toBe(3); // capped by maxSplits
  });
  it('prefersSplitK only for 5 <= M <= 128, by the adapter size', () => {
    expect(prefersSplitK({ isSoftware: false }, shape(4, 4096, 4096))).toBe(false);
    expect(prefersSplitK({ isSoftware: false }, shape(5, 4096, 4096))).toBe(true);
    expect(prefersSplitK({ isSoftware: false }, shape(129, 4096, 4096))).toBe(false);
    expect(prefersSplitK({ isSoftware: true }, shape(16, 4096, 4096))).toBe(false);
    expect(prefersSplitK({ isSoftware: true }, shape(16, 32, 4096))).toBe(true);
  });
});

describe('split-K of the subgroup-matrix kernel', () => {
  const sk = splitGeometry(SPLITK_TILING);
  it('workgroups of 128 invocations: half the target; slices of k steps, at most the rhs bytes of workspace traffic', () => {
    expect(workgroupTarget({ isSoftware: false }, 128)).toBe(512);
    expect(workgroupTarget({ isSoftware: true }, 128)).toBe(4);
    // 128x4096x4096: 128 tiles of 64x64; 128x1024x1024: 32 tiles; 16x1024x1024: 16 tiles of 64 rows.
    expect(splitKPartition(128, 128, 4096, 512, Infinity, sk)).toEqual({ splits: 4, stepsPerSplit: 16 });
    expect(splitKPartition(32, 128, 1024, 512, Infinity, sk)).toEqual({ splits: 2, stepsPerSplit: 8 });
    expect(splitKPartition(16, 64, 1024, 512, Infinity, sk)).toEqual({ splits: 4, stepsPerSplit: 4 });
    expect(splitKPartition(344, 128, 11008, 512, Infinity, sk).splits).toBe(1);
  });
  it('a fixed slice count: capped by the k steps and the binding only', () => {
    const s4 = splitGeometry({ ...DEFAULT_TILING, splitK: 4 });
    expect(splitKPartition(1000, 64, 640, 8, Infinity, s4)).toEqual({ splits: 4, stepsPerSplit: 3 }); // 10 steps: 3 + 3 + 3 + 1
    expect(splitKPartition(1000, 64, 128, 8, Infinity, s4)).toEqual({ splits: 2, stepsPerSplit: 1 });
    expect(splitKPartition(1, 64, 64000, 8, 2, s4).splits).toBe(2);
  });
  it("plans bands of the tiling's tiles over the padded depth; every step in one slice", () => {
    const layout = PACK_FORMATS['u8k4-r128'];
    const g = splitGeometry({ ...DEFAULT_TILING, tileM: 128, tileN: 128, sgRows: 4, kStep: 128, splitK: 4 });
    const plan = planSplitK(shape(65, 300, 700), layout, limits(), 512, g);
    const partial = plan.filter((d) => d.phase === 'partial');
    expect(partial[0]).toMatchObject({ liveRows: 128, liveCols: 384, splits: 3, stepsPerSplit: 2 }); // 704 bytes: 6 steps of 128
    expect(partial.reduce((n, d) => n + d.x * d.y, 0)).toBe(3 * 3);
  });
});

describe('the device self-test covers split-K', () => {
  it("one of its problems runs in 2 or more uneven slices over 2 or more tiles on 'sgmat-64x64-sk'", () => {
    const lavapipe = h100Caps({
      isSoftware: true,
      subgroupMinSize: 8,
      subgroupMaxSize: 8,
      subgroupMatrix: [{ componentType: 'u8', resultComponentType: 'u32', M: 8, N: 8, K: 8 }],
    });
    for (const caps of [h100Caps(), lavapipe]) {
      const split = selfTestProblems().filter((p) => {
        const steps = Math.ceil(p.lhs.cols / 64); // 64-byte k steps of the padded depth
        const plan = sgmatSplitKKernel.plan(shape(p.lhs.rows, p.rhs.cols, p.lhs.cols), caps.limits, caps) as SplitKDispatch[];
        return plan.some(
          (d) => d.phase === 'partial' && d.splits >= 2 && d.liveRows * d.liveCols >= 2 * 64 * 64 && steps % d.stepsPerSplit !== 0,
        );
      });
      expect(split.length).toBeGreaterThanOrEqual(1);
    }
  });
});

describe('planSplitK', () => {
  const layout = PACK_FORMATS['u8k4-r64'];
  it('per band: partial dispatches over tiles x splits, then reduce dispatches over its quads', () => {
    const plan = planSplitK(shape(16, 4096, 4096), layout, limits(), 1024);
    const partial = plan.filter((d) => d.phase === 'partial');
    const reduce = plan.filter((d) => d.phase === 'reduce');
    expect(partial.reduce((n, d) => n + d.x * d.y, 0)).toBeGreaterThanOrEqual(128 * 8);
    expect(reduce.reduce((n, d) => n + d.x * d.y, 0) * REDUCE_THREADS).toBeGreaterThanOrEqual((32 * 4096) / 4);
    expect(plan.indexOf(reduce[0])).toBeGreaterThan(plan.indexOf(partial.at(-1)!));
    expect(workspaceBytes(plan)).toBe(8 * 32 * 4096 * 4);
  });
  it('within lowered limits: workspace and packed rows fit a binding, grids fit the workgroup limit', () => {
    for (const [M, N, K] of [
      [7, 300, 64],
      [3, 150, 200],
      [100, 70, 448],
      [128, 1000, 512],
    ]) {
      for (const order of ['row-major', 'col-major'] as const) {
        if (order === 'row-major' && N > 128) continue; // 64 dst rows of N int32 would not fit 32 KiB
        const lim = limits({ maxStorageBufferBindingSize: 32768, maxComputeWorkgroupsPerDimension: 3 });
        const plan = planSplitK(shape(M, N, K, order), layout, lim, 1024);
        expect(workspaceBytes(plan)).toBeLessThanOrEqual(32768);
        for (const d of plan) {
          expect(d.x).toBeLessThanOrEqual(3);
          expect(d.y).toBeLessThanOrEqual(3);
          expect(d.liveRows % SPLITK_TILE).toBe(0);
          expect(d.liveCols % SPLITK_TILE).toBe(0);
          expect(d.cols * Math.ceil(K / 64) * 64).toBeLessThanOrEqual(32768);
        }
        // Every dst tile of every band is computed: the bands' live areas cover M x N.
        const area = new Set(plan.filter((d) => d.phase === 'partial').map((d) => `${d.m0},${d.n0},${d.liveRows},${d.liveCols}`));
        let covered = 0;
        for (const a of area) {
          const [m0, n0, r, c] = a.split(',').map(Number);
          covered += Math.min(r, M - m0) * Math.min(c, N - n0);
        }
        expect(covered).toBe(M * N);
      }
    }
  });
});
