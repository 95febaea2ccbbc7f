// What the harness needs from each implementation: run one cell (one shape: warm-up plus timed runs,
// bench/timing.ts) and say who it is: implementation, backend, runtime and mode (what stays on the GPU
// between calls: 'call' nothing, 'resident' the weights (rhs), 'device' both operands and the result).
// Rows of this project ('qgemm') also hand back their output and one hash per timed run, for
// verification (bench/verify.ts), and the id of the kernel that ran.

import type { PackFormatId } from '../../src/pack/formats.ts';
import type { DstData, DstType } from '../../src/types.ts';
import type { RhsBits, ShapeData } from '../problems.ts';
import type { RepeatPolicy, Stats, Warmed } from '../timing.ts';

export const IMPLS = [
  'qgemm',
  'tfjs-webgpu-f32',
  'onnxruntime-webgpu-matmul-f32',
  'onnxruntime-webgpu-matmulnbits8',
  'onnxruntime-webgpu-matmulnbits4',
  'onnxruntime-node-matmulinteger',
  'onnxruntime-web-matmulinteger',
  'onnxruntime-node-matmulnbits4',
  'naive-js',
] as const;
export type ImplName = (typeof IMPLS)[number];
export const ORT_WEBGPU_IMPLS = [
  'onnxruntime-webgpu-matmul-f32',
  'onnxruntime-webgpu-matmulnbits8',
  'onnxruntime-webgpu-matmulnbits4',
] as const;
export type OrtWebgpuImpl = (typeof ORT_WEBGPU_IMPLS)[number];
export const RUNTIMES = ['node', 'chrome'] as const;
export type Runtime = (typeof RUNTIMES)[number];
export const BACKENDS = ['webgpu', 'cpu'] as const;
export type BackendName = (typeof BACKENDS)[number];
/** call: operands uploaded (and packed) on every call; resident: rhs (weights) kept on the GPU; device: lhs and dst too. */
export const MODES = ['call', 'resident', 'device'] as const;
export type Mode = (typeof MODES)[number];

export { RHS_BITS, type RhsBits } from '../problems.ts';

/**
 * The decode loop's two cases: calls back to back (no pause: every row's own timing), and single calls
 * each after a pause with nothing running (bench/timing.ts afterPause: `resident` WebGPU rows in Node,
 * qgemm's and the peers', a row series of their own).
 */
export const LOOPS = ['back-to-back', 'after-pause'] as const;
export type Loop = (typeof LOOPS)[number];

export interface RowId {
  impl: ImplName;
  backend: BackendName;
  runtime: Runtime;
  mode: Mode;
  /**
   * The bit width of the weights (rhs) the row reads: every qgemm row 8 or 4, onnxruntime MatMulNBits-8
   * rows 8 and -4 rows 4, every other peer null. Optional on ids (absent = the implementation's default,
   * rhsBitsOf); every Row has it.
   */
  rhsBits?: RhsBits | null;
  /** Which case of the decode loop the row times (absent on ids: back to back); every Row has it. */
  loop?: Loop;
}

/** The rhs bit width of a row: its own where it says, else the implementation's (qgemm 8, MatMulNBits-8/4, others null). */
export function rhsBitsOf(r: Pick<RowId, 'impl' | 'rhsBits'>): RhsBits | null {
  if (r.rhsBits !== undefined) return r.rhsBits;
  if (r.impl === 'qgemm' || r.impl === 'onnxruntime-webgpu-matmulnbits8') return 8;
  if (r.impl === 'onnxruntime-webgpu-matmulnbits4' || r.impl === 'onnxruntime-node-matmulnbits4') return 4;
  return null;
}

/** The row series that run convolution layers (shape.conv), in Node and in Chrome: qgemm on WebGPU (ctx.gemm on the input) and tfjs's conv2d. */
export const convolutionRows = (r: RowId): boolean => (r.impl === 'qgemm' && r.backend === 'webgpu') || r.impl === 'tfjs-webgpu-f32';

/** impl/backend/runtime: the implementation, whatever the mode (colors, short names). */
export const baseKey = (r: Omit<RowId, 'mode'>): string => `${r.impl}/${r.backend}/${r.runtime}`;
/**
 * impl/backend/runtime/mode: one row series; qgemm rows with 4-bit weights are a series of their own,
 * impl/backend/runtime/mode/rhs4 (a peer's bit width is in its impl name already), and so are the
 * after-pause rows, .../after-pause.
 */
