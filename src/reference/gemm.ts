// The CPU GEMM, in two implementations of the math in src/types.ts (and, for less-than-8-bit
// operands, src/quant/lowbit.ts) that must agree bit for bit:
//  - referenceGemm: naive and normative, a triple loop you can check by eye (ruy's reference_mul shape);
//  - cpuGemm: the production CPU path, gemmlowp's offset trick: pack the operands once with their
//    row/column sums, take raw sums of products, then add the three zero-point terms
//    (pack -> gemm -> output, as on the GPU). It is the fallback when there is no GPU.
// Both finish with the same output pipeline (./pipeline.ts).

import {
  requantize,
  resolveRounding,
  roundingMultiplyByConstantFraction as rmbcf,
  roundingOffset,
  unpackFractions,
} from '../quant/lowbit.ts';
import type { GemmProblem, GemmResult } from '../types.ts';
import { allocateDst, applyOutputPipeline } from './pipeline.ts';
import { channel, dstIndex, elementAt, normalizeProblem, type NormalizedProblem } from './problem.ts';

/**
 * 8-bit: acc[m][n] = sum_k (lhs[m][k] - zL[m]) * (rhs[k][n] - zR[n]), int32 wrap.
 * Less than 8 bits: the requantize-and-unpack formula of src/quant/lowbit.ts, term by term.
 * Then the output pipeline.
 */
export function referenceGemm(problem: GemmProblem): GemmResult {
  const p = normalizeProblem(problem);
  const { M, N, K, lhs, rhs } = p;
  const accumulator = p.bitDepth ? lowBitAccumulator(p) : (m: number, n: number) => {
    let acc = 0;
    for (let k = 0; k < K; k++) {
      const l = (elementAt(lhs, m, k) - channel(p.lhsZeroPoint, m)) | 0;
      const r = (elementAt(rhs, k, n) - channel(p.rhsZeroPoint, n)) | 0;
      acc = (acc + Math.imul(l, r)) | 0;
    }
    return acc;
  };
  const dst = allocateDst(p.dstType, M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      dst[dstIndex(p.dstOrder, M, N, m, n)] = applyOutputPipeline(p, accumulator(m, n), m, n);
    }
  }
  return { data: dst, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType };
}

/** The uint8-domain value of an operand element (int8: v + 128) and the matching zero point shift. */
const domainShift = (signed: boolean) => (signed ? 128 : 0);

/** Naive less-than-8-bit accumulator: requantize every element, then the four RMBCF terms. */
function lowBitAccumulator(p: NormalizedProblem): (m: number, n: number) => number {
  const { N, K, bitDepth } = p;
  const rounding = resolveRounding(bitDepth!.rounding, K);
  const shiftL = domainShift(p.lhsType === 'int8');
  const shiftR = domainShift(p.rhsType === 'int8');
  const lq = (m: number, k: number) => requantize(elementAt(p.lhs, m, k) + shiftL, bitDepth!.lhs, roundingOffset(rounding, m * K + k));
  const rq = (k: number, n: number) => requantize(elementAt(p.rhs, k, n) + shiftR, bitDepth!.rhs, roundingOffset(rounding, k * N + n));
  const f = unpackFractions(bitDepth!.lhs, bitDepth!.rhs);
  return (m, n) => {
    const zL = (channel(p.lhsZeroPoint, m) + shiftL) | 0;
    const zR = (channel(p.rhsZeroPoint, n) + shiftR) | 0;
    let xx = 0;
    let rowSum = 0;
    let colSum = 0;
    for (let k = 0; k < K; k++) {
      xx = (xx + lq(m, k) * rq(k, n)) | 0;
      rowSum = (rowSum + lq(m, k)) | 0;
      colSum = (colSum + rq(k, n)) | 0;
    }
    return (
      rmbcf(xx, f.xx) + rmbcf(Math.imul(rowSum, -zR | 0), f.x1) + rmbcf(Math.imul(colSum, -zL | 0), f.onex) + Math.imul(Math.imul(zL, zR), K)
    ) | 0;
  };
}

/** Operands packed for the fast path: lhs rows and rhs columns contiguous, with their sums. */
export interface PackedCpu {
  /** lhs as [M][K], row-major. */
  lhs: Int16Array;
  /** rhs as [N][K]: each column contiguous. */
  rhs: Int16Array;
  rowSums: Int32Array;
  colSums: Int32Array;
  /** The zero points that go with the packed values (+128 for requantized int8 operands). */
  lhsZeroPoint: (m: number) => number;
  rhsZeroPoint: (n: number) => number;
}

