// qgemm-webgpu/cpu: the CPU-only entry. The same math as the main entry (the types, the typed errors,
// the normative references, the fast JavaScript CPU path, the quantization helpers and .npy I/O) without
// the WebGPU code or its shader reflection, so a browser app that only needs the CPU path stays small.
// Everything here is also exported by the main entry ('qgemm-webgpu').

export * from './types.ts';
export * from './errors.ts';
export { referenceGemm } from './reference/gemm.ts';
export { elementwiseReference } from './reference/elementwise.ts';
export { cpuGemm } from './kernels/cpu-js/kernel.ts';
export {
  ELEMENTWISE_OPS,
  type ElementwiseOp,
  type ElementwiseProblem,
  type ElementwiseResult,
  type ElementwiseOutput,
  type ElementwiseKernelPath,
  type QuantizedTensor,
} from './problem/elementwise.ts';
export { xnnpackTakesElementwise } from './problem/elementwise-plan.ts';
export { saturatingRoundingDoublingHighMul, roundingDivideByPOT, multiplyByQuantizedMultiplier } from './quant/fixedpoint.ts';
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
export { parseNpy, serializeNpy, NpyFormatError, type NpyArray, type NpyDtype } from './io/npy.ts';
