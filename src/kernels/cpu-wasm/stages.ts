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
 * exponents e, channel by channel: SaturatingLeftShift by l = max(e, 0) is x * pow (pow = 2^l, wrapping)
 * where |x| <= sat = 2^(31-l) - 1, else saturated; RoundingDivideByPOT by r = max(-e, 0) is
 * floor(x * mul / 2^31) (mul = 2^(31-r), a 64-bit product, exact for r >= 1; r = 0 keeps x) plus one
 * where the remainder x & mask (mask = 2^r - 1) exceeds mask >> 1, plus one for negative x.
 */
export function exponentConstants(e: Int32Array): { pow: Int32Array; sat: Int32Array; mask: Int32Array; mul: Int32Array } {
  const n = e.length;
  const c = { pow: new Int32Array(n), sat: new Int32Array(n), mask: new Int32Array(n), mul: new Int32Array(n) };
  for (let j = 0; j < n; j++) {
    const l = Math.max(e[j], 0);
    const r = Math.max(-e[j], 0);
    c.pow[j] = 1 << l;
    c.sat[j] = ((1 << (31 - l)) - 1) | 0;
    c.mask[j] = ((1 << r) - 1) | 0;
    c.mul[j] = r === 0 ? 0 : 1 << (31 - r);
  }
  return c;
}

/**
 * Encodes the stages of p.pipeline before its first tanh. A stage whose operands are all scalars is
 * STAGE_MODE.scalar; one with any per-channel operand has all of them as vectors along its axis
 * (STAGE_MODE.row or .col), padded with zeros to Mp or Np so that four lanes can always be read.
 */
export function encodeProgram(p: NormalizedProblem, Mp: number, Np: number, base: number): OutputProgram {
  const tanhAt = p.pipeline.findIndex((s) => s.type === 'tanh');
  const covered = tanhAt < 0 ? p.pipeline.length : tanhAt;
  const records = new Int32Array(covered * STAGE_WORDS);
  const chunks: Int32Array[] = [];
  let words = 0;
  for (let i = 0; i < covered; i++) {
    const s = p.pipeline[i];
    const vectors = Object.values(s).some((v) => v instanceof Int32Array);
    const mode = !vectors ? STAGE_MODE.scalar : 'axis' in s && s.axis === 'col' ? STAGE_MODE.col : STAGE_MODE.row;
    const length = mode === STAGE_MODE.scalar ? 1 : mode === STAGE_MODE.col ? Np : Mp;
    /** The operand as a vector of the stage's length. */
    const vector = (v: PerChannel) => {
      const out = new Int32Array(length);
      if (typeof v === 'number') out.fill(v);
      else out.set(v.subarray(0, length));
      return out;
    };
    /** Appends a vector; returns its address. */
    const put = (v: Int32Array) => {
      chunks.push(v);
      words += v.length;
      return base + 4 * (words - v.length);
    };
    let w: number[];
    switch (s.type) {
      case 'bias':
        w = [OP.bias, put(vector(s.values))];
        break;
      case 'quantizeDownInt32ToUint8Scale':
        w = [OP.scaleToUint8, put(vector(s.offset)), put(vector(s.multiplier)), s.shift];
        break;
      case 'quantizeDownInt32ByFixedPoint':
        w = [OP.fixedPoint, s.multiplier, s.shift, s.offsetAfterShift];
        break;
      case 'scaleInt32ByFixedPointAndExponent':
        if (s.rounding === 'double') {
          const c = exponentConstants(vector(s.exponent));
          w = [OP.exponentDouble, put(vector(s.multiplier)), put(c.pow), put(c.sat), put(c.mask), put(c.mul), s.offsetAfterShift];
        } else w = [OP.exponentSingle, put(vector(s.multiplier)), put(vector(s.exponent)), s.offsetAfterShift];
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
  const params = new Int32Array(words);
  for (let i = 0, at = 0; i < chunks.length; at += chunks[i++].length) params.set(chunks[i], at);
  return { records, params, covered };
}
