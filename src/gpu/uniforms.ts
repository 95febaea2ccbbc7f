// Uniform slots for one GPU call (pack -> gemm -> output): every dispatch's uniform structs are written
// into one CPU-side slab, uploaded with one writeBuffer into one GPU buffer that the context keeps and
// grows, and bound at 256-byte-aligned offsets. Reusing the buffer across calls is safe: queue writes
// and submissions run in queue order, and calls on one device are serialized (./scopes.ts).

import { packUniforms, type UniformLayout } from './reflect.ts';
import { roundUp } from './plan.ts';

const SLOT_ALIGN = 256; // >= every adapter's minUniformBufferOffsetAlignment (WebGPU caps it at 256)

export class UniformSlab {
  private readonly data: ArrayBuffer;
  private used = 0;
  constructor(
    private readonly buffer: GPUBuffer,
    slots: number,
    private readonly slotSize: number,
  ) {
    this.data = new ArrayBuffer(Math.max(1, slots) * slotSize);
  }

  /** A binding of one uniform struct holding `values`. */
  alloc(layout: UniformLayout, values: Record<string, number>): GPUBufferBinding {
    if (layout.size > this.slotSize || this.used + this.slotSize > this.data.byteLength) {
      throw new Error(`internal: uniform slab overflow (${layout.struct})`);
    }
    const offset = this.used;
    packUniforms(layout, values, new DataView(this.data, offset, layout.size));
    this.used += this.slotSize;
    return { buffer: this.buffer, offset, size: layout.size };
  }

  /** Queues the upload of every slot written so far. */
  upload(queue: GPUQueue): void {
    if (this.used > 0) queue.writeBuffer(this.buffer, 0, this.data, 0, this.used);
  }
}

/** One growing uniform buffer per context. */
export class UniformArena {
  private buffer: GPUBuffer | null = null;
  constructor(private readonly device: GPUDevice) {}

  /** A slab of `slots` slots of up to `slotBytes` bytes (256-aligned). */
  slab(slots: number, slotBytes = SLOT_ALIGN): UniformSlab {
    const slotSize = roundUp(slotBytes, SLOT_ALIGN);
    const bytes = Math.max(1, slots) * slotSize;
    if (!this.buffer || this.buffer.size < bytes) {
      this.buffer?.destroy();
      const size = 2 ** Math.ceil(Math.log2(Math.max(bytes, 4096)));
      this.buffer = this.device.createBuffer({ size, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: 'qgemm uniforms' });
    }
    return new UniformSlab(this.buffer, slots, slotSize);
  }

  destroy(): void {
    this.buffer?.destroy();
    this.buffer = null;
  }
}
