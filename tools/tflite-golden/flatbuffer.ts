/**
 * A minimal FlatBuffers writer, enough for TFLite's schema (tables, scalars, vectors of scalars, of
 * offsets and of bytes, strings, unions by their type byte and table offset, a file identifier). It
 * builds back to front like the reference Builder: every offset is counted from the end of the buffer.
 * Used only by the golden generator (./model.ts); not part of the library's pack -> gemm -> output.
 */

export type Offset = number;

export class Builder {
  private buf = new Uint8Array(1 << 16);
  /** Bytes written, counted from the end of `buf`. */
  private used = 0;
  private minAlign = 1;
  private fields: number[] | null = null;
  private tableStart = 0;

  offset(): Offset {
    return this.used;
  }

  private grow(n: number): void {
    while (this.used + n > this.buf.length) {
      const next = new Uint8Array(this.buf.length * 2);
      next.set(this.buf, next.length - this.buf.length);
      this.buf = next;
    }
  }

  private view(): DataView {
    return new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  }

  /** Byte index in `buf` of the first byte written `off` bytes from the end. */
  private at(off: number): number {
    return this.buf.length - off;
  }

  private pad(n: number): void {
    this.grow(n);
    for (let i = 0; i < n; i++) this.buf[this.at(++this.used)] = 0;
  }

  /** Aligns so that after `additional` more bytes the next `size`-byte scalar is aligned. */
  prep(size: number, additional: number): void {
    if (size > this.minAlign) this.minAlign = size;
    const alignSize = (-(this.used + additional) & (size - 1)) >>> 0;
    this.pad(alignSize);
  }

  private put(size: number, write: (v: DataView, i: number) => void): void {
    this.grow(size);
    this.used += size;
    write(this.view(), this.at(this.used));
  }

  addInt8(v: number): void {
    this.prep(1, 0);
    this.put(1, (d, i) => d.setInt8(i, v));
  }
  addUint8(v: number): void {
    this.prep(1, 0);
    this.put(1, (d, i) => d.setUint8(i, v));
  }
  addInt16(v: number): void {
    this.prep(2, 0);
    this.put(2, (d, i) => d.setInt16(i, v, true));
  }
  addInt32(v: number): void {
    this.prep(4, 0);
    this.put(4, (d, i) => d.setInt32(i, v, true));
  }
  addUint32(v: number): void {
    this.prep(4, 0);
    this.put(4, (d, i) => d.setUint32(i, v, true));
  }
  addFloat32(v: number): void {
    this.prep(4, 0);
    this.put(4, (d, i) => d.setFloat32(i, v, true));
  }
  addInt64(v: bigint): void {
    this.prep(8, 0);
    this.put(8, (d, i) => d.setBigInt64(i, v, true));
  }
  /** A uoffset to something already written. */
  addOffset(target: Offset): void {
    this.prep(4, 0);
    this.put(4, (d, i) => d.setUint32(i, this.used - target, true));
  }

  private vector(elemSize: number, count: number, alignment: number, writeAll: () => void): Offset {
    this.prep(4, elemSize * count);
    this.prep(alignment, elemSize * count);
    writeAll();
    this.put(4, (d, i) => d.setUint32(i, count, true));
    return this.offset();
  }

  vectorInt32(values: ArrayLike<number>): Offset {
    return this.vector(4, values.length, 4, () => {
      for (let i = values.length - 1; i >= 0; i--) this.put(4, (d, j) => d.setInt32(j, values[i], true));
    });
  }
  vectorFloat32(values: ArrayLike<number>): Offset {
    return this.vector(4, values.length, 4, () => {
      for (let i = values.length - 1; i >= 0; i--) this.put(4, (d, j) => d.setFloat32(j, values[i], true));
    });
  }
  vectorInt64(values: readonly bigint[]): Offset {
    return this.vector(8, values.length, 8, () => {
      for (let i = values.length - 1; i >= 0; i--) this.put(8, (d, j) => d.setBigInt64(j, values[i], true));
    });
  }
  /** Bytes, aligned to `alignment` (TFLite's Buffer.data is force_align 16). */
  vectorBytes(bytes: Uint8Array, alignment = 1): Offset {
    return this.vector(1, bytes.length, alignment, () => {
      this.grow(bytes.length);
      this.used += bytes.length;
      this.buf.set(bytes, this.at(this.used));
    });
  }
  vectorOffsets(targets: readonly Offset[]): Offset {
    return this.vector(4, targets.length, 4, () => {
      for (let i = targets.length - 1; i >= 0; i--) this.addOffset(targets[i]);
    });
  }
  string(s: string): Offset {
    const bytes = new TextEncoder().encode(s);
    this.prep(4, bytes.length + 1);
    this.put(1, (d, i) => d.setUint8(i, 0));
    this.grow(bytes.length);
    this.used += bytes.length;
    this.buf.set(bytes, this.at(this.used));
    this.put(4, (d, i) => d.setUint32(i, bytes.length, true));
    return this.offset();
  }

  startTable(numFields: number): void {
    if (this.fields) throw new Error('nested table');
    this.fields = new Array(numFields).fill(0);
    this.tableStart = this.offset();
  }
  /** Marks the value just written as field `id` of the open table. */
  private slot(id: number): void {
    if (!this.fields || id >= this.fields.length) throw new Error(`field ${id} outside the open table`);
    this.fields[id] = this.offset();
  }
  fieldInt8(id: number, v: number): void {
    this.addInt8(v);
    this.slot(id);
  }
  fieldUint8(id: number, v: number): void {
    this.addUint8(v);
    this.slot(id);
  }
  fieldInt32(id: number, v: number): void {
    this.addInt32(v);
    this.slot(id);
  }
  fieldUint32(id: number, v: number): void {
    this.addUint32(v);
    this.slot(id);
  }
  fieldOffset(id: number, target: Offset): void {
    this.addOffset(target);
    this.slot(id);
  }
  endTable(): Offset {
    const fields = this.fields;
    if (!fields) throw new Error('no open table');
    this.addInt32(0); // soffset to the vtable, patched below
    const object = this.offset();
    let n = fields.length;
    while (n > 0 && fields[n - 1] === 0) n--;
    for (let i = n - 1; i >= 0; i--) this.addInt16(fields[i] ? object - fields[i] : 0);
    this.addInt16(object - this.tableStart);
    this.addInt16((n + 2) * 2);
    const vtable = this.offset();
    this.view().setInt32(this.at(object), vtable - object, true);
    this.fields = null;
    return object;
  }

  /** Finishes with `root` and a 4-character file identifier; returns the bytes. */
  finish(root: Offset, identifier: string): Uint8Array {
    this.prep(this.minAlign, 8);
    for (let i = 3; i >= 0; i--) this.addUint8(identifier.charCodeAt(i));
    this.addOffset(root);
    return this.buf.slice(this.at(this.used));
  }
}
