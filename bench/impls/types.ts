// What the harness needs from each implementation: run one cell (one shape: warm-up plus timed runs,
// bench/timing.ts) and say who it is. Rows of this project ('qgemm') also hand back their output and
// one hash per timed run, for verification (bench/verify.ts).

import type { DstData, DstType } from '../../src/types.ts';
import type { ShapeData } from '../problems.ts';
import type { RepeatPolicy, Stats } from '../timing.ts';

export const IMPLS = ['qgemm', 'tfjs-webgpu-f32', 'onnxruntime-node-matmulinteger', 'naive-js'] as const;
export type ImplName = (typeof IMPLS)[number];
export const RUNTIMES = ['node', 'chrome'] as const;
export type Runtime = (typeof RUNTIMES)[number];
export const BACKENDS = ['webgpu', 'cpu'] as const;
export type BackendName = (typeof BACKENDS)[number];

export interface RowId {
  impl: ImplName;
  backend: BackendName;
  runtime: Runtime;
}

export const rowKey = (r: RowId): string => `${r.impl}/${r.backend}/${r.runtime}`;

/** The order of rows within a shape, and of the report's columns. */
export const ROW_ORDER = [
  'qgemm/webgpu/node',
  'qgemm/webgpu/chrome',
  'qgemm/cpu/node',
  'tfjs-webgpu-f32/webgpu/node',
  'tfjs-webgpu-f32/webgpu/chrome',
  'onnxruntime-node-matmulinteger/cpu/node',
  'naive-js/cpu/node',
];
export const rowRank = (r: RowId): number => {
  const i = ROW_ORDER.indexOf(rowKey(r));
  return i < 0 ? ROW_ORDER.length : i;
};

export interface CellOutcome {
  wall: Stats;
  gpu: Stats | null;
  /** qgemm rows: the last timed run's output (row-major) and every timed run's hash. */
  output?: { data: DstData; dtype: DstType };
  hashes?: string[];
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
