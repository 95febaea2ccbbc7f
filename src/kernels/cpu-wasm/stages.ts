// The output program of the WebAssembly kernels (pack -> gemm -> OUTPUT): the stages of src/types.ts,
// as validated by normalizeProblem, turned into the records that gen-output.ts interprets (layout.ts OP,
// STAGE_WORDS words each) plus the per-channel vectors they point to, laid out from a given address.
// The program runs in WebAssembly up to the first tanh stage; from there on (a rare stage: fixed-point
// exp and Newton division per element) the runtime applies the rest of the pipeline in JavaScript, with
// the normative src/reference/pipeline.ts, on the int32 values the module wrote.

import type { NormalizedProblem } from '../../spec/problem.ts';
import { TYPE_RANGE, type Axis, type PerChannel } from '../../types.ts';
import { OP, STAGE_WORDS } from './layout.ts';

export interface OutputProgram {
  /** STAGE_WORDS words per stage, pointers already absolute. */
  records: Int32Array;
  /** The words at `base` that the records point into. */
  params: Int32Array;
  /** How many stages of p.pipeline the program covers (the rest, from a tanh on, run in JavaScript). */
  covered: number;
}

/** Encodes the stages of p.pipeline before its first tanh; vectors are padded to Mp (row) or Np (col). */
export function encodeProgram(p: NormalizedProblem, Mp: number, Np: number, base: number): OutputProgram {
  const tanhAt = p.pipeline.findIndex((s) => s.type === 'tanh');
  const covered = tanhAt < 0 ? p.pipeline.length : tanhAt;
  const records = new Int32Array(covered * STAGE_WORDS);
  const params: number[] = [];
  /** Appends a scalar (stride 0) or a vector along axis (stride 4, zero-padded); returns [ptr, stride]. */
  const put = (v: PerChannel, axis: Axis): [number, number] => {
    const ptr = base + 4 * params.length;
    if (typeof v === 'number') {
      params.push(v);
      return [ptr, 0];
    }
    const padded = axis === 'row' ? Mp : Np;
    for (let i = 0; i < padded; i++) params.push(i < v.length ? v[i] : 0);
    return [ptr, 4];
  };
  for (let i = 0; i < covered; i++) {
    const s = p.pipeline[i];
    const axis: Axis = 'axis' in s && s.axis === 'col' ? 'col' : 'row';
    let w: number[];
    switch (s.type) {
      case 'bias':
        w = [OP.bias, ...put(s.values, axis)];
        break;
      case 'quantizeDownInt32ToUint8Scale':
        w = [OP.scaleToUint8, ...put(s.offset, axis), ...put(s.multiplier, axis), s.shift];
        break;
      case 'quantizeDownInt32ByFixedPoint':
        w = [OP.fixedPoint, s.multiplier, s.shift, s.offsetAfterShift];
        break;
      case 'scaleInt32ByFixedPointAndExponent':
        w = [
          s.rounding === 'double' ? OP.exponentDouble : OP.exponentSingle,
          ...put(s.multiplier, axis),
          ...put(s.exponent, axis),
          s.offsetAfterShift,
        ];
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
    // [op, axis, a, b, c, d, e, f]
    records.set([w[0], axis === 'col' ? 1 : 0, ...w.slice(1)], i * STAGE_WORDS);
  }
  return { records, params: Int32Array.from(params), covered };
}
