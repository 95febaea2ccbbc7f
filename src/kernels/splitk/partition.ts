// The pure planning of the split-K kernels (pack -> GEMM -> output): the dot4 kernels of ./kernel.ts for
// small-M GEMMs (batched decoding, short prefill: 5 <= M <= 128), and the split-K variants of the
// subgroup-matrix kernel (../sgmat/split-k.ts) for any shape with few output tiles: how many K slices to
// cut so that the grid fills the GPU, and the bands and dispatches of the two passes (partial sums per
// slice into a workspace, then a reduce pass, ./reduce.wgsl, that sums the slices and runs the fused
// epilogue). A kernel says its geometry (SplitKGeometry: tile, k step, workgroup size, workspace share).
// Unit-tested in test/unit/splitk.test.ts.
//
// The heuristic (what the registry reads, src/kernels/registry.ts):
// - WebGPU does not report a GPU's size, so the target is a constant: about 1024 workgroups of 64
//   invocations in flight fill a large GPU (an H100: 132 SMs x 8 resident 64-invocation workgroups),
//   fewer of larger workgroups (512 of 128 invocations); software adapters run a few workgroups at a
//   time (8 of 64 invocations).
// - A tile grid of `tiles` workgroups gets floor(target / tiles) slices, each of at least
//   MIN_STEPS_PER_SPLIT k steps, and no more than keeps the workspace traffic (write + read of
//   splits x rows x cols int32) within a share of the packed rhs bytes: splits <= K / (divisor * rows),
//   divisor 16 for the dot4 kernels (a quarter), 4 for the subgroup-matrix ones (at most the rhs bytes:
//   their arithmetic is 8 to 16 times faster, so an idle GPU costs more than the extra traffic, which
//   stays in the L2 cache at decode sizes).
// - Split-K runs where that gives 2 slices or more; else the plain tiled kernel (one slice) is as good.
// - A kernel may ask for a fixed number of slices (the tuner's variants, the tests): then only the
//   depth (one k step per slice at least) and the workspace binding cap it.

import { LimitExceededError } from '../../errors.ts';
import type { PlanLimits } from '../../gpu/caps.ts';
import { flatDispatches, type GemmDispatch, type GemmShape, planGemm, roundUp } from '../../gpu/plan.ts';
import type { PackLayout } from '../../pack/formats.ts';

export const SPLITK_TILE = 32;
/** k values per step of the partial kernel (TILE_KW = 16 words of 4). */
export const SPLITK_STEP = 64;
export const MIN_STEPS_PER_SPLIT = 4;
/** Invocations per workgroup of the reduce pass (one dst quad each). */
export const REDUCE_THREADS = 64;

/** Workgroups of `invocations` invocations that keep the GPU busy (see the heading). */
export function workgroupTarget(caps: { isSoftware: boolean }, invocations = 64): number {
  return Math.max(1, Math.round(((caps.isSoftware ? 8 : 1024) * 64) / invocations));
}

/** What the planning needs of a split-K kernel. */
export interface SplitKGeometry {
  /** The dst tile of one partial workgroup. */
  tileM: number;
  tileN: number;
  /** Bytes of k per step of the partial kernel (slices are whole steps). */
  step: number;
  /** The workspace traffic bound: splits <= K / (divisor * rows) (see the heading). */
  divisor: number;
  /** A fixed number of slices (capped by the steps and the workspace binding); absent: the heuristic. */
  splits?: number;
}

/** The dot4 split-K kernels' geometry (./splitk.wgsl: 32 x 32 tiles, 16 words of k per step). */
export const DOT4_SPLITK: SplitKGeometry = { tileM: SPLITK_TILE, tileN: SPLITK_TILE, step: SPLITK_STEP, divisor: 16 };

interface SplitK {
  splits: number;
  /** k steps (of the kernel's step) per slice; the last slice may have fewer. */
  stepsPerSplit: number;
}

/**
 * The K slices of a grid of `tiles` tiles covering `rows` (padded) dst rows, at most `maxSplits`; steps of
 * `g.step` bytes (default the dot4 kernels'), or `g.splits` slices where the kernel fixes them.
 */
