// One GEMM on the WebAssembly engine (engine.ts), the whole pack -> gemm -> output chain: the operands'
// bytes go into linear memory (less-than-8-bit operands requantized first, in TypeScript, with
// src/quant/lowbit.ts), the context record (layout.ts) describes the problem, then each thread packs
// its share of lhs tiles and rhs panels with their sums, and, once all have (a barrier: one job of
// pool.ts), runs micro-kernels and the output stage over its share of C; the dst bytes are copied out.
// For a few lhs rows and a row-major rhs the direct variant (gen-direct.ts) packs only the lhs, here,
// and reads the rhs where it lies. A pipeline with a tanh stage is finished in JavaScript from the tanh
// on (stages.ts).

import { applyOutputPipeline } from '../../reference/pipeline.ts';
import { allocateDst } from '../../problem/dst.ts';
import { dstIndex, normalizeProblem, type NormalizedProblem } from '../../problem/problem.ts';
import type { GemmResult } from '../../types.ts';
import { heapEnd, type RelaxedMode, threadsRun, wasmSpinUs, type WasmEngine } from './engine.ts';
import { CHUNK_COUNTERS, DIRECT, KERNELS, NR, WIDE, type WasmKernelKind } from './layout.ts';
import { BARRIER_CALL, CONTROL, type Call } from './job.ts';
import { WorkerPool } from './pool.ts';
import { type Prepared, prepare, type RhsBlock, written } from './prepare.ts';

/** Below this many multiply-adds per thread, fewer threads are faster (the hand-off and the wait cost more). */
const MIN_MACS_PER_THREAD = 1 << 20;
/**
 * Up to this many multiply-adds a repeated problem whose job is closed (makePlan) weighs its threads
 * against one thread (runPlan): a millisecond or less of kernel on one thread here, where waking a worker
 * (60-200 us) is a sizable part.
 * Above, threads pay whatever the wake costs, and the trial calls on one thread would only cost time
 * (1024^3 on one thread: twice as long).
 */
const ADAPTIVE_MAX_MACS = 1 << 26;

/** [start, end) of part i of n items split T ways. */
const part = (n: number, T: number, i: number): [number, number] => [Math.floor((n * i) / T), Math.floor((n * (i + 1)) / T)];

/** The exported driver of a few-row kernel (direct, byte lanes, 4-bit, relaxed few-row) that t takes, or null where it takes the packed panels. */
function fewRowsKernel(t: Prepared): string | null {
  if (t.nibble) return `gemm_nibble${t.dot7 ? '7' : ''}_${t.nibble.mr}x${t.nibble.w}`;
  if (t.lane) return `gemm_lane_${t.lane.mr}x${t.lane.w}`;
  if (t.wide) return `gemm_wide_${WIDE.mr}x${WIDE.nc}`;
  if (t.relaxedFew) return `gemm_relaxed_${t.relaxedFew.mr}x${t.relaxedFew.w}`;
  if (t.direct) return `gemm_direct_${t.direct.mr}x${t.direct.nc}`;
  return null;
}

/**
 * The split of a dyn_* driver over T threads (gen-nibble.ts): thread i runs range i of the panels, then
 * what is left of the others; `ranges` are the ranges' starts, which each call writes to the counters.
 */
function ranges(driver: string, t: Prepared, T: number): { pack: Call[][]; gemm: Call[][]; ranges: number[] } {
  const chunk = Math.max(1, Math.ceil(t.panels / (8 * T)));
  const chunks = Math.ceil(t.panels / chunk);
  return {
    pack: Array.from({ length: T }, () => []),
    gemm: Array.from({ length: T }, (_, i) => [[driver, 0, t.tiles, t.panels, chunk, i, T]]),
    ranges: Array.from({ length: T }, (_, j) => Math.floor((chunks * j) / T) * chunk),
  };
}

/**
 * The calls of each thread, phase by phase: pack (lhs tiles, rhs panels), then gemm + output; `ranges`
 * where every thread takes its work from the range counters (dyn_*), so that the threads present can
 * finish the job without the others (pool.ts run: an open job).
 */
