// The normative CPU GEMM: referenceGemm computes the math of src/types.ts (and, for less-than-8-bit
// operands, src/quant/lowbit.ts) as a naive triple loop you can check by eye (ruy's reference_mul
// shape), then the output pipeline (./pipeline.ts). Every other implementation (the fast CPU path in
// src/kernels/cpu-js/ and src/kernels/cpu-wasm/, the WebGPU kernels) is tested against it, bit for bit. Each operand element is read
// (and, below 8 bits, requantized) once, into a row of K int32 values per lhs row and per rhs column,
// so the loop runs on plain numbers: the built-in self-test checks a 64 x 64 x 40000 problem against
// it on the device's first use of a tensor-core kernel.

import {
  requantize,
  resolveRounding,
  roundingMultiplyByConstantFraction as rmbcf,
  roundingOffset,
  unpackFractions,
} from '../quant/lowbit.ts';
import { UINT8_DOMAIN_SHIFT, type GemmProblem, type GemmResult } from '../types.ts';
import { allocateDst, allocationLimit } from '../problem/dst.ts';
import { applyOutputPipeline } from './pipeline.ts';
import { channel, dstIndex, elementAt, normalizeProblem, type NormalizedProblem } from '../problem/problem.ts';

/**
 * 8-bit: acc[m][n] = sum_k (lhs[m][k] - zL[m]) * (rhs[k][n] - zR[n]), int32 wrap.
 * Less than 8 bits: the requantize-and-unpack formula of src/quant/lowbit.ts, term by term.
 * Then the output pipeline.
 */
export function referenceGemm(problem: GemmProblem): GemmResult {
  const p = normalizeProblem(problem);
  const { M, N, K } = p;
  let accumulator: (m: number, n: number) => number;
  if (p.bitDepth) {
    const { lq, rq } = lowBitOperands(p);
    const lhs = rowsOf(M, K, lq, 'the requantized lhs');
    const rhs = rowsOf(N, K, (n, k) => rq(k, n), 'the requantized rhs');
    accumulator = (m, n) => lowBitTerms(p, m, n, lhs.subarray(m * K, (m + 1) * K), rhs.subarray(n * K, (n + 1) * K));
  } else {
    // Int32Array stores wrap to int32, as `| 0` does.
    const lhs = rowsOf(M, K, (m, k) => elementAt(p.lhs, m, k) - channel(p.lhsZeroPoint, m), 'the lhs');
    const rhs = rowsOf(N, K, (n, k) => elementAt(p.rhs, k, n) - channel(p.rhsZeroPoint, n), 'the rhs');
    accumulator = (m, n) => {
      let acc = 0;
      for (let k = 0; k < K; k++) acc = (acc + Math.imul(lhs[m * K + k], rhs[n * K + k])) | 0;
      return acc;
    };
  }
  const dst = allocateDst(p.dstType, M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      dst[dstIndex(p.dstOrder, M, N, m, n)] = applyOutputPipeline(p, accumulator(m, n), m, n);
    }
  }
  return { data: dst, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType };
}

/**
 * How `got` differs from `want` (the reference's result), element by element: '' where they are equal,
 * else one line with the count and the first difference. verify() and the tensor-core self-test say it.
 */
export function differences(got: GemmResult, want: GemmResult): string {
  if (got.dtype !== want.dtype || got.data.length !== want.data.length) {
    return `got ${got.dtype}[${got.data.length}], want ${want.dtype}[${want.data.length}]`;
  }
  let bad = 0;
  let first = -1;
  for (let j = 0; j < want.data.length; j++) {
    if (got.data[j] !== want.data[j]) {
      bad++;
      if (first < 0) first = j;
    }
  }
  return bad ? `${bad} of ${want.data.length} elements differ (first at ${first}: ${got.data[first]} instead of ${want.data[first]})` : '';
}

/** `rows` rows of K int32 values, value(r, k) at r * K + k. */
function rowsOf(rows: number, K: number, value: (r: number, k: number) => number, what: string): Int32Array {
  let a: Int32Array;
  try {
    a = new Int32Array(rows * K);
  } catch (e) {
    throw allocationLimit(e, `${what} as ${rows} x ${K} int32 values`);
  }
  for (let r = 0; r < rows; r++) for (let k = 0; k < K; k++) a[r * K + k] = value(r, k);
  return a;
}

/** Every element requantized to its bit depth (in the uint8 domain, with its rounding offset). */
function lowBitOperands(p: NormalizedProblem) {
  const { N, K, bitDepth } = p;
  const rounding = resolveRounding(bitDepth!.rounding, K);
  const shiftL = p.lhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  const shiftR = p.rhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  return {
    lq: (m: number, k: number) => requantize(elementAt(p.lhs, m, k) + shiftL, bitDepth!.lhs, roundingOffset(rounding, m * K + k)),
    rq: (k: number, n: number) => requantize(elementAt(p.rhs, k, n) + shiftR, bitDepth!.rhs, roundingOffset(rounding, k * N + n)),
  };
}

/** The four RMBCF terms of entry (m, n), from its requantized lhs row lq and rhs column rq (K values each). */
function lowBitTerms(p: NormalizedProblem, m: number, n: number, lq: Int32Array, rq: Int32Array): number {
  const { K, bitDepth } = p;
  const f = unpackFractions(bitDepth!.lhs, bitDepth!.rhs);
  const zL = (channel(p.lhsZeroPoint, m) + (p.lhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0)) | 0;
  const zR = (channel(p.rhsZeroPoint, n) + (p.rhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0)) | 0;
  let xx = 0;
  let rowSum = 0;
  let colSum = 0;
  for (let k = 0; k < K; k++) {
    xx = (xx + lq[k] * rq[k]) | 0;
    rowSum = (rowSum + lq[k]) | 0;
    colSum = (colSum + rq[k]) | 0;
  }
  return (
    (rmbcf(xx, f.xx) +
      rmbcf(Math.imul(rowSum, -zR | 0), f.x1) +
      rmbcf(Math.imul(colSum, -zL | 0), f.onex) +
      Math.imul(Math.imul(zL, zR), K)) |
    0
  );
}

/**
 * The less-than-8-bit accumulator of single entries, each element requantized as it is read: for checks
 * of a few entries of a large problem (bench/verify.ts samples large shapes with it).
 */
export function lowBitAccumulator(p: NormalizedProblem): (m: number, n: number) => number {
  const { lq, rq } = lowBitOperands(p);
  const { K } = p;
  return (m, n) =>
    lowBitTerms(
      p,
      m,
      n,
      Int32Array.from({ length: K }, (_, k) => lq(m, k)),
      Int32Array.from({ length: K }, (_, k) => rq(k, n)),
    );
}
