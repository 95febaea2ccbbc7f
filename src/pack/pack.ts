// The host side of the PACK stage (PACK -> gemm -> output): records ./pack.wgsl over one operand into a
// compute pass, following a plan from src/pack/plan.ts planPack (source bands, packed-row chunks,
// flattened grids), with the requantization of less-than-8-bit operands (src/quant/lowbit.ts). The
// operand's bytes are read where they are (an uploaded array or a caller's GPU buffer), with strides
// that read it as [outer][depth]: lhs [M,K] has outer = m, rhs [K,N] outer = n.

import { getPipeline } from '../gpu/pipelines.ts';
import { type AdapterCaps, fitsWorkgroup, type PlanLimits } from '../gpu/caps.ts';
import { packedRowBytes } from './formats.ts';
import { planPack, type PackDispatch, type PackSource } from './plan.ts';
import { namedEntries, uniformLayout } from '../gpu/reflect.ts';
import type { UniformSlab } from '../gpu/uniforms.ts';
import { resolveRounding, type ConcreteRounding } from '../quant/lowbit.ts';
import type { BitDepth, Operand } from '../types.ts';
import { type GpuMatrix, isGpuMatrix } from '../gpu/matrix.ts';
import type { BufferPool } from '../gpu/pool.ts';
import { ROUNDING_CODE, wgslCodes } from '../gpu/codes.ts';
import type { PackFormat } from './formats.ts';
import pack from './pack.wgsl?raw';
import rowSum from './row-sum.wgsl?raw';
import { writeOperandBytes } from '../gpu/write.ts';

const source = [wgslCodes, rowSum, pack].join('\n');
const WORKGROUP_SIZE = 64;

/** How an operand is requantized while packing; bits 8 is the identity. */
export interface Requantization {
  bits: number;
  rounding: ConcreteRounding;
}

export function requantizationOf(bitDepth: BitDepth | undefined, side: 'lhs' | 'rhs', K: number): Requantization {
  if (!bitDepth) return { bits: 8, rounding: 'nearest' };
  return { bits: bitDepth[side], rounding: resolveRounding(bitDepth.rounding, K) };
}

/** An operand's bytes on the GPU and how to read them as [outer][depth]. */
export interface OperandSource extends PackSource {
  buffer: GPUBuffer;
  signed: boolean;
}

/** The two entry points of pack.wgsl: `pack` (k contiguous in the source) and `packTranspose` (k strided). */
type PackEntry = 'pack' | 'packTranspose';
type PackPipelines = Partial<Record<PackEntry, GPUComputePipeline>>;

/** The pipelines of the listed entry points only (each compiles in seconds on a software adapter). */
export async function packPipelines(device: GPUDevice, entries: readonly PackEntry[]): Promise<PackPipelines> {
  const compiled = await Promise.all(
    [...new Set(entries)].map(async (entry) => {
      const [id, overrides] = entry === 'pack' ? ['pack', { WORKGROUP_SIZE }] : ['pack-transpose', { TRANSPOSE_ROWS, TRANSPOSE_THREADS }];
      return [entry, await getPipeline(device, { id, source, entryPoint: entry, overrides, reflect: [source] })] as const;
    }),
  );
  return Object.fromEntries(compiled);
}

/** How x's bytes are read as [outer][depth]: bytes between outer indices, and between consecutive k. */
export function strides(x: Operand | GpuMatrix, side: 'lhs' | 'rhs'): { outerStride: number; depthStride: number } {
  const stride = isGpuMatrix(x) ? x.stride : x.order === 'col-major' ? x.rows : x.cols;
  // lhs [M,K]: outer = m. rhs [K,N]: outer = n. k runs along the contiguous dimension or across it.
  const kContiguous = (side === 'lhs') === (x.order !== 'col-major'); // an Operand is row-major by default
  return { outerStride: kContiguous ? stride : 1, depthStride: kContiguous ? 1 : stride };
}

/** Rows one packTranspose workgroup packs, and its invocations (pack.wgsl's overrides of those names). */
const TRANSPOSE_ROWS = 64;
const TRANSPOSE_THREADS = 256;

/**
 * The entry point that packs x as `side` into `format`: packTranspose where k is strided in x's storage
 * and x has at least TRANSPOSE_ROWS packed rows (one of its workgroups packs that many; below that `pack`,
 * one row per workgroup, reads as well and a small GEMM compiles one pipeline fewer). Never where compiling
 * is slow (AdapterCaps.slowCompiler: a software adapter, where coalescing buys nothing, since its "GPU
 * memory" is the CPU's): SwiftShader takes about 0.6 s to compile packTranspose (barriers inside its
 * loop), against 0.05 to 0.1 s for `pack`. Nor where the device's workgroups are smaller than its
 * TRANSPOSE_THREADS (a compatibility-mode device: 128 invocations).
 */
export function packEntry(
  x: Operand | GpuMatrix,
  side: 'lhs' | 'rhs',
  format: PackFormat,
  adapter: Pick<AdapterCaps, 'slowCompiler' | 'limits'>,
): PackEntry {
  const outer = side === 'lhs' ? x.rows : x.cols;
  // The transposing pack writes 8-bit lanes only: a nibble-packed operand takes the strided path.
  const strided = strides(x, side).depthStride !== 1;
  const transposes = strided && format.valueBits === 8 && outer >= TRANSPOSE_ROWS;
  return transposes && !adapter.slowCompiler && fitsWorkgroup(adapter.limits, TRANSPOSE_THREADS) ? 'packTranspose' : 'pack';
}