export function plan(
  kind: WasmKernelKind,
  t: Prepared,
  T: number,
): { pre: Call[]; pack: Call[][]; gemm: Call[][]; ranges: number[] | null } {
  const pre: Call[] = [];
  const pack: Call[][] = [];
  const gemm: Call[][] = [];
  const few = fewRowsKernel(t);
  if (few) {
    // The few-row kernels pack nothing here (prepare packed the lhs; the rhs is read where it lies, or
    // was prepacked). One thread runs every panel; several run their own range of panels in chunks of
    // about an eighth of it, then take what is left of the others' (dyn_*, gen-nibble.ts), so that one
    // the OS runs late holds the others up by at most a chunk.
    if (T === 1) return { pre, pack: [[]], gemm: [[[few, 0, t.tiles, 0, t.panels]]], ranges: null };
    return { pre, ...ranges(`dyn_${few}`, t, T) };
  }
  // Split C along its longer side, so that each thread reads only its share of the larger operand (by
  // rows every thread reads the whole rhs: at 16x4096^2 twice 32 MiB of packed panels per call), unless
  // that side divides among the threads much less evenly than the other.
  const waste = (n: number) => (Math.ceil(n / T) * T) / n;
  const rowsLonger = t.tiles * KERNELS[kind].mr >= t.panels * NR;
  const [prefer, other] = rowsLonger ? [t.tiles, t.panels] : [t.panels, t.tiles];
  const byRows = waste(prefer) <= 1.25 * waste(other) ? rowsLonger : !rowsLonger;
  if (T > 1 && t.rhsReady && !byRows) {
    // A prepacked rhs split by panels: the calling thread packs the lhs before the job (a few rows: a
    // barrier would cost more), and the threads run their ranges of panels, then the rest (dyn_*).
    pre.push([`pack_lhs_${kind}`, 0, t.tiles]);
    return { pre, ...ranges(`dyn_gemm_${kind}`, t, T) };
  }
  for (let i = 0; i < T; i++) {
    pack.push([[`pack_lhs_${kind}`, ...part(t.tiles, T, i)]]);
    if (!t.rhsReady) pack[i].push([`pack_rhs_${kind}`, ...part(t.panels, T, i)]);
    gemm.push([byRows ? [`gemm_${kind}`, ...part(t.tiles, T, i), 0, t.panels] : [`gemm_${kind}`, 0, t.tiles, ...part(t.panels, T, i)]]);
  }
  return { pre, pack, gemm, ranges: null };
}

/**
 * How many runs went to one thread and to several (diagnostics: the browser test checks that threads
 * ran), and the last run's kernel time: its pack, gemm and output calls on every thread, hand-off
 * included, in ms (the call's overhead is its wall time minus this); its driver, the WebAssembly
 * function of its gemm stage (e.g. 'gemm_i16', 'gemm_direct_4x8', 'gemm_lane_1x4', 'gemm_wide_3x4', 'gemm_nibble_2x2', 'gemm_nibble7_1x4', 'gemm_relaxed_1x4').
 */
export const wasmRunStats = { singleThreaded: 0, multiThreaded: 0, lastKernelMs: 0, lastThreads: 0, lastDriver: '' };

/**
 * A GEMM's plan on an engine: its regions and context written by prepare, every thread's calls. A
 * repeated problem with a prepacked rhs runs its plan again (kernel.ts): only the new lhs is written
 * when the engine's memory still holds this plan, else prepare writes it all again (with the encoded
 * output program kept).
 */
export interface Plan {
  kind: WasmKernelKind;
  mode: RelaxedMode | null;
  rhsBlock: RhsBlock | null;
  t: Prepared;
  /** Threads, and each thread's calls: pack, a barrier where there is a pack phase, gemm + output. */
  T: number;
  lists: Call[][];
  /** Calls the calling thread runs before the others start (the lhs pack of a prepacked GEMM split by panels). */
  pre: Call[];
  /**
   * The starts of the threads' ranges of panels (dyn_*), written to the counters before each run; the
   * job is then open: a worker that wakes after the others have done it stays out (pool.ts run).
   */
  ranges: number[] | null;
  /**
   * A repeated problem's choice between its thread count and one thread, by measurement (runPlan): the
   * one-thread calls, and the kernel times of the last calls of each; null where the plan runs as made.
   */
  single: { lists: Call[][]; pre: Call[]; ranges: number[] | null; times: [number[], number[]]; calls: number; pick: 0 | 1 } | null;
}

/**
 * Writes p into e's memory and plans it: on `threads` threads when given (as many as the engine can:
 * one without a shared memory), else on up to `defaultThreads`, fewer for small problems.
 */
