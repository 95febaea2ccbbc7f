// Prepack (ruy's prepacked matrices): the PACK stage of pack -> gemm -> output run once on a constant
// operand, with its row (lhs) or column (rhs) sums, into buffers that outlive the call, so that GEMMs
// reading it skip the pack stage. Packs through the same packOperand() as a GEMM's own operands
// (src/pack/pack.ts), in the format src/pack/formats.ts prepackFormat chooses for the adapter.

import { InputError } from '../errors.ts';
import { runInErrorScope } from '../gpu/scopes.ts';
import { writeOperandBytes } from '../gpu/write.ts';
import { checkPatchGeometry, encodePatches, type PatchGeometry, patchPipeline, patchShape, planPatches } from '../pack/patches.ts';
import { roundUp } from '../gpu/plan.ts';
import { PACK_FORMATS, packedRowBytes, prepackFormat } from '../pack/formats.ts';
import { encodePack, packEntry, packOperand, packPipelines, requantizationOf } from '../pack/pack.ts';
import { brief } from '../spec/echo.ts';
import { checkBitDepth } from '../spec/problem.ts';
import type { BitDepth, Operand } from '../types.ts';
import { claimPacked, type GpuMatrix, type PackedOperand, shapeOf } from './operands.ts';
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
  const { device } = r;
  const created: GPUBuffer[] = [];
  const pooled: GPUBuffer[] = [];
  try {
    await runInErrorScope(
      device,
      async () => {
        const make = (size: number, label: string) => {
          const b = device.createBuffer({ size, usage: GPUBufferUsage.STORAGE, label: `qgemm prepacked ${label}` });
          created.push(b);
          return b;
        };
        const packed = make(packedBytes, side);
        const sums = make(sumsBytes, `${side} sums`);
        const job = packOperand(device, operand, side, format, requant, r.limits, { packed, sums }, { pool: r.pool, pooled });
        const pipelines = await packPipelines(device, [packEntry(operand, side, format)]);
        const slab = r.uniforms.slab();
        const encoder = device.createCommandEncoder({ label: 'qgemm prepack' });
        const pass = encoder.beginComputePass();
        encodePack(device, pass, pipelines, job, r.xorshiftBuffer(), slab);
        pass.end();
        slab.upload(device.queue);
        device.queue.submit([encoder.finish()]);
      },
      'prepack',
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
  return claimPacked(r, {
    side,
    rows,
    cols,
    type,
    packFormat: format.id,
    packed,
    sums,
    ...requant,
    bytes: packedBytes + sumsBytes,
    get destroyed() {
      return destroyed;
    },
    destroy: () => {
      destroyed = true;
      packed.destroy();
      sums.destroy();
    },
  });
}

/**
 * A convolution's lhs packed from its NHWC input (implicit im2col, src/pack/patches.wgsl): a PackedOperand
 * of the patch matrix (rows = output pixels, cols = filter taps times channels), padded positions holding
 * `zeroPoint`, with its row sums, for GEMMs against the filter as rhs. The caller holds the device.
 */
export async function prepackPatches(
  r: DeviceResources,
  input: Uint8Array | Int8Array,
  geometry: PatchGeometry,
  zeroPoint: number,
): Promise<PackedOperand> {
  r.checkAlive();
  if (!(input instanceof Uint8Array || input instanceof Int8Array)) throw new InputError('input', 'expected a Uint8Array or an Int8Array');
  checkPatchGeometry(geometry, input.length);
  const type = input instanceof Int8Array ? 'int8' : 'uint8';
  const [lo, hi] = type === 'int8' ? [-128, 127] : [0, 255];
  if (!Number.isInteger(zeroPoint) || zeroPoint < lo || zeroPoint > hi) {
    throw new InputError('zeroPoint', `expected an integer in ${lo}..${hi} (${type}), got ${zeroPoint}`);
  }
  const { rows, cols } = patchShape(geometry);
  const format = PACK_FORMATS[prepackFormat(r.caps, 'lhs', 8)];
  const packedBytes = roundUp(rows, format.rowAlign) * packedRowBytes(cols, format);
  const sumsBytes = roundUp(rows, format.rowAlign) * 4;
  r.checkBuffer(packedBytes, 'packed convolution patches');
  const plan = planPatches(geometry, input.byteLength, format, r.limits);
  const { device } = r;
  const created: GPUBuffer[] = [];
  const src = r.pool.acquire(Math.max(4, Math.ceil(input.byteLength / 4) * 4), 'convolution input');
  try {
    await runInErrorScope(
      device,
      async () => {
        const make = (size: number, label: string) => {
          const b = device.createBuffer({ size, usage: GPUBufferUsage.STORAGE, label: `qgemm prepacked ${label}` });
          created.push(b);
          return b;
        };
        const packed = make(packedBytes, 'patches');
        const sums = make(sumsBytes, 'patch sums');
        writeOperandBytes(device.queue, src, input);
        const pipeline = await patchPipeline(device);
        const slab = r.uniforms.slab();
        const encoder = device.createCommandEncoder({ label: 'qgemm pack patches' });
        const pass = encoder.beginComputePass();
        encodePatches(device, pass, pipeline, { geometry, src, signed: type === 'int8', zeroPoint, format, plan, packed, sums }, slab);
        pass.end();
        slab.upload(device.queue);
        device.queue.submit([encoder.finish()]);
      },
      'pack patches',
    );
  } catch (e) {
    for (const b of created) b.destroy();
    throw r.lostOr(e);
  } finally {
    r.release(src);
  }
  r.checkAlive();
  const [packed, sums] = created;
  let destroyed = false;
  return claimPacked(r, {
    side: 'lhs',
    rows,
    cols,
    type,
    packFormat: format.id,
    packed,
    sums,
    bits: 8,
    rounding: 'nearest',
    bytes: packedBytes + sumsBytes,
    get destroyed() {
      return destroyed;
    },
    destroy: () => {
      destroyed = true;
      packed.destroy();
      sums.destroy();
    },
  });
}