export interface PackJob {
  /** k strided in the source: packTranspose, TRANSPOSE_ROWS rows per workgroup; else pack, one row each. */
  transpose: boolean;
  side: 'lhs' | 'rhs';
  src: OperandSource;
  outer: number;
  depth: number;
  format: PackFormat;
  requant: Requantization;
  plan: PackDispatch[];
  packed: GPUBuffer;
  sums: GPUBuffer;
}

/**
 * Where an operand's bytes are on the GPU: a GpuMatrix where it is; a CPU array uploaded into a pooled
 * buffer (added to `uploads.pooled`, to be released by the caller after submission).
 */
export function operandSource(device: GPUDevice, x: Operand | GpuMatrix, side: 'lhs' | 'rhs', uploads: Uploads): OperandSource {
  let buffer: GPUBuffer;
  let bytes: number;
  const signed = isGpuMatrix(x) ? x.dtype === 'int8' : x.data instanceof Int8Array;
  if (isGpuMatrix(x)) {
    buffer = x.buffer;
    bytes = x.buffer.size;
  } else {
    bytes = x.data.byteLength;
    buffer = uploads.pool.acquire(Math.max(4, Math.ceil(bytes / 4) * 4), side);
    uploads.pooled.push(buffer);
    writeOperandBytes(device.queue, buffer, x.data);
  }
  return { buffer, bytes, signed, ...strides(x, side) };
}

/** Where CPU operands are uploaded: pooled buffers, listed in `pooled` for release after submission. */
export interface Uploads {
  pool: BufferPool;
  pooled: GPUBuffer[];
}

/**
 * The one way an operand is packed, for prepack and for a GEMM's own operands alike: its bytes found
 * (a CPU array uploaded, a GpuMatrix read where it is), its plan (./plan.ts) and which entry point runs
 * it, into `packed` and `sums`. Recorded by encodePack.
 */
export function packOperand(
  device: GPUDevice,
  x: Operand | GpuMatrix,
  side: 'lhs' | 'rhs',
  format: PackFormat,
  requant: Requantization,
  limits: PlanLimits,
  target: { packed: GPUBuffer; sums: GPUBuffer },
  uploads: Uploads,
  adapter: Pick<AdapterCaps, 'slowCompiler' | 'limits'>,
): PackJob {
  const outer = side === 'lhs' ? x.rows : x.cols;
  const depth = side === 'lhs' ? x.cols : x.rows;
  const src = operandSource(device, x, side, uploads);
  const { packed, sums } = target;
  const transpose = packEntry(x, side, format, adapter) === 'packTranspose';
  const plan = planPack(src, src.buffer.size, outer, depth, format, limits, side, transpose ? TRANSPOSE_ROWS : 1);
  return { transpose, side, src, outer, depth, format, requant, plan, packed, sums };
}

/**
 * Records one pack job into `pass` (one uniform slot per dispatch of job.plan). A 'u4k8-r64' job
 * (nibbles) must requantize to at most 4 bits.
 */
export function encodePack(
  device: GPUDevice,
  pass: GPUComputePassEncoder,
  pipelines: PackPipelines,
  job: PackJob,
  xorshift: GPUBuffer,
  slab: UniformSlab,
): void {
  const pipeline = pipelines[job.transpose ? 'packTranspose' : 'pack'];
  if (!pipeline) throw new Error(`internal: no ${job.transpose ? 'packTranspose' : 'pack'} pipeline for the ${job.side} pack`);
  const { side, src, outer, depth, requant } = job;
  if (job.format.valueBits < requant.bits) throw new Error(`internal: ${requant.bits}-bit ${side} packed as ${job.format.id}`);
  const layout = uniformLayout(source, 'PackParams');
  const rowBytes = packedRowBytes(depth, job.format);
  const paddedOuter = Math.ceil(outer / job.format.rowAlign) * job.format.rowAlign;
  const bindGroupLayout = pipeline.getBindGroupLayout(0);
  pass.setPipeline(pipeline);
  for (const d of job.plan) {
    const params = slab.alloc(layout, {
      outerCount: outer,
      depth,
      outerStride: src.outerStride,
      depthStride: src.depthStride,
      srcBase: d.srcBase,
      depthBegin: d.depthBegin,
      depthEnd: d.depthEnd,
      depthWords: rowBytes / 4,
      outerBase: d.outerBase,
      outerRows: d.rows,
      signFlip: src.signed ? 0x80 : 0,
      accumulate: d.depthBegin > 0 ? 1 : 0,
      workgroupBase: d.base,
      maxval: 2 ** requant.bits - 1,
      rounding: ROUNDING_CODE[requant.rounding],
      // Rounding offsets follow the row-major linear index of the logical matrix: lhs m*K + k, rhs k*N + n.
      linearOuterStride: side === 'lhs' ? depth : 1,
      linearDepthStride: side === 'lhs' ? 1 : outer,
      nibbles: job.format.valueBits === 4 ? 1 : 0,
    });
    pass.setBindGroup(
      0,
      device.createBindGroup({
        layout: bindGroupLayout,
        entries: namedEntries(source, {
          params,
          src: { buffer: src.buffer, offset: d.srcBase, size: d.srcSize },
          packed: { buffer: job.packed, offset: d.outerBase * rowBytes, size: d.rows * rowBytes },
          sums: { buffer: job.sums, offset: 0, size: paddedOuter * 4 },
          xorshiftOffsets: { buffer: xorshift },
        }),
      }),
    );
    pass.dispatchWorkgroups(d.x, d.y);
  }
}
