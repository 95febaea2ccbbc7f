// A convolution's lhs as the scheduler takes it (the PACK stage of pack -> gemm -> output): the NHWC input,
// the patch geometry and the input zero point (a PatchOperand), checked once here, and put on the GPU
// (patchInput) for the three ways its patches are read (src/pack/patch-gather.wgsl, no im2col matrix in
// memory). In a GEMM (./gemm.ts runGemm, what conv2d runs) a kernel that gathers them into its own
// staging or chunks (PreparedGemmKernel.patchLhs: the tiled, split-K and gemv kernels) reads the input
// directly and sums the rows itself: no patch pack. For the others (the '-dd' tilings, the gemv on a
// software adapter) the patch pack (src/pack/patches.wgsl) is one more dispatch of the GEMM's own
// compute pass, into pooled buffers in the chosen kernel's lhs format: one submission per conv
// layer either way, where GpuContext.packPatches (./prepack.ts, a reusable PackedOperand) is a submission
// of its own plus new buffers on every call.

import { InputError } from '../errors.ts';
import type { PlanLimits } from '../gpu/caps.ts';
import { roundUp } from '../gpu/plan.ts';
import type { BufferPool } from '../gpu/pool.ts';
import { writeOperandBytes } from '../gpu/write.ts';
import type { PackFormat } from '../pack/formats.ts';
import { checkPatchGeometry, type PatchGeometry, type PatchJob, patchesAreInput, patchShape, planPatches } from '../pack/patches.ts';
import type { PackDispatch } from '../pack/plan.ts';
import { checkKnownKeys } from '../problem/check.ts';
import { type Operand, TYPE_RANGE } from '../types.ts';
import { type GpuMatrix, isGpuMatrix, type OperandOwner, shapeOf } from './operands.ts';

/**
 * A convolution's lhs given by its input: the GEMM reads the patch matrix (rows = output pixels, cols =
 * filter taps times channels, the filter's OHWI order) from `input` in its own pass, gathered by the
 * kernel or packed first, padded positions holding `zeroPoint`. `input`: NHWC as a CPU array, or a
 * row-major GpuMatrix [batch * height * width, channels] (a previous layer's output, read where it is).
 */
export interface PatchOperand {
  readonly input: Uint8Array | Int8Array | GpuMatrix;
  readonly geometry: PatchGeometry;
  readonly zeroPoint: number;
}

export function isPatches(x: object): x is PatchOperand {
  return 'geometry' in x && 'input' in x;
}

/** A checked PatchOperand: its patch matrix's shape, its type and the input's extent in bytes. */
export interface CheckedPatches {
  rows: number;
  cols: number;
  type: 'uint8' | 'int8';
  onGpu: boolean;
  /** Bytes from the input's first to its last value (a GpuMatrix: rows apart by its stride). */
  inputBytes: number;
}

/** Checks x (InputError naming `field`.input, `field`.geometry.*, `field`.zeroPoint; bare names for field ''). */
export function checkPatches(r: OperandOwner, x: PatchOperand, field = ''): CheckedPatches {
  const at = (name: string) => (field ? `${field}.${name}` : name);
  checkKnownKeys(field, x, ['input', 'geometry', 'zeroPoint']);
  const { input, geometry, zeroPoint } = x;
  const onGpu = !!input && typeof input === 'object' && !ArrayBuffer.isView(input) && isGpuMatrix(input);
  if (!onGpu && !(input instanceof Uint8Array || input instanceof Int8Array)) {
    throw new InputError(at('input'), 'expected a Uint8Array, an Int8Array or a GpuMatrix');
  }
  let type: 'uint8' | 'int8';
  let inputBytes: number;
  const checkGeometry = (length: number) => {
    try {
      checkPatchGeometry(geometry, length);
    } catch (e) {
      if (e instanceof InputError && field) throw new InputError(at(e.field), e.message.slice(e.field.length + 2));
      throw e;
    }
  };
  if (onGpu) {
    // This context's live uint8/int8 matrix, its stride within its buffer; bound by the range it spans.
    shapeOf(input, at('input'), r, false, 'bind-range');
    if (input.order !== 'row-major') throw new InputError(at('input.order'), 'expected a row-major [pixels, channels] matrix');
    const pixels = geometry?.batch * geometry?.height * geometry?.width;
    if (input.rows !== pixels || input.cols !== geometry?.channels) {
      throw new InputError(
        at('input'),
        `expected a [${pixels}, ${geometry?.channels}] matrix (NHWC pixels, channels), got [${input.rows}, ${input.cols}]`,
      );
    }
    checkGeometry(input.rows * input.cols);
    type = input.dtype as 'uint8' | 'int8';
    inputBytes = (input.rows - 1) * input.stride + input.cols;
  } else {
    checkGeometry((input as Uint8Array | Int8Array).length);
    type = input instanceof Int8Array ? 'int8' : 'uint8';
    inputBytes = (input as Uint8Array | Int8Array).byteLength;
  }
  const [lo, hi] = TYPE_RANGE[type];
  if (!Number.isInteger(zeroPoint) || zeroPoint < lo || zeroPoint > hi) {
    throw new InputError(at('zeroPoint'), `expected an integer in ${lo}..${hi} (${type}), got ${zeroPoint}`);
  }
  return { ...patchShape(geometry), type, onGpu, inputBytes };
}

