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
export { referenceGemm } from './reference/gemm.ts';
export { cpuGemm } from './kernels/cpu-js/kernel.ts';
export { normalizeProblem } from './spec/problem.ts';
// Issue 4's elementwise ops (TFLite add/sub/mul, alignedAdd/alignedSub), specified in reference/elementwise.ts.
export {
  elementwiseReference,
  prepareElementwise,
  runElementwisePlan,
  broadcastShapes,
  scaleToFixedPoint,
  ELEMENTWISE_OPS,
  type ElementwiseOp,
  type ElementwiseProblem,
  type ElementwiseResult,
  type ElementwiseOutput,
  type ElementwisePlan,
  type QuantizedTensor,
} from './reference/elementwise.ts';
export { elementwiseOnGpu, type ElementwiseGpuTarget } from './elementwise/gpu.ts';
export { parseNpy, serializeNpy, NpyFormatError, type NpyArray, type NpyDtype } from './io/npy.ts';
export { gemm, elementwise, runOp, sharedContext, describeDevice, type Backend, type GemmOptions, type RunOptions } from './api.ts';
export {
  GpuContext,
  chooseKernel,
  type GpuContextOptions,
  type GpuGemmProblem,
  type GpuMatrix,
  type GpuOperandInput,
  type PackedOperand,
  type SchedulerLimits,
  type GemmTiming,
} from './gpu/context.ts';
export { acquireDevice, isHardwareAdapterAvailable, describeAdapter, type AdapterSummary, type AcquiredDevice, type AcquireOptions } from './gpu/device.ts';
