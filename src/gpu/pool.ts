// A bounded pool of GPU storage buffers for the scheduler (pack -> gemm -> output): packed operands,
// sums, dst and upload buffers are reused by size class across calls instead of created per call.
// Only buffers the pool handed out can come back, once each; destroy() frees all of them.

import { InputError } from '../errors.ts';
import { BufferUsage } from './usage.ts';

/**
 * Storage buffers by size class (steps of 1/8 of a power of two, never past `maxBufferSize`), kept for
 * reuse up to `maxBytes` in total; past it, the free buffers released longest ago make room (so calls
 * whose shapes changed do not create and destroy their buffers at every call behind a pool full of the
 * old sizes). Only buffers this pool handed out can come back, once each: a double release would hand
 * one buffer to two users.
 */
export class BufferPool {
  private free = new Map<number, GPUBuffer[]>();
  /** The free buffers, released longest ago first. */
  private released = new Set<GPUBuffer>();
  private out = new Set<GPUBuffer>();
  private pooledBytes = 0;
  constructor(
    private readonly device: GPUDevice,
    readonly maxBytes = 256 * 1024 * 1024,
  ) {}

  static sizeClass(bytes: number, maxBufferSize = Infinity): number {
    const step = 2 ** Math.max(8, Math.ceil(Math.log2(Math.max(bytes, 1))) - 3);
    const rounded = Math.ceil(Math.max(bytes, 1) / step) * step;
    return rounded <= maxBufferSize ? rounded : Math.ceil(bytes / 4) * 4;
  }

  acquire(bytes: number, label: string): GPUBuffer {
    const size = BufferPool.sizeClass(bytes, this.device.limits.maxBufferSize);
    const reused = this.free.get(size)?.pop();
    if (reused) {
      this.pooledBytes -= size;
      this.released.delete(reused);
    }
    const usage = BufferUsage.STORAGE | BufferUsage.COPY_DST | BufferUsage.COPY_SRC;
    const buffer = reused ?? this.device.createBuffer({ size, usage, label: `qgemm ${label}` });
    this.out.add(buffer);
    return buffer;
  }

  release(buffer: GPUBuffer): void {
    if (!this.out.delete(buffer)) throw new InputError('matrix', 'this buffer was not handed out by this context, or was already released');
    if (buffer.size > this.maxBytes) {
      buffer.destroy();
      return;
    }
    for (const old of this.released) {
      if (this.pooledBytes + buffer.size <= this.maxBytes) break;
      const list = this.free.get(old.size)!;
      list.splice(list.indexOf(old), 1);
      this.released.delete(old);
      this.pooledBytes -= old.size;
      old.destroy();
    }
    const list = this.free.get(buffer.size) ?? [];
    list.push(buffer);
    this.free.set(buffer.size, list);
    this.released.add(buffer);
    this.pooledBytes += buffer.size;
  }

  destroy(): void {
    for (const list of this.free.values()) for (const b of list) b.destroy();
    for (const b of this.out) b.destroy();
    this.free.clear();
    this.released.clear();
    this.out.clear();
    this.pooledBytes = 0;
  }
}
