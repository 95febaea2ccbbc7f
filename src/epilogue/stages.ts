// The output pipeline as data for the fused OUTPUT stage (pack -> gemm -> OUTPUT): every stage of
// src/types.ts becomes one STAGE_WORDS-word i32 record that ./epilogue.wgsl interprets (record kinds
// from src/wgsl/codes.ts; the field positions below are the ones read there), followed by the
// per-channel vectors the records point to and the zero-point vectors. One shader serves every
// pipeline; only this buffer changes.

import type { NormalizedProblem } from '../spec/problem.ts';
import { TYPE_RANGE, UINT8_DOMAIN_SHIFT, type PerChannel } from '../types.ts';
import { float32Bits } from '../quant/float32.ts';
import { STAGE_KIND_CODE as KIND, MULTIPLIER_ROUNDING_CODE, STAGE_WORDS } from '../wgsl/codes.ts';

export interface EncodedStages {
  /** Records, then vectors. Never empty (a storage binding cannot be). */
  data: Int32Array<ArrayBuffer>;
  stageCount: number;
  /** uint8-domain zero points: scalar value, or the vector's offset in `data` (offset -1 for scalars). */
  lhsZeroPoint: number;
  lhsZeroPointOffset: number;
  rhsZeroPoint: number;
  rhsZeroPointOffset: number;
}

/** int8 operands are packed as v + 128 (pack.wgsl), so their zero points move by 128, mod 2^32. */
function shiftZeroPoint(z: PerChannel, signed: boolean): PerChannel {
  if (!signed) return z;
  return typeof z === 'number' ? (z + UINT8_DOMAIN_SHIFT) | 0 : z.map((v) => (v + UINT8_DOMAIN_SHIFT) | 0);
}

export function encodeStages(p: NormalizedProblem): EncodedStages {
  const records: number[] = [];
  const vectors: number[] = [];
  const base = () => p.pipeline.length * STAGE_WORDS;
  /** [isVector, value-or-offset] for a scalar-or-vector parameter. */
  const param = (v: PerChannel): [number, number] => {
    if (typeof v === 'number') return [0, v];
    const offset = base() + vectors.length;
    for (const x of v) vectors.push(x);
    return [1, offset];
  };
  p.pipeline.forEach((stage, i) => {
    const axis = 'axis' in stage && stage.axis === 'col' ? 1 : 0;
    let fields: number[];
    switch (stage.type) {
      case 'bias':
        fields = [KIND.bias, axis, param(stage.values)[1]];
        break;
      case 'quantizeDownInt32ToUint8Scale':
        fields = [KIND.quantizeDownInt32ToUint8Scale, axis, ...param(stage.offset), ...param(stage.multiplier), stage.shift];
        break;
      case 'quantizeDownInt32ByFixedPoint':
        fields = [KIND.quantizeDownInt32ByFixedPoint, 0, stage.multiplier, stage.shift, stage.offsetAfterShift];
        break;
      case 'scaleInt32ByFixedPointAndExponent':
        fields = [
          KIND.scaleInt32ByFixedPointAndExponent,
          axis,
          ...param(stage.multiplier),
          ...param(stage.exponent),
          stage.offsetAfterShift,
          MULTIPLIER_ROUNDING_CODE[stage.rounding ?? 'double'],
        ];
        break;
      case 'requantizeFloat32': {
        // the scale as its float32 bits
        const bits = typeof stage.scale === 'number' ? float32Bits(stage.scale) : new Int32Array(Float32Array.from(stage.scale).buffer);
        fields = [KIND.requantizeFloat32, axis, ...param(bits), stage.zeroPoint];
        break;
      }
      case 'clamp':
        fields = [KIND.clamp, 0, stage.min, stage.max];
        break;
      case 'saturatingCast':
        fields = [KIND.clamp, 0, ...TYPE_RANGE[stage.to]];
        break;
      case 'truncatingCast':
        fields = [KIND.truncatingCast, 0];
        break;
      case 'tanh': {
        const t = p.tanh.get(i)!;
        fields = [
          KIND.tanh,
          0,
          t.realZero,
          t.inputCutoffMin,
          t.inputCutoffMax,
          t.outputMin,
          t.outputMax,
          t.inverseAmplitudeNormalized,
          t.inverseAmplitudeNegExponent,
          t.amplitudeNormalized,
          t.amplitudeExponent,
        ];
        break;
      }
    }
    records.push(...fields, ...new Array(STAGE_WORDS - fields.length).fill(0));
  });
  const [lhsVec, lhsZ] = param(shiftZeroPoint(p.lhsZeroPoint, p.lhsType === 'int8'));
  const [rhsVec, rhsZ] = param(shiftZeroPoint(p.rhsZeroPoint, p.rhsType === 'int8'));
  const data = Int32Array.from([...records, ...vectors, 0]);
  return {
    data,
    stageCount: p.pipeline.length,
    lhsZeroPoint: lhsVec ? 0 : lhsZ,
    lhsZeroPointOffset: lhsVec ? lhsZ : -1,
    rhsZeroPoint: rhsVec ? 0 : rhsZ,
    rhsZeroPointOffset: rhsVec ? rhsZ : -1,
  };
}
