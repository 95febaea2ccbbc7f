// GpuContext: one device and everything this library keeps on it (pipelines, a buffer pool, a uniform
// arena, the capabilities the kernels are chosen by), and the GEMM call itself: pack -> gemm -> output
// in ONE command encoder and ONE submission (pack passes for the operands that need packing, then the
// kernel chosen by src/kernels/registry.ts with the fused epilogue, then, for gemm(), the copy to a
// readback buffer), planned by src/gpu/plan.ts. It keeps data on the GPU when asked (GpuMatrix in,
// GpuMatrix out) and packs constant operands once (prepack). Every call runs inside error scopes, one
// call per device at a time, and a lost device is reported, never ignored: nothing here returns a
// number it did not verify came from a valid submission.
//
// Longer than this project's ~350 lines on purpose: the call path (kernel choice with its self-test,
// packing, encoding, submission, readback) reads best in one file, and prepack and the self-test share
// the context's private state (pool, uniform arena, verdicts). The pieces that stand alone live beside
// it: operands.ts, plan.ts, readback.ts, uniforms.ts, pool.ts.

import { DeviceLostError, InputError, LimitExceededError } from '../errors.ts';
import { epilogueValues } from '../epilogue/epilogue.ts';
import { encodeStages } from '../epilogue/stages.ts';
import { selectGemmKernel } from '../kernels/registry.ts';
import { runSelfTest } from './self-test.ts';
import { type GpuGemmKernel, kernelFormats, type PackedPair } from '../kernels/types.ts';
import { PACK_FORMATS, type PackFormat, packedRowBytes, prepackFormat } from '../pack/formats.ts';
import { encodePack, packJob, packPipelines, requantizationOf, type PackJob } from '../pack/pack.ts';
import { XORSHIFT_OFFSETS } from '../quant/lowbit.ts';
import { normalizeProblem, type NormalizedProblem } from '../spec/problem.ts';
import type { BitDepth, GemmProblem, GemmResult, Operand } from '../types.ts';
import { acquireDevice, type AcquireOptions } from '../gpu/acquire.ts';
import type { AdapterSummary } from '../gpu/adapter.ts';
import { adapterCaps, type AdapterCaps, type PlanLimits } from '../gpu/caps.ts';
import { isGpuMatrix, isPacked, operandSource, shapeOf, type GpuMatrix, type GpuOperandInput, type PackedOperand } from './operands.ts';
import { dstLayout, roundUp } from '../gpu/plan.ts';
import { BufferPool } from '../gpu/pool.ts';
import { readBack, Staging } from './readback.ts';
import { runInErrorScope, withDevice } from '../gpu/scopes.ts';
import { UniformArena } from '../gpu/uniforms.ts';

export type { GpuMatrix, GpuOperandInput, PackedOperand };

export interface GpuGemmProblem extends Omit<GemmProblem, 'lhs' | 'rhs'> {
  lhs: GpuOperandInput;
  rhs: GpuOperandInput;
}

export interface GpuContextOptions extends Partial<AcquireOptions> {
  /** Lower the limits the scheduler plans with (never above the device's). */
  limits?: Partial<PlanLimits>;
  /** Run this kernel (an id of src/kernels/registry.ts GPU_KERNELS) instead of the registry's choice. */
  kernel?: string;
  /** Record GPU time with timestamp queries where the device offers them. */
  timestamps?: boolean;
  /** Where warnings go (a kernel disabled by its self-test). Default: console.warn. */
  warn?: (message: string) => void;
  /** Test hook: the GPU kernels to choose from instead of the registry's list. */
  kernels?: readonly GpuGemmKernel[];
}

/** Self-test verdicts per device and kernel id (src/scheduler/self-test.ts). */
const verdictsByDevice = new WeakMap<GPUDevice, Map<string, 'testing' | 'passed' | 'failed'>>();
function selfTests(device: GPUDevice): Map<string, 'testing' | 'passed' | 'failed'> {
  let m = verdictsByDevice.get(device);
  if (!m) verdictsByDevice.set(device, (m = new Map()));
  return m;
}

export interface GemmTiming {
  /** GPU time of the compute pass (timestamp queries), or null where unavailable. */
  gpuMs: number | null;
}