export function makePlan(
  e: WasmEngine,
  p: NormalizedProblem,
  kind: WasmKernelKind,
  threads: number | undefined,
  defaultThreads = 1,
  mode = e.relaxed,
  rhsBlock: RhsBlock | null = null,
  adaptive = false,
): Plan {
  const { M, N, K } = p;
  const t = prepare(e, p, kind, mode, rhsBlock);
  const wanted = threads ?? Math.min(defaultThreads, Math.floor((M * N * K) / MIN_MACS_PER_THREAD));
  const T = threadsRun(e) ? Math.max(1, Math.min(wanted, CONTROL.maxThreads)) : 1;
  const calls = (n: number) => {
    const { pre, pack, gemm, ranges } = plan(kind, t, n);
    // Threads meet once between the pack and gemm phases; not where nothing is packed (the few-row kernels).
    const barrier: Call[] = n > 1 && pack.some((c) => c.length) ? [[BARRIER_CALL]] : [];
    return { pre, lists: pack.map((c, i) => [...c, ...barrier, ...gemm[i]]), ranges };
  };
  // An open job (ranges) never waits for a worker that is late: the calling thread starts at once and
  // does what the others do not, so it is not weighed against one thread.
  const threaded = calls(T);
  const single =
    adaptive && T > 1 && !threaded.ranges && M * N * K <= ADAPTIVE_MAX_MACS
      ? { ...calls(1), times: [[], []] as [number[], number[]], calls: 0, pick: 0 as const }
      : null;
  const result: Plan = { kind, mode, rhsBlock, t, T, ...threaded, single };
  written.set(e, result);
  return result;
}

/**
 * Runs p on engine e with kernel `kind`: on `threads` threads when given (as many as the engine can:
 * one without a shared memory), else on up to `defaultThreads`, fewer for small problems.
 */
export function runOnEngine(
  e: WasmEngine,
  p: NormalizedProblem,
  kind: WasmKernelKind,
  threads: number | undefined,
  defaultThreads = 1,
  mode = e.relaxed,
  rhsBlock: RhsBlock | null = null,
): Promise<GemmResult> {
  return runPlan(e, makePlan(e, p, kind, threads, defaultThreads, mode, rhsBlock), p, true);
}

/** The calls in which a repeated problem tries both its thread count and one thread before it picks (runPlan). */
const SINGLE_TRIAL_CALLS = 16;

/**
 * Starts the engine's workers for `threads` threads (pool.ts), where it has a shared memory, and resolves
 * once they are ready; a worker that fails to start is reported by the next GEMM that needs it.
 */
export async function startWorkers(e: WasmEngine, threads: number): Promise<void> {
  if (!threadsRun(e) || threads < 2) return;
  await poolOf(e)
    .ensure(threads - 1)
    .catch(() => undefined);
}

/** The engine's worker pool, made on first use (by the first prepackCpu, or the first multi-threaded run). */
const poolOf = (e: WasmEngine): WorkerPool => (e.pool ??= new WorkerPool(e.module, e.memory, e.exports));

