// Getting results back to the CPU (the end of pack -> gemm -> output): dst matrices and timestamp
// queries are copied into mappable buffers in the same command encoder as the work itself, then mapped
// once the submission is made, so a gemm() costs one submission and one map. The context keeps one
// staging buffer and grows it, and one timestamp query set with its resolve and read buffers; calls on a
// device are serialized, so one of each is enough.

import { allocateDst, DTYPE_BYTES } from '../problem/dst.ts';
import type { DstType, GemmResult } from '../types.ts';
import { type GpuMatrix, matrixBytes } from './matrix.ts';
import { runInErrorScope } from './scopes.ts';
import { BufferUsage, MapMode } from './usage.ts';

/**
 * A dense result in m's storage order, copied once from the mapped bytes of its strided lines into a new
 * typed array (the mapped range is read in place, never copied whole first).
 */
function unstride(m: GpuMatrix, mapped: ArrayBuffer): GemmResult {
  const dtype = m.dtype as DstType;
  const lines = m.order === 'row-major' ? m.rows : m.cols;
  const inner = m.order === 'row-major' ? m.cols : m.rows;
  const data = allocateDst(dtype, lines * inner);
  const into = new Uint8Array(data.buffer);
  const from = new Uint8Array(mapped);
  const lineBytes = inner * DTYPE_BYTES[dtype];
  const strideBytes = m.stride * DTYPE_BYTES[dtype];
  if (m.stride === inner) into.set(from.subarray(0, lines * lineBytes));
  else for (let l = 0; l < lines; l++) into.set(from.subarray(l * strideBytes, l * strideBytes + lineBytes), l * lineBytes);
  return { data, rows: m.rows, cols: m.cols, order: m.order, dtype };
}

/** The descriptor of an untimed pass: made once, not per call. */
const UNTIMED_PASS: GPUComputePassDescriptor = {};

export class Staging {
  private buffer: GPUBuffer | null = null;
  private query: { set: GPUQuerySet; resolve: GPUBuffer; read: GPUBuffer } | null = null;
  /** Whether the pass of the last beginPass writes timestamps (calls on a device are serialized). */
  private timed = false;
  constructor(private readonly device: GPUDevice) {}

  /**
   * Begins a call's one compute pass: with timestamp writes when `timed` (a call that asks for its GPU
   * time, on a context that records it), else none, so that an untimed call creates and resolves no query.
   */
  beginPass(encoder: GPUCommandEncoder, timed: boolean): GPUComputePassEncoder {
    this.timed = timed;
    const timestampWrites = timed ? { querySet: this.querySet(), beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } : null;
    return encoder.beginComputePass(timestampWrites ? { timestampWrites } : UNTIMED_PASS);
  }

  /** Ends the pass of beginPass: the function that reads its GPU time in ms once submitted (timestamps()), null when untimed. */
  endPass(encoder: GPUCommandEncoder, pass: GPUComputePassEncoder): (() => Promise<number>) | null {
    pass.end();
    return this.timed ? this.timestamps(encoder) : null;
  }

  private acquire(bytes: number): GPUBuffer {
    if (!this.buffer || this.buffer.size < bytes) {
      this.buffer?.destroy();
      this.buffer = this.device.createBuffer({
        size: Math.max(bytes, 256),
        usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST,
        label: 'qgemm readback',
      });
    }
    return this.buffer;
  }

  /**
   * Records the copy of m into the staging buffer; call the returned function after submitting (it
   * calls `onMapped` once the map has resolved, before the copy out: for a trace).
   */
  copy(encoder: GPUCommandEncoder, m: GpuMatrix): (onMapped?: () => void) => Promise<GemmResult> {
    const bytes = matrixBytes(m);
    const staging = this.acquire(bytes);
    encoder.copyBufferToBuffer(m.buffer, 0, staging, 0, bytes);
    return async (onMapped) => {
      await staging.mapAsync(MapMode.READ, 0, bytes);
      onMapped?.();
      try {
        return unstride(m, staging.getMappedRange(0, bytes));
      } finally {
        staging.unmap();
      }
    };
  }

  /** The 2-entry timestamp query set of the context, made once (calls on a device are serialized). */
  querySet(): GPUQuerySet {
    this.query ??= {
      set: this.device.createQuerySet({ type: 'timestamp', count: 2, label: 'qgemm timestamps' }),
      resolve: this.device.createBuffer({ size: 16, usage: BufferUsage.QUERY_RESOLVE | BufferUsage.COPY_SRC }),
      read: this.device.createBuffer({ size: 16, usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST }),
    };
    return this.query.set;
  }

  /** Records the resolve of querySet() into buffers kept with it; the returned function gives milliseconds. */
  timestamps(encoder: GPUCommandEncoder): () => Promise<number> {
    this.querySet();
    const { set, resolve, read } = this.query!;
    encoder.resolveQuerySet(set, 0, 2, resolve, 0);
    encoder.copyBufferToBuffer(resolve, 0, read, 0, 16);
    return async () => {
      await read.mapAsync(MapMode.READ);
      try {
        const [begin, end] = new BigUint64Array(read.getMappedRange());
        return Number(end - begin) / 1e6;
      } finally {
        read.unmap();
      }
    };
  }

  destroy(): void {
    this.buffer?.destroy();
    this.buffer = null;
    this.query?.set.destroy();
    this.query?.resolve.destroy();
    this.query?.read.destroy();
    this.query = null;
  }
}

/** Reads a GPU matrix on its own (one copy, one submission, one map). */
export async function readBack(device: GPUDevice, m: GpuMatrix, staging: Staging): Promise<GemmResult> {
  let finish: ((onMapped?: () => void) => Promise<GemmResult>) | null = null;
  await runInErrorScope(
    device,
    () => {
      const encoder = device.createCommandEncoder({ label: 'qgemm readback' });
      finish = staging.copy(encoder, m);
      device.queue.submit([encoder.finish()]);
    },
    'readback',
  );
  return finish!();
}
