// The output program of the WebAssembly kernels (pack -> gemm -> OUTPUT): the lowered output program
// (src/problem/stages/pipeline.ts lowerPipeline, the one the GPU epilogue runs too) as the records that
// gen/gen-output.ts interprets ([op, mode, operands...], STAGE_WORDS words each, op a STAGE_OP code)
// plus the per-channel vectors they point to, laid out from a given address.
// The module runs the stages four columns at a time in SIMD lanes, and WebAssembly SIMD shifts only by
// one count for all lanes, so a per-channel exponent is turned here into the per-channel constants of
// its shifts (below, exponentDouble). The program runs in WebAssembly up to the first tanh stage; from
// there on (a rare stage: fixed-point exp and Newton division per element) the runtime applies the rest
// of the pipeline in JavaScript, with the normative src/reference/pipeline.ts, on the int32 values the
// module wrote.

import type { NormalizedProblem } from '../../problem/problem.ts';
import { lowerPipeline, STAGE_OP } from '../../problem/stages/pipeline.ts';
import type { PerChannel } from '../../types.ts';
import { STAGE_MODE, STAGE_WORDS } from './layout.ts';

export interface OutputProgram {
  /** How many stages of p.pipeline the program covers (the rest, from a tanh on, run in JavaScript). */
  covered: number;
  /** Words of the per-channel vectors, and of the records (STAGE_WORDS per stage). */
  paramWords: number;
  recordWords: number;
  /**
   * Writes the vectors into `params` (its word 0 at byte address `base`, where the records' pointers
   * point) and the records into `records`: straight into the kernels' memory, nothing allocated per channel.
   */
  write(params: Int32Array, base: number, records: Int32Array): void;
}

/**
 * The constants of MultiplyByQuantizedMultiplier with double rounding (src/quant/fixedpoint.ts) for
 * exponent e: SaturatingLeftShift by l = max(e, 0) is x * pow (pow = 2^l, wrapping) where
 * |x| <= sat = 2^(31-l) - 1, else saturated; RoundingDivideByPOT by r = max(-e, 0) is
 * floor(x * mul / 2^31) (mul = 2^(31-r), a 64-bit product, exact for r >= 1; r = 0 keeps x) plus one
 * where the remainder x & mask (mask = 2^r - 1) exceeds mask >> 1, plus one for negative x.
 */
export const exponentConstants = {
  pow: (e: number) => 1 << Math.max(e, 0),
  sat: (e: number) => ((1 << (31 - Math.max(e, 0))) - 1) | 0,
  mask: (e: number) => ((1 << Math.max(-e, 0)) - 1) | 0,
  mul: (e: number) => (e >= 0 ? 0 : 1 << (31 + e)),
};

/** One record word: an immediate, or the address of a vector at word `at` of the params. */
type Word = { imm: number } | { at: number };

/**
 * Encodes the ops of p's lowered program before its first tanh. An op whose channel operands are all
 * scalars is STAGE_MODE.scalar; one with any per-channel operand has all of them as vectors along its
 * axis (STAGE_MODE.row or .col), padded with zeros to Mp or Np so that four lanes can always be read.
 */
export function encodeProgram(p: NormalizedProblem, Mp: number, Np: number): OutputProgram {
  const program = lowerPipeline(p);
  const tanhAt = program.findIndex((s) => s.op === STAGE_OP.tanh);
  const covered = tanhAt < 0 ? program.length : tanhAt;
  const stages: { op: number; mode: number; words: Word[] }[] = [];
  const writers: ((params: Int32Array) => void)[] = [];
  let paramWords = 0;
  for (const { op, axis, operands } of program.slice(0, covered)) {
    const vectors = operands.some((o) => 'channel' in o && o.channel instanceof Int32Array);
    const mode = !vectors ? STAGE_MODE.scalar : axis === 'col' ? STAGE_MODE.col : STAGE_MODE.row;
    const length = mode === STAGE_MODE.scalar ? 1 : mode === STAGE_MODE.col ? Np : Mp;
    /** Reserves a vector of the stage's length holding v (zero-padded) at write time; its record word. */
    const vector = (v: PerChannel): Word => {
      const at = paramWords;
      paramWords += length;
      writers.push((params) => {
        const out = params.subarray(at, at + length);
        if (typeof v === 'number') out.fill(v);
        else out.fill(0).set(v.subarray(0, length));
      });
      return { at };
    };
    /** Reserves the four vectors of exponentConstants for exponents v (one loop at write time); their record words. */
    const constants = (v: PerChannel): Word[] => {
      const at = paramWords;
      paramWords += 4 * length;
      writers.push((params) => {
        const { pow, sat, mask, mul } = exponentConstants;
        for (let j = 0; j < length; j++) {
          const e = typeof v === 'number' ? v : j < v.length ? v[j] : 0;
          params[at + j] = pow(e);
          params[at + length + j] = sat(e);
          params[at + 2 * length + j] = mask(e);
          params[at + 3 * length + j] = mul(e);
        }
      });
      return [0, 1, 2, 3].map((i) => ({ at: at + i * length }));
    };
    // A channel operand is a vector (or a scalar's vector) at write time; an immediate is itself. The one
    // exception is the exponent of exponentDouble (operand 1): its shifts' four constant vectors.
    const words = operands.flatMap((o, i): Word[] => {
      if ('imm' in o) return [{ imm: o.imm }];
      return op === STAGE_OP.exponentDouble && i === 1 ? constants(o.channel) : [vector(o.channel)];
    });
    stages.push({ op, mode, words });
  }
  return {
    covered,
    paramWords,
    recordWords: covered * STAGE_WORDS,
    write(params, base, records) {
      for (const w of writers) w(params);
      stages.forEach(({ op, mode, words }, i) => {
        // [op, mode, a, b, c, d, e, f]
        records.set([op, mode, ...words.map((w) => ('imm' in w ? w.imm : base + 4 * w.at))], i * STAGE_WORDS);
      });
    },
  };
}
