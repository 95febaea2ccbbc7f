// What the harness needs from each implementation: run one cell (one shape: warm-up plus timed runs,
// bench/timing.ts) and say who it is: implementation, backend, runtime and mode (what stays on the GPU
// between calls: 'call' nothing, 'resident' the weights (rhs), 'device' both operands and the result).
// Rows of this project ('qgemm') also hand back their output and one hash per timed run, for
// verification (bench/verify.ts), and the id of the kernel that ran.

import type { DstData, DstType } from '../../src/types.ts';
import type { ShapeData } from '../problems.ts';
import type { RepeatPolicy, Stats } from '../timing.ts';

export const IMPLS = [
  'qgemm',
  'tfjs-webgpu-f32',
  'onnxruntime-webgpu-matmul-f32',
  'onnxruntime-webgpu-matmulnbits8',
  'onnxruntime-webgpu-matmulnbits4',
  'onnxruntime-node-matmulinteger',
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

export interface RowId {
  impl: ImplName;
  backend: BackendName;
  runtime: Runtime;
  mode: Mode;
}

/** impl/backend/runtime: the implementation, whatever the mode (colors, short names). */
export const baseKey = (r: Omit<RowId, 'mode'>): string => `${r.impl}/${r.backend}/${r.runtime}`;
/** impl/backend/runtime/mode: one row series. */
export const rowKey = (r: RowId): string => `${baseKey(r)}/${r.mode}`;

/** The order of rows within a shape, and of the report's columns: implementation first, then mode. */
export const ROW_ORDER = [
  'qgemm/webgpu/node',
  'qgemm/webgpu/chrome',
  'qgemm/cpu/node',
  'tfjs-webgpu-f32/webgpu/node',
  'tfjs-webgpu-f32/webgpu/chrome',
  'onnxruntime-webgpu-matmul-f32/webgpu/node',
  'onnxruntime-webgpu-matmulnbits8/webgpu/node',
  'onnxruntime-webgpu-matmulnbits4/webgpu/node',
  'onnxruntime-node-matmulinteger/cpu/node',
  'naive-js/cpu/node',
];
export const rowRank = (r: RowId): number => {
  const i = ROW_ORDER.indexOf(baseKey(r));
  return (i < 0 ? ROW_ORDER.length : i) * MODES.length + MODES.indexOf(r.mode);
};

export interface CellOutcome {
  wall: Stats;
  gpu: Stats | null;
  /** qgemm rows: the last timed run's output (row-major) and every timed run's hash. */
  output?: { data: DstData; dtype: DstType };
  hashes?: string[];
  /** qgemm rows: the id of the kernel that ran (null where the context does not say). */
  kernel?: string | null;
  /** Why gpu is null, where the runner knows (e.g. "no timestamp-query on this device"). */
  gpuNote?: string;
}

export interface Runner extends RowId {
  /** Row-level adapter name: the WebGPU adapter's slug, or 'cpu'. */
  adapter: string;
  /** What it computes, for the report: 'int8 GEMM + output pipeline -> uint8', 'f32 matMul', ... */
  computes: string;
  /** Extra facts for the report (threads, versions, kernel notes). */
  details: string;
  run(data: ShapeData, policy: RepeatPolicy): Promise<CellOutcome>;
  close(): Promise<void>;
}
