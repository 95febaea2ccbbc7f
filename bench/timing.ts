// Timing: warm-up runs; where the policy has a warmRule (the full suite), runs back to back until the
// calls are steady (src/tune-measure.ts warmUntilSteady, the tuner's rule); then repeated runs until both
// a minimum count and a target time are reached (or a maximum count), so that the repeat count follows
// the shape: many runs of a fast shape, few of a slow one. The statistics are the median and the spread
// (min, max, quartiles). GOPS = 2*M*N*K / time.
//
// The same policy object travels to the Chrome page (it is plain JSON), where the loop is repeated in
// page code (bench/chrome-page.ts) so that no DevTools round trip lands inside a timed region; moreReps,
// pausedCalls and warmUntilSteady go there by their source.

import { STEADY_TOLERANCE, STEADY_WINDOW_MS, warmUntilSteady, type WarmRule } from '../src/tune-measure.ts';

export interface RepeatPolicy {
  /** Untimed runs first (pipeline compilation, buffer pools, JIT). */
  warmup: number;
  /**
   * Then untimed runs back to back, for at least warmRule.minMs and on until their wall times are steady
   * (at most warmRule.maxMs), so that a GPU whose clocks fall when it is idle runs the timed ones at its working
   * clock: an H200 fell from 1980 to 345 MHz within 2 s of idling, and took up to 3 s to climb back under
   * the tuner's calls (bench/results/2026-11-28-h200-clocks.csv). Absent: none. The GPU-timed calls of a
   * cell follow the timed loop at once.
   */
  warmRule?: WarmRule;
  minReps: number;
  maxReps: number;
  /** Keep repeating (up to maxReps) until the timed runs add up to this many ms. */
  targetMs: number;
  /**
   * false: no after-pause rows (`--no-after-pause`: a second pass of a time-limited run, bench/device-run.sh);
   * absent: each `resident` GPU row has its after-pause row (the decode loop's other case, afterPause below).
   */
  afterPauseRows?: false;
}

export const QUICK_POLICY: RepeatPolicy = { warmup: 1, minReps: 3, maxReps: 15, targetMs: 600 };
export const FULL_POLICY: RepeatPolicy = {
  warmup: 1,
  minReps: 5,
  maxReps: 30,
  targetMs: 2000,
  warmRule: { minMs: 500, maxMs: 2000, windowMs: STEADY_WINDOW_MS, tolerance: STEADY_TOLERANCE },
};

/** A cell's clock warm-up, as warmUntilSteady measured it. */
export interface Warmed {
  ms: number;
  steady: boolean;
}

/** The back-to-back warm-up of `policy` (none without policy.warmRule); `once` returns a call's wall time. */
export async function warmUp(policy: RepeatPolicy, once: () => Promise<number>): Promise<Warmed | undefined> {
  if (!policy.warmRule) return undefined;
  const { ms, steady } = await warmUntilSteady(once, performance, policy.warmRule);
  return { ms, steady };
}

export interface Stats {
  medianMs: number;
  minMs: number;
  maxMs: number;
  q1Ms: number;
  q3Ms: number;
  reps: number;
  /** Coefficient of variation: the samples' standard deviation (n - 1) over their mean; 0 for one sample. */
  cv: number;
}

/** Quantile of sorted values, linear interpolation (type 7, as numpy's default). */
function quantile(sorted: number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

export function stats(samples: number[]): Stats {
  if (samples.length === 0) throw new Error('stats: no samples');
  const s = [...samples].sort((a, b) => a - b);
  return {
    medianMs: quantile(s, 0.5),
    minMs: s[0],
    maxMs: s[s.length - 1],
    q1Ms: quantile(s, 0.25),
    q3Ms: quantile(s, 0.75),
    reps: s.length,
    cv: coefficientOfVariation(s),
  };
}

function coefficientOfVariation(xs: number[]): number {
  if (xs.length < 2) return 0;
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const variance = xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1);
  return mean > 0 ? Math.sqrt(variance) / mean : 0;
}

export const gops = (ops: number, ms: number): number => ops / (ms * 1e6);

/** Should the timed loop go on after `count` runs taking `totalMs`? */
export function moreReps(policy: RepeatPolicy, count: number, totalMs: number): boolean {
  if (count < policy.minReps) return true;
  if (count >= policy.maxReps) return false;
  return totalMs < policy.targetMs;
}

/** One run's measurements: wall time (upload + compute + readback) and, where available, GPU time. */
export interface RunTiming {
  wallMs: number;
  gpuMs: number | null;
}

/** Warm-up then timed runs of `run`; `after` sees each timed run's output (e.g. to hash it). */
export async function measure<T>(
  policy: RepeatPolicy,
  run: () => Promise<{ timing: RunTiming; output: T }>,
  after?: (output: T, index: number) => void,
): Promise<{ wall: Stats; gpu: Stats | null; last: T; warm?: Warmed }> {
  for (let i = 0; i < policy.warmup; i++) await run();
  const warm = await warmUp(policy, async () => (await run()).timing.wallMs);
  const walls: number[] = [];
  const gpus: number[] = [];
  let total = 0;
  let last: T | undefined;
  while (moreReps(policy, walls.length, total)) {
    const { timing, output } = await run();
    walls.push(timing.wallMs);
    if (timing.gpuMs !== null) gpus.push(timing.gpuMs);
    total += timing.wallMs;
    after?.(output, walls.length - 1);
    last = output;
  }
  return { wall: stats(walls), gpu: gpus.length === walls.length ? stats(gpus) : null, last: last as T, ...(warm ? { warm } : {}) };
}

/** The pause before each single call of the decode loop's after-pause rows (as in dawn-gpu/node-webgpu issue 17). */
export const PAUSE_MS = 200;

/**
 * `count` single calls, each after `pauseMs` with nothing running; their wall times (`call` returns its
 * own). Self-contained: the Chrome page runs it from its source (bench/chrome-page.ts), so the rule is one.
 */
export async function pausedCalls(count: number, pauseMs: number, call: () => Promise<number>): Promise<number[]> {
  const walls: number[] = [];
  for (let i = 0; i < count; i++) {
    await new Promise((r) => setTimeout(r, pauseMs));
    walls.push(await call());
  }
  return walls;
}

/**
 * The decode loop's other case: `policy.minReps` single calls, each after PAUSE_MS with nothing running
 * (the back-to-back case is measure()'s loop, which never pauses). `call` returns its wall time.
 */
export async function afterPause(policy: RepeatPolicy, call: () => Promise<number>): Promise<Stats> {
  return stats(await pausedCalls(policy.minReps, PAUSE_MS, call));
}
