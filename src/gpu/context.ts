// The WebGPU scheduler: runs one GEMM as pack -> gemm -> output on a device, in ONE command encoder
// (one compute pass: pack lhs, pack rhs, then the gemm or gemv kernel with the fused output stage),
// with asynchronous readback. It chooses the kernel and tile configuration from the shape, splits
// operands larger than a storage binding and grids larger than the workgroup-count limit into several
// bindings and dispatches, keeps data on the GPU when asked (GpuMatrix in, GpuMatrix out), and packs
// constant operands once (prepack, ruy's prepacked cache). Every GPU call runs inside error scopes,
// and a lost device is reported, never ignored: nothing here returns a number it did not verify came
// from a valid submission.

import { DeviceLostError, InputError, LimitExceededError } from '../errors.ts';
import { acquireDevice, runInErrorScope, withDevice, type AcquireOptions, type AcquiredDevice, type AdapterSummary } from './device.ts';
import { BufferPool, getPipeline, type Overrides } from './pipelines.ts';
import { kernelSource, type Dot4Variant } from './shaders.ts';
import { encodeStages } from '../kernels/epilogue/stages.ts';
import { packUniforms, uniformLayout, type UniformLayout } from './uniforms.ts';
import { resolveRounding, unpackFractions, XORSHIFT_OFFSETS, type ConcreteRounding } from '../quant/lowbit.ts';
import { allocateDst } from '../reference/pipeline.ts';
import { normalizeProblem, type NormalizedProblem } from '../spec/problem.ts';
import type { BitDepth, DstData, DstType, GemmProblem, GemmResult, Operand, OperandType, Order } from '../types.ts';

/** Rows of packed operands are padded to this (the largest tile), K to this many values. */
export const PACK_ROWS = 64;
export const PACK_DEPTH = 64;

/** Limits the scheduler plans with: the device's, or lower ones (tests use that to exercise splitting). */
export interface SchedulerLimits {
  maxStorageBufferBindingSize: number;
  maxComputeWorkgroupsPerDimension: number;
  maxBufferSize: number;
}

/** A matrix living in a GPU buffer. `stride`: elements between consecutive rows (row-major) or columns. */
export interface GpuMatrix {
  buffer: GPUBuffer;
  rows: number;
  cols: number;
  order: Order;
  dtype: OperandType | DstType;
  stride: number;
}

/** An operand packed once for reuse (ruy's prepacked cache): the packed rows and their sums. */
export interface PackedOperand {
  readonly side: 'lhs' | 'rhs';
  readonly rows: number;
  readonly cols: number;
  readonly type: OperandType;
  readonly packed: GPUBuffer;
  readonly sums: GPUBuffer;
  /** Requantization applied while packing (bits 8: none). A GEMM must ask for the same. */
  readonly bits: number;
  readonly rounding: ConcreteRounding;
  destroy(): void;
}

/** How pack.wgsl requantizes an operand (src/quant/lowbit.ts); bits 8 is the identity. */
interface Requantization {
  bits: number;
  rounding: ConcreteRounding;
}

const ROUNDING_CODE: Record<ConcreteRounding, number> = { nearest: 0, 'probabilistic-addmod': 1, 'probabilistic-xorshift': 2 };

function requantizationOf(bitDepth: BitDepth | undefined, side: 'lhs' | 'rhs', K: number): Requantization {
  if (!bitDepth) return { bits: 8, rounding: 'nearest' };
  return { bits: bitDepth[side], rounding: resolveRounding(bitDepth.rounding, K) };
}

export type GpuOperandInput = Operand | GpuMatrix | PackedOperand;

export interface GpuGemmProblem extends Omit<GemmProblem, 'lhs' | 'rhs'> {
  lhs: GpuOperandInput;
  rhs: GpuOperandInput;
}

export interface GpuContextOptions extends Partial<AcquireOptions> {
  /** Lower the limits the scheduler plans with (never above the device's). */
  limits?: Partial<SchedulerLimits>;
  /** Force the manual-unpack dot4 kernels even where dot4U8Packed exists. */
  dot4?: 'auto' | 'emulated';
  /** Record GPU time with timestamp queries where the device offers them. */
  timestamps?: boolean;
}

