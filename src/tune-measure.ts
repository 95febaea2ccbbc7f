// The tuner's measurements (src/tune.ts, `qgemm tune`; the GEMM stage of pack -> gemm -> output): the
// shapes of each shape class (src/kernels/tuning.ts), on a hardware adapter and, far smaller, on a software
// one, and how one kernel configuration is timed at one shape.
//
// Measurement, per configuration and shape: rhs prepacked (the `resident` inference call: lhs uploaded,
// packed and multiplied, the uint8 result left on the GPU; a conv layer's lhs is its NHWC input, whose
// patches are gathered or packed in the same pass, as conv2d runs it), rotating among operandSets()
// operand sets so that no cache holds the set a call reads (the weights of a decode shape come from
// memory, as in a model whose layers each have their own); a warm-up of back-to-back calls (the
// pipelines compile first): at least WARMUP_MS for a shape's first configuration (the rules' kernel) and NEXT_WARMUP_MS for each later one,
// then on until the GPU time per call stops falling (warmUntilSteady: the clocks have risen again after
// the set-up's idle time), at most MAX_WARMUP_MS; then batches of at least BATCH_MS of GPU time each, at least MIN_BATCHES and as many
// as the shape's share of the budget allows; the median of the batches' per-call times and their
// coefficient of variation. GPU time comes from timestamp queries; an adapter without them is timed by
// wall clock (the table's `method` says which).

import type { ShapeClass } from './kernels/tuning.ts';
import { GPU_KERNELS } from './kernels/registry.ts';
import type { GpuGemmKernel } from './kernels/types.ts';
import type { Heater } from './gpu/heater.ts';
import { convGeometry } from './layers/layers.ts';
import type { PatchGeometry } from './pack/patches.ts';
import { createGpuContextWith, type GpuGemmProblem } from './scheduler/context.ts';
import type { CandidateCost, Clock } from './tune-budget.ts';
import type { BitDepth, OutputStage } from './types.ts';
import { lcgBytes } from './verify-problems.ts';

export const WARMUP_MS = 500;
export const NEXT_WARMUP_MS = 100;
/**
 * The longest warm-up: an H200 took about 3 s to go from its 345 MHz idle clock to 1980 MHz under the
 * tuner's calls, and fell to 1000-1600 MHz during a configuration's set-up (pipeline compilation, about
 * 2 s), bench/results/2026-11-28-h200-clocks.csv. A warm-up of NEXT_WARMUP_MS then measured some
 * configurations at a low clock: 'sgmat-64x64' took 4.54 ms at 4096³ as the shape's first configuration,
 * and 2.29 ms as 'sgmat-64x64-sk' (one K slice there: the same tile and k loop) later in the sweep.
 */
export const MAX_WARMUP_MS = 4000;
/** The steady-state test's window and tolerance (warmUntilSteady). */
export const STEADY_WINDOW_MS = 100;
export const STEADY_TOLERANCE = 0.02;
export const BATCH_MS = 10;
export const MIN_BATCHES = 5;
export const MAX_BATCHES = 15;
/**
 * The operand sets a configuration rotates among: at least MIN_OPERAND_SETS; on a hardware adapter as
 * many as hold ROTATION_BYTES, at most MAX_OPERAND_SETS (distinct buffers; their bytes repeat every
 * MIN_OPERAND_SETS sets, which no cache can use). 256 MiB is five times the 50 MB L2 of an H100 or H200;
 * the smallest decode shape's 1 MiB sets reach 64 MiB. A software adapter keeps MIN_OPERAND_SETS: its
 * figures are for ratios, and each set costs it a prepack at CPU speed.
 */
export const MIN_OPERAND_SETS = 3;
export const MAX_OPERAND_SETS = 64;
export const ROTATION_BYTES = 256 << 20;
export function operandSets(setBytes: number, software: boolean): number {
  if (software) return MIN_OPERAND_SETS;
  return Math.min(MAX_OPERAND_SETS, Math.max(MIN_OPERAND_SETS, Math.ceil(ROTATION_BYTES / Math.max(1, setBytes))));
}

export type Mnk = [number, number, number];

/**
 * The conv class's shapes are layers: their patch geometries by M x N x K, so that a layer is measured as
 * conv2d runs it (the patches read from the NHWC input in the GEMM's own pass, src/scheduler/patches.ts).
 */
const CONV_GEOMETRY = new Map<string, PatchGeometry>();

/** A 3x3 SAME convolution of batch 1 on a square input: its GEMM's M x N x K, its geometry recorded in CONV_GEOMETRY. */
function convLayer(size: number, channels: number, stride: number, outChannels: number): Mnk {
  const { out, pad } = convGeometry(size, 3, stride, 1, 'SAME');
  const geometry: PatchGeometry = {
    batch: 1,
    height: size,
    width: size,
    channels,
    filterHeight: 3,
    filterWidth: 3,
    strideHeight: stride,
    strideWidth: stride,
    dilationHeight: 1,
    dilationWidth: 1,
    padTop: pad,
    padLeft: pad,
    outHeight: out,
    outWidth: out,
  };
  const mnk: Mnk = [out * out, outChannels, 9 * channels];
  CONV_GEOMETRY.set(mnk.join('x'), geometry);
  return mnk;
}
/**
 * The shapes of each class on a hardware adapter: the benchmark's squares, decode steps and conv layers;
 * at 4 bits, decode and short prefill against the suite's 11008 x 11008 weights (bench/shapes.ts
 * SKINNY_SHAPES with --rhs-bits 4), and 128 x 4096^2 as in the decode class.
 */
