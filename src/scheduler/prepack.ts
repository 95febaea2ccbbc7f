// Prepack (ruy's prepacked matrices): the PACK stage of pack -> gemm -> output run once on a constant
// operand, with its row (lhs) or column (rhs) sums, into buffers that outlive the call, so that GEMMs
// reading it skip the pack stage. Packs through the same packOperand() as a GEMM's own operands
// (src/pack/pack.ts), in the format src/pack/formats.ts prepackFormat chooses for the adapter.

import { InputError } from '../errors.ts';
import { runInErrorScope, withDevice } from '../gpu/scopes.ts';
import type { UniformSlab } from '../gpu/uniforms.ts';
import { writeOperandBytes } from '../gpu/write.ts';
import { checkPatchGeometry, encodePatches, type PatchGeometry, patchPipeline, patchShape, planPatches } from '../pack/patches.ts';
import { roundUp } from '../gpu/plan.ts';
import { PACK_FORMATS, packedRowBytes, prepackFormat } from '../pack/formats.ts';
import { encodePack, packEntry, packOperand, packPipelines, requantizationOf } from '../pack/pack.ts';
import { brief } from '../problem/echo.ts';
import { checkBitDepth } from '../problem/problem.ts';
import type { BitDepth, Operand } from '../types.ts';
import { claimPacked, type GpuMatrix, isGpuMatrix, type PackedOperand, shapeOf } from './operands.ts';
import type { GemmTiming } from './gemm.ts';
import type { DeviceResources } from './resources.ts';

/**
 * Packs a constant operand once, with its sums, for reuse across calls. With `bitDepth`, the operand is
 * requantized as a GEMM with that bitDepth would (same K, same N). The caller holds the device.
 */
export async function prepackOperand(
  r: DeviceResources,
  side: 'lhs' | 'rhs',
  operand: Operand | GpuMatrix,
  bitDepth?: BitDepth,
): Promise<PackedOperand> {
  r.checkAlive();
  if (side !== 'lhs' && side !== 'rhs') throw new InputError('side', `expected "lhs" or "rhs", got ${brief(side)}`);
  if (bitDepth !== undefined) bitDepth = checkBitDepth(bitDepth);
  const shape = shapeOf(operand, side, r);
  const type = shape.data instanceof Int8Array ? 'int8' : 'uint8';
  const { rows, cols } = shape;
  const outer = side === 'lhs' ? rows : cols;
  const depth = side === 'lhs' ? cols : rows;
  const requant = requantizationOf(bitDepth, side, depth);
  const format = PACK_FORMATS[prepackFormat(r.caps, side, requant.bits)];
  const packedBytes = roundUp(outer, format.rowAlign) * packedRowBytes(depth, format);
  const sumsBytes = roundUp(outer, format.rowAlign) * 4;
  r.checkBuffer(packedBytes, `prepacked ${side}`);
  const what: PackedShape = { side, rows, cols, type, packFormat: format.id, ...requant };
  return prepacked(r, what, packedBytes, sumsBytes, 'prepack', async (packed, sums, pooled) => {
    const job = packOperand(r.device, operand, side, format, requant, r.limits, { packed, sums }, { pool: r.pool, pooled }, r.caps);
    const pipelines = await packPipelines(r.device, [packEntry(operand, side, format, r.caps)]);
    return (pass, slab) => encodePack(r.device, pass, pipelines, job, r.xorshiftBuffer(), slab);
  });
}

/**
 * A convolution's lhs packed from its NHWC input (implicit im2col, src/pack/patches.wgsl): a PackedOperand
 * of the patch matrix (rows = output pixels, cols = filter taps times channels), padded positions holding
 * `zeroPoint`, with its row sums, for GEMMs against the filter as rhs. The input is a CPU array, or a
 * GpuMatrix [batch * height * width, channels] in row-major order (a previous layer's output, read where
 * it is). The caller holds the device.
 */
