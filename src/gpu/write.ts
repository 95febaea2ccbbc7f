// Uploads of the caller's bytes to a GPU buffer (the operands of pack -> gemm -> output, the inputs of an
// elementwise op). Dawn's queue.writeBuffer takes no SharedArrayBuffer ("no overload matched"), so bytes
// in shared memory (a worker's, a WebAssembly memory's) are copied through a private buffer, a bounded
// chunk at a time; others are written where they are.

/** Bytes copied per writeBuffer from shared memory (a multiple of 4, as writeBuffer needs). */
const SHARED_CHUNK_BYTES = 1 << 24;

/** writeBuffer(buffer, at, src, srcOffset, size), for shared memory too; size a multiple of 4. */
export function writeHostBytes(
  queue: GPUQueue,
  buffer: GPUBuffer,
  at: number,
  src: ArrayBufferLike,
  srcOffset: number,
  size: number,
): void {
  if (typeof SharedArrayBuffer === 'undefined' || !(src instanceof SharedArrayBuffer)) {
    queue.writeBuffer(buffer, at, src as ArrayBuffer, srcOffset, size);
    return;
  }
  for (let done = 0; done < size; done += SHARED_CHUNK_BYTES) {
    const n = Math.min(SHARED_CHUNK_BYTES, size - done);
    const copy = new Uint8Array(n);
    copy.set(new Uint8Array(src, srcOffset + done, n));
    queue.writeBuffer(buffer, at + done, copy);
  }
}
