// The benchmark's report (bench/harness.ts fills it; bench/cli.ts writes it as JSON; report-terminal.ts and
// report-html.ts render it): the JSON contract's types, one Row per implementation, mode, loop and shape,
// and the arithmetic that turns a row's timing statistics into its fields (statsFields) or into the
// after-pause row beside it (afterPauseRow). Times are milliseconds; medianMs is WALL time of one call, and
// gpuMedianMs the GPU time of timestamp queries, where the adapter offers them.

import type { Ceilings, Roofline } from './ceilings.ts';
import type { Comparison } from './compare.ts';
import type { AdapterKind, Machine } from './environment.ts';
import type { ChromeSession } from './impls/chrome.ts';
import type { BackendName, ImplName, Loop, Mode, RhsBits, RowId, Runtime, TraceSummary } from './impls/types.ts';
import type { PipelineKind } from './problems.ts';
import { ops, type ConvLayer, type Shape } from './shapes.ts';
import { gops, PAUSE_MS, type RepeatPolicy, type Stats, type Warmed } from './timing.ts';
import type { Verification } from './verify.ts';

/** Which shapes a run measured: `--quick`, the full suite, or `--shapes`. */
export type Suite = 'quick' | 'full' | 'custom';

/** One row: the contract's fields first, then extras. */
export interface Row {
  impl: ImplName;
  backend: BackendName;
  runtime: Runtime;
  mode: Mode;
  adapter: string;
  m: number;
  n: number;
  k: number;
  /** A convolution layer's rows (shape family 'conv2d'): the layer; m x n x k is its GEMM. Absent on GEMM rows. */
  conv?: ConvLayer;
  /** Bit width of the weights (rhs) read: qgemm 8 or 4 (--rhs-bits), MatMulNBits-8/-4 8/4, other peers null. */
  rhsBits: RhsBits | null;
  /** Wall time: upload + compute + readback (null only when the row failed to run). */
  medianMs: number | null;
  gops: number | null;
  /** This project's rows: true/false; peers: null. */
  verified: boolean | null;
  minMs: number | null;
  maxMs: number | null;
  q1Ms: number | null;
  q3Ms: number | null;
  reps: number;
  /** The wall times' coefficient of variation (standard deviation over mean); null without wall times. */
  cv?: number | null;
  /** GPU time of the compute work from timestamp queries; null where unavailable. */
  gpuMedianMs: number | null;
  gpuMinMs: number | null;
  gpuMaxMs: number | null;
  /** The GPU times' coefficient of variation (their `reps` are separate timed calls, not batches). */
  gpuCv?: number | null;
  gpuGops: number | null;
  /** Why gpuMedianMs is null (no timestamp-query, a CPU row, the library exposes none), where known. */
  gpuNote?: string;
  /** qgemm rows: the id of the kernel that ran ("dot4-64x64", "gemv", "cpu-js"); null for peers. */
  kernel: string | null;
  /**
   * qgemm WebGPU rows with GPU time: the floor from the adapter's ceilings, the fraction of it reached, and
   * the bytes the memory floor counts (4-bit rows: the packed rhs, PackedOperand.bytes); else null.
   */
  roofline: Roofline | null;
  computes: string;
  verification?: Verification;
  error?: string;
  /**
   * The decode loop's case the row times: 'back-to-back' (calls without a pause: every row series), or
   * 'after-pause' (single calls, each after `pauseMs` with nothing running, bench/timing.ts afterPause:
   * a row of its own beside each `resident` WebGPU row in Node, qgemm's and the peers'; wall time only).
   */
  loop: Loop;
  /** After-pause rows: the pause before each call. */
  pauseMs?: number;
  /** qgemm WebGPU rows that read back: each step's median over a few traced calls (src/scheduler/trace.ts). */
  trace?: TraceSummary;
  /**
   * The clock warm-up before the timed runs (bench/timing.ts RepeatPolicy.warmRule): its length, and whether
   * the calls were steady at its end (else it hit its cap). Back-to-back rows of a policy with one.
   */
  warm?: Warmed;
}

