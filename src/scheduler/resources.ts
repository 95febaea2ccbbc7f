// What the GEMM scheduler keeps on one device (pack -> gemm -> output): the device with its
// capabilities, the kernels prepared on it, a buffer pool, a uniform arena, a readback staging buffer,
// the xorshift table of the pack stage, the matrices given back to the pool, and the device's lifetime
// (lost or destroyed). Like ruy's Ctx it holds resources and chooses nothing: ./gemm.ts and
// ./prepack.ts run on it, and ./context.ts owns it and gives callers exclusive use of it.

import { ALL_STAGE_KINDS } from '../epilogue/epilogue.ts';
import { DeviceLostError } from '../errors.ts';
import type { AdapterSummary } from '../gpu/adapter.ts';
import { type AdapterCaps, checkBufferSize, type PlanLimits } from '../gpu/caps.ts';
import { BufferPool } from '../gpu/pool.ts';
import { Staging } from '../gpu/readback.ts';
import { lossSettled } from '../gpu/scopes.ts';
import { UniformArena } from '../gpu/uniforms.ts';
import type { GpuGemmKernel, PreparedGemmKernel } from '../kernels/types.ts';
import { XORSHIFT_OFFSETS } from '../quant/lowbit.ts';
import { CallPlans } from './plans.ts';
import { BufferUsage } from '../gpu/usage.ts';

/** Sets of stage kinds a kernel is compiled for, each on its own, before it is compiled for all of them. */
const SPECIALISED_PER_KERNEL = 2;

export class DeviceResources {
  readonly pool: BufferPool;
  readonly uniforms: UniformArena;
  readonly staging: Staging;
  /** The plans of repeated calls (./plans.ts, made and replayed by ./call-plan.ts). */
  readonly plans: CallPlans;
  /** Kernels whose exactness self-test this context could not run (./gemm.ts kernelFor): not used here. */
  readonly untested = new Set<string>();
  /** The kernels prepared on this device (their pipelines), each for the stage kinds it was compiled for. */
  private readonly prepared = new Map<GpuGemmKernel, { kinds: number; ready: Promise<PreparedGemmKernel> }[]>();
  /** The buffers of the live matrices gemmOnGpu handed out, with their leases (./operands.ts claimMatrix). */
  readonly handedOut = new Map<GPUBuffer, number>();
  /**
   * The prepacked operands made here (./prepack.ts), held weakly, so that one the caller drops can still
   * be collected: destroy() destroys those that are left, as on a device the caller keeps.
   */
  private readonly owned = new Set<WeakRef<{ destroy(): void }>>();
  private pruneAt = 64;
  private xorshift: GPUBuffer | null = null;
  private unread: GPUBuffer | null = null;
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
    this.plans = new CallPlans(device);
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

  /** Why the device is gone ('destroyed' for destroy(), else the device's `reason: message`), or null. */
  get goneReason(): string | null {
    return this.destroyed ? 'destroyed' : this.lostReason;
  }

  checkAlive(): void {
    const reason = this.goneReason;
    if (reason !== null) throw DeviceLostError.of(reason);
  }

  /**
   * A failure while the device went away is a DeviceLostError, whatever the failing call said (an aborted
   * map first waits for the loss to show: ../gpu/scopes.ts lossSettled).
   */
  async lostOr(e: unknown): Promise<unknown> {
    if (this.goneReason === null) await lossSettled(this.device, e);
    const reason = this.goneReason;
    return reason !== null && !(e instanceof DeviceLostError) ? DeviceLostError.of(reason, 'the call', e) : e;
  }

  checkBuffer(bytes: number, what: string): void {
    checkBufferSize(this.limits, bytes, what);
  }

  /** A pooled buffer back to the pool, unless everything was freed already. */
  release(buffer: GPUBuffer): void {
    if (!this.destroyed) this.pool.release(buffer);
  }

  /**
   * Kernel k made ready on this device for output programs whose ops are among `kinds` (EncodedStages.kinds):
   * a preparation whose kinds include them serves; else k is compiled for exactly these kinds, up to
   * SPECIALISED_PER_KERNEL sets, then once for every kind (ALL_STAGE_KINDS), which serves all later calls.
   * So a model's one or two kinds of output program compile small pipelines, and a kernel compiles at most
   * SPECIALISED_PER_KERNEL + 1 times per device. A failure is not kept.
   */
  prepare(k: GpuGemmKernel, kinds: number): Promise<PreparedGemmKernel> {
    const list = this.prepared.get(k) ?? [];
    this.prepared.set(k, list);
    const hit = list.find((e) => (e.kinds & kinds) >>> 0 === kinds >>> 0);
    if (hit) return hit.ready;
    const compiled = list.length < SPECIALISED_PER_KERNEL ? kinds : ALL_STAGE_KINDS;
    const entry = { kinds: compiled, ready: k.prepare(this.device, this.caps, compiled) };
    list.push(entry);
    entry.ready.catch(() => list.splice(list.indexOf(entry), 1));
    return entry.ready;
  }

  /** XORSHIFT_OFFSETS on the GPU, made once per device. */
  xorshiftBuffer(): GPUBuffer {
    if (!this.xorshift) {
      this.xorshift = this.device.createBuffer({
        size: 255 * 4,
        usage: BufferUsage.STORAGE | BufferUsage.COPY_DST,
        label: 'qgemm xorshift offsets',
      });
      this.device.queue.writeBuffer(this.xorshift, 0, Uint32Array.from(XORSHIFT_OFFSETS));
    }
    return this.xorshift;
  }

  /**
   * A 16-byte storage buffer for a binding a pipeline declares but its form never reads: the pack stage's
   * row sums, where a kernel gathers a convolution's lhs and sums its rows itself (the input's own buffer
   * there could be larger than a storage binding). Made once per device.
   */
  unreadBuffer(): GPUBuffer {
    this.unread ??= this.device.createBuffer({ size: 16, usage: BufferUsage.STORAGE, label: 'qgemm unread binding' });
    return this.unread;
  }

  /** Registers x to be destroyed with this context; returns what x's own destroy() calls to leave. */
  own(x: { destroy(): void }): () => void {
    if (this.owned.size >= this.pruneAt) {
      for (const w of this.owned) if (!w.deref()) this.owned.delete(w); // dropped by the caller and collected
      this.pruneAt = Math.max(64, 2 * this.owned.size);
    }
    const ref = new WeakRef(x);
    this.owned.add(ref);
    return () => this.owned.delete(ref);
  }

  /**
   * Frees every buffer (GpuMatrix results and prepacked operands included); the device itself only when
   * `device` is set.
   */
  destroy(device: boolean): void {
    this.destroyed = true;
    for (const w of [...this.owned]) w.deref()?.destroy();
    this.owned.clear();
    this.handedOut.clear();
    this.pool.destroy();
    this.uniforms.destroy();
    this.staging.destroy();
    this.plans.destroy();
    this.xorshift?.destroy();
    this.unread?.destroy();
    if (device) this.device.destroy();
  }
}
