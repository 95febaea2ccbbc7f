// Verification of this project's timed results against the CPU reference, bit for bit.
// - Small shapes (M*N*K <= FULL_CHECK_MACS): every entry, against referenceGemm (src/reference/gemm.ts,
//   the naive normative triple loop; independent of cpuGemm's offset trick and of the GPU kernels).
// - Larger shapes: a random sample of entries plus the whole last row and last column (where tiling and
//   padding bugs show) and the corners, each computed exactly by the reference's math: a direct int32
//   dot product with the zero points subtracted (with a bitDepth, as --rhs-bits 4 runs: the reference's
//   lowBitAccumulator), then applyOutputPipeline (src/reference/pipeline.ts).
// The problem passed in carries the bitDepth the row's GEMM ran with (bench/problems.ts problemFor).
// Every timed run's output is hashed; a row is verified only when all its timed outputs have the same
// hash AND the last one passes the check above. A failing row is reported as failed, never dropped.

import { lowBitAccumulator, referenceGemm } from '../src/reference/gemm.ts';
import { applyOutputPipeline } from '../src/reference/pipeline.ts';
import { channel, normalizeProblem } from '../src/problem/problem.ts';
import type { DstData, DstType, GemmProblem } from '../src/types.ts';
import type { Shape } from './shapes.ts';

export const FULL_CHECK_MACS = 1 << 24;
export const SAMPLES = 2048;

export interface Expected {
  method: 'full' | 'sampled';
  dtype: DstType;
  /** Row-major indices checked (all of them for 'full'). */
  indices: Int32Array | null;
  /** Values at `indices` ('sampled') or the whole dst ('full'). */
  values: ArrayLike<number>;
}

export interface Verification {
  verified: boolean;
  method: 'full' | 'sampled';
  /** Entries compared. */
  checked: number;
  mismatches: number;
  /** Every timed run gave the same bytes. */
  consistent: boolean;
  firstMismatch?: { m: number; n: number; got: number; want: number };
  error?: string;
}

function sampleIndices(shape: Shape, seed: number): Int32Array {
  const { m: M, n: N } = shape;
  const set = new Set<number>();
  const add = (r: number, c: number) => set.add(r * N + c);
  add(0, 0);
  add(0, N - 1);
  add(M - 1, 0);
  add(M - 1, N - 1);
  for (let c = 0; c < N; c += Math.max(1, Math.floor(N / 256))) add(M - 1, c);
  for (let r = 0; r < M; r += Math.max(1, Math.floor(M / 256))) add(r, N - 1);
  let s = (seed * 2654435761) >>> 0 || 1;
  const rand = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
  for (let i = 0; i < SAMPLES; i++) add(Math.floor(rand() * M), Math.floor(rand() * N));
  return Int32Array.from([...set].sort((a, b) => a - b));
}

/**
 * The reference values for a shape's problem (computed once, shared by every row of the shape).
 * `method` forces one (tests check the sampled path against the full one on small shapes).
 */
export function computeExpected(problem: GemmProblem, shape: Shape, seed: number, method?: Expected['method']): Expected {
  const p = normalizeProblem(problem);
  if ((method ?? (shape.m * shape.n * shape.k <= FULL_CHECK_MACS ? 'full' : 'sampled')) === 'full') {
    const ref = referenceGemm(problem);
    return { method: 'full', dtype: ref.dtype, indices: null, values: ref.data };
  }
  const { N, K } = p;
  const lhs = problem.lhs.data;
  const rhs = problem.rhs.data;
  const indices = sampleIndices(shape, seed);
  const values = new Int32Array(indices.length);
  // Less than 8 bits (--rhs-bits 4): the reference's own requantize-and-unpack accumulator, entry by entry.
  const lowBit = p.bitDepth ? lowBitAccumulator(p) : null;
  indices.forEach((idx, i) => {
    const m = Math.floor(idx / N);
    const n = idx % N;
    let acc = 0;
    if (lowBit) acc = lowBit(m, n);
    else {
      const zl = channel(p.lhsZeroPoint, m);
      const zr = channel(p.rhsZeroPoint, n);
      for (let k = 0; k < K; k++) acc = (acc + Math.imul((lhs[m * K + k] - zl) | 0, (rhs[k * N + n] - zr) | 0)) | 0;
    }
    values[i] = applyOutputPipeline(p, acc, m, n);
  });
  return { method: 'sampled', dtype: p.dstType, indices, values };
}

/** Compares a row-major result with the expected values. `hashes`: one per timed run. */
export function checkResult(expected: Expected, shape: Shape, got: { data: DstData; dtype: DstType }, hashes: string[]): Verification {
  const consistent = hashes.length > 0 && hashes.every((h) => h === hashes[0]);
  const base = { method: expected.method, consistent };
  if (got.dtype !== expected.dtype) {
    return { ...base, verified: false, checked: 0, mismatches: 1, error: `dtype ${got.dtype}, expected ${expected.dtype}` };
  }
  if (got.data.length !== shape.m * shape.n) {
    return { ...base, verified: false, checked: 0, mismatches: 1, error: `${got.data.length} entries, expected ${shape.m * shape.n}` };
  }
  let mismatches = 0;
  let firstMismatch: Verification['firstMismatch'];
  const note = (idx: number, gotV: number, want: number) => {
    mismatches++;
    firstMismatch ??= { m: Math.floor(idx / shape.n), n: idx % shape.n, got: gotV, want };
  };
  let checked: number;
  if (expected.indices === null) {
    checked = expected.values.length;
    for (let i = 0; i < checked; i++) if (got.data[i] !== expected.values[i]) note(i, got.data[i], expected.values[i]);
  } else {
    checked = expected.indices.length;
    for (let i = 0; i < checked; i++) {
      const idx = expected.indices[i];
      if (got.data[idx] !== expected.values[i]) note(idx, got.data[idx], expected.values[i]);
    }
  }
  return {
    ...base,
    verified: mismatches === 0 && consistent,
    checked,
    mismatches,
    ...(firstMismatch ? { firstMismatch } : {}),
    ...(consistent ? {} : { error: `timed runs gave different outputs (hashes ${[...new Set(hashes)].join(', ')})` }),
  };
}

export function bytesOf(data: DstData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

export function fromBytes(dtype: DstType, bytes: Uint8Array): DstData {
  const copy = Uint8Array.from(bytes).buffer; // a copy: Buffer.from(base64) is a view into a shared pool
  switch (dtype) {
    case 'int32':
      return new Int32Array(copy);
    case 'uint8':
      return new Uint8Array(copy);
    case 'int8':
      return new Int8Array(copy);
    case 'int16':
      return new Int16Array(copy);
  }
}
