// The output program of the WebAssembly kernels (pack -> gemm -> OUTPUT): the stages of src/types.ts,
// as validated by normalizeProblem, turned into the records that gen-output.ts interprets (layout.ts OP,
// STAGE_WORDS words each) plus the per-channel vectors they point to, laid out from a given address.
// The module runs the stages four columns at a time in SIMD lanes, and WebAssembly SIMD shifts only by
// one count for all lanes, so a per-channel exponent is turned here into the per-channel constants of
// its shifts (below, exponentDouble). The program runs in WebAssembly up to the first tanh stage; from
// there on (a rare stage: fixed-point exp and Newton division per element) the runtime applies the rest
// of the pipeline in JavaScript, with the normative src/reference/pipeline.ts, on the int32 values the
// module wrote.

import type { NormalizedProblem } from '../../spec/problem.ts';
import { TYPE_RANGE, type PerChannel } from '../../types.ts';
import { OP, STAGE_MODE, STAGE_WORDS } from './layout.ts';

export interface OutputProgram {
  /** STAGE_WORDS words per stage, pointers already absolute. */
  records: Int32Array;
  /** The words at `base` that the records point into. */
  params: Int32Array;
  /** How many stages of p.pipeline the program covers (the rest, from a tanh on, run in JavaScript). */
  covered: number;
}

/**
 * The constants of MultiplyByQuantizedMultiplier with double rounding (src/quant/fixedpoint.ts) for
 * exponent e: SaturatingLeftShift by l = max(e, 0) is x * 2^l (wrapping) where |x| <= 2^(31-l) - 1,
 * else saturated; RoundingDivideByPOT by r = max(-e, 0) is floor(x * 2^(31-r) / 2^31) (a 64-bit product,
 * exact for r >= 1; r = 0 keeps x) rounded up where the remainder x & (2^r - 1) exceeds
 * (2^r - 1) >> 1, plus one for negative x.
 */
export function exponentConstants(e: number): { pow: number; sat: number; mask: number; mul: number } {
  const l = Math.max(e, 0);
  const r = Math.max(-e, 0);
  return { pow: (2 ** l) | 0, sat: (2 ** (31 - l) - 1) | 0, mask: (2 ** r - 1) | 0, mul: r === 0 ? 0 : (2 ** (31 - r)) | 0 };
}

/**
 * Encodes the stages of p.pipeline before its first tanh. A stage whose operands are all scalars is
 * STAGE_MODE.scalar; one with any per-channel operand has all of them as vectors along its axis
 * (STAGE_MODE.row or .col), padded to Mp or Np so that four lanes can always be read.
 */
export function encodeProgram(p: NormalizedProblem, Mp: number, Np: number, base: number): OutputProgram {
  const tanhAt = p.pipeline.findIndex((s) => s.type === 'tanh');
  const covered = tanhAt < 0 ? p.pipeline.length : tanhAt;
  const records = new Int32Array(covered * STAGE_WORDS);
  const params: number[] = [];
  for (let i = 0; i < covered; i++) {
    const s = p.pipeline[i];
    const vectors = Object.values(s).some((v) => v instanceof Int32Array);
    const mode = !vectors ? STAGE_MODE.scalar : 'axis' in s && s.axis === 'col' ? STAGE_MODE.col : STAGE_MODE.row;
    const length = mode === STAGE_MODE.scalar ? 1 : mode === STAGE_MODE.col ? Np : Mp;
    const at = (v: PerChannel, j: number) => (typeof v === 'number' ? v : j < v.length ? v[j] : 0);
    /** Appends f(j) for each channel j of the stage; returns its address. */
    const put = (f: (j: number) => number) => {
      const ptr = base + 4 * params.length;
      for (let j = 0; j < length; j++) params.push(f(j));
      return ptr;
    };
    let w: number[];
    switch (s.type) {
      case 'bias':
        w = [OP.bias, put((j) => at(s.values, j))];
        break;
      case 'quantizeDownInt32ToUint8Scale':
        w = [OP.scaleToUint8, put((j) => at(s.offset, j)), put((j) => at(s.multiplier, j)), s.shift];
        break;
      case 'quantizeDownInt32ByFixedPoint':
        w = [OP.fixedPoint, s.multiplier, s.shift, s.offsetAfterShift];
        break;
      case 'scaleInt32ByFixedPointAndExponent':
        if (s.rounding === 'double') {
          const c = (j: number) => exponentConstants(at(s.exponent, j));
          w = [
            OP.exponentDouble,
            put((j) => at(s.multiplier, j)),
            put((j) => c(j).pow),
            put((j) => c(j).sat),
            put((j) => c(j).mask),
            put((j) => c(j).mul),
            s.offsetAfterShift,
          ];
        } else w = [OP.exponentSingle, put((j) => at(s.multiplier, j)), put((j) => at(s.exponent, j)), s.offsetAfterShift];
        break;
      case 'clamp':
        w = [OP.clamp, s.min, s.max];
        break;
      case 'saturatingCast':
        w = [OP.clamp, ...TYPE_RANGE[s.to]];
        break;
      case 'truncatingCast':
        w = [OP.truncate];
        break;
      case 'tanh':
        throw new Error('unreachable: tanh ends the program');
    }
    // [op, mode, a, b, c, d, e, f]
    records.set([w[0], mode, ...w.slice(1)], i * STAGE_WORDS);
  }
  return { records, params: Int32Array.from(params), covered };
}
