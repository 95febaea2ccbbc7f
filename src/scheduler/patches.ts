// A convolution's lhs as the scheduler takes it (the PACK stage of pack -> gemm -> output): the NHWC input,
// the patch geometry and the input zero point (a PatchOperand), checked once here, for both ways the
// patches are packed by src/pack/patches.wgsl. In a GEMM (./gemm.ts runGemm, what conv2d runs) the patch
// pack is one more dispatch of the GEMM's own compute pass, into pooled buffers in the chosen kernel's
// own lhs format: one submission per conv layer, where GpuContext.packPatches (./prepack.ts, a reusable
// PackedOperand) is a submission of its own plus new buffers on every call. The patch pack already
// gathers from the input and writes the packed rows and their sums in one pass (no im2col matrix in
// memory); a GEMM kernel whose staging gathers the patches itself would also skip the packed rows'
// round trip through memory, at the cost of a gather per kernel family (not built).

import { InputError } from '../errors.ts';
import type { PlanLimits } from '../gpu/caps.ts';
import { roundUp } from '../gpu/plan.ts';
import type { BufferPool } from '../gpu/pool.ts';
import { writeOperandBytes } from '../gpu/write.ts';
import type { PackFormat } from '../pack/formats.ts';
import { checkPatchGeometry, type PatchGeometry, type PatchJob, patchShape, planPatches } from '../pack/patches.ts';
import type { PackDispatch } from '../pack/plan.ts';
import { type GpuMatrix, isGpuMatrix, type OperandOwner, shapeOf } from './operands.ts';

/**
 * A convolution's lhs given by its input: the GEMM packs the patch matrix (rows = output pixels, cols =
 * filter taps times channels, the filter's OHWI order) from `input` in its own pass, padded positions
 * holding `zeroPoint`. `input`: NHWC as a CPU array, or a row-major GpuMatrix [batch * height * width,
 * channels] (a previous layer's output, read where it is).
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
    shapeOf(input, at('input'), r); // this context's live uint8/int8 matrix, its stride within its buffer
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
  const [lo, hi] = type === 'int8' ? [-128, 127] : [0, 255];
  if (!Number.isInteger(zeroPoint) || zeroPoint < lo || zeroPoint > hi) {
    throw new InputError(at('zeroPoint'), `expected an integer in ${lo}..${hi} (${type}), got ${zeroPoint}`);
  }
  return { ...patchShape(geometry), type, onGpu, inputBytes };
}

/** The patch pack's dispatches (./pack/patches.ts planPatches): a LimitExceededError where the input does not fit one binding. */
export function patchPlan(x: PatchOperand, checked: CheckedPatches, format: PackFormat, limits: PlanLimits): PackDispatch[] {
  const bytes = checked.onGpu ? Math.min(roundUp(checked.inputBytes, 4), (x.input as GpuMatrix).buffer.size) : checked.inputBytes;
  return planPatches(x.geometry, bytes, format, limits);
}

/**
 * The patch pack of a checked operand into `packed` and `sums` in `format`, following `plan`, the input
 * uploaded into a pooled buffer (listed in `uploads.pooled`) where it comes from the CPU.
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
  let src: GPUBuffer;
  if (checked.onGpu) src = (x.input as GpuMatrix).buffer;
  else {
    const data = x.input as Uint8Array | Int8Array;
    src = uploads.pool.acquire(Math.max(4, roundUp(data.byteLength, 4)), 'convolution input');
    uploads.pooled.push(src);
    writeOperandBytes(queue, src, data);
  }
  const pixelStride = checked.onGpu ? (x.input as GpuMatrix).stride : x.geometry.channels;
  return { geometry: x.geometry, src, pixelStride, signed: checked.type === 'int8', zeroPoint: x.zeroPoint, format, plan, ...target };
}