export interface Skipped extends RowId {
  m: number;
  n: number;
  k: number;
  conv?: ConvLayer;
  reason: string;
}

export interface BenchReport {
  adapter: {
    vendor: string;
    architecture: string;
    description: string;
    ceilings: Ceilings;
    /** The tuning table qgemm's WebGPU context in Node ran (`describeTuning`), null without one. */
    tuning?: string | null;
    [extra: string]: unknown;
  };
  runs: Row[];
  date: string;
  suite: Suite;
  command: string;
  machine: Machine;
  adapterKind: AdapterKind;
  adapterNote: string;
  /** The Chrome runtime: Chromium's version, the page's adapter (with its device's features), the flags Chromium ran with, whether the page was cross-origin isolated. */
  chrome: {
    version: string;
    adapter: Record<string, unknown> | null;
    flags: string[];
    /** tools/chromium.ts's flag profile (swiftshader or hardware) and verifyDevice() in the page (null where it did not run). */
    profile?: string;
    verify?: ChromeSession['verify'];
    crossOriginIsolated: boolean;
  } | null;
  pipeline: { kind: PipelineKind; description: string; appliesTo: string };
  timing: { policy: RepeatPolicy; medianMs: string; gpuMs: string };
  implementations: {
    impl: ImplName;
    backend: BackendName;
    runtime: Runtime;
    mode: Mode;
    rhsBits: RhsBits | null;
    computes: string;
    details: string;
  }[];
  comparisons: Comparison[];
  skipped: Skipped[];
  notes: string[];
  /** Present only in a checkpoint (`--checkpoint`): why the report is partial. The final report has none. */
  incomplete?: string;
  elapsedS: number;
}

export const round = (x: number, digits = 4): number => Number(x.toPrecision(digits));

/**
 * The after-pause row of a back-to-back row (bench/timing.ts afterPause): the same series in loop
 * 'after-pause', its wall time from the single calls, no GPU time (the back-to-back row has it). A qgemm
 * row is verified where its back-to-back row is and every after-pause call returned the same bytes.
 */
export function afterPauseRow(row: Row, pause: Stats, hashes: { loop: string[]; paused?: string[] }, shape: Shape): Row {
  const { medianMs, gops: rowGops, ...spread } = statsFields(pause, null, shape);
  const same = !hashes.paused || hashes.paused.every((h) => hashes.loop.includes(h));
  const verification = row.verification && {
    ...row.verification,
    consistent: row.verification.consistent && same,
    ...(same ? {} : { verified: false, error: 'an after-pause call returned other bytes than the back-to-back calls' }),
  };
  const { verification: _v, trace: _t, warm: _w, ...rest } = row;
  return {
    ...rest,
    loop: 'after-pause',
    pauseMs: PAUSE_MS,
    medianMs,
    gops: rowGops,
    ...spread,
    verified: row.verified === null ? null : row.verified && same,
    gpuNote: `single calls, each after ${PAUSE_MS} ms with nothing running: wall time only (the GPU time is the back-to-back row's)`,
    roofline: null,
    ...(verification ? { verification } : {}),
  };
}

/** A row's timing fields: wall and GPU statistics rounded to 4 digits, and the throughputs they give. */
export function statsFields(wall: Stats | null, gpu: Stats | null, shape: Shape) {
  return {
    medianMs: wall ? round(wall.medianMs) : null,
    gops: wall ? round(gops(ops(shape), wall.medianMs)) : null,
    minMs: wall ? round(wall.minMs) : null,
    maxMs: wall ? round(wall.maxMs) : null,
    q1Ms: wall ? round(wall.q1Ms) : null,
    q3Ms: wall ? round(wall.q3Ms) : null,
    reps: wall?.reps ?? 0,
    cv: wall ? round(wall.cv, 3) : null,
    gpuMedianMs: gpu ? round(gpu.medianMs) : null,
    gpuMinMs: gpu ? round(gpu.minMs) : null,
    gpuMaxMs: gpu ? round(gpu.maxMs) : null,
    gpuCv: gpu ? round(gpu.cv, 3) : null,
    gpuGops: gpu ? round(gops(ops(shape), gpu.medianMs)) : null,
  };
}
