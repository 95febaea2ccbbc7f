// Uniform slots for one GPU call (pack -> gemm -> output): every dispatch's uniform structs are written
// into CPU-side chunks, each uploaded with one writeBuffer into a GPU buffer that the context keeps, and
// bound at 256-byte-aligned offsets. A slab grows on demand: when its chunk is full it takes the next
// one (twice as large), so no caller counts its slots ahead. Reusing the buffers across calls is safe:
// queue writes and submissions run in queue order, and calls on one device are serialized (./scopes.ts).

import { packUniforms, type UniformLayout } from './reflect.ts';
import { BufferUsage } from './usage.ts';

/** The bytes of one uniform slot: >= every adapter's minUniformBufferOffsetAlignment (WebGPU caps it at 256). */
export const SLOT = 256;
const FIRST_CHUNK = 4096;

interface Chunk {
  buffer: GPUBuffer;
  data: ArrayBuffer;
  used: number;
}

/** The uniform slots of one call: alloc() as many as it needs, then upload() once before submit. */
export class UniformSlab {
  private readonly chunks: Chunk[] = [];
  constructor(private readonly buffer: (index: number) => GPUBuffer) {}

  /** A binding of one uniform struct holding `values`. */
  alloc(layout: UniformLayout, values: Record<string, number>): GPUBufferBinding {
    if (layout.size > SLOT) throw new Error(`internal: uniform struct ${layout.struct} above ${SLOT} bytes`);
    let chunk = this.chunks.at(-1);
    if (!chunk || chunk.used === chunk.data.byteLength) {
      const buffer = this.buffer(this.chunks.length);
      chunk = { buffer, data: new ArrayBuffer(buffer.size), used: 0 };
      this.chunks.push(chunk);
    }
    const offset = chunk.used;
    packUniforms(layout, values, new DataView(chunk.data, offset, layout.size));
    chunk.used += SLOT;
    return { buffer: chunk.buffer, offset, size: layout.size };
  }

  /** Queues the upload of every slot written so far. */
  upload(queue: GPUQueue): void {
    for (const c of this.chunks) queue.writeBuffer(c.buffer, 0, c.data, 0, c.used);
  }
}

/** The uniform buffers of one context: chunk i holds 4096 * 2^i bytes, made when a call first needs it. */
export class UniformArena {
  private readonly buffers: GPUBuffer[] = [];
  constructor(private readonly device: GPUDevice) {}

  /** An empty slab over this arena's buffers. */
  slab(): UniformSlab {
    return new UniformSlab((i) => {
      this.buffers[i] ??= this.device.createBuffer({
        size: FIRST_CHUNK * 2 ** i,
        usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST,
        label: `qgemm uniforms ${i}`,
      });
      return this.buffers[i];
    });
  }

  destroy(): void {
    for (const b of this.buffers) b.destroy();
    this.buffers.length = 0;
  }
}
