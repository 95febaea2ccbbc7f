// The pure planning of the split-K kernels (pack -> GEMM -> output, ./kernel.ts) for small-M GEMMs
// (batched decoding, short prefill: 5 <= M <= 128): how many K slices to cut so that the grid fills the
// GPU, and the bands and dispatches of its two passes (partial sums per slice into a workspace, then a
// reduce pass that sums the slices and runs the fused epilogue). Unit-tested in test/unit/splitk.test.ts.
//
// The heuristic (what the registry reads, src/kernels/registry.ts):
// - WebGPU does not report a GPU's size, so the target is a constant: about 1024 workgroups in flight
//   fill a large GPU (an H100: 132 SMs x 8 resident 64-invocation workgroups); software adapters run a
//   few workgroups at a time (8).
// - A 32x32 tile grid of `tiles` workgroups gets floor(target / tiles) slices, each of at least
//   MIN_STEPS_PER_SPLIT 64-deep k steps, and no more than keeps the workspace traffic (write + read of
//   splits x rows x cols int32) within a quarter of the packed rhs bytes: splits <= K / (16 * rows).
// - Split-K runs where that gives 2 slices or more; else the plain tiled kernel (one slice) is as good.

import { LimitExceededError } from '../../errors.ts';
import type { PlanLimits } from '../../gpu/caps.ts';
import { flatDispatches, type GemmDispatch, type GemmShape, planGemm } from '../../gpu/plan.ts';
import type { PackLayout } from '../../pack/formats.ts';

export const SPLITK_TILE = 32;
/** k values per step of the partial kernel (TILE_KW = 16 words of 4). */
export const SPLITK_STEP = 64;
export const MIN_STEPS_PER_SPLIT = 4;
/** Invocations per workgroup of the reduce pass (one dst quad each). */
export const REDUCE_THREADS = 64;

/** Workgroups that keep the GPU busy (see the heading). */
export function workgroupTarget(caps: { isSoftware: boolean }): number {
  return caps.isSoftware ? 8 : 1024;
}

interface SplitK {
  splits: number;
  /** k steps (of SPLITK_STEP) per slice; the last slice may have fewer. */
  stepsPerSplit: number;
}

/** The K slices of a grid of `tiles` tiles covering `rows` (padded) dst rows, at most `maxSplits`. */
export function splitKPartition(tiles: number, rows: number, K: number, target: number, maxSplits = Infinity): SplitK {
  const steps = Math.max(1, Math.ceil(K / SPLITK_STEP));
  const wanted = Math.min(Math.floor(target / tiles), Math.floor(steps / MIN_STEPS_PER_SPLIT), Math.floor(K / (16 * rows)), maxSplits);
  const stepsPerSplit = Math.ceil(steps / Math.max(1, wanted));
  return { splits: Math.ceil(steps / stepsPerSplit), stepsPerSplit };
}

/** Whether the registry should run `shape` split-K on an adapter of this size (5 <= M <= 128 only). */
export function prefersSplitK(caps: { isSoftware: boolean }, shape: GemmShape): boolean {
  if (shape.M < 5 || shape.M > 128) return false;
  const rows = Math.ceil(shape.M / SPLITK_TILE) * SPLITK_TILE;
  const tiles = (rows / SPLITK_TILE) * Math.ceil(shape.N / SPLITK_TILE);
  return splitKPartition(tiles, rows, shape.K, workgroupTarget(caps)).splits >= 2;
}

/** One dispatch of a split-K GEMM: the partial pass (tiles x splits workgroups) or the reduce pass. */
export interface SplitKDispatch extends GemmDispatch {
  phase: 'partial' | 'reduce';
  splits: number;
  stepsPerSplit: number;
}

/**
 * Bands (planGemm's, with 32x32 tiles) and, per band, the partial dispatches then the reduce
 * dispatches. The workspace holds splits x liveRows x liveCols u32 of one band at a time (bands run in
 * order, so they share it) and must fit one storage binding: the splits are capped for that.
 */
export function planSplitK(shape: GemmShape, layout: PackLayout, limits: PlanLimits, target: number): SplitKDispatch[] {
  // planGemm keeps each band's packed rows (K bytes per row) within a binding; counting at least
  // 4 * rows bytes per rhs column keeps the band's workspace (rows x cols int32) within one too.
  const depth = Math.max(shape.K, 4 * Math.ceil(shape.M / SPLITK_TILE) * SPLITK_TILE);
  const bands = planGemm({ ...shape, K: depth }, layout, SPLITK_TILE, SPLITK_TILE, {
    ...limits,
    maxComputeWorkgroupsPerDimension: 2 ** 26,
  });
  const maxWG = limits.maxComputeWorkgroupsPerDimension;
  const out: SplitKDispatch[] = [];
  for (const band of bands) {
    const bandBytes = band.liveRows * band.liveCols * 4;
    if (bandBytes > limits.maxStorageBufferBindingSize) {
      throw new LimitExceededError(
        'maxStorageBufferBindingSize',
        `split-K workspace of ${band.liveRows}x${band.liveCols} int32 exceeds a storage binding`,
      );
    }
    const tiles = (band.liveRows / SPLITK_TILE) * (band.liveCols / SPLITK_TILE);
    const { splits, stepsPerSplit } = splitKPartition(
      tiles,
      band.liveRows,
      shape.K,
      target,
      Math.floor(limits.maxStorageBufferBindingSize / bandBytes),
    );
    for (const d of flatDispatches(tiles * splits, maxWG)) out.push({ ...band, ...d, phase: 'partial', splits, stepsPerSplit });
    const quads = (band.liveRows * band.liveCols) / 4;
    for (const d of flatDispatches(Math.ceil(quads / REDUCE_THREADS), maxWG))
      out.push({ ...band, ...d, phase: 'reduce', splits, stepsPerSplit });
  }
  return out;
}

/** Workspace bytes of a split-K plan: the largest band's. */
export function workspaceBytes(plan: SplitKDispatch[]): number {
  return plan.reduce((m, d) => Math.max(m, d.splits * d.liveRows * d.liveCols * 4), 4);
}