/** What the last GEMM ran: its kernel and how it was split (for tests, the benchmark and the curious). */
export interface LastRun {
  kernel: string | null;
  packDispatches: number;
  gemmDispatches: number;
}

export class GpuContext {
  readonly device: GPUDevice;
  readonly summary: AdapterSummary;
  readonly caps: AdapterCaps;
  readonly lastRun: LastRun = { kernel: null, packDispatches: 0, gemmDispatches: 0 };
  private readonly pool: BufferPool;
  private readonly uniforms: UniformArena;
  private readonly staging: Staging;
  private readonly timestamps: boolean;
  private readonly forcedKernel: string | undefined;
  private readonly kernels: readonly GpuGemmKernel[] | undefined;
  private readonly warn: (message: string) => void;
  /** Matrices given back with releaseMatrix (by identity: their buffer goes on to other calls). */
  private readonly released = new WeakSet<GpuMatrix>();
  private xorshift: GPUBuffer | null = null;
  private lostReason: string | null = null;
  private destroyed = false;
  /** The context acquired the device itself (not passed in), so destroy() destroys it too. */
  private readonly ownsDevice: boolean;

  private constructor(device: GPUDevice, summary: AdapterSummary, caps: AdapterCaps, ownsDevice: boolean, opts: GpuContextOptions) {
    this.device = device;
    this.summary = summary;
    this.caps = caps;
    this.ownsDevice = ownsDevice;
    this.forcedKernel = opts.kernel;
    this.kernels = opts.kernels;
    this.warn = opts.warn ?? ((m) => console.warn(m));
    this.pool = new BufferPool(device);
    this.uniforms = new UniformArena(device);
    this.staging = new Staging(device);
    this.timestamps = !!opts.timestamps && caps.timestamps;
    device.lost.then((info) => {
      this.lostReason = `${info.reason}: ${info.message}`;
    });
  }

  static async create(opts: GpuContextOptions = {}): Promise<GpuContext> {
    const acquired = await acquireDevice({ allowSoftware: opts.allowSoftware ?? true, ...opts });
    const info = acquired.adapter?.info ?? (acquired.device as { adapterInfo?: unknown }).adapterInfo;
    const caps = adapterCaps(acquired.device, acquired.summary, acquired.hasDot4, info, opts.limits);
    return new GpuContext(acquired.device, acquired.summary, caps, acquired.source !== 'user', opts);
  }

  /** The limits the scheduler plans with. */
  get limits(): PlanLimits {
    return this.caps.limits;
  }

  /** 'native' where WGSL has dot4U8Packed, else 'emulated' (the manual unpack). */
  get dot4(): 'native' | 'emulated' {
    return this.caps.dot4 ? 'native' : 'emulated';
  }

  /** True once the device is lost or destroyed: make a new context. */
  get lost(): boolean {
    return this.lostReason !== null || this.destroyed;
  }

  private checkAlive(): void {
    if (this.destroyed) throw new DeviceLostError('this GpuContext was destroyed', 'destroyed');
    if (this.lostReason !== null) throw new DeviceLostError(`the GPU device was lost (${this.lostReason})`, this.lostReason);
  }

  /** A failure while the device went away is a DeviceLostError, whatever the failing call said. */
  private lostOr(e: unknown): unknown {
    if (this.lost && !(e instanceof DeviceLostError)) {
      return new DeviceLostError(
        `the GPU device was lost during the call (${this.lostReason ?? 'context destroyed'}): ${(e as Error).message}`,
        this.lostReason ?? 'destroyed',
      );
    }
    return e;
  }

  /**
   * Runs fn with this context's device to itself: GPU calls on one device run one at a time, since
   * error scopes are per device. Other kernels on the same device (elementwise ops) use it.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return withDevice(this.device, fn);
  }

  /** dst = pipeline(lhs * rhs) with data read back to the CPU (one submission: gemm and the copy). */
  gemm(problem: GpuGemmProblem, timing?: GemmTiming): Promise<GemmResult> {
    return this.exclusive(async () => {
      const run = await this.encodeAndRun(problem, timing, true);
      try {
        return await run.result!;
      } catch (e) {
        throw this.lostOr(e);
      } finally {
        if (!this.destroyed) this.pool.release(run.dst.buffer);
      }
    });
  }

