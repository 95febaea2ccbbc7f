// Prepack (ruy's prepacked matrices): the PACK stage of pack -> gemm -> output run once on a constant
// operand, with its row (lhs) or column (rhs) sums, into buffers that outlive the call, so that GEMMs
// reading it skip the pack stage. Packs through the same packOperand() as a GEMM's own operands
// (src/pack/pack.ts), in the format src/pack/formats.ts prepackFormat chooses for the adapter.

import { InputError } from '../errors.ts';
import { runInErrorScope, withDevice } from '../gpu/scopes.ts';
import type { UniformSlab } from '../gpu/uniforms.ts';
import { encodePatches, type PatchGeometry, patchPipeline } from '../pack/patches.ts';
import { roundUp } from '../gpu/plan.ts';
import { PACK_FORMATS, packedRowBytes, prepackFormat } from '../pack/formats.ts';
import { encodePack, packEntry, packOperand, packPipelines, requantizationOf } from '../pack/pack.ts';
import { brief } from '../problem/echo.ts';
import { checkBitDepth } from '../problem/problem.ts';
import type { BitDepth, Operand } from '../types.ts';
import { claimPacked, type GpuMatrix, type PackedOperand, shapeOf } from './operands.ts';
import type { GemmTiming } from './gemm.ts';
import { checkPatches, type PatchOperand, patchJob, patchPlan } from './patches.ts';
import type { DeviceResources } from './resources.ts';
import { BufferUsage } from '../gpu/usage.ts';

/**
 * Packs a constant operand once, with its sums, for reuse across calls. With `bitDepth`, the operand is
 * requantized as a GEMM with that bitDepth would (same K, same N). `rows`: the largest row padding of
 * the kernels it is for, where known (prepackFormat). The caller holds the device.
 */
export async function prepackOperand(
  r: DeviceResources,
  side: 'lhs' | 'rhs',
  operand: Operand | GpuMatrix,
  bitDepth?: BitDepth,
  rows = 0,
  valueBits?: 4 | 8,
): Promise<PackedOperand> {
  r.checkAlive();
  if (side !== 'lhs' && side !== 'rhs') throw new InputError('side', `expected "lhs" or "rhs", got ${brief(side)}`);
  if (bitDepth !== undefined) bitDepth = checkBitDepth(bitDepth);
  const shape = shapeOf(operand, side, r);
  const type = shape.data instanceof Int8Array ? 'int8' : 'uint8';
  const outer = side === 'lhs' ? shape.rows : shape.cols;
  const depth = side === 'lhs' ? shape.cols : shape.rows;
  const requant = requantizationOf(bitDepth, side, depth);
  const format = PACK_FORMATS[prepackFormat(r.caps, side, requant.bits, rows, valueBits)];
  const packedBytes = roundUp(outer, format.rowAlign) * packedRowBytes(depth, format);
  const sumsBytes = roundUp(outer, format.rowAlign) * 4;
  r.checkBuffer(packedBytes, `prepacked ${side}`);
  const what: PackedShape = { side, rows: shape.rows, cols: shape.cols, type, packFormat: format.id, ...requant };
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
  const x: PatchOperand = { input, geometry, zeroPoint };
  const checked = checkPatches(r, x);
  const { rows, cols, type } = checked;
  const format = PACK_FORMATS[prepackFormat(r.caps, 'lhs', 8)];
  const packedBytes = roundUp(rows, format.rowAlign) * packedRowBytes(cols, format);
  const sumsBytes = roundUp(rows, format.rowAlign) * 4;
  r.checkBuffer(packedBytes, 'packed convolution patches');
  const plan = patchPlan(x, checked, format, r.limits); // a LimitExceededError before any buffer is made
  const what: PackedShape = { side: 'lhs', rows, cols, type, packFormat: format.id, bits: 8, rounding: 'nearest' };
  return prepacked(
    r,
    what,
    packedBytes,
    sumsBytes,
    'pack patches',
    async (packed, sums, pooled) => {
      const job = patchJob(r.device.queue, x, checked, format, plan, { packed, sums }, { pool: r.pool, pooled });
      const pipeline = await patchPipeline(r.device);
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
          const b = device.createBuffer({ size, usage: BufferUsage.STORAGE, label: `qgemm prepacked ${name}` });
          created.push(b);
          return b;
        };
        const encode = await pack(make(packedBytes, what.side), make(sumsBytes, `${what.side} sums`), pooled);
        const slab = r.uniforms.slab();
        const encoder = device.createCommandEncoder({ label: `qgemm ${label}` });
        const pass = r.staging.beginPass(encoder, !!timing && r.timestamps);
        encode(pass, slab);
        const times = r.staging.endPass(encoder, pass);
        slab.upload(device.queue);
        device.queue.submit([encoder.finish()]);
        if (timing) timing.gpuMs = times ? await times() : null;
      },
      label,
    );
  } catch (e) {
    for (const b of created) b.destroy();
    throw await r.lostOr(e);
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
      leave();
      void withDevice(device, async () => {
        r.plans.drop(operand);
        packed.destroy();
        sums.destroy();
      });
    },
  });
  const leave = r.own(operand);
  return operand;
}
