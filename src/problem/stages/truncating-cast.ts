// The truncating cast (gemmlowp OutputStageTruncatingCastToUint8, src/types.ts): the low 8 bits, as
// uint8, which becomes the dst type; last stage only. Defined once here (./stage.ts).

import { InputError } from '../../errors.ts';
import { brief } from '../echo.ts';
import type { StageDefinition, StageOf } from './stage.ts';

const OPS = { truncate: 7 } as const;

export const truncatingCast = {
  ops: OPS,
  fields: { to: { oneOf: ['uint8'] } },
  validate(stage, f) {
    if (stage.to !== 'uint8') throw new InputError(`${f}.to`, `expected one of uint8, got ${brief(stage.to)}`);
  },
  castTo: () => 'uint8',
  evaluate: (_stage, x) => x & 0xff,
  lower: () => ({ op: OPS.truncate, axis: 'row', operands: [] }),
} satisfies StageDefinition<StageOf<'truncatingCast'>>;