export interface GemmTiming {
  /** GPU time of the compute pass (timestamp queries), or null where unavailable. */
  gpuMs: number | null;
}

interface KernelConfig {
  kernel: 'gemm' | 'gemv';
  overrides: Overrides;
  tileM: number;
  tileN: number;
}

/**
 * The one place that maps a shape to a kernel and its tile configuration. gemv serves M <= 4 (one row
 * group, so rhs is read once); from M = 5 a 32-row tile reads rhs once for more rows.
 */
export function chooseKernel(M: number, N: number): KernelConfig {
  if (M <= 4) return { kernel: 'gemv', overrides: { COLUMNS: 16, SLICES: 16 }, tileM: 4, tileN: 16 };
  if (M <= 32 || N <= 32) return { kernel: 'gemm', overrides: { WORKGROUP_X: 8, WORKGROUP_Y: 8, TILE_KW: 16 }, tileM: 32, tileN: 32 };
  return { kernel: 'gemm', overrides: { WORKGROUP_X: 16, WORKGROUP_Y: 16, TILE_KW: 16 }, tileM: 64, tileN: 64 };
}

const PACK_OVERRIDES = { WORKGROUP_SIZE: 64 };
const BYTES: Record<DstType | OperandType, number> = { int32: 4, int16: 2, int8: 1, uint8: 1 };
export const roundUp = (x: number, m: number) => Math.ceil(x / m) * m;
const floorTo = (x: number, m: number) => Math.floor(x / m) * m;
const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
/** The smallest count c, a multiple of `multiple`, for which c * stride bytes is a multiple of `alignment`. */
const alignedUnit = (stride: number, alignment: number, multiple = 1) => {
  const unit = alignment / gcd(stride, alignment);
  return (unit * multiple) / gcd(unit, multiple);
};

/** Splits `total` workgroups into dispatches of at most max^2, each a 2-D grid with a base index. */
export function flatDispatches(total: number, max: number): { base: number; x: number; y: number }[] {
  const out = [];
  for (let base = 0; base < total; base += max * max) {
    const count = Math.min(max * max, total - base);
    const x = Math.min(count, max);
    out.push({ base, x, y: Math.ceil(count / x) });
  }
  return out;
}

function isPacked(x: GpuOperandInput): x is PackedOperand {
  return 'packed' in x;
}
function isGpuMatrix(x: GpuOperandInput): x is GpuMatrix {
  return 'buffer' in x;
}

/** Shape-only stand-in so that normalizeProblem validates GPU-resident operands like CPU ones. */
function shapeOf(x: GpuOperandInput, field: string): Operand {
  if (isPacked(x)) {
    if (x.side !== field) throw new InputError(field, `this operand was prepacked as ${x.side}`);
    return { data: x.type === 'int8' ? new Int8Array(0) : new Uint8Array(0), rows: x.rows, cols: x.cols, order: 'row-major' };
  }
  if (isGpuMatrix(x)) {
    if (x.dtype !== 'uint8' && x.dtype !== 'int8') throw new InputError(field, `a GPU operand must be uint8 or int8, got ${x.dtype}`);
    const inner = x.order === 'row-major' ? x.cols : x.rows;
    const lines = x.order === 'row-major' ? x.rows : x.cols;
    if (!Number.isInteger(x.stride) || x.stride < inner) throw new InputError(`${field}.stride`, `must be >= ${inner}`);
    const needed = (lines - 1) * x.stride + inner;
    if (needed > x.buffer.size) {
      throw new InputError(`${field}.buffer`, `holds ${x.buffer.size} bytes, a [${x.rows},${x.cols}] matrix with stride ${x.stride} needs ${needed}`);
    }
    return { data: x.dtype === 'int8' ? new Int8Array(0) : new Uint8Array(0), rows: x.rows, cols: x.cols, order: x.order };
  }
  return x;
}

