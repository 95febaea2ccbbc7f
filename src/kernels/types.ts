// What a GEMM kernel is (the "gemm" of pack -> gemm -> output): the interface every kernel implements,
// GPU and CPU alike, so that one registry (./registry.ts) can choose among them and one test loop can
// run each of them. A GPU kernel reads operands packed in its `packFormat` (rhs: `rhsPackFormat`), computes raw int32 sums of
// uint8-domain products, and hands them to the shared epilogue (src/epilogue/); a CPU kernel runs the whole
// problem and resolves with the result (async, so that kernels on worker threads fit the same shape).

import type { AdapterCaps, PlanLimits } from '../gpu/caps.ts';
import type { GemmDispatch, GemmShape } from '../gpu/plan.ts';
import type { UniformSlab } from '../gpu/uniforms.ts';
import type { PackFormatId } from '../pack/formats.ts';
import type { PatchGeometry } from '../pack/patches.ts';
import type { NormalizedProblem } from '../problem/problem.ts';
import type { GemmResult, OperandType } from '../types.ts';
import type { EpilogueCall } from '../epilogue/epilogue.ts';

/** Packed operands with their sums, on the GPU. */
export interface PackedPair {
  lhs: GPUBuffer;
  rhs: GPUBuffer;
  rowSums: GPUBuffer;
  colSums: GPUBuffer;
  /**
   * Set when the kernel reads an unpacked 8-bit lhs itself (PreparedGemmKernel.rawLhs): where its bytes
   * are, read as [m][k]; `lhs` and `rowSums` then hold no packed data.
   */
  rawLhs?: RawLhs | undefined;
  /**
   * Set when the kernel gathers a convolution's lhs from its input (PreparedGemmKernel.patchLhs): `lhs`
   * and `rowSums` then hold no packed data.
   */
  patchLhs?: PatchLhs | undefined;
}

/**
 * A convolution's input on the GPU, for a kernel that gathers its patches itself (src/pack/patch-gather.wgsl):
 * NHWC pixels `pixelStride` bytes apart from byte 0 of `buffer`, bound as its first `bindingBytes`.
 */
export interface PatchLhs {
  buffer: GPUBuffer;
  bindingBytes: number;
  geometry: PatchGeometry;
  pixelStride: number;
  signed: boolean;
  /** The input zero point, as the input's type stores it: what a padded position holds. */
  zeroPoint: number;
}

/** An unpacked 8-bit lhs on the GPU: element (m, k) at byte m * outerStride + k * depthStride of buffer. */
export interface RawLhs {
  buffer: GPUBuffer;
  /** The lhs's bytes in buffer (the binding covers them, rounded up to 4). */
  bytes: number;
  outerStride: number;
  depthStride: number;
  signed: boolean;
}

/** Everything a prepared GPU kernel encodes one GEMM with. */
export interface GemmEncoding {
  device: GPUDevice;
  pass: GPUComputePassEncoder;
  shape: GemmShape;
  dispatches: GemmDispatch[];
  operands: PackedPair;
  dst: GPUBuffer;
  epilogue: EpilogueCall;
  /** Where its uniform structs go: as many as it needs (the slab grows). */
  uniforms: UniformSlab;
  /** A scratch storage buffer of at least `bytes` for this call only (split-K partial sums). */
  workspace(bytes: number): GPUBuffer;
}

/**
 * A GPU kernel made ready on one device (GpuGemmKernel.prepare): it owns every pipeline it runs and
 * records a GEMM's dispatches, in as many passes as the kernel has (split-K: partial sums, then reduce).
 */
