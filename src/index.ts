// qgemm-webgpu's public API: quantized GEMM (pack -> gemm -> output) on WebGPU or the CPU, bit-exact
// with the CPU reference. This file only re-exports; the math is specified in ./types.ts.

export * from './types.ts';
export * from './errors.ts';
export {
  saturatingRoundingDoublingHighMul,
  roundingDivideByPOT,
  saturatingLeftShift,
  multiplyByQuantizedMultiplier,
  roundingHalfSum,
  mulWide,
} from './quant/fixedpoint.ts';
export { fixedPointTanhF3, tanhParams, tanhStage, type TanhParams } from './quant/tanh.ts';
export {
  quantizeMultiplier,
  quantizeMultiplierSmallerThanOneExp,
  quantizeMultiplierGreaterThanOne,
  chooseQuantizationParams,
  quantize,
  dequantize,
  type QuantizedMultiplier,
  type QuantizationParams,
} from './quant/quantize.ts';
export { referenceGemm, cpuGemm } from './reference/gemm.ts';
export { normalizeProblem } from './reference/problem.ts';
export { parseNpy, serializeNpy, NpyFormatError, type NpyArray, type NpyDtype } from './io/npy.ts';
export { runOp, type Backend } from './scheduler/run.ts';