/** Runs plan `pl` for p (its problem, with this call's lhs); `fresh`: prepare just wrote it. */
export async function runPlan(e: WasmEngine, pl: Plan, p: NormalizedProblem, fresh = false): Promise<GemmResult> {
  const { M, N } = p;
  if (!fresh) {
    if (written.get(e) === pl && heapEnd(e) === pl.t.heap) pl.t.loadLhs(e.memory.buffer, p);
    else {
      pl.t = prepare(e, p, pl.kind, pl.mode, pl.rhsBlock, pl.t.direct, pl.t.program);
      written.set(e, pl);
    }
  }
  const { t, single } = pl;
  // A repeated problem (pl.single) weighs its threads (0) against one thread (1) by kernel time, in pairs
  // of calls of which only the second is timed: the first wakes the workers (asleep once their spin has
  // run out: 60-200 us on a virtual machine) and, early on, lets the engine optimize the code. Its first
  // 16 calls alternate pairs; then it runs the one whose fastest timed call of the last five is faster,
  // and every 64 calls a pair of the other, so that the choice follows the machine (a core busy with
  // other work makes threads a loss). Timing single calls of the other choice would find its workers
  // asleep every time and keep a process on one thread for good (measured: 0.38-0.45 ms against 0.18
  // ms at 1x4096^2, 4-bit, two threads). The fastest, not the median: other work only slows calls down.
  let choice: 0 | 1 = 0;
  let timed = true;
  if (single) {
    const n = single.calls++;
    if (n < SINGLE_TRIAL_CALLS) [choice, timed] = [((n >> 1) & 1) as 0 | 1, (n & 1) === 1];
    else if (n % 64 < 2) [choice, timed] = [(1 - single.pick) as 0 | 1, n % 64 === 1];
    else choice = single.pick;
  }
  const { pre, lists, ranges } = choice === 1 && single ? single : pl;
  const T = lists.length;
  if (ranges) {
    const counters = new Int32Array(e.memory.buffer, CHUNK_COUNTERS.at, (CHUNK_COUNTERS.stride / 4) * ranges.length);
    for (const [j, start] of ranges.entries()) Atomics.store(counters, (CHUNK_COUNTERS.stride / 4) * j, start);
  }
  const t0 = performance.now();
  for (const [name, ...args] of pre) e.exports[name](...args);
  if (T === 1) {
    wasmRunStats.singleThreaded++;
    for (const [name, ...args] of lists[0]) e.exports[name](...args);
  } else {
    wasmRunStats.multiThreaded++;
    const pool = poolOf(e);
    try {
      await pool.run(lists, wasmSpinUs(), ranges !== null);
    } finally {
      if (pool.isLost) {
        pool.close();
        e.pool = null; // the next GEMM starts a new pool
      }
    }
  }
  wasmRunStats.lastKernelMs = performance.now() - t0;
  wasmRunStats.lastThreads = T;
  wasmRunStats.lastDriver = fewRowsKernel(t) ?? `gemm_${pl.kind}`;
  if (single && timed) {
    const times = single.times[choice];
    times.push(wasmRunStats.lastKernelMs);
    if (times.length > 5) times.shift();
    if (single.calls >= SINGLE_TRIAL_CALLS) single.pick = Math.min(...single.times[1]) < Math.min(...single.times[0]) ? 1 : 0;
  }
  const finalType = t.covered === p.pipeline.length ? p.dstType : 'int32';
  const out = allocateDst(finalType, M * N);
  const view = allocateDst(finalType, e.memory.buffer as ArrayBuffer);
  out.set(view.subarray(t.dst / out.BYTES_PER_ELEMENT, t.dst / out.BYTES_PER_ELEMENT + M * N));
  if (t.covered === p.pipeline.length) return { data: out, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType };
  // From the first tanh on, in JavaScript (stages.ts).
  const rest: NormalizedProblem = { ...p, pipeline: p.pipeline.slice(t.covered), derived: p.derived.slice(t.covered) };
  const dst = allocateDst(p.dstType, M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      const i = dstIndex(p.dstOrder, M, N, m, n);
      dst[i] = applyOutputPipeline(rest, out[i], m, n);
    }
  }
  return { data: dst, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType };
}

/**
 * Runs kernel `kind` a few times on a small problem with a per-channel pipeline, so that the engine
 * compiles its hot functions with its optimizing tier before the caller's first GEMM (V8 starts every
 * WebAssembly function in its baseline compiler, which runs these kernels at about half speed, and
 * tiers a function up only after it has run for a while).
 */
export async function warmUp(e: WasmEngine, kind: WasmKernelKind): Promise<void> {
  // A packed problem, then one per direct micro-kernel shape (gen-direct.ts).
  const shapes = kind === 'i16' ? [24, ...DIRECT.map((d) => d.mr)] : [24];
  const problems = shapes.map((M) => {
    const N = 64;
    const K = 512;
    const values = Int32Array.from({ length: N }, (_, n) => n - 32);
    return normalizeProblem({
      lhs: { data: new Uint8Array(M * K).fill(3), rows: M, cols: K, order: 'row-major' },
      rhs: { data: new Uint8Array(K * N).fill(5), rows: K, cols: N, order: 'row-major' },
      lhsZeroPoint: 1,
      rhsZeroPoint: 2,
      pipeline: [
        { type: 'bias', axis: 'col', values },
        {
          type: 'scaleInt32ByFixedPointAndExponent',
          multiplier: values.map((v) => v << 24),
          exponent: values.map((v) => v >> 3),
          offsetAfterShift: 9,
          rounding: 'double',
          axis: 'col',
        },
        { type: 'saturatingCast', to: 'uint8' },
      ],
    });
  });
  for (let round = 0; round < 40; round++) {
    for (const p of problems) await runOnEngine(e, p, kind, 1, 1, kind === 'relaxed' ? e.relaxed : null);
    if (round % 8 === 7) await new Promise((r) => setTimeout(r, 0)); // lets the background compiler finish
  }
}
