// Prepack (ruy's prepacked matrices): the PACK stage of pack -> gemm -> output run once on a constant
// operand, with its row (lhs) or column (rhs) sums, into buffers that outlive the call, so that GEMMs
// reading it skip the pack stage. Packs through the same packOperand() as a GEMM's own operands
// (src/pack/pack.ts), in the format src/pack/formats.ts prepackFormat chooses for the adapter.

import { InputError } from '../errors.ts';
import { runInErrorScope } from '../gpu/scopes.ts';
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
