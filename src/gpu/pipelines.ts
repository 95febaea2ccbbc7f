// GPU resources of the scheduler (pack -> gemm -> output): compiled pipelines, cached per device in a
// WeakMap (so a lost or destroyed device takes its pipelines with it) under keys built by one function
// from the kernel, the dot4 variant and the override values; and a bounded pool of storage buffers,
// reused by size class across calls. Both are bounded; `destroy()` releases the pool's GPU memory.

import { GpuValidationError, InputError } from '../errors.ts';
import { kernelSource, type Dot4Variant, type KernelName } from './shaders.ts';

export type Overrides = Record<string, number>;

/** The one place pipeline cache keys are made. */
export function pipelineKey(kernel: KernelName, dot4: Dot4Variant, overrides: Overrides): string {
  const o = Object.keys(overrides).sort().map((k) => `${k}=${overrides[k]}`).join(',');
  return `${kernel}/${dot4}/${o}`;
}

const MAX_PIPELINES = 32;
const pipelineCaches = new WeakMap<GPUDevice, Map<string, Promise<GPUComputePipeline>>>();

/** A compute pipeline for `kernel`, compiled once per device and key (LRU-bounded). */
export function getPipeline(device: GPUDevice, kernel: KernelName, dot4: Dot4Variant, overrides: Overrides): Promise<GPUComputePipeline> {
  let cache = pipelineCaches.get(device);
  if (!cache) pipelineCaches.set(device, (cache = new Map()));
  const key = pipelineKey(kernel, dot4, overrides);
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key); // refresh LRU position
    cache.set(key, hit);
    return hit;
  }
  const created = createPipeline(device, kernel, dot4, overrides);
  created.catch(() => cache!.delete(key)); // never cache a failure
  cache.set(key, created);
  if (cache.size > MAX_PIPELINES) cache.delete(cache.keys().next().value!);
  return created;
}

async function createPipeline(device: GPUDevice, kernel: KernelName, dot4: Dot4Variant, overrides: Overrides): Promise<GPUComputePipeline> {
  const code = kernelSource(kernel, dot4);
  const module = device.createShaderModule({ code, label: `qgemm ${kernel}` });
  try {
    return await device.createComputePipelineAsync({
      label: `qgemm ${pipelineKey(kernel, dot4, overrides)}`,
      layout: 'auto',
      compute: { module, entryPoint: kernel, constants: overrides },
    });
  } catch (e) {
    const info = await module.getCompilationInfo();
    const messages = info.messages.filter((m) => m.type === 'error').map((m) => `${m.lineNum}:${m.linePos} ${m.message}`);
    throw new GpuValidationError(`cannot create the ${kernel} pipeline: ${(e as Error).message}${messages.length ? ` (${messages.join('; ')})` : ''}`);
  }
}

/**
 * Storage buffers by size class (steps of 1/8 of a power of two, never past `maxBufferSize`), kept for
 * reuse up to `maxBytes` in total. Only buffers this pool handed out can come back, once each: a
 * double release would hand one buffer to two users.
 */
export class BufferPool {
  private free = new Map<number, GPUBuffer[]>();
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
    if (reused) this.pooledBytes -= size;
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
    const buffer = reused ?? this.device.createBuffer({ size, usage, label: `qgemm ${label}` });
    this.out.add(buffer);
    return buffer;
  }

  /** Whether `buffer` is one this pool handed out and has not been released. */
  owns(buffer: GPUBuffer): boolean {
    return this.out.has(buffer);
  }

  release(buffer: GPUBuffer): void {
    if (!this.out.delete(buffer)) throw new InputError('matrix', 'this buffer was not handed out by this context, or was already released');
    if (this.pooledBytes + buffer.size > this.maxBytes) {
      buffer.destroy();
      return;
    }
    const list = this.free.get(buffer.size) ?? [];
    list.push(buffer);
    this.free.set(buffer.size, list);
    this.pooledBytes += buffer.size;
  }

  destroy(): void {
    for (const list of this.free.values()) for (const b of list) b.destroy();
    for (const b of this.out) b.destroy();
    this.free.clear();
    this.out.clear();
    this.pooledBytes = 0;
  }
}
