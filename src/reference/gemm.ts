// The normative CPU GEMM: referenceGemm computes the math of src/types.ts (and, for less-than-8-bit
// operands, src/quant/lowbit.ts) as a naive triple loop you can check by eye (ruy's reference_mul
// shape), then the output pipeline (./pipeline.ts). Every other implementation (the fast CPU path in
// src/cpu/gemm.ts, the WebGPU kernels) is tested against it, bit for bit.

import {
  requantize,
  resolveRounding,
  roundingMultiplyByConstantFraction as rmbcf,
  roundingOffset,
  unpackFractions,
} from '../quant/lowbit.ts';
import { UINT8_DOMAIN_SHIFT, type GemmProblem, type GemmResult } from '../types.ts';
import { allocateDst } from '../problem/dst.ts';
import { applyOutputPipeline } from './pipeline.ts';
import { channel, dstIndex, elementAt, normalizeProblem, type NormalizedProblem } from '../problem/problem.ts';

/**
 * 8-bit: acc[m][n] = sum_k (lhs[m][k] - zL[m]) * (rhs[k][n] - zR[n]), int32 wrap.
 * Less than 8 bits: the requantize-and-unpack formula of src/quant/lowbit.ts, term by term.
 * Then the output pipeline.
 */
export function referenceGemm(problem: GemmProblem): GemmResult {
  const p = normalizeProblem(problem);
  const { M, N, K, lhs, rhs } = p;
  const accumulator = p.bitDepth
    ? lowBitAccumulator(p)
    : (m: number, n: number) => {
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

/**
 * Naive less-than-8-bit accumulator: requantize every element, then the four RMBCF terms. Exported for
 * checks of single entries (bench/verify.ts samples large shapes with it).
 */
export function lowBitAccumulator(p: NormalizedProblem): (m: number, n: number) => number {
  const { N, K, bitDepth } = p;
  const rounding = resolveRounding(bitDepth!.rounding, K);
  const shiftL = p.lhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  const shiftR = p.rhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
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
      (rmbcf(xx, f.xx) +
        rmbcf(Math.imul(rowSum, -zR | 0), f.x1) +
        rmbcf(Math.imul(colSum, -zL | 0), f.onex) +
        Math.imul(Math.imul(zL, zR), K)) |
      0
    );
  };
}