export const HARDWARE_SHAPES: Record<ShapeClass, Mnk[]> = {
  square: [256, 512, 1024, 2048, 4096].map((s): Mnk => [s, s, s]),
  decode: [
    [1, 4096, 4096],
    [16, 1024, 1024],
    [128, 1024, 1024],
    [128, 4096, 4096],
  ],
  // conv56x56x64-k3x3-s1-o64 and conv112x112x32-k3x3-s2-o64 (bench/shapes.ts CONV_LAYERS), run as conv2d runs them.
  conv: [convLayer(56, 64, 1, 64), convLayer(112, 32, 2, 64)],
  'decode-u4': [
    [1, 11008, 11008],
    [16, 11008, 11008],
    [128, 11008, 11008],
    [128, 4096, 4096],
  ],
};
/** On a software adapter (a CPU emulation, thousands of times slower), the same classes at small sizes. */
export const SOFTWARE_SHAPES: Record<ShapeClass, Mnk[]> = {
  square: [[128, 128, 128]],
  decode: [
    [1, 256, 256],
    [16, 256, 256],
  ],
  conv: [convLayer(14, 32, 1, 32)], // 196 x 32 x 288
  'decode-u4': [
    [1, 256, 256],
    [16, 256, 256],
    [128, 256, 256],
  ],
};

/** The bitDepth a class is measured with: 4-bit rhs for the '-u4' classes (nearest rounding), else none. */
export function classBitDepth(rhsBits: 4 | 8): BitDepth | undefined {
  return rhsBits === 4 ? { lhs: 8, rhs: 4, rounding: 'nearest' } : undefined;
}

const PIPELINE: OutputStage[] = [
  { type: 'quantizeDownInt32ByFixedPoint', multiplier: 1518500250, shift: 12, offsetAfterShift: 128 },
  { type: 'saturatingCast', to: 'uint8' },
];

/** Median and coefficient of variation of samples. */
function stats(xs: number[]): { median: number; cv: number } {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
  return { median, cv: mean > 0 ? sd / mean : 0 };
}

export interface Measured {
  ms: number;
  cv: number;
  batches: number;
  /** The warm-up's wall time, and whether the calls were steady at its end (else it hit its cap). */
  warmupMs: number;
  steady: boolean;
  cost: CandidateCost;
}

/**
 * How long a warm-up of back-to-back calls runs (warmUntilSteady): at least `minMs`, then on until the
 * calls are steady, at most `maxMs`. Steady: the median per-call time of the last `windowMs` of calls (at
 * least one call) is within `tolerance` of the median of as many calls before them, or above it. Plain
 * JSON: the bench's policy carries one to its Chrome page (bench/timing.ts RepeatPolicy.warmRule).
 */
export interface WarmRule {
  minMs: number;
  maxMs: number;
  windowMs: number;
  tolerance: number;
}

/** The tuner's rule after a configuration's minimum warm-up (WARMUP_MS or NEXT_WARMUP_MS). */
export const STEADY: Omit<WarmRule, 'minMs'> = { maxMs: MAX_WARMUP_MS, windowMs: STEADY_WINDOW_MS, tolerance: STEADY_TOLERANCE };

/** What a configuration still needs after its warm-up, at `perCallMs` a call: one more call, then MIN_BATCHES of BATCH_MS or more. */
export const batchesMs = (perCallMs: number): number => perCallMs + MIN_BATCHES * Math.max(BATCH_MS, perCallMs);

/**
 * Calls `once` (which returns a call's GPU time, else its wall time) back to back as `rule` says, and
 * never so long that `tailMs(perCall)` more would end past `deadline` (where rule.minMs has passed: the
 * tuner keeps room for its shortest batches). Returns the calls made, the warm-up's length on `clock`,
 * and whether the calls were steady at its end. Self-contained (it names nothing outside itself), so
 * that the bench's Chrome page runs it from its source, as in Node.
 */
export async function warmUntilSteady(
  once: () => Promise<number>,
  clock: { now(): number },
  rule: WarmRule,
  deadline = Number.POSITIVE_INFINITY,
  tailMs: (perCallMs: number) => number = () => 0,
): Promise<{ calls: number; ms: number; steady: boolean }> {
  const w0 = clock.now();
  const times: number[] = [];
  const ends: number[] = [];
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  let nextCheck = 0; // the steady test runs a few times a window, not after every call (a decode call is 0.1 ms)
  for (;;) {
    times.push(await once());
    const now = clock.now();
    ends.push(now);
    const elapsed = now - w0;
    if (elapsed < rule.minMs) continue;
    if (now >= nextCheck) {
      nextCheck = now + rule.windowMs / 4;
      let n = 1;
      while (n < ends.length && ends[ends.length - 1 - n] > now - rule.windowMs) n++;
      if (times.length >= 2 * n && median(times.slice(-n)) >= (1 - rule.tolerance) * median(times.slice(-2 * n, -n))) {
        return { calls: times.length, ms: elapsed, steady: true };
      }
    }
    // (`!(<)`: a rule whose maxMs is missing or NaN still ends)
    if (!(elapsed < rule.maxMs) || now + tailMs(elapsed / times.length) > deadline) {
      return { calls: times.length, ms: elapsed, steady: false };
    }
  }
}

