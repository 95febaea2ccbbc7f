// The saturating cast (gemmlowp OutputStageSaturatingCastTo{Uint8,Int8,Int16}, src/types.ts): a clamp to
// the type's range (./clamp.ts's op), which becomes the dst type; last stage only. Defined once here
// (./stage.ts).

import { InputError } from '../../errors.ts';
import { brief } from '../echo.ts';
import { TYPE_RANGE } from '../../types.ts';
import { clamp } from './clamp.ts';
import type { StageDefinition, StageOf } from './stage.ts';

const TYPES = ['uint8', 'int8', 'int16'] as const;

export const saturatingCast = {
  ops: {},
  fields: { to: { oneOf: TYPES } },
  validate(stage, f) {
    if (!TYPES.includes(stage.to)) throw new InputError(`${f}.to`, `expected one of ${TYPES.join(', ')}, got ${brief(stage.to)}`);
  },
  castTo: (stage) => stage.to,
  evaluate(stage, x) {
    const [lo, hi] = TYPE_RANGE[stage.to];
    return Math.min(Math.max(x, lo), hi);
  },
  lower: (stage) => ({ op: clamp.ops.clamp, axis: 'row', operands: TYPE_RANGE[stage.to].map((imm) => ({ imm })) }),
} satisfies StageDefinition<StageOf<'saturatingCast'>>;
