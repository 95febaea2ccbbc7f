// The bias stage (gemmlowp OutputStageBiasAddition, src/types.ts): x + values[c], int32 wrap, values a
// vector along the stage's axis. Defined once here (./stage.ts): validation, evaluation, lowering.

import type { StageDefinition, StageOf } from './stage.ts';
import { checkAxis, checkPerChannel } from '../check.ts';
import { InputError } from '../../errors.ts';

const OPS = { bias: 1 } as const;

export const bias = {
  ops: OPS,
  fields: { values: 'vector', axis: 'axis' },
  validate(stage, f, shape) {
    const axis = checkAxis(`${f}.axis`, stage.axis);
    if (!(stage.values instanceof Int32Array)) throw new InputError(`${f}.values`, 'expected an int32 vector');
    checkPerChannel(`${f}.values`, stage.values, shape.length(axis), shape.what(axis));
  },
  evaluate: (stage, x, c) => (x + stage.values[c]) | 0,
  lower: (stage) => ({ op: OPS.bias, axis: stage.axis, operands: [{ channel: stage.values }] }),
} satisfies StageDefinition<StageOf<'bias'>>;