/** How measure() runs: the rhs's bits, the warm-up's minimum, and a heater to run through the set-up. */
export interface MeasureOptions {
  rhsBits?: 4 | 8;
  warmupMs?: number;
  /** Keeps the clocks up while the configuration is set up (a hardware adapter; src/gpu/heater.ts); stopped before the warm-up. */
  heater?: Heater;
}

/**
 * One configuration at one shape: set-up (with the heater running, where there is one), warm-up, then
 * batches, rotating operand sets, until `deadline`. With rhsBits 4, the rhs is requantized to 4 bits as
 * it is prepacked, and every call asks for that bitDepth.
 */
export async function measure(
  device: GPUDevice,
  kernel: GpuGemmKernel,
  [M, N, K]: Mnk,
  deadline: number,
  clock: Clock,
  { rhsBits = 8, warmupMs = WARMUP_MS, heater }: MeasureOptions = {},
): Promise<Measured> {
  const bitDepth = classBitDepth(rhsBits);
  const s0 = clock.now();
  // The heater only helps: what stops it (a lost device) is the configuration's own calls' to report.
  const cool = () => heater?.stop().catch(() => undefined);
  heater?.start();
  const ctx = await createGpuContextWith([kernel, ...GPU_KERNELS], { device, kernel: kernel.id, timestamps: true, warn: () => {} }).catch(
    async (e) => {
      await cool();
      throw e;
    },
  );
  try {
    const gpuTimer = ctx.caps.timestamps;
    const sets: GpuGemmProblem[] = [];
    const geometry = CONV_GEOMETRY.get(`${M}x${N}x${K}`);
    const lhsBytes = geometry ? geometry.height * geometry.width * geometry.channels : M * K;
    const count = operandSets(lhsBytes + (K * N * rhsBits) / 8, ctx.summary.isSoftware);
    const data: { rhs: Uint8Array; lhs: Uint8Array }[] = [];
    for (let i = 0; i < MIN_OPERAND_SETS; i++) data.push({ rhs: lcgBytes(K * N, 2 * i + 2), lhs: lcgBytes(lhsBytes, 2 * i + 1) });
    for (let i = 0; i < count; i++) {
      const d = data[i % MIN_OPERAND_SETS];
      const rhs = await ctx.prepack('rhs', { data: d.rhs, rows: K, cols: N, order: 'col-major' }, bitDepth);
      // A conv layer's lhs is its NHWC input (patches gathered by the kernel or packed in the GEMM's pass); padding holds the zero point.
      const lhs = geometry ? { input: d.lhs, geometry, zeroPoint: 3 } : { data: d.lhs, rows: M, cols: K };
      sets.push({
        lhs,
        rhs,
        lhsZeroPoint: 3,
        rhsZeroPoint: rhsBits === 4 ? 8 : 128,
        pipeline: PIPELINE,
        ...(bitDepth ? { bitDepth } : {}),
      });
    }
    let call = 0;
    const once = async (): Promise<number> => {
      const timing = { gpuMs: null as number | null };
      const t0 = performance.now();
      const dst = await ctx.gemmOnGpu(sets[call++ % sets.length], timing);
      const wall = performance.now() - t0;
      ctx.releaseMatrix(dst);
      if (ctx.lastRun.kernel !== kernel.id) throw new Error(`ran ${ctx.lastRun.kernel} instead of ${kernel.id} (failed its self-test)`);
      return gpuTimer && timing.gpuMs !== null ? timing.gpuMs : wall;
    };
    try {
      await once(); // compiles the pipelines
    } finally {
      await cool();
    }
    const w0 = clock.now();
    const setupMs = w0 - s0;
    const warm = await warmUntilSteady(once, clock, { ...STEADY, minMs: warmupMs }, deadline, batchesMs);
    const warmedMs = clock.now() - w0;
    const callMs = warmedMs / warm.calls;
    const batches: number[] = [];
    while (batches.length < MIN_BATCHES || (batches.length < MAX_BATCHES && clock.now() < deadline)) {
      let sum = 0;
      let calls = 0;
      while (sum < BATCH_MS || calls === 0) {
        sum += await once();
        calls++;
      }
      batches.push(sum / calls);
    }
    const s = stats(batches);
    return {
      ms: s.median,
      cv: s.cv,
      batches: batches.length,
      warmupMs: warmedMs,
      steady: warm.steady,
      cost: { setupMs, callMs, warmupMs: warmedMs },
    };
  } finally {
    await cool(); // a set-up that failed before its first call
    ctx.destroy();
  }
}