interface Source {
  buffer: GPUBuffer;
  bytes: number;
  outerStride: number;
  depthStride: number;
  signed: boolean;
}

export class GpuContext {
  readonly device: GPUDevice;
  readonly summary: AdapterSummary;
  readonly dot4: Dot4Variant;
  readonly limits: SchedulerLimits;
  private readonly pool: BufferPool;
  private readonly timestamps: boolean;
  /** How the last GEMM was split: dispatch counts (for tests and the curious). */
  readonly lastRun = { packDispatches: 0, gemmDispatches: 0 };
  private xorshift: GPUBuffer | null = null;
  private lostReason: string | null = null;
  private destroyed = false;
  /** The context acquired the device itself (not passed in), so destroy() destroys it too. */
  private readonly ownsDevice: boolean;

  private constructor(acquired: AcquiredDevice, opts: GpuContextOptions) {
    this.device = acquired.device;
    this.ownsDevice = acquired.source !== 'user';
    this.summary = acquired.summary;
    this.dot4 = acquired.hasDot4 && opts.dot4 !== 'emulated' ? 'native' : 'emulated';
    const d = this.device.limits;
    const lower = (name: keyof SchedulerLimits) => Math.min(d[name], opts.limits?.[name] ?? Infinity);
    this.limits = {
      maxStorageBufferBindingSize: lower('maxStorageBufferBindingSize'),
      maxComputeWorkgroupsPerDimension: lower('maxComputeWorkgroupsPerDimension'),
      maxBufferSize: lower('maxBufferSize'),
    };
    this.pool = new BufferPool(this.device);
    this.timestamps = !!opts.timestamps && this.device.features.has('timestamp-query');
    this.device.lost.then((info) => {
      this.lostReason = `${info.reason}: ${info.message}`;
    });
  }

  static async create(opts: GpuContextOptions = {}): Promise<GpuContext> {
    const acquired = await acquireDevice({ allowSoftware: opts.allowSoftware ?? true, ...opts });
    return new GpuContext(acquired, opts);
  }

  /** True once the device is lost or destroyed: make a new context. */
  get lost(): boolean {
    return this.lostReason !== null || this.destroyed;
  }

  private checkAlive(): void {
    if (this.destroyed) throw new DeviceLostError('this GpuContext was destroyed', 'destroyed');
    if (this.lostReason !== null) throw new DeviceLostError(`the GPU device was lost (${this.lostReason})`, this.lostReason);
  }

  /**
   * Runs fn with this context's device to itself (withDevice): GPU calls on one device run one at a
   * time, since error scopes are per device. Other kernels on the same device (elementwise ops) use it.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.serialize(fn);
  }

  private serialize<T>(fn: () => Promise<T>): Promise<T> {
    return withDevice(this.device, fn);
  }

  /** dst = pipeline(lhs * rhs) with data read back to the CPU. */
  gemm(problem: GpuGemmProblem, timing?: GemmTiming): Promise<GemmResult> {
    return this.serialize(async () => {
      const dst = await this.encodeAndRun(problem, timing);
      try {
        return await this.readBack(dst);
      } finally {
        this.pool.release(dst.buffer);
      }
    });
  }

  /** dst = pipeline(lhs * rhs), left on the GPU (the caller owns dst.buffer; see releaseMatrix). */
  gemmOnGpu(problem: GpuGemmProblem, timing?: GemmTiming): Promise<GpuMatrix> {
    return this.serialize(() => this.encodeAndRun(problem, timing));
  }

  /** Reads a GPU matrix back into a dense typed array in its own storage order. */
  read(m: GpuMatrix): Promise<GemmResult> {
    return this.serialize(() => this.readBack(m));
  }

  /** Returns a dst buffer made by gemmOnGpu to the pool. */
  releaseMatrix(m: GpuMatrix): void {
    this.pool.release(m.buffer);
  }

