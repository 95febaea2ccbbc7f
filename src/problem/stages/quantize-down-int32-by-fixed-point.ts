// The fixed-point stage (gemmlowp OutputStageQuantizeDownInt32ByFixedPoint, src/types.ts):
// roundingDivideByPOT(saturatingRoundingDoublingHighMul(x, multiplier), shift) + offsetAfterShift.
// Defined once here (./stage.ts): validation, evaluation, lowering.

import { roundingDivideByPOT, saturatingRoundingDoublingHighMul } from '../../quant/fixedpoint.ts';
import { checkInt32, checkRange } from '../check.ts';
import type { StageDefinition, StageOf } from './stage.ts';

const OPS = { fixedPoint: 3 } as const;

export const quantizeDownInt32ByFixedPoint = {
  ops: OPS,
  fields: { multiplier: 'int', shift: 'int', offsetAfterShift: 'int' },
  validate(stage, f) {
    checkInt32(`${f}.multiplier`, stage.multiplier);
    checkRange(`${f}.shift`, stage.shift, 0, 31);
    checkInt32(`${f}.offsetAfterShift`, stage.offsetAfterShift);
  },
  evaluate: (stage, x) =>
    (roundingDivideByPOT(saturatingRoundingDoublingHighMul(x, stage.multiplier), stage.shift) + stage.offsetAfterShift) | 0,
  lower: (stage) => ({
    op: OPS.fixedPoint,
    axis: 'row',
    operands: [{ imm: stage.multiplier }, { imm: stage.shift }, { imm: stage.offsetAfterShift }],
  }),
} satisfies StageDefinition<StageOf<'quantizeDownInt32ByFixedPoint'>>;
