// Timing: warm-up, then repeated runs until both a minimum count and a target time are reached (or a
// maximum count), so that the repeat count follows the shape: many runs of a fast shape, few of a slow
// one. The statistics are the median and the spread (min, max, quartiles). GOPS = 2*M*N*K / time.
//
// The same policy object travels to the Chrome page (it is plain JSON), where the loop is repeated in
// page code (bench/chrome-page.ts) so that no DevTools round trip lands inside a timed region; moreReps
// and pausedCalls go there by their source.

export interface RepeatPolicy {
  /** Untimed runs first (pipeline compilation, buffer pools, JIT). */
  warmup: number;
  /**
   * Then untimed runs back to back for at least this many ms, so that a GPU whose clocks fall when it is
   * idle runs the timed ones at its working clock: an H200 fell from 1980 to 345 MHz within 2 s of idling,
   * and single bench calls after an idle phase ran up to 6 times slower than the tuner's warmed calls
   * (bench/results/2026-11-28-h200-*). The GPU-timed calls of a cell follow the timed loop at once.
   */
  warmupMs?: number;
  minReps: number;
  maxReps: number;
  /** Keep repeating (up to maxReps) until the timed runs add up to this many ms. */
  targetMs: number;
}

export const QUICK_POLICY: RepeatPolicy = { warmup: 1, minReps: 3, maxReps: 15, targetMs: 600 };
export const FULL_POLICY: RepeatPolicy = { warmup: 1, minReps: 5, maxReps: 30, targetMs: 2000, warmupMs: 500 };

export interface Stats {
  medianMs: number;
  minMs: number;
  maxMs: number;
  q1Ms: number;
  q3Ms: number;
  reps: number;
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
  };
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
): Promise<{ wall: Stats; gpu: Stats | null; last: T; firstWarmupMs: number }> {
  let firstWarmupMs = 0;
  for (let i = 0; i < policy.warmup; i++) {
    const { timing } = await run();
    if (i === 0) firstWarmupMs = timing.wallMs;
  }
  for (const w0 = performance.now(); performance.now() - w0 < (policy.warmupMs ?? 0); ) await run();
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
  return { wall: stats(walls), gpu: gpus.length === walls.length ? stats(gpus) : null, last: last as T, firstWarmupMs };
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
