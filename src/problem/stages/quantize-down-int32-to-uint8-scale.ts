// The legacy scale stage (gemmlowp OutputStageQuantizeDownInt32ToUint8Scale(PC), src/types.ts):
// roundingDivideByPOT((x + offset) * multiplier, shift), int32 wrap on + and *. Defined once here
// (./stage.ts): validation, evaluation, lowering.

import { roundingDivideByPOT } from '../../quant/fixedpoint.ts';
import { checkRange } from '../check.ts';
import { checkChannels } from './scale-channels.ts';
import { axisOf, channel, type StageDefinition, type StageOf } from './stage.ts';

const OPS = { scaleToUint8: 2 } as const;

export const quantizeDownInt32ToUint8Scale = {
  ops: OPS,
  fields: { offset: 'perChannel', multiplier: 'perChannel', shift: 'int', axis: 'axis?' },
  validate(stage, f, shape) {
    checkChannels(
      f,
      stage.axis,
      [
        ['offset', stage.offset],
        ['multiplier', stage.multiplier],
      ],
      shape,
    );
    checkRange(`${f}.shift`, stage.shift, 0, 31);
  },
  evaluate: (stage, x, c) => roundingDivideByPOT(Math.imul((x + channel(stage.offset, c)) | 0, channel(stage.multiplier, c)), stage.shift),
  lower: (stage) => ({
    op: OPS.scaleToUint8,
    axis: axisOf(stage),
    operands: [{ channel: stage.offset }, { channel: stage.multiplier }, { imm: stage.shift }],
  }),
} satisfies StageDefinition<StageOf<'quantizeDownInt32ToUint8Scale'>>;
