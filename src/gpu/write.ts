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

/** An 8-bit array's bytes at the start of `buffer`: whole words as they are, the last partial word padded with zeros. */
export function writeOperandBytes(queue: GPUQueue, buffer: GPUBuffer, data: Uint8Array | Int8Array): void {
  const bytes = data.byteLength;
  const body = bytes & ~3;
  if (body > 0) writeHostBytes(queue, buffer, 0, data.buffer, data.byteOffset, body);
  if (body < bytes) {
    const tail = new Uint8Array(4);
    tail.set(new Uint8Array(data.buffer, data.byteOffset + body, bytes - body));
    queue.writeBuffer(buffer, body, tail);
  }
}