export function splitKPartition(
  tiles: number,
  rows: number,
  K: number,
  target: number,
  maxSplits = Infinity,
  g: Pick<SplitKGeometry, 'step' | 'divisor' | 'splits'> = DOT4_SPLITK,
): SplitK {
  const steps = Math.max(1, Math.ceil(K / g.step));
  const wanted =
    g.splits !== undefined
      ? Math.min(g.splits, maxSplits)
      : Math.min(Math.floor(target / tiles), Math.floor(steps / MIN_STEPS_PER_SPLIT), Math.floor(K / (g.divisor * rows)), maxSplits);
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
 * Bands (planGemm's, with the kernel's tiles, 32x32 by default) and, per band, the partial dispatches
 * then the reduce dispatches. The workspace holds splits x liveRows x liveCols u32 of one band at a time
 * (bands run in order, so they share it), and behind them, where the lhs is gathered, splits x liveRows
 * u32 of row sums; it is bound whole, so it must fit one storage binding: the splits are capped for that
 * (the scheduler refuses, with a LimitExceededError, a workspace that still does not fit: a gathered
 * band whose raw sums alone fill the binding).
 */
export function planSplitK(
  shape: GemmShape,
  layout: PackLayout,
  limits: PlanLimits,
  target: number,
  g: SplitKGeometry = DOT4_SPLITK,
): SplitKDispatch[] {
  // planGemm keeps each band's packed rows (K bytes per row) within a binding; counting at least
  // 4 * rows bytes per rhs column keeps the band's workspace (rows x cols int32) within one too.
  const depth = Math.max(shape.K, 4 * Math.ceil(shape.M / g.tileM) * g.tileM);
  const bands = planGemm({ ...shape, K: depth }, layout, g.tileM, g.tileN, {
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
    const tiles = (band.liveRows / g.tileM) * (band.liveCols / g.tileN);
    // The steps the kernel runs: over the packed (padded) depth.
    const { splits, stepsPerSplit } = splitKPartition(
      tiles,
      band.liveRows,
      roundUp(shape.K, layout.depthAlign),
      target,
      // a slice's raw sums and its lhs row sums (a gathered lhs) within one binding, all slices together
      Math.floor(limits.maxStorageBufferBindingSize / (band.liveRows * (band.liveCols + 1) * 4)),
      g,
    );
    for (const d of flatDispatches(tiles * splits, maxWG)) out.push({ ...band, ...d, phase: 'partial', splits, stepsPerSplit });
    const quads = (band.liveRows * band.liveCols) / 4;
    for (const d of flatDispatches(Math.ceil(quads / REDUCE_THREADS), maxWG))
      out.push({ ...band, ...d, phase: 'reduce', splits, stepsPerSplit });
  }
  return out;
}

/**
 * The workspace of band dispatch d: its slices' raw sums, then, with `rowSums` (a gathered lhs), the
 * slices' lhs row sums from word `rowSumsAt`; `bytes` in all.
 */
export function bandWorkspace(d: SplitKDispatch, rowSums: boolean): { rowSumsAt: number; bytes: number } {
  const rowSumsAt = d.splits * d.liveRows * d.liveCols;
  return { rowSumsAt, bytes: 4 * (rowSumsAt + (rowSums ? d.splits * d.liveRows : 0)) };
}

/** Whether a split-K plan's workspace with a gathered lhs's row sums (bandWorkspace) fits one storage binding. */
export const gatheredWorkspaceFits = (plan: GemmDispatch[], limits: PlanLimits): boolean =>
  workspaceBytes(plan as SplitKDispatch[], true) <= limits.maxStorageBufferBindingSize;

/** Workspace bytes of a split-K plan: the largest band's (bandWorkspace). */
export function workspaceBytes(plan: SplitKDispatch[], rowSums = false): number {
  return plan.reduce((m, d) => Math.max(m, bandWorkspace(d, rowSums).bytes), 4);
}
