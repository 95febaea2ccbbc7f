// The problem a repeated GEMM must equal to reuse its plan (kernel.ts runPrepacked, the CPU's plan of a
// prepacked rhs): every field normalizeProblem reads, per-channel vectors element for element (one edited
// in place is a different problem), but the operands' data, the lhs by its shape and type only. A
// snapshot is a deep copy taken when the plan is made; the comparison is one walk, with Node's native
// Buffer.compare for typed arrays. A plan that keeps the problem to run again keeps its own copy
// (ownedProblem), never the caller's vectors.

import type { GemmProblem } from '../types.ts';

/**
 * The caller's problem minus the lhs data, deeply copied: what a repeated call must equal, element for
 * element (a per-channel vector edited in place is a different problem).
 */
export type ProblemSnapshot = unknown;

function snapshot(v: unknown): ProblemSnapshot {
  if (ArrayBuffer.isView(v)) return (v as Int32Array).slice();
  if (Array.isArray(v)) return v.map(snapshot);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, snapshot(x)]));
  return v;
}

/** Node's Buffer.compare (a native memcmp: ~0.1 µs for a 4096-channel vector, against ~10 µs for a JavaScript loop), else null. */
const compareBytes = (globalThis as { Buffer?: { compare(a: Uint8Array, b: Uint8Array): number } }).Buffer?.compare ?? null;

function sameBytes(a: ArrayBufferView, b: ArrayBufferView): boolean {
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  if (compareBytes) return compareBytes(x, y) === 0;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

function same(v: unknown, s: ProblemSnapshot): boolean {
  if (ArrayBuffer.isView(v)) {
    if (!ArrayBuffer.isView(s) || v.constructor !== s.constructor || v.byteLength !== s.byteLength) return false;
    return sameBytes(v, s);
  }
  if (Array.isArray(v)) return Array.isArray(s) && v.length === s.length && v.every((x, i) => same(x, s[i]));
  if (v && typeof v === 'object') {
    if (!s || typeof s !== 'object' || Array.isArray(s) || ArrayBuffer.isView(s)) return false;
    const keys = Object.keys(v);
    if (keys.length !== Object.keys(s).length) return false;
    for (const k of keys) if (!(k in s) || !same((v as Record<string, unknown>)[k], (s as Record<string, unknown>)[k])) return false;
    return true;
  }
  return Object.is(v, s);
}

/** The fields besides the lhs that normalizeProblem reads: compared element for element, and owned by a plan. */
const FIELDS = ['lhsZeroPoint', 'rhsZeroPoint', 'pipeline', 'dstOrder', 'bitDepth'] as const;

/** The fields of `problem` that normalizeProblem reads, but the operands' data: the lhs by its shape and type. */
function key(problem: Omit<GemmProblem, 'rhs'>): Record<string, unknown> {
  const { lhs } = problem;
  const k: Record<string, unknown> = {
    lhs: lhs && { rows: lhs.rows, cols: lhs.cols, order: lhs.order, type: lhs.data?.constructor, length: lhs.data?.length },
  };
  for (const f of FIELDS) k[f] = problem[f];
  return k;
}

/** A deep copy of the problem's fields but the operands' data (the lhs by its shape and type): what a repeated call must equal. */
export const snapshotProblem = (problem: Omit<GemmProblem, 'rhs'>): ProblemSnapshot => snapshot(key(problem));

/**
 * `problem` with every field but the operands the plan's own (per-channel vectors and stages deeply
 * copied): what a plan keeps to run again, since the caller may edit a vector in place once its call
 * has resolved, and a later call equal to the snapshot must not see that edit.
 */
export function ownedProblem<T extends Omit<GemmProblem, 'rhs'>>(problem: T): T {
  const own: Record<string, unknown> = { ...problem, lhs: problem.lhs && { ...problem.lhs } }; // the lhs data stays the caller's
  for (const f of FIELDS) if (f in problem) own[f] = snapshot(problem[f]);
  return own as T;
}

/** `problem` equals the snapshot element for element, but its operands' data. */
export const sameProblem = (problem: Omit<GemmProblem, 'rhs'>, s: ProblemSnapshot): boolean => same(key(problem), s);
