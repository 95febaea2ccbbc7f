// The float32 requantization stage (XNNPACK's fp32 requantization, TFLite's default delegate;
// src/types.ts): saturateToInt32(rint(f32(f32(x) * scale)) + zeroPoint), scale a float32 scalar or a
// vector along its axis. Defined once here (./stage.ts): validation, evaluation (src/quant/float32.ts),
// lowering. Its lowered operand is the scale's float32 BITS as int32 (scalar or vector), which the GPU
// epilogue (src/wgsl/float32.wgsl, integers only) and the WebAssembly output stage reinterpret.

import { InputError } from '../../errors.ts';
import { float32Bits, requantizeFloat32 as requantize } from '../../quant/float32.ts';
import { checkAxis, checkInt32 } from '../check.ts';
import { brief } from '../echo.ts';
import { axisOf, type StageDefinition, type StageOf } from './stage.ts';

const OPS = { requantizeFloat32: 10 } as const;

export const requantizeFloat32 = {
  ops: OPS,
  fields: { scale: 'float32PerChannel', zeroPoint: 'int', axis: 'axis?' },
  validate(stage, f, shape) {
    const scale = stage.scale;
    if (scale instanceof Float32Array) {
      const axis = checkAxis(`${f}.axis`, stage.axis);
      if (scale.length !== shape.length(axis))
        throw new InputError(`${f}.scale`, `expected ${shape.length(axis)} values (${shape.what(axis)}), got ${scale.length}`);
      const bad = scale.findIndex((v) => !Number.isFinite(v));
      if (bad >= 0) throw new InputError(`${f}.scale[${bad}]`, `expected a finite float32, got ${scale[bad]}`);
    } else if (typeof scale !== 'number' || !Number.isFinite(scale) || Math.fround(scale) !== scale) {
      throw new InputError(
        `${f}.scale`,
        `expected a finite float32 value (Math.fround(scale) === scale) or a Float32Array, got ${brief(scale)}`,
      );
    }
    checkInt32(`${f}.zeroPoint`, stage.zeroPoint);
  },
  evaluate: (stage, x, c) => requantize(x, typeof stage.scale === 'number' ? stage.scale : stage.scale[c], stage.zeroPoint),
  lower: (stage) => ({
    op: OPS.requantizeFloat32,
    axis: axisOf(stage),
    operands: [
      { channel: typeof stage.scale === 'number' ? float32Bits(stage.scale) : new Int32Array(Float32Array.from(stage.scale).buffer) },
      { imm: stage.zeroPoint },
    ],
  }),
} satisfies StageDefinition<StageOf<'requantizeFloat32'>>;