  /** dst = pipeline(lhs * rhs), left on the GPU (the caller owns dst.buffer; see releaseMatrix). */
  gemmOnGpu(problem: GpuGemmProblem, timing?: GemmTiming): Promise<GpuMatrix> {
    return this.exclusive(async () => (await this.encodeAndRun(problem, timing, false)).dst);
  }

  /** Reads a GPU matrix back into a dense typed array in its own storage order. */
  read(m: GpuMatrix): Promise<GemmResult> {
    return this.exclusive(async () => {
      this.checkAlive();
      if (this.released.has(m)) throw new InputError('matrix', 'this GpuMatrix was released (releaseMatrix)');
      try {
        return await readBack(this.device, m, this.staging);
      } catch (e) {
        throw this.lostOr(e);
      }
    });
  }

  /** Returns a dst buffer made by gemmOnGpu to the pool; the matrix can no longer be used. */
  releaseMatrix(m: GpuMatrix): void {
    if (this.destroyed) return; // everything was freed already
    if (this.released.has(m)) throw new InputError('matrix', 'this GpuMatrix was already released');
    this.pool.release(m.buffer);
    this.released.add(m);
  }

  /**
   * Packs a constant operand once, with its row (lhs) or column (rhs) sums, for reuse across calls.
   * With `bitDepth`, the operand is requantized as a GEMM with that bitDepth would (same K, same N).
   */
  prepack(side: 'lhs' | 'rhs', operand: Operand | GpuMatrix, bitDepth?: BitDepth): Promise<PackedOperand> {
    return this.exclusive(async () => {
      this.checkAlive();
      const shape = shapeOf(operand, side, this.released);
      const type = shape.data instanceof Int8Array ? 'int8' : 'uint8';
      const { rows, cols } = shape;
      const outer = side === 'lhs' ? rows : cols;
      const depth = side === 'lhs' ? cols : rows;
      const requant = requantizationOf(bitDepth, side, depth);
      const format = PACK_FORMATS[prepackFormat(this.caps, side, requant.bits)];
      const packedBytes = roundUp(outer, format.rowAlign) * packedRowBytes(depth, format);
      const sumsBytes = roundUp(outer, format.rowAlign) * 4;
      this.checkBuffer(packedBytes, `prepacked ${side}`);
      const created: GPUBuffer[] = [];
      const pooled: GPUBuffer[] = [];
      try {
        await runInErrorScope(
          this.device,
          async () => {
            const make = (size: number, label: string) => {
              const b = this.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE, label: `qgemm prepacked ${label}` });
              created.push(b);
              return b;
            };
            const packed = make(packedBytes, side);
            const sums = make(sumsBytes, `${side} sums`);
            const src = operandSource(this.device, operand, side, this.pool, pooled);
            const job = packJob(side, src, outer, depth, format, requant, this.limits, packed, sums);
            const pipelines = await packPipelines(this.device);
            const slab = this.uniforms.slab(job.plan.length);
            const encoder = this.device.createCommandEncoder({ label: 'qgemm prepack' });
            const pass = encoder.beginComputePass();
            encodePack(this.device, pass, pipelines, job, this.xorshiftBuffer(), slab);
            pass.end();
            slab.upload(this.device.queue);
            this.device.queue.submit([encoder.finish()]);
          },
          'prepack',
        );
      } catch (e) {
        for (const b of created) b.destroy();
        throw this.lostOr(e);
      } finally {
        for (const b of pooled) this.pool.release(b);
      }
      this.checkAlive();
      const [packed, sums] = created;
      let destroyed = false;
      return {
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
      };
    });
  }

  /** Frees every buffer of this context (GpuMatrix results included) and a device it acquired itself. */
  destroy(): void {
    this.destroyed = true;
    this.pool.destroy();
    this.uniforms.destroy();
    this.staging.destroy();
    this.xorshift?.destroy();
    if (this.ownsDevice) this.device.destroy();
  }

  /** XORSHIFT_OFFSETS on the GPU, made once per context. */
  private xorshiftBuffer(): GPUBuffer {
    if (!this.xorshift) {
      this.xorshift = this.device.createBuffer({
        size: 255 * 4,
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
        label: 'qgemm xorshift offsets',
      });
      this.device.queue.writeBuffer(this.xorshift, 0, Uint32Array.from(XORSHIFT_OFFSETS));
    }
    return this.xorshift;
  }

  private checkBuffer(bytes: number, what: string): void {
    if (bytes > this.limits.maxBufferSize) {
      throw new LimitExceededError('maxBufferSize', `${what} needs ${bytes} bytes, above maxBufferSize ${this.limits.maxBufferSize}`);
    }
  }

  /**
   * The kernel for p, given the formats of any prepacked operands. A kernel that needs a self-test runs
   * it first, once per device (inside this call, which holds the device); one that fails is disabled on
   * the device with a one-line warning, and the choice is made again without it.
   */
  private async kernelFor(p: NormalizedProblem, problem: GpuGemmProblem, force = this.forcedKernel): Promise<GpuGemmKernel> {
    const format = (x: GpuOperandInput) => (isPacked(x) ? x.packFormat : undefined);
    const verdicts = selfTests(this.device);
    const disabled = new Set([...verdicts].filter(([, v]) => v === 'failed').map(([id]) => id));
    const kernel = selectGemmKernel(this.caps, p, {
      force,
      lhsPackFormat: format(problem.lhs),
      rhsPackFormat: format(problem.rhs),
      disabled,
      kernels: this.kernels,
    });
    if (!kernel.needsSelfTest || verdicts.get(kernel.id) === 'passed' || verdicts.get(kernel.id) === 'testing') return kernel;
    verdicts.set(kernel.id, 'testing');
    const result = await runSelfTest(async (q) => {
      const run = await this.encodeAndRun(q, undefined, true, kernel.id);
      try {
        return await run.result!;
      } finally {
        this.pool.release(run.dst.buffer);
      }
    });
    verdicts.set(kernel.id, result.ok ? 'passed' : 'failed');
    if (result.ok) return kernel;
    this.warn(
      `qgemm: kernel ${kernel.id} failed its exactness self-test on ${this.summary.description || this.summary.architecture} and is disabled on this device (${result.detail})`,
    );
    return this.kernelFor(p, problem, force);
  }

  /**
   * Packs what needs packing and runs the chosen kernel with the fused epilogue, all in one submission;
   * with `readback`, also copies dst to a mapped buffer (`result` resolves with the data).
   */
  private async encodeAndRun(
    problem: GpuGemmProblem,
    timing: GemmTiming | undefined,
    readback: boolean,
    force?: string,
  ): Promise<{ dst: GpuMatrix; result?: Promise<GemmResult> }> {
    this.checkAlive();
    const p = normalizeProblem(
      { ...problem, lhs: shapeOf(problem.lhs, 'lhs', this.released), rhs: shapeOf(problem.rhs, 'rhs', this.released) },
      { shapesOnly: true },
    );
    const { M, N, K } = p;
    const kernel = await this.kernelFor(p, problem, force);
    const formats: Record<'lhs' | 'rhs', PackFormat> = {
      lhs: PACK_FORMATS[kernelFormats(kernel).lhs],
      rhs: PACK_FORMATS[kernelFormats(kernel).rhs],
    };
    const layout = dstLayout(p);
    const packedBytes = (side: 'lhs' | 'rhs', outer: number) => roundUp(outer, formats[side].rowAlign) * packedRowBytes(K, formats[side]);
    for (const [bytes, what] of [
      [packedBytes('lhs', M), 'packed lhs'],
      [packedBytes('rhs', N), 'packed rhs'],
      [layout.bytes, 'dst'],
    ] as const)
      this.checkBuffer(bytes, what);
    const dispatches = kernel.plan(p, this.limits, this.caps);
    const stages = encodeStages(p);
    const pooled: GPUBuffer[] = [];
    let dst: GPUBuffer | null = null;
    let result: Promise<GemmResult> | undefined;
    try {
      const [gemmPipeline, pipelinesForPack] = await Promise.all([kernel.pipeline(this.device, this.caps), packPipelines(this.device)]);
      await runInErrorScope(
        this.device,
        () => {
          dst = this.pool.acquire(layout.bytes, 'dst');
          const stagesBuffer = this.pool.acquire(stages.data.byteLength, 'stages');
          pooled.push(stagesBuffer);
          this.device.queue.writeBuffer(stagesBuffer, 0, stages.data);

          // Operands: packed ones as they are, the others packed in this same submission.
          const jobs: PackJob[] = [];
          const operand = (side: 'lhs' | 'rhs', x: GpuOperandInput, outer: number) => {
            const requant = requantizationOf(p.bitDepth, side, K);
            if (isPacked(x)) {
              if (x.bits !== requant.bits || (x.bits !== 8 && x.rounding !== requant.rounding)) {
                throw new InputError(
                  side,
                  `prepacked with ${x.bits} bits (${x.rounding}), but this GEMM asks for ${requant.bits} bits (${requant.rounding})`,
                );
              }
              return { packed: x.packed, sums: x.sums };
            }
            const format = formats[side];
            const packed = this.pool.acquire(packedBytes(side, outer), `${side} packed`);
            const sums = this.pool.acquire(roundUp(outer, format.rowAlign) * 4, `${side} sums`);
            pooled.push(packed, sums);
            const src = operandSource(this.device, x as Operand | GpuMatrix, side, this.pool, pooled);
            jobs.push(packJob(side, src, outer, K, format, requant, this.limits, packed, sums));
            return { packed, sums };
          };
          const lhs = operand('lhs', problem.lhs, M);
          const rhs = operand('rhs', problem.rhs, N);
          const operands: PackedPair = { lhs: lhs.packed, rhs: rhs.packed, rowSums: lhs.sums, colSums: rhs.sums };

          const slots = jobs.reduce((n, j) => n + j.plan.length, 0) + dispatches.length * kernel.uniformsPerDispatch;
          const slab = this.uniforms.slab(slots);
          const encoder = this.device.createCommandEncoder({ label: 'qgemm gemm' });
          const querySet = this.timestamps ? this.device.createQuerySet({ type: 'timestamp', count: 2 }) : null;
          const pass = encoder.beginComputePass(
            querySet ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {},
          );
          for (const job of jobs) encodePack(this.device, pass, pipelinesForPack, job, this.xorshiftBuffer(), slab);
          const workspace = (bytes: number) => {
            this.checkBuffer(bytes, 'workspace');
            const b = this.pool.acquire(bytes, 'workspace');
            pooled.push(b);
            return b;
          };
          kernel.encode({
            device: this.device,
            pass,
            pipeline: gemmPipeline,
            shape: p,
            dispatches,
            operands,
            dst: dst!,
            epilogue: { values: epilogueValues(p, stages, layout.stride), stages: stagesBuffer },
            uniforms: slab,
            workspace,
          });
          pass.end();
          const times = querySet ? this.staging.timestamps(encoder, querySet) : null;
          const matrix: GpuMatrix = { buffer: dst!, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType, stride: layout.stride };
          const copied = readback ? this.staging.copy(encoder, matrix) : null;
          slab.upload(this.device.queue);
          this.device.queue.submit([encoder.finish()]);
          querySet?.destroy();
          this.lastRun.kernel = kernel.id;
          this.lastRun.packDispatches = jobs.reduce((n, j) => n + j.plan.length, 0);
          this.lastRun.gemmDispatches = dispatches.length;
          if (timing) timing.gpuMs = null;
          const gpuMs = times ? times() : null;
          if (copied) {
            result = Promise.all([copied(), gpuMs]).then(([r, ms]) => {
              if (timing && ms !== null) timing.gpuMs = ms;
              this.checkAlive();
              return r;
            });
            result.catch(() => undefined); // awaited by gemm(); never an unhandled rejection meanwhile
          } else if (gpuMs && timing) {
            // gemmOnGpu: the caller awaits the call, so the GPU time is known when it resolves.
            return gpuMs.then((ms) => {
              timing.gpuMs = ms;
            });
          }
        },
        `gemm ${M}x${N}x${K}`,
      );
    } catch (e) {
      if (dst && !this.destroyed) this.pool.release(dst);
      throw this.lostOr(e);
    } finally {
      if (!this.destroyed) for (const b of pooled) this.pool.release(b);
    }
    this.checkAlive();
    return { dst: { buffer: dst!, rows: M, cols: N, order: p.dstOrder, dtype: p.dstType, stride: layout.stride }, result };
  }
}

export { isGpuMatrix };