export interface PreparedGemmKernel {
  encode(e: GemmEncoding): void;
  /**
   * A kernel that can read an unpacked 8-bit lhs (PackedPair.rawLhs) and compute its row sums itself, so
   * that the lhs pack pass is skipped: its variant for an lhs whose k are contiguous in its storage
   * (RawLhs.depthStride 1) or not, compiled on first use.
   */
  rawLhs?(kContiguous: boolean): Promise<PreparedGemmKernel>;
  /**
   * A kernel that can gather a convolution's lhs from its input (PackedPair.patchLhs) and compute its row
   * sums itself, so that the patch pack pass is skipped; compiled on first use.
   */
  patchLhs?(): Promise<PreparedGemmKernel>;
  /**
   * Whether the patchLhs form can run this plan (default: yes). Split-K: its workspace, which then also
   * holds every slice's row sums, must fit one storage binding; where it does not, the scheduler packs
   * the patches first and runs the plain form, whose workspace holds the raw sums only.
   */
  gathers?(dispatches: GemmDispatch[], limits: PlanLimits): boolean;
}

export interface GpuGemmKernel {
  readonly id: string;
  readonly backend: 'webgpu';
  /** The format it reads lhs in, and rhs unless rhsPackFormat says otherwise. */
  readonly packFormat: PackFormatId;
  /** The format it reads rhs in, where it differs (4-bit weights stored two per byte: 'u4k8-r64'). */
  readonly rhsPackFormat?: PackFormatId | undefined;
  /** Whether this kernel can run `shape` on an adapter with `caps` (not whether it is the best choice). */
  supports(caps: AdapterCaps, shape: GemmShape): boolean;
  /** The bands and dispatches of `shape` (pure; see src/gpu/plan.ts); caps where the plan follows the GPU's size. */
  plan(shape: GemmShape, limits: PlanLimits, caps?: AdapterCaps): GemmDispatch[];
  /**
   * Compiles its pipelines on this device for output programs whose ops are among `stageKinds` (a bitmask
   * of STAGE_OP codes, src/epilogue/epilogue.ts epilogueOverrides): the scheduler does it once per device
   * and set of kinds, and keeps the result.
   */
  prepare(device: GPUDevice, caps: AdapterCaps, stageKinds: number): Promise<PreparedGemmKernel>;
  /**
   * A kernel that CI cannot run (it needs hardware SwiftShader lacks) declares this: a device runs the
   * exactness self-test (src/scheduler/self-test.ts) before its first use, and disables the kernel if it fails.
   */
  readonly needsSelfTest?: boolean | undefined;
}

/** What the CPU offers the CPU kernels. */
export interface CpuCaps {
  wasmSimd: boolean;
  relaxedSimd: boolean;
  threads: number;
  sharedMemory: boolean;
}

export interface CpuGemmKernel {
  readonly id: string;
  readonly backend: 'cpu';
  supports(caps: CpuCaps, p: NormalizedProblem): boolean;
  /**
   * `rhsPacked`: the rhs, prepacked for this kernel (p.rhs then only gives its shape and type). `ranAs`
   * is called with another kernel's id where that one ran instead (an engine that configureCpu replaced
   * since this kernel was chosen).
   */
  run(p: NormalizedProblem, opts: { threads?: number; rhsPacked?: CpuPackedOperand; ranAs?: (id: string) => void }): Promise<GemmResult>;
}

/**
 * An rhs (the weights) packed once by prepackCpu for a WebAssembly CPU kernel, with its column sums,
 * kept in the kernels' memory (src/kernels/cpu-wasm/kernel.ts): a GEMM given it as `rhs` (backend
 * 'cpu' or 'auto') packs only its lhs.
 */
export interface CpuPackedOperand {
  readonly side: 'rhs';
  readonly rows: number;
  readonly cols: number;
  readonly type: OperandType;
  /** The CPU kernel whose layout it holds; a GEMM with it runs that kernel. */
  readonly kernel: string;
  /** Bytes of WebAssembly memory held. */
  readonly bytes: number;
  /** True once destroy() ran: the operand can no longer be used. */
  readonly destroyed: boolean;
  /** Frees its memory (a later prepack or GEMM reuses it). */
  destroy(): void;
}

/** The pack formats kernel k reads lhs and rhs in. */
export function kernelFormats(k: GpuGemmKernel): { lhs: PackFormatId; rhs: PackFormatId } {
  return { lhs: k.packFormat, rhs: k.rhsPackFormat ?? k.packFormat };
}