  /**
   * Packs a constant operand once, with its row (lhs) or column (rhs) sums, for reuse across calls.
   * With `bitDepth`, the operand is requantized as a GEMM with that bitDepth would (same K, same N).
   */
  prepack(side: 'lhs' | 'rhs', operand: Operand | GpuMatrix, bitDepth?: BitDepth): Promise<PackedOperand> {
    return this.serialize(async () => {
      this.checkAlive();
      const shape = shapeOf(operand, side);
      const type = shape.data instanceof Int8Array ? 'int8' : 'uint8';
      const { rows, cols } = shape;
      const outer = side === 'lhs' ? rows : cols;
      const depth = side === 'lhs' ? cols : rows;
      const requant = requantizationOf(bitDepth, side, depth);
      const bytes = roundUp(outer, PACK_ROWS) * (roundUp(depth, PACK_DEPTH) / 4) * 4;
      this.checkBuffer(bytes, `prepacked ${side}`);
      const created: GPUBuffer[] = [];
      const temps: GPUBuffer[] = [];
      try {
        await runInErrorScope(this.device, async () => {
          const make = (size: number, label: string) => {
            const b = this.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE, label: `qgemm prepacked ${label}` });
            created.push(b);
            return b;
          };
          const packed = make(bytes, side);
          const sums = make(roundUp(outer, PACK_ROWS) * 4, `${side} sums`);
          const encoder = this.device.createCommandEncoder({ label: 'qgemm prepack' });
          const pass = encoder.beginComputePass();
          await this.encodePack(pass, this.source(operand, side, temps), side, outer, depth, packed, sums, temps, requant);
          pass.end();
          this.device.queue.submit([encoder.finish()]);
          await this.device.queue.onSubmittedWorkDone();
        }, 'prepack');
      } catch (e) {
        for (const b of created) b.destroy();
        throw e;
      } finally {
        for (const t of temps) t.destroy();
      }
      const [packed, sums] = created;
      this.checkAlive();
      return { side, rows, cols, type, packed, sums, ...requant, destroy: () => { packed.destroy(); sums.destroy(); } };
    });
  }

  /** Frees every buffer of this context (GpuMatrix results included) and a device it acquired itself. */
  destroy(): void {
    this.destroyed = true;
    this.pool.destroy();
    this.xorshift?.destroy();
    if (this.ownsDevice) this.device.destroy();
  }

  /** XORSHIFT_OFFSETS on the GPU, made once per context. */
  private xorshiftBuffer(): GPUBuffer {
    if (!this.xorshift) {
      this.xorshift = this.device.createBuffer({ size: 255 * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, label: 'qgemm xorshift offsets' });
      this.device.queue.writeBuffer(this.xorshift, 0, Uint32Array.from(XORSHIFT_OFFSETS));
    }
    return this.xorshift;
  }

  // ---- planning and encoding ------------------------------------------------------------------------

  private checkBuffer(bytes: number, what: string): void {
    if (bytes > this.limits.maxBufferSize) {
      throw new LimitExceededError('maxBufferSize', `${what} needs ${bytes} bytes, above maxBufferSize ${this.limits.maxBufferSize}`);
    }
  }

  /** The raw bytes of an operand on the GPU, with strides that read it as [outer][depth]. */
  private source(x: Operand | GpuMatrix, side: 'lhs' | 'rhs', temps: GPUBuffer[]): Source {
    let buffer: GPUBuffer;
    let stride: number;
    let bytes: number;
    const signed = isGpuMatrix(x) ? x.dtype === 'int8' : x.data instanceof Int8Array;
    if (isGpuMatrix(x)) {
      buffer = x.buffer;
      stride = x.stride;
      bytes = x.buffer.size;
    } else {
      bytes = x.data.byteLength;
      this.checkBuffer(bytes, side);
      buffer = this.device.createBuffer({ size: roundUp(Math.max(bytes, 4), 4), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, label: `qgemm ${side}` });
      const padded = new Uint8Array(roundUp(bytes, 4));
      padded.set(new Uint8Array(x.data.buffer, x.data.byteOffset, bytes));
      this.device.queue.writeBuffer(buffer, 0, padded);
      temps.push(buffer);
      stride = x.order === 'row-major' ? x.cols : x.rows;
    }
    // lhs [M,K]: outer = m. rhs [K,N]: outer = n. k runs along the contiguous dimension or across it.
    const kContiguous = (side === 'lhs') === (x.order === 'row-major');
    return { buffer, bytes, signed, outerStride: kContiguous ? stride : 1, depthStride: kContiguous ? 1 : stride };
  }

  /** Encodes pack.wgsl over the operand, in as many bands and dispatches as the limits require. */
  private async encodePack(
    pass: GPUComputePassEncoder, src: Source, side: 'lhs' | 'rhs', outer: number, depth: number,
    packed: GPUBuffer, sums: GPUBuffer, temps: GPUBuffer[], requant: Requantization,
  ): Promise<void> {
    const { maxStorageBufferBindingSize: maxBinding, maxComputeWorkgroupsPerDimension: maxWG } = this.limits;
    const alignment = this.device.limits.minStorageBufferOffsetAlignment;
    const pipeline = await getPipeline(this.device, 'pack', this.dot4, PACK_OVERRIDES);
    const layout = uniformLayout(kernelSource('pack', this.dot4), 'PackParams');
    const paddedOuter = roundUp(outer, PACK_ROWS);
    const depthWords = roundUp(depth, PACK_DEPTH) / 4;
    const packedRows = floorTo(maxBinding / (depthWords * 4), PACK_ROWS);
    if (packedRows === 0) throw new LimitExceededError('maxStorageBufferBindingSize', `${side}: one packed row band needs ${PACK_ROWS * depthWords * 4} bytes`);

    type SrcBand = { srcBase: number; srcEnd: number; depthBegin: number; depthEnd: number; outerBegin: number; outerEnd: number };
    const bands: SrcBand[] = [];
    if (src.bytes <= maxBinding) {
      bands.push({ srcBase: 0, srcEnd: src.bytes, depthBegin: 0, depthEnd: depth, outerBegin: 0, outerEnd: paddedOuter });
    } else if (src.depthStride === 1) {
      const unit = alignedUnit(src.outerStride, alignment); // band offsets must stay aligned
      const step = floorTo(maxBinding / src.outerStride, unit);
      if (step === 0) throw new LimitExceededError('maxStorageBufferBindingSize', `${side}: ${unit} rows of the operand exceed a storage binding`);
      for (let o = 0; o < outer; o += step) {
        const end = o + step >= outer ? paddedOuter : o + step;
        bands.push({ srcBase: o * src.outerStride, srcEnd: Math.min(src.bytes, end * src.outerStride), depthBegin: 0, depthEnd: depth, outerBegin: o, outerEnd: end });
      }
    } else {
      const unit = alignedUnit(src.depthStride, alignment, 4); // aligned offsets, whole packed words
      const step = floorTo(maxBinding / src.depthStride, unit);
      if (step === 0) throw new LimitExceededError('maxStorageBufferBindingSize', `${side}: ${unit} k-slices of the operand exceed a storage binding`);
      for (let k = 0; k < depth; k += step) {
        bands.push({ srcBase: k * src.depthStride, srcEnd: Math.min(src.bytes, (k + step) * src.depthStride), depthBegin: k, depthEnd: Math.min(depth, k + step), outerBegin: 0, outerEnd: paddedOuter });
      }
    }
    pass.setPipeline(pipeline);
    for (const band of bands) {
      for (let o = band.outerBegin; o < band.outerEnd; o += packedRows) {
        const rows = Math.min(packedRows, band.outerEnd - o);
        for (const d of flatDispatches(rows, maxWG)) {
          const uniforms = this.uniformBuffer(layout, {
            outerCount: outer, depth, outerStride: src.outerStride, depthStride: src.depthStride,
            srcBase: band.srcBase, depthBegin: band.depthBegin, depthEnd: band.depthEnd, depthWords,
            outerBase: o, outerRows: rows, signFlip: src.signed ? 0x80 : 0, accumulate: band.depthBegin > 0 ? 1 : 0,
            workgroupBase: d.base, maxval: 2 ** requant.bits - 1, rounding: ROUNDING_CODE[requant.rounding],
            // Rounding offsets follow the row-major linear index of the logical matrix: lhs m*K + k, rhs k*N + n.
            linearOuterStride: side === 'lhs' ? depth : 1, linearDepthStride: side === 'lhs' ? 1 : outer,
          }, temps);
          const srcSize = Math.min(roundUp(band.srcEnd - band.srcBase, 4), src.buffer.size - band.srcBase);
          pass.setBindGroup(0, this.device.createBindGroup({
            layout: pipeline.getBindGroupLayout(0),
            entries: [
              { binding: 0, resource: { buffer: uniforms } },
              { binding: 1, resource: { buffer: src.buffer, offset: band.srcBase, size: srcSize } },
              { binding: 2, resource: { buffer: packed, offset: o * depthWords * 4, size: rows * depthWords * 4 } },
              { binding: 3, resource: { buffer: sums, offset: 0, size: paddedOuter * 4 } },
              { binding: 4, resource: { buffer: this.xorshiftBuffer() } },
            ],
          }));
          pass.dispatchWorkgroups(d.x, d.y);
          this.lastRun.packDispatches++;
        }
      }
    }
  }

  private uniformBuffer(layout: UniformLayout, values: Record<string, number>, temps: GPUBuffer[]): GPUBuffer {
    const buffer = this.device.createBuffer({ size: layout.size, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.device.queue.writeBuffer(buffer, 0, packUniforms(layout, values));
    temps.push(buffer);
    return buffer;
  }

  /** Packs what needs packing, runs gemm/gemv with the fused output stage; returns dst on the GPU. */
  private async encodeAndRun(problem: GpuGemmProblem, timing?: GemmTiming): Promise<GpuMatrix> {
    this.checkAlive();
    const p: NormalizedProblem = normalizeProblem({ ...problem, lhs: shapeOf(problem.lhs, 'lhs'), rhs: shapeOf(problem.rhs, 'rhs') }, { shapesOnly: true });
    const { M, N, K } = p;
    const { maxStorageBufferBindingSize: maxBinding, maxComputeWorkgroupsPerDimension: maxWG } = this.limits;
    const config = chooseKernel(M, N);
    const depthWords = roundUp(K, PACK_DEPTH) / 4;
    const Mp = roundUp(M, PACK_ROWS);
    const Np = roundUp(N, PACK_ROWS);
    const colMajor = p.dstOrder === 'col-major';
    const stride = roundUp(colMajor ? M : N, 4);
    const elementBytes = BYTES[p.dstType];
    const dstBytes = stride * (colMajor ? N : M) * elementBytes;
    for (const [bytes, what] of [[Mp * depthWords * 4, 'packed lhs'], [Np * depthWords * 4, 'packed rhs'], [dstBytes, 'dst']] as const) this.checkBuffer(bytes, what);

    const stages = encodeStages(p);
    this.lastRun.packDispatches = this.lastRun.gemmDispatches = 0;
    const temps: GPUBuffer[] = [];
    const pooled: GPUBuffer[] = [];
    let dst: GPUBuffer | null = null;
    try {
      await runInErrorScope(this.device, async () => {
        dst = this.pool.acquire(dstBytes, 'dst');
        const gemmPipeline = await getPipeline(this.device, config.kernel, this.dot4, config.overrides);
        const stagesBuffer = this.device.createBuffer({ size: stages.data.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, label: 'qgemm stages' });
        this.device.queue.writeBuffer(stagesBuffer, 0, stages.data);
        temps.push(stagesBuffer);

        const encoder = this.device.createCommandEncoder({ label: 'qgemm gemm' });
        const querySet = this.timestamps ? this.device.createQuerySet({ type: 'timestamp', count: 2 }) : null;
        const pass = encoder.beginComputePass(querySet ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {});
        const operand = async (side: 'lhs' | 'rhs', x: GpuOperandInput, outer: number) => {
          const requant = requantizationOf(p.bitDepth, side, K);
          if (isPacked(x)) {
            if (x.bits !== requant.bits || (x.bits !== 8 && x.rounding !== requant.rounding)) {
              throw new InputError(side, `prepacked with ${x.bits} bits (${x.rounding}), but this GEMM asks for ${requant.bits} bits (${requant.rounding})`);
            }
            return { packed: x.packed, sums: x.sums };
          }
          const packed = this.pool.acquire(roundUp(outer, PACK_ROWS) * depthWords * 4, `${side} packed`);
          const sums = this.pool.acquire(roundUp(outer, PACK_ROWS) * 4, `${side} sums`);
          pooled.push(packed, sums);
          await this.encodePack(pass, this.source(x, side, temps), side, outer, K, packed, sums, temps, requant);
          return { packed, sums };
        };
        const lhs = await operand('lhs', problem.lhs, M);
        const rhs = await operand('rhs', problem.rhs, N);

        // Bands: each keeps its lhs rows, rhs columns and dst range within one storage binding.
        const rowBytes = depthWords * 4;
        const bandRows = floorTo(maxBinding / Math.max(rowBytes, colMajor ? 0 : stride * elementBytes), PACK_ROWS);
        const bandCols = floorTo(maxBinding / Math.max(rowBytes, colMajor ? stride * elementBytes : 0), PACK_ROWS);
        if (bandRows === 0 || bandCols === 0) {
          throw new LimitExceededError('maxStorageBufferBindingSize', `${PACK_ROWS} packed rows or dst lines exceed a storage binding (${maxBinding} bytes)`);
        }
        const layout = uniformLayout(kernelSource(config.kernel, this.dot4), 'GemmParams');
        const f = unpackFractions(p.bitDepth?.lhs ?? 8, p.bitDepth?.rhs ?? 8);
        const fractions = {
          xxIdentity: +f.xx.identity, xxIntQuotient: f.xx.intQuotient, xxScaledRemainingNumerator: f.xx.scaledRemainingNumerator,
          x1Identity: +f.x1.identity, x1IntQuotient: f.x1.intQuotient, x1ScaledRemainingNumerator: f.x1.scaledRemainingNumerator,
          onexIdentity: +f.onex.identity, onexIntQuotient: f.onex.intQuotient, onexScaledRemainingNumerator: f.onex.scaledRemainingNumerator,
        };
        pass.setPipeline(gemmPipeline);
        for (let m0 = 0; m0 < Mp; m0 += bandRows) {
          const rows = Math.min(bandRows, Mp - m0);
          for (let n0 = 0; n0 < Np; n0 += bandCols) {
            const cols = Math.min(bandCols, Np - n0);
            // dst range: whole rows [m0, m0+rows) for row-major, whole columns for column-major.
            const lineBegin = colMajor ? n0 : m0;
            const lineEnd = Math.min(colMajor ? N : M, lineBegin + (colMajor ? cols : rows));
            const dstOffset = lineBegin * stride * elementBytes;
            const dstSize = roundUp((lineEnd - lineBegin) * stride * elementBytes, 4);
            // Only the tiles that hold dst elements: M = 1 runs 1 gemv row group, not the 16 of a padded band.
            const liveRows = roundUp(Math.min(rows, M - m0), config.tileM);
            const liveCols = roundUp(Math.min(cols, N - n0), config.tileN);
            const tiles = (liveRows / config.tileM) * (liveCols / config.tileN);
            for (const d of flatDispatches(tiles, maxWG)) {
              if (lineBegin >= lineEnd) continue; // a band of padding only
              const uniforms = this.uniformBuffer(layout, {
                M, N, K, depthWords, bandM: m0, bandN: n0, bandRows: liveRows, bandCols: liveCols,
                dstStride: stride, dstBase: lineBegin * stride, dstType: ['int32', 'uint8', 'int8', 'int16'].indexOf(p.dstType),
                dstColMajor: colMajor ? 1 : 0, lhsZeroPoint: stages.lhsZeroPoint, lhsZeroPointOffset: stages.lhsZeroPointOffset,
                rhsZeroPoint: stages.rhsZeroPoint, rhsZeroPointOffset: stages.rhsZeroPointOffset, stageCount: stages.stageCount,
                workgroupBase: d.base, ...fractions,
              }, temps);
              pass.setBindGroup(0, this.device.createBindGroup({
                layout: gemmPipeline.getBindGroupLayout(0),
                entries: [
                  { binding: 0, resource: { buffer: uniforms } },
                  { binding: 1, resource: { buffer: lhs.packed, offset: m0 * rowBytes, size: rows * rowBytes } },
                  { binding: 2, resource: { buffer: rhs.packed, offset: n0 * rowBytes, size: cols * rowBytes } },
                  { binding: 3, resource: { buffer: lhs.sums, offset: 0, size: Mp * 4 } },
                  { binding: 4, resource: { buffer: rhs.sums, offset: 0, size: Np * 4 } },
                  { binding: 5, resource: { buffer: stagesBuffer } },
                  { binding: 6, resource: { buffer: dst, offset: dstOffset, size: dstSize } },
                ],
              }));
              pass.dispatchWorkgroups(d.x, d.y);
              this.lastRun.gemmDispatches++;
            }
          }
        }
        pass.end();
        let timestampBuffer: GPUBuffer | null = null;
        if (querySet) {
          const resolve = this.device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
          timestampBuffer = this.device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
          encoder.resolveQuerySet(querySet, 0, 2, resolve, 0);
          encoder.copyBufferToBuffer(resolve, 0, timestampBuffer, 0, 16);
          temps.push(resolve, timestampBuffer);
        }
        this.device.queue.submit([encoder.finish()]);
        if (timestampBuffer && timing) {
          await timestampBuffer.mapAsync(GPUMapMode.READ);
          const [begin, end] = new BigUint64Array(timestampBuffer.getMappedRange());
          timing.gpuMs = Number(end - begin) / 1e6;
          timestampBuffer.unmap();
        } else if (timing) {
          timing.gpuMs = null;
        }
        await this.device.queue.onSubmittedWorkDone();
        querySet?.destroy();
      }, `gemm ${M}x${N}x${K}`);
    } catch (e) {
      if (dst) this.pool.release(dst);
      throw e;
    } finally {
      for (const t of temps) t.destroy();
      for (const b of pooled) this.pool.release(b);
    }
    this.checkAlive();
    return { buffer: dst!, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType, stride };
  }

  private async readBack(m: GpuMatrix): Promise<GemmResult> {
    this.checkAlive();
    const elementBytes = BYTES[m.dtype];
    const lines = m.order === 'row-major' ? m.rows : m.cols;
    const inner = m.order === 'row-major' ? m.cols : m.rows;
    const bytes = roundUp(lines * m.stride * elementBytes, 4);
    const staging = this.device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'qgemm readback' });
    try {
      await runInErrorScope(this.device, async () => {
        const encoder = this.device.createCommandEncoder({ label: 'qgemm readback' });
        encoder.copyBufferToBuffer(m.buffer, 0, staging, 0, bytes);
        this.device.queue.submit([encoder.finish()]);
        await staging.mapAsync(GPUMapMode.READ);
      }, 'readback');
      this.checkAlive();
      const raw = staging.getMappedRange().slice(0);
      staging.unmap();
      const full = allocateDst(m.dtype as DstType, raw);
      if (m.stride === inner) return { data: full.slice(0, lines * inner) as DstData, rows: m.rows, cols: m.cols, order: m.order, dtype: m.dtype as DstType };
      const data = allocateDst(m.dtype as DstType, new ArrayBuffer(lines * inner * elementBytes));
      for (let l = 0; l < lines; l++) data.set(full.subarray(l * m.stride, l * m.stride + inner), l * inner);
      return { data, rows: m.rows, cols: m.cols, order: m.order, dtype: m.dtype as DstType };
    } catch (e) {
      if (this.lostReason !== null) throw new DeviceLostError(`the GPU device was lost during readback (${this.lostReason})`, this.lostReason);
      throw e;
    } finally {
      staging.destroy();
    }
  }
}