export const rowKey = (r: RowId): string =>
  `${baseKey(r)}/${r.mode}${r.impl === 'qgemm' && r.rhsBits === 4 ? '/rhs4' : ''}${r.loop === 'after-pause' ? '/after-pause' : ''}`;

/** The order of rows within a shape, and of the report's columns: implementation first, then mode. */
export const ROW_ORDER = [
  'qgemm/webgpu/node',
  'qgemm/webgpu/chrome',
  'qgemm/cpu/node',
  'qgemm/cpu/chrome',
  'tfjs-webgpu-f32/webgpu/node',
  'tfjs-webgpu-f32/webgpu/chrome',
  'onnxruntime-webgpu-matmul-f32/webgpu/node',
  'onnxruntime-webgpu-matmulnbits8/webgpu/node',
  'onnxruntime-webgpu-matmulnbits4/webgpu/node',
  'onnxruntime-webgpu-matmul-f32/webgpu/chrome',
  'onnxruntime-webgpu-matmulnbits8/webgpu/chrome',
  'onnxruntime-webgpu-matmulnbits4/webgpu/chrome',
  'onnxruntime-node-matmulinteger/cpu/node',
  'onnxruntime-web-matmulinteger/cpu/chrome',
  'onnxruntime-node-matmulnbits4/cpu/node',
  'naive-js/cpu/node',
];
export const rowRank = (r: RowId): number => {
  const i = ROW_ORDER.indexOf(baseKey(r));
  // qgemm's 4-bit series right after its 8-bit one of the same mode.
  // After-pause rows right after their back-to-back series.
  return (
    (i < 0 ? ROW_ORDER.length : i) * MODES.length +
    MODES.indexOf(r.mode) +
    (r.impl === 'qgemm' && r.rhsBits === 4 ? 0.5 : 0) +
    (r.loop === 'after-pause' ? 0.25 : 0)
  );
};

export interface CellOutcome {
  wall: Stats;
  gpu: Stats | null;
  /** The clock warm-up before the timed runs (RepeatPolicy.warmRule), where the policy has one. */
  warm?: Warmed;
  /** qgemm rows: the last timed run's output (row-major) and every timed run's hash. */
  output?: { data: DstData; dtype: DstType };
  hashes?: string[];
  /** qgemm rows: the id of the kernel that ran (null where the context does not say). */
  kernel?: string | null;
  /** Why gpu is null, where the runner knows (e.g. "no timestamp-query on this device"). */
  gpuNote?: string;
  /** qgemm rows with prepacked weights: their layout (PackedOperand.packFormat), for the roofline's bytes. */
  rhsFormat?: PackFormatId;
  /**
   * `resident` GPU rows in Node: single calls, each after a pause (bench/timing.ts afterPause), which the
   * harness reports as a row of their own (loop 'after-pause'); `wall` is back to back.
   */
  afterPause?: Stats;
  /** qgemm rows with afterPause: each after-pause call's hash, checked against the back-to-back calls'. */
  afterPauseHashes?: string[];
  /** qgemm WebGPU rows that read back: the median of each step over a few traced calls (src/scheduler/trace.ts). */
  trace?: TraceSummary;
}

/** Traced calls of a qgemm row, summed up: the median ms of each step, in order. */
export interface TraceSummary {
  calls: number;
  plan: string;
  steps: { step: string; ms: number }[];
  totalMs: number;
}

export interface Runner extends RowId {
  /** Row-level adapter name: the WebGPU adapter's slug, or 'cpu'. */
  adapter: string;
  /** What it computes, for the report: 'int8 GEMM + output pipeline -> uint8', 'f32 matMul', ... */
  computes: string;
  /** Extra facts for the report (threads, versions, kernel notes). */
  details: string;
  /**
   * Convolution layers (shapes with `conv`, ShapeData.conv): true = the runner runs them as convolutions;
   * a string = not in this mode, and why (the cells go to `skipped`); absent = a GEMM implementation, not
   * run on convolution layers at all.
   */
  convolution?: true | string;
  run(data: ShapeData, policy: RepeatPolicy): Promise<CellOutcome>;
  close(): Promise<void>;
}