export async function prepackPatches(
  r: DeviceResources,
  input: Uint8Array | Int8Array | GpuMatrix,
  geometry: PatchGeometry,
  zeroPoint: number,
  timing?: GemmTiming,
): Promise<PackedOperand> {
  r.checkAlive();
  const onGpu = !!input && typeof input === 'object' && !ArrayBuffer.isView(input) && isGpuMatrix(input);
  if (!onGpu && !(input instanceof Uint8Array || input instanceof Int8Array)) {
    throw new InputError('input', 'expected a Uint8Array, an Int8Array or a GpuMatrix');
  }
  let type: 'uint8' | 'int8';
  let inputBytes: number;
  if (onGpu) {
    shapeOf(input, 'input', r); // this context's live uint8/int8 matrix, its stride within its buffer
    if (input.order !== 'row-major') throw new InputError('input.order', 'expected a row-major [pixels, channels] matrix');
    const pixels = geometry?.batch * geometry?.height * geometry?.width;
    if (input.rows !== pixels || input.cols !== geometry?.channels) {
      throw new InputError(
        'input',
        `expected a [${pixels}, ${geometry?.channels}] matrix (NHWC pixels, channels), got [${input.rows}, ${input.cols}]`,
      );
    }
    checkPatchGeometry(geometry, input.rows * input.cols);
    type = input.dtype as 'uint8' | 'int8';
    inputBytes = (input.rows - 1) * input.stride + input.cols;
  } else {
    checkPatchGeometry(geometry, input.length);
    type = input instanceof Int8Array ? 'int8' : 'uint8';
    inputBytes = input.byteLength;
  }
  const [lo, hi] = type === 'int8' ? [-128, 127] : [0, 255];
  if (!Number.isInteger(zeroPoint) || zeroPoint < lo || zeroPoint > hi) {
    throw new InputError('zeroPoint', `expected an integer in ${lo}..${hi} (${type}), got ${zeroPoint}`);
  }
  const { rows, cols } = patchShape(geometry);
  const format = PACK_FORMATS[prepackFormat(r.caps, 'lhs', 8)];
  const packedBytes = roundUp(rows, format.rowAlign) * packedRowBytes(cols, format);
  const sumsBytes = roundUp(rows, format.rowAlign) * 4;
  r.checkBuffer(packedBytes, 'packed convolution patches');
  const plan = planPatches(geometry, onGpu ? Math.min(roundUp(inputBytes, 4), input.buffer.size) : inputBytes, format, r.limits);
  const what: PackedShape = { side: 'lhs', rows, cols, type, packFormat: format.id, bits: 8, rounding: 'nearest' };
  return prepacked(
    r,
    what,
    packedBytes,
    sumsBytes,
    'pack patches',
    async (packed, sums, pooled) => {
      let src: GPUBuffer;
      if (onGpu) src = input.buffer;
      else {
        src = r.pool.acquire(Math.max(4, Math.ceil(input.byteLength / 4) * 4), 'convolution input');
        pooled.push(src);
        writeOperandBytes(r.device.queue, src, input);
      }
      const pipeline = await patchPipeline(r.device);
      const pixelStride = onGpu ? input.stride : geometry.channels;
      const job = { geometry, src, pixelStride, signed: type === 'int8', zeroPoint, format, plan, packed, sums };
      return (pass, slab) => encodePatches(r.device, pass, pipeline, job, slab);
    },
    timing,
  );
}

/** What a prepacked operand is, besides its buffers. */
type PackedShape = Pick<PackedOperand, 'side' | 'rows' | 'cols' | 'type' | 'packFormat' | 'bits' | 'rounding'>;

/**
 * The one way a prepacked operand is made: two new buffers (packed rows, sums) that `pack` fills in one
 * submission inside an error scope (it uploads into pooled buffers listed in `pooled`, released after, and
 * returns the encoding of its dispatches), then the PackedOperand that owns them. On a failure they are freed.
 * With `timing`, the GPU time of the pass (timestamp queries where the context records them, else null).
 */
async function prepacked(
  r: DeviceResources,
  what: PackedShape,
  packedBytes: number,
  sumsBytes: number,
  label: string,
  pack: (packed: GPUBuffer, sums: GPUBuffer, pooled: GPUBuffer[]) => Promise<(pass: GPUComputePassEncoder, slab: UniformSlab) => void>,
  timing?: GemmTiming,
): Promise<PackedOperand> {
  const { device } = r;
  const created: GPUBuffer[] = [];
  const pooled: GPUBuffer[] = [];
  try {
    await runInErrorScope(
      device,
      async () => {
        const make = (size: number, name: string) => {
          const b = device.createBuffer({ size, usage: GPUBufferUsage.STORAGE, label: `qgemm prepacked ${name}` });
          created.push(b);
          return b;
        };
        const encode = await pack(make(packedBytes, what.side), make(sumsBytes, `${what.side} sums`), pooled);
        const slab = r.uniforms.slab();
        const encoder = device.createCommandEncoder({ label: `qgemm ${label}` });
        const querySet = timing && r.timestamps ? r.staging.querySet() : null;
        const pass = encoder.beginComputePass(
          querySet ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {},
        );
        encode(pass, slab);
        pass.end();
        const times = querySet ? r.staging.timestamps(encoder) : null;
        slab.upload(device.queue);
        device.queue.submit([encoder.finish()]);
        if (timing) timing.gpuMs = times ? await times() : null;
      },
      label,
    );
  } catch (e) {
    for (const b of created) b.destroy();
    throw r.lostOr(e);
  } finally {
    for (const b of pooled) r.release(b); // not back to a pool that destroy() emptied
  }
  r.checkAlive();
  const [packed, sums] = created;
  let destroyed = false;
  const operand: PackedOperand = claimPacked(r, {
    ...what,
    packed,
    sums,
    bytes: packedBytes + sumsBytes,
    get destroyed() {
      return destroyed;
    },
    // Unusable at once (a call that starts later gets the "destroyed" InputError), but its buffers and its
    // call plans go only once the call that holds the device now, and every call queued before, has
    // finished: such a call checked the operand before this and may submit it still (withDevice).
    destroy: () => {
      if (destroyed) return;
      destroyed = true;
      void withDevice(device, async () => {
        r.plans.drop(operand);
        packed.destroy();
        sums.destroy();
      });
    },
  });
  return operand;
}
