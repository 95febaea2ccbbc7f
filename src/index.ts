// qgemm-webgpu's public API: quantized GEMM (pack -> gemm -> output) and elementwise ops on WebGPU or the
// CPU, bit-exact with the normative CPU reference. This file only re-exports, and only what a user
// needs; the math is specified in ./types.ts (GEMM) and ./problem/elementwise.ts (elementwise ops).
//
//   gemm(problem, { backend })          one GEMM, 'auto' | 'webgpu' | 'cpu'
//   elementwise(problem, { backend })   TFLite add/sub/mul, alignedAdd/alignedSub
//   GpuContext                          a device kept for many calls: prepack, gemmOnGpu (chaining), read
//   referenceGemm, elementwiseReference the normative references every backend is checked against
//   cpuGemm                             the JavaScript CPU path, synchronous
//   prepackCpu, configureCpu            the WebAssembly CPU path: weights packed once; threads, relaxed SIMD
//   quantizeMultiplier, chooseQuantizationParams, quantize, dequantize: building output pipelines
//   parseNpy, serializeNpy              .npy files, C and Fortran order
//   kernelIds                           the kernels a `kernel` option (or env QGEMM_KERNEL) may force
//   tune, parseTuningTable              a tuning table for this adapter (GpuContext.create({ tuning }))

// Everything of the CPU-only entry (types, errors, references, cpuGemm, quantization helpers, .npy I/O),
// then the WebGPU path and the backend selection.
export * from './cpu.ts';
export {
  gemm,
  elementwise,
  describeDevice,
  releaseSharedContexts,
  type DeviceDescription,
  type Backend,
  type GemmInput,
  type GemmOptions,
  type RunOptions,
} from './api.ts';
export {
  verifyDevice,
  verifyProblems,
  formatVerifyReport,
  VerifyMismatchError,
  type VerifyOptions,
  type VerifyReport,
  type VerifyRow,
} from './verify.ts';
export { tune, type TuneOptions, type TuneReport } from './tune.ts';
export type { WinnerVerification } from './tune-budget.ts';
export {
  parseTuningTable,
  SHAPE_CLASSES,
  TUNING_FORMAT,
  type ShapeClass,
  type TuningAdapter,
  type TuningChoice,
  type TuningEntry,
  type TuningTable,
} from './kernels/tuning.ts';
export type { KernelConfig } from './kernels/kernel-configs.ts';
export {
  fullyConnected,
  conv2d,
  convGeometry,
  type Tensor,
  type LayerResult,
  type TensorInput,
  type WeightZeroPoint,
  type FullyConnectedParams,
  type Conv2dParams,
  type LayerOptions,
  type KernelPath,
  type FusedActivation,
  type QuantParams,
} from './layers/layers.ts';
export { activationRange, deriveStages } from './layers/derive.ts';
export { type PatchGeometry, patchShape } from './pack/patches.ts';
export {
  checkLayers,
  runLayers,
  Sequential,
  type ElementwiseLayerParams,
  type RequantizeLayerParams,
  type SequentialFullyConnected,
  type SequentialInputs,
  type SequentialLayer,
  type SequentialOptions,
  type SequentialRunOptions,
} from './layers/sequential.ts';
export {
  GpuContext,
  type GpuContextOptions,
  type GpuGemmProblem,
  type GpuMatrix,
  type GpuOperandInput,
  type PackedOperand,
  type PatchOperand,
  type GemmTiming,
  type GemmTrace,
  type GemmCallOptions,
  type GemmChain,
  type ChainLayer,
  type LastRun,
} from './scheduler/context.ts';
export type { WarmupItem, WarmupShape } from './scheduler/warmup.ts';
export type { AdapterCaps, PlanLimits, SubgroupMatrixConfig } from './gpu/caps.ts';
export { describeAdapter, type AdapterSummary } from './gpu/adapter.ts';
export { isHardwareAdapterAvailable } from './gpu/acquire.ts';
export { AUDITED_TOGGLES, type DawnToggle } from './gpu/toggles.ts';
export { kernelIds } from './kernels/registry.ts';
export { readyCpuCaps, type CpuCapsReport } from './kernels/cpu-caps.ts';
export {
  configureWasm as configureCpu,
  cpuRunStats,
  prepackCpu,
  type CpuRunStats,
  type WasmOptions as CpuOptions,
} from './kernels/cpu-wasm/kernel.ts';
export type { CpuPackedOperand } from './kernels/types.ts';