/** Packs both operands; with a bit depth, requantized in the uint8 domain (src/quant/lowbit.ts). */
export function packCpu(p: NormalizedProblem): PackedCpu {
  const { M, N, K, bitDepth } = p;
  const rounding = bitDepth && resolveRounding(bitDepth.rounding, K);
  const shiftL = bitDepth ? domainShift(p.lhsType === 'int8') : 0;
  const shiftR = bitDepth ? domainShift(p.rhsType === 'int8') : 0;
  const lhs = new Int16Array(M * K);
  const rhs = new Int16Array(N * K);
  const rowSums = new Int32Array(M);
  const colSums = new Int32Array(N);
  for (let m = 0; m < M; m++) {
    let sum = 0;
    for (let k = 0; k < K; k++) {
      let v = elementAt(p.lhs, m, k) + shiftL;
      if (rounding) v = requantize(v, bitDepth!.lhs, roundingOffset(rounding, m * K + k));
      sum += lhs[m * K + k] = v;
    }
    rowSums[m] = sum;
  }
  for (let n = 0; n < N; n++) {
    let sum = 0;
    for (let k = 0; k < K; k++) {
      let v = elementAt(p.rhs, k, n) + shiftR;
      if (rounding) v = requantize(v, bitDepth!.rhs, roundingOffset(rounding, k * N + n));
      sum += rhs[n * K + k] = v;
    }
    colSums[n] = sum;
  }
  return {
    lhs, rhs, rowSums, colSums,
    lhsZeroPoint: (m) => (channel(p.lhsZeroPoint, m) + shiftL) | 0,
    rhsZeroPoint: (n) => (channel(p.rhsZeroPoint, n) + shiftR) | 0,
  };
}

/**
 * Raw sums of products, register-blocked: 2 rows x 2 columns at a time, so each loaded lhs and rhs
 * value serves two products (an odd last row, e.g. M = 1, is a plain unrolled dot product per column). An odd last column is computed twice (the
 * block's second column clamps to it). Sums of 8-bit products stay exact in doubles
 * (|sum| < K * 2^16 << 2^53); storing into the Int32Array wraps them mod 2^32.
 */
function rawProducts(lhs: Int16Array, rhs: Int16Array, M: number, N: number, K: number): Int32Array {
  const raw = new Int32Array(M * N);
  let m = 0;
  for (; m + 1 < M; m += 2) {
    const a0 = m * K;
    const a1 = a0 + K;
    for (let n = 0; n < N; n += 2) {
      const n1 = Math.min(n + 1, N - 1);
      const b0 = n * K;
      const b1 = n1 * K;
      let s00 = 0;
      let s01 = 0;
      let s10 = 0;
      let s11 = 0;
      for (let k = 0; k < K; k++) {
        const x0 = lhs[a0 + k];
        const x1 = lhs[a1 + k];
        const y0 = rhs[b0 + k];
        const y1 = rhs[b1 + k];
        s00 += x0 * y0;
        s01 += x0 * y1;
        s10 += x1 * y0;
        s11 += x1 * y1;
      }
      raw[m * N + n] = s00;
      raw[m * N + n1] = s01;
      raw[(m + 1) * N + n] = s10;
      raw[(m + 1) * N + n1] = s11;
    }
  }
  if (m < M) {
    const a = m * K;
    for (let n = 0; n < N; n++) {
      const b = n * K;
      let sum = 0;
      let k = 0;
      for (; k + 4 <= K; k += 4) {
        sum += lhs[a + k] * rhs[b + k] + lhs[a + k + 1] * rhs[b + k + 1] + lhs[a + k + 2] * rhs[b + k + 2] + lhs[a + k + 3] * rhs[b + k + 3];
      }
      for (; k < K; k++) sum += lhs[a + k] * rhs[b + k];
      raw[m * N + n] = sum;
    }
  }
  return raw;
}

/**
 * The four-term expansion, mod 2^32 (with 8 bits every RMBCF below is the identity):
 *   acc = RMBCF(sum_k lhs*rhs) + RMBCF(rowSum[m] * -zR[n]) + RMBCF(colSum[n] * -zL[m]) + K*zL[m]*zR[n].
 */
export function cpuGemm(problem: GemmProblem): GemmResult {
  const p = normalizeProblem(problem);
  const { M, N, K } = p;
  const { lhs, rhs, rowSums, colSums, lhsZeroPoint, rhsZeroPoint } = packCpu(p);
  const f = unpackFractions(p.bitDepth?.lhs ?? 8, p.bitDepth?.rhs ?? 8);
  const raw = rawProducts(lhs, rhs, M, N, K);
  const dst = allocateDst(p.dstType, M * N);
  for (let m = 0; m < M; m++) {
    const zL = lhsZeroPoint(m);
    for (let n = 0; n < N; n++) {
      const zR = rhsZeroPoint(n);
      const acc =
        rmbcf(raw[m * N + n], f.xx) +
        rmbcf(Math.imul(rowSums[m], -zR | 0), f.x1) +
        rmbcf(Math.imul(colSums[n], -zL | 0), f.onex) +
        Math.imul(Math.imul(K, zL), zR);
      dst[dstIndex(p.dstOrder, M, N, m, n)] = applyOutputPipeline(p, acc | 0, m, n);
    }
  }
  return { data: dst, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType };
}