/**
 * A checked operand as a plain lhs where its patches are its input itself (src/pack/patches.ts
 * patchesAreInput): a CPU input as the [M, K] row-major matrix it is, a GPU input of pixels as the
 * [pixels, channels] GpuMatrix it is (rows a stride apart). Null otherwise, and for a GPU input whose
 * rows are whole images (a GpuMatrix is not reshaped). No padding, so the operand's zero point (the
 * padding value) is never read.
 */
export function patchesAsMatrix(x: PatchOperand, checked: CheckedPatches): Operand | GpuMatrix | null {
  const form = patchesAreInput(x.geometry);
  if (!form) return null;
  if (!checked.onGpu) return { data: x.input as Uint8Array | Int8Array, rows: checked.rows, cols: checked.cols, order: 'row-major' };
  return form === 'pixels' ? (x.input as GpuMatrix) : null;
}

/** The patch pack's dispatches (../pack/patches.ts planPatches): a LimitExceededError where the input does not fit one binding. */
export function patchPlan(x: PatchOperand, checked: CheckedPatches, format: PackFormat, limits: PlanLimits): PackDispatch[] {
  const bytes = checked.onGpu ? Math.min(roundUp(checked.inputBytes, 4), (x.input as GpuMatrix).buffer.size) : checked.inputBytes;
  return planPatches(x.geometry, bytes, format, limits);
}

/**
 * The input of a checked operand on the GPU: a GpuMatrix where it is, a CPU array uploaded into a pooled
 * buffer (listed in `uploads.pooled`); its pixels `pixelStride` bytes apart, bound as the first
 * `bindingBytes` of `buffer`.
 */
export function patchInput(
  queue: GPUQueue,
  x: PatchOperand,
  checked: CheckedPatches,
  uploads: { pool: BufferPool; pooled: GPUBuffer[] },
): { buffer: GPUBuffer; bindingBytes: number; pixelStride: number } {
  if (checked.onGpu) {
    const m = x.input as GpuMatrix;
    return { buffer: m.buffer, bindingBytes: Math.min(roundUp(checked.inputBytes, 4), m.buffer.size), pixelStride: m.stride };
  }
  const data = x.input as Uint8Array | Int8Array;
  const bindingBytes = Math.max(4, roundUp(data.byteLength, 4));
  const buffer = uploads.pool.acquire(bindingBytes, 'convolution input');
  uploads.pooled.push(buffer);
  writeOperandBytes(queue, buffer, data);
  return { buffer, bindingBytes, pixelStride: x.geometry.channels };
}

/**
 * The patch pack of a checked operand into `packed` and `sums` in `format`, following `plan`, the input
 * put on the GPU by patchInput.
 */
export function patchJob(
  queue: GPUQueue,
  x: PatchOperand,
  checked: CheckedPatches,
  format: PackFormat,
  plan: PackDispatch[],
  target: { packed: GPUBuffer; sums: GPUBuffer },
  uploads: { pool: BufferPool; pooled: GPUBuffer[] },
): PatchJob {
  const { buffer: src, pixelStride } = patchInput(queue, x, checked, uploads);
  return { geometry: x.geometry, src, pixelStride, signed: checked.type === 'int8', zeroPoint: x.zeroPoint, format, plan, ...target };
}
