// The clamp stage (gemmlowp OutputStageClamp, src/types.ts): min(max(x, min), max). Defined once here
// (./stage.ts): validation, evaluation, lowering.

import { InputError } from '../../errors.ts';
import { checkInt32 } from '../check.ts';
import type { StageDefinition, StageOf } from './stage.ts';

const OPS = { clamp: 6 } as const;

export const clamp = {
  ops: OPS,
  fields: { min: 'int', max: 'int' },
  validate(stage, f) {
    checkInt32(`${f}.min`, stage.min);
    checkInt32(`${f}.max`, stage.max);
    if (stage.min > stage.max) throw new InputError(`${f}.min`, `min ${stage.min} > max ${stage.max}`);
  },
  evaluate: (stage, x) => Math.min(Math.max(x, stage.min), stage.max),
  lower: (stage) => ({ op: OPS.clamp, axis: 'row', operands: [{ imm: stage.min }, { imm: stage.max }] }),
} satisfies StageDefinition<StageOf<'clamp'>>;
