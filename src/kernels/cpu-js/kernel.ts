// The JS CPU kernel 'cpu-js' (the fallback when there is no GPU), gemmlowp's offset trick, with the same
// stages as the GPU: PACK both operands once with their row/column sums (requantized for
// less-than-8-bit operands), GEMM the raw sums of products (register-blocked), then OUTPUT: the
// four-term zero-point expansion and the output pipeline (src/reference/pipeline.ts). It is tested
// against the normative src/reference/gemm.ts, bit for bit.

import {
  requantize,
  resolveRounding,
  roundingMultiplyByConstantFraction as rmbcf,
  roundingOffset,
  unpackFractions,
} from '../../quant/lowbit.ts';
import { applyOutputPipeline } from '../../reference/pipeline.ts';
import { allocateDst, allocationLimit } from '../../problem/dst.ts';
import { channel, dstIndex, normalizeProblem, type NormalizedProblem } from '../../problem/problem.ts';
import { UINT8_DOMAIN_SHIFT, type GemmProblem, type GemmResult } from '../../types.ts';
import type { CpuGemmKernel } from '../types.ts';

/** Operands packed for the fast path: lhs rows and rhs columns contiguous, with their sums. */
interface PackedCpu {
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

/**
 * One operand as [outer][depth] (lhs: rows x K; rhs: columns x K) with its sums. Element (o, k) of the
 * source is at o*depth + k when k is contiguous (lhs row-major, rhs col-major), else at k*outer + o.
 * `requant` maps a uint8-domain value and its row-major linear index (lhs m*K + k, rhs k*N + n).
 */
function packOperand(
  data: ArrayLike<number>,
  outer: number,
  depth: number,
  kContiguous: boolean,
  shift: number,
  linear: (o: number, k: number) => number,
  requant: ((v: number, i: number) => number) | null,
): { packed: Int16Array; sums: Int32Array } {
  const packed = new Int16Array(outer * depth);
  if (kContiguous && shift === 0 && !requant) {
    packed.set(data); // already [outer][depth]: one typed-array copy
  } else {
    for (let k = 0; k < depth; k++) {
      for (let o = 0; o < outer; o++) {
        const v = data[kContiguous ? o * depth + k : k * outer + o] + shift;
        packed[o * depth + k] = requant ? requant(v, linear(o, k)) : v;
      }
    }
  }
  const sums = new Int32Array(outer);
  for (let o = 0; o < outer; o++) {
    let sum = 0;
    for (let k = o * depth; k < (o + 1) * depth; k++) sum += packed[k];
    sums[o] = sum;
  }
  return { packed, sums };
}

/** Packs both operands; with a bit depth, requantized in the uint8 domain (src/quant/lowbit.ts). */
function packCpu(p: NormalizedProblem): PackedCpu {
  const { M, N, K, bitDepth } = p;
  const rounding = bitDepth && resolveRounding(bitDepth.rounding, K);
  const shiftL = bitDepth && p.lhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  const shiftR = bitDepth && p.rhsType === 'int8' ? UINT8_DOMAIN_SHIFT : 0;
  const requant = (bits: number) => (rounding ? (v: number, i: number) => requantize(v, bits, roundingOffset(rounding, i)) : null);
  const lhs = packOperand(p.lhs.data, M, K, p.lhs.order === 'row-major', shiftL, (m, k) => m * K + k, requant(bitDepth?.lhs ?? 8));
  const rhs = packOperand(p.rhs.data, N, K, p.rhs.order === 'col-major', shiftR, (n, k) => k * N + n, requant(bitDepth?.rhs ?? 8));
  return {
    lhs: lhs.packed,
    rhs: rhs.packed,
    rowSums: lhs.sums,
    colSums: rhs.sums,
    lhsZeroPoint: (m) => (channel(p.lhsZeroPoint, m) + shiftL) | 0,
    rhsZeroPoint: (n) => (channel(p.rhsZeroPoint, n) + shiftR) | 0,
  };
}

/**
 * Raw sums of products, register-blocked: 2 rows x 2 columns at a time, so each loaded lhs and rhs
 * value serves two products (an odd last row, e.g. M = 1, is a plain unrolled dot product per
 * column). An odd last column is computed twice (the block's second column clamps to it). Sums of 8-bit products stay exact in doubles
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
        sum +=
          lhs[a + k] * rhs[b + k] + lhs[a + k + 1] * rhs[b + k + 1] + lhs[a + k + 2] * rhs[b + k + 2] + lhs[a + k + 3] * rhs[b + k + 3];
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
function cpuJsGemm(p: NormalizedProblem): GemmResult {
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

/** cpuJsGemm on a problem as the user wrote it (validated here). */
export function cpuGemm(problem: GemmProblem): GemmResult {
  const p = normalizeProblem(problem);
  try {
    return cpuJsGemm(p);
  } catch (e) {
    throw allocationLimit(e, "the CPU path's arrays");
  }
}

/** The JS fast path as a CPU kernel of the registry: works everywhere, single-threaded. */
export const cpuJsKernel: CpuGemmKernel = {
  id: 'cpu-js',
  backend: 'cpu',
  supports: () => true,
  run: async (p) => cpuJsGemm(p),
};
