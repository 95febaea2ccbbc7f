// The output pipeline on the CPU (pack -> gemm -> OUTPUT): each stage of src/types.ts applied to one
// int32 accumulator, in order, exactly as gemmlowp's internal/output.h. Shared by the naive reference and
// the fast CPU path (they differ only in how the accumulators are computed); the GPU's fused output stage
// (shaders/output.wgsl) is tested against it.

import { multiplyByQuantizedMultiplier, roundingDivideByPOT, saturatingRoundingDoublingHighMul } from '../quant/fixedpoint.ts';
import { requantizeFloat32 } from '../quant/float32.ts';
import { tanhStage } from '../quant/tanh.ts';
import { TYPE_RANGE } from '../types.ts';
import { channel, type NormalizedProblem } from '../spec/problem.ts';

/** Applies p.pipeline to acc, the accumulator of dst element (m, n). Returns the int32 (or cast) value. */
export function applyOutputPipeline(p: NormalizedProblem, acc: number, m: number, n: number): number {
  let x = acc;
  for (let i = 0; i < p.pipeline.length; i++) {
    const stage = p.pipeline[i];
    const c = 'axis' in stage && stage.axis === 'col' ? n : m;
    switch (stage.type) {
      case 'bias':
        x = (x + stage.values[c]) | 0;
        break;
      case 'quantizeDownInt32ToUint8Scale':
        x = roundingDivideByPOT(Math.imul((x + channel(stage.offset, c)) | 0, channel(stage.multiplier, c)), stage.shift);
        break;
      case 'quantizeDownInt32ByFixedPoint':
        x = (roundingDivideByPOT(saturatingRoundingDoublingHighMul(x, stage.multiplier), stage.shift) + stage.offsetAfterShift) | 0;
        break;
      case 'scaleInt32ByFixedPointAndExponent':
        x = multiplyByQuantizedMultiplier(x, channel(stage.multiplier, c), channel(stage.exponent, c), stage.rounding);
        x = (x + stage.offsetAfterShift) | 0;
        break;
      case 'requantizeFloat32':
        x = requantizeFloat32(x, typeof stage.scale === 'number' ? stage.scale : stage.scale[c], stage.zeroPoint);
        break;
      case 'clamp':
        x = Math.min(Math.max(x, stage.min), stage.max);
        break;
      case 'tanh':
        x = tanhStage(x, p.tanh.get(i)!);
        break;
      case 'saturatingCast': {
        const [lo, hi] = TYPE_RANGE[stage.to];
        x = Math.min(Math.max(x, lo), hi);
        break;
      }
      case 'truncatingCast':
        x = x & 0xff;
        break;
    }
  }
  return x;
}
