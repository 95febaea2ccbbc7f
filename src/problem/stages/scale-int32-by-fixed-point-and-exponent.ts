// The scale-by-exponent stage (gemmlowp OutputStageScaleInt32ByFixedPointAndExponent(PC), src/types.ts):
// multiplyByQuantizedMultiplier(x, multiplier, exponent, rounding) + offsetAfterShift, with double
// (gemmlowp; TFLite's reference kernels), double-up (TFLite's optimized kernels, through ruy) or single
// (TFLITE_SINGLE_ROUNDING) rounding, one op each. Defined once here
// (./stage.ts): validation, evaluation, lowering.

import { InputError } from '../../errors.ts';
import { multiplyByQuantizedMultiplier } from '../../quant/fixedpoint.ts';
import { checkInt32, checkRange } from '../check.ts';
import { brief } from '../echo.ts';
import { checkChannels } from './scale-channels.ts';
import { axisOf, channel, type StageDefinition, type StageOf } from './stage.ts';

const OPS = { exponentDouble: 4, exponentSingle: 5, exponentDoubleUp: 9 } as const;
const ROUNDINGS = ['double', 'double-up', 'single'] as const;

export const scaleInt32ByFixedPointAndExponent = {
  ops: OPS,
  fields: {
    multiplier: 'perChannel',
    exponent: 'perChannel',
    offsetAfterShift: 'int',
    rounding: { oneOf: ROUNDINGS, default: 'double' },
    axis: 'axis?',
  },
  validate(stage, f, shape) {
    checkChannels(
      f,
      stage.axis,
      [
        ['multiplier', stage.multiplier],
        ['exponent', stage.exponent],
      ],
      shape,
    );
    const rounding = stage.rounding === undefined ? 'double' : stage.rounding; // null is not absent
    if (!ROUNDINGS.includes(rounding)) {
      throw new InputError(`${f}.rounding`, `expected "double", "double-up" or "single", got ${brief(stage.rounding)}`);
    }
    checkInt32(`${f}.offsetAfterShift`, stage.offsetAfterShift);
    const hi = rounding === 'single' ? 30 : 31;
    if (stage.exponent instanceof Int32Array) {
      // (the field name is made only for the element that fails: this runs on every call)
      const bad = stage.exponent.findIndex((e) => e < -31 || e > hi);
      if (bad >= 0) checkRange(`${f}.exponent[${bad}]`, stage.exponent[bad], -31, hi);
    } else checkRange(`${f}.exponent`, stage.exponent, -31, hi);
  },
  evaluate: (stage, x, c) =>
    (multiplyByQuantizedMultiplier(x, channel(stage.multiplier, c), channel(stage.exponent, c), stage.rounding) + stage.offsetAfterShift) |
    0,
  lower: (stage) => ({
    op: stage.rounding === 'single' ? OPS.exponentSingle : stage.rounding === 'double-up' ? OPS.exponentDoubleUp : OPS.exponentDouble,
    axis: axisOf(stage),
    operands: [{ channel: stage.multiplier }, { channel: stage.exponent }, { imm: stage.offsetAfterShift }],
  }),
} satisfies StageDefinition<StageOf<'scaleInt32ByFixedPointAndExponent'>>;
