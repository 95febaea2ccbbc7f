// The CPU GEMM, in two implementations of the math in src/types.ts that must agree bit for bit:
//  - referenceGemm: naive and normative, a triple loop you can check by eye (ruy's reference_mul shape);
//  - cpuGemm: the production CPU path, gemmlowp's offset trick: pack the operands once with their
//    row/column sums, take raw sums of products, then add the three zero-point terms
//    (pack -> gemm -> output, as on the GPU). It is the fallback when there is no GPU.
// Both finish with the same output pipeline (./pipeline.ts).

import type { GemmProblem, GemmResult } from '../types.ts';
import { allocateDst, applyOutputPipeline } from './pipeline.ts';
import { channel, dstIndex, elementAt, normalizeProblem, type NormalizedProblem } from './problem.ts';

/** acc[m][n] = sum_k (lhs[m][k] - zL[m]) * (rhs[k][n] - zR[n]), int32 wrap; then the output pipeline. */
export function referenceGemm(problem: GemmProblem): GemmResult {
  const p = normalizeProblem(problem);
  const { M, N, K, lhs, rhs } = p;
  const dst = allocateDst(p.dstType, M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let acc = 0;
      for (let k = 0; k < K; k++) {
        const l = (elementAt(lhs, m, k) - channel(p.lhsZeroPoint, m)) | 0;
        const r = (elementAt(rhs, k, n) - channel(p.rhsZeroPoint, n)) | 0;
        acc = (acc + Math.imul(l, r)) | 0;
      }
      dst[dstIndex(p.dstOrder, M, N, m, n)] = applyOutputPipeline(p, acc, m, n);
    }
  }
  return { data: dst, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType };
}

/** Operands packed for the fast path: lhs rows and rhs columns contiguous, with their sums. */
export interface PackedCpu {
  /** lhs as [M][K], row-major. */
  lhs: Int16Array;
  /** rhs as [N][K]: each column contiguous. */
  rhs: Int16Array;
  rowSums: Int32Array;
  colSums: Int32Array;
}

export function packCpu(p: NormalizedProblem): PackedCpu {
  const { M, N, K } = p;
  const lhs = new Int16Array(M * K);
  const rhs = new Int16Array(N * K);
  const rowSums = new Int32Array(M);
  const colSums = new Int32Array(N);
  for (let m = 0; m < M; m++) {
    let sum = 0;
    for (let k = 0; k < K; k++) sum += lhs[m * K + k] = elementAt(p.lhs, m, k);
    rowSums[m] = sum;
  }
  for (let n = 0; n < N; n++) {
    let sum = 0;
    for (let k = 0; k < K; k++) sum += rhs[n * K + k] = elementAt(p.rhs, k, n);
    colSums[n] = sum;
  }
  return { lhs, rhs, rowSums, colSums };
}

/**
 * The four-term expansion, mod 2^32:
 *   acc = sum_k lhs*rhs - zR[n]*rowSum[m] - zL[m]*colSum[n] + K*zL[m]*zR[n].
 * Raw sums of 8-bit products stay exact in doubles (|sum| < K * 2^16 << 2^53) and are wrapped once.
 */
export function cpuGemm(problem: GemmProblem): GemmResult {
  const p = normalizeProblem(problem);
  const { M, N, K } = p;
  const { lhs, rhs, rowSums, colSums } = packCpu(p);
  const dst = allocateDst(p.dstType, M * N);
  for (let m = 0; m < M; m++) {
    const zL = channel(p.lhsZeroPoint, m);
    const lhsRow = m * K;
    for (let n = 0; n < N; n++) {
      const zR = channel(p.rhsZeroPoint, n);
      const rhsCol = n * K;
      let raw = 0;
      let k = 0;
      for (; k + 4 <= K; k += 4) {
        raw +=
          lhs[lhsRow + k] * rhs[rhsCol + k] +
          lhs[lhsRow + k + 1] * rhs[rhsCol + k + 1] +
          lhs[lhsRow + k + 2] * rhs[rhsCol + k + 2] +
          lhs[lhsRow + k + 3] * rhs[rhsCol + k + 3];
      }
      for (; k < K; k++) raw += lhs[lhsRow + k] * rhs[rhsCol + k];
      let acc = raw | 0;
      acc = (acc - Math.imul(zR, rowSums[m])) | 0;
      acc = (acc - Math.imul(zL, colSums[n])) | 0;
      acc = (acc + Math.imul(Math.imul(K, zL), zR)) | 0;
      dst[dstIndex(p.dstOrder, M, N, m, n)] = applyOutputPipeline(p, acc, m, n);
    }
  }
  return { data: dst, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType };
}
