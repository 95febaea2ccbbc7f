// The tanh stage (gemmlowp OutputStageTanh, src/types.ts), in the fixed point of src/quant/tanh.ts:
// validation derives its constants once per problem (tanhParams), which its evaluation and its lowered
// op (nine immediates) use. Defined once here (./stage.ts).

import { InputError } from '../../errors.ts';
import { type TanhParams, tanhParams, tanhStage } from '../../quant/tanh.ts';
import { INT32_MAX } from '../../types.ts';
import { checkInt32, checkRange } from '../check.ts';
import type { StageDefinition, StageOf } from './stage.ts';

const OPS = { tanh: 8 } as const;

export const tanh = {
  ops: OPS,
  fields: { realZeroAsInt32: 'int', realAmplitudeAsInt32: 'int' },
  validate(stage, f) {
    const zero = checkInt32(`${f}.realZeroAsInt32`, stage.realZeroAsInt32);
    const amplitude = checkRange(`${f}.realAmplitudeAsInt32`, stage.realAmplitudeAsInt32, 1, 2 ** 29);
    if (Math.abs(zero) + 8 * amplitude > INT32_MAX) {
      throw new InputError(f, `|realZeroAsInt32| + 8 * realAmplitudeAsInt32 must be <= ${INT32_MAX}`);
    }
    return tanhParams(zero, amplitude);
  },
  evaluate: (_stage, x, _c, t) => tanhStage(x, t),
  lower: (_stage, t) => ({
    op: OPS.tanh,
    axis: 'row',
    operands: [
      t.realZero,
      t.inputCutoffMin,
      t.inputCutoffMax,
      t.outputMin,
      t.outputMax,
      t.inverseAmplitudeNormalized,
      t.inverseAmplitudeNegExponent,
      t.amplitudeNormalized,
      t.amplitudeExponent,
    ].map((imm) => ({ imm })),
  }),
} satisfies StageDefinition<StageOf<'tanh'>, TanhParams>;
