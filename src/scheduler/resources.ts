// What the GEMM scheduler keeps on one device (pack -> gemm -> output): the device with its
// capabilities, the kernels prepared on it, a buffer pool, a uniform arena, a readback staging buffer,
// the xorshift table of the pack stage, the matrices given back to the pool, and the device's lifetime
// (lost or destroyed). Like ruy's Ctx it holds resources and chooses nothing: ./gemm.ts and
// ./prepack.ts run on it, and ./context.ts owns it and gives callers exclusive use of it.

import { DeviceLostError, LimitExceededError } from '../errors.ts';
import type { AdapterSummary } from '../gpu/adapter.ts';
import type { AdapterCaps, PlanLimits } from '../gpu/caps.ts';
import type { GpuMatrix } from '../gpu/matrix.ts';
import { BufferPool } from '../gpu/pool.ts';
import { Staging } from '../gpu/readback.ts';
import { UniformArena } from '../gpu/uniforms.ts';
import type { GpuGemmKernel, PreparedGemmKernel } from '../kernels/types.ts';
import { XORSHIFT_OFFSETS } from '../quant/lowbit.ts';

export class DeviceResources {
  readonly pool: BufferPool;
  readonly uniforms: UniformArena;
  readonly staging: Staging;
  /** Matrices given back with releaseMatrix (by identity: their buffer goes on to other calls). */
  readonly released = new WeakSet<GpuMatrix>();
  /** Each kernel prepared once on this device (its pipelines), by kernel. */
  private readonly prepared = new Map<GpuGemmKernel, Promise<PreparedGemmKernel>>();
  /** The buffers of the live matrices gemmOnGpu handed out (./operands.ts claimMatrix). */
  readonly handedOut = new Set<GPUBuffer>();
  private xorshift: GPUBuffer | null = null;
  private lostReason: string | null = null;
  private destroyed = false;

  constructor(
    readonly device: GPUDevice,
    readonly summary: AdapterSummary,
    readonly caps: AdapterCaps,
    /** Record GPU time with timestamp queries. */
    readonly timestamps: boolean,
  ) {
    this.pool = new BufferPool(device);
    this.uniforms = new UniformArena(device);
    this.staging = new Staging(device);
    device.lost.then((info) => {
      this.lostReason = `${info.reason}: ${info.message}`;
    });
  }

  get limits(): PlanLimits {
    return this.caps.limits;
  }

  get isDestroyed(): boolean {
    return this.destroyed;
  }

  get lost(): boolean {
    return this.lostReason !== null || this.destroyed;
  }

  checkAlive(): void {
    if (this.destroyed) throw new DeviceLostError('this GpuContext was destroyed', 'destroyed');
    if (this.lostReason !== null) throw new DeviceLostError(`the GPU device was lost (${this.lostReason})`, this.lostReason);
  }

  /** A failure while the device went away is a DeviceLostError, whatever the failing call said. */
  lostOr(e: unknown): unknown {
    if (this.lost && !(e instanceof DeviceLostError)) {
      return new DeviceLostError(
        `the GPU device was lost during the call (${this.lostReason ?? 'context destroyed'}): ${(e as Error).message}`,
        this.lostReason ?? 'destroyed',
      );
    }
    return e;
  }

  checkBuffer(bytes: number, what: string): void {
    if (bytes > this.limits.maxBufferSize) {
      throw new LimitExceededError('maxBufferSize', `${what} needs ${bytes} bytes, above maxBufferSize ${this.limits.maxBufferSize}`);
    }
  }

  /** A pooled buffer back to the pool, unless everything was freed already. */
  release(buffer: GPUBuffer): void {
    if (!this.destroyed) this.pool.release(buffer);
  }

  /** Kernel k made ready on this device: prepared on first use, kept after (a failure is not kept). */
  prepare(k: GpuGemmKernel): Promise<PreparedGemmKernel> {
    let p = this.prepared.get(k);
    if (!p) {
      p = k.prepare(this.device, this.caps);
      p.catch(() => this.prepared.delete(k));
      this.prepared.set(k, p);
    }
    return p;
  }

  /** XORSHIFT_OFFSETS on the GPU, made once per device. */
  xorshiftBuffer(): GPUBuffer {
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

  /** Frees every buffer (GpuMatrix results included); the device itself only when `device` is set. */
  destroy(device: boolean): void {
    this.destroyed = true;
    this.handedOut.clear();
    this.pool.destroy();
    this.uniforms.destroy();
    this.staging.destroy();
    this.xorshift?.destroy();
    if (device) this.device.destroy();
  }
}
