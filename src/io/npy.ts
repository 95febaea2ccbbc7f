// Reading and writing NumPy .npy files.
//
// This is the I/O layer of the `qgemm` CLI: it parses the operand matrices
// that go into pack -> gemm, and serializes the dst matrix that comes out.
// It is pure (no node:fs) so the same code runs in browsers.
//
// Format (numpy/lib/format.py): the magic "\x93NUMPY", a major and minor
// version byte, the header length (u16 little-endian for 1.0, u32 for 2.0 and
// 3.0), then the header: a Python dict literal such as
//   {'descr': '<i4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and ended by '\n' so that the data starts at a multiple
// of 64 bytes. The data follows, product(shape) * itemsize bytes exactly.
//
// We read 1.0, 2.0 and 3.0 (3.0 headers are UTF-8, older ones latin1) with a
// small strict parser for that dict (./npy-header.ts). Big-endian data is byte-swapped on read
// and we always write little-endian, byte for byte as numpy does. Data stays
// in file order: `fortranOrder` is reported, never applied (see elementIndex).

import {
  DTYPES,
  MAGIC,
  elementCount,
  fail,
  parseNpyLayout,
  type DtypeInfo,
  type NpyArray,
  type NpyData,
  type NpyDtype,
  type NpyLayout,
} from './npy-header.ts';

export {
  NpyFormatError,
  npyHeaderEnd,
  parseNpyLayout,
  NPY_PREAMBLE_BYTES,
  type NpyArray,
  type NpyData,
  type NpyDtype,
  type NpyLayout,
} from './npy-header.ts';

const ALIGN = 64;
const GROWTH_AXIS_MAX_DIGITS = 21; // numpy leaves room to grow the outer axis in place
const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

// ---------------------------------------------------------------- helpers

// The dtype that a typed array holds (a Uint8Array is 'uint8', never 'bool').
// Uses the toStringTag so that arrays from other realms and Node Buffers work.
export function npyDtypeOf(data: NpyData): NpyDtype {
  const tag = Object.prototype.toString.call(data).slice(8, -1);
  for (const dtype of Object.keys(DTYPES) as NpyDtype[]) {
    if (dtype !== 'bool' && DTYPES[dtype].ctor.name === tag) return dtype;
  }
  return fail(`unsupported data array type ${tag}`);
}

// Offset into `data` of the element at `indices`, for data in file order.
export function elementIndex(shape: number[], fortranOrder: boolean, indices: number[]): number {
  if (indices.length !== shape.length) {
    throw new RangeError(`expected ${shape.length} indices, got ${indices.length}`);
  }
  let offset = 0;
  let stride = 1;
  for (let k = 0; k < shape.length; k++) {
    const axis = fortranOrder ? k : shape.length - 1 - k;
    const i = indices[axis];
    if (!Number.isInteger(i) || i < 0 || i >= shape[axis]) {
      throw new RangeError(`index ${i} out of range for axis ${axis} of size ${shape[axis]}`);
    }
    offset += i * stride;
    stride *= shape[axis];
  }
  return offset;
}

function byteSwap(bytes: Uint8Array, size: number): void {
  for (let i = 0; i < bytes.length; i += size) {
    bytes.subarray(i, i + size).reverse();
  }
}

// ---------------------------------------------------------------- parse

export function parseNpy(bytes: Uint8Array): NpyArray {
  const layout = parseNpyLayout(bytes);
  const actual = bytes.length - layout.dataStart;
  if (actual < layout.dataBytes) fail(`data is truncated: expected ${layout.dataBytes} bytes, got ${actual}`);
  if (actual > layout.dataBytes) fail(`${actual - layout.dataBytes} trailing bytes after the data (expected ${layout.dataBytes} bytes)`);
  return npyFromData(layout, bytes.subarray(layout.dataStart));
}

/** The array of `layout` from its data bytes (exactly layout.dataBytes), copied: the caller's bytes are not aliased. */
export function npyFromData(layout: NpyLayout, data: Uint8Array): NpyArray {
  const { dtype, count, dataBytes } = layout;
  if (data.length !== dataBytes) fail(`expected ${dataBytes} bytes of data, got ${data.length}`);
  const { size, ctor } = DTYPES[dtype];
  // Copy into a fresh buffer: the source offset may be unaligned.
  const copy = new Uint8Array(dataBytes);
  copy.set(data);
  if (size > 1 && layout.littleEndian !== HOST_LITTLE_ENDIAN) byteSwap(copy, size);
  return { dtype, shape: layout.shape, fortranOrder: layout.fortranOrder, data: new ctor(copy.buffer, 0, count) };
}

// ---------------------------------------------------------------- serialize

/** An .npy file's bytes: its header, then its data (little-endian, as numpy writes it). */
export function serializeNpy(arr: NpyArray): Uint8Array {
  const [preamble, data] = npyParts(arr);
  const out = new Uint8Array(preamble.length + data.byteLength);
  out.set(preamble);
  out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), preamble.length);
  return out;
}

/**
 * An .npy file as its two parts, the header and the data, for a writer that writes them one after the
 * other: the data is arr.data itself on a little-endian host (no copy, and no byte array of the whole
 * data, which can be longer than the longest array a runtime makes), a swapped copy on a big-endian one.
 */
export function npyParts(arr: NpyArray): [Uint8Array, ArrayBufferView] {
  if (!arr || typeof arr !== 'object')
    fail(`expected an array {dtype, shape, fortranOrder, data}, got ${arr === null ? 'null' : typeof arr}`);
  if (!Array.isArray(arr.shape)) {
    const result = 'rows' in arr && 'cols' in arr ? ` (a GemmResult: give shape [rows, cols] and fortranOrder: order === 'col-major')` : '';
    fail(`expected {dtype, shape, fortranOrder, data} with shape an array of sizes${result}`);
  }
  if (arr.fortranOrder !== undefined && typeof arr.fortranOrder !== 'boolean') fail('fortranOrder must be true or false');
  if (!Object.hasOwn(DTYPES, arr.dtype)) fail(`unsupported dtype '${arr.dtype}'`);
  const info = DTYPES[arr.dtype];
  const dataType = npyDtypeOf(arr.data);
  if (dataType !== arr.dtype && !(arr.dtype === 'bool' && dataType === 'uint8')) {
    fail(`dtype '${arr.dtype}' does not match the data array (${dataType})`);
  }
  const count = elementCount(arr.shape);
  if (arr.data.length !== count) {
    fail(`data has ${arr.data.length} elements but shape (${arr.shape.join(', ')}) needs ${count}`);
  }

  if (info.size === 1 || HOST_LITTLE_ENDIAN) return [headerBytes(arr, info), arr.data];
  const swapped = new Uint8Array(arr.data.buffer, arr.data.byteOffset, arr.data.byteLength).slice();
  byteSwap(swapped, info.size);
  return [headerBytes(arr, info), swapped];
}

// Magic, version, header length and header, exactly as numpy writes them.
function headerBytes(arr: NpyArray, info: DtypeInfo): Uint8Array {
  const { shape, fortranOrder } = arr;
  const descr = (info.size === 1 ? '|' : '<') + info.code;
  const tuple = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let dict = `{'descr': '${descr}', 'fortran_order': ${fortranOrder ? 'True' : 'False'}, 'shape': ${tuple}, }`;
  if (shape.length > 0) {
    const growthAxis = shape[fortranOrder ? shape.length - 1 : 0];
    dict += ' '.repeat(Math.max(0, GROWTH_AXIS_MAX_DIGITS - String(growthAxis).length));
  }

  for (const major of [1, 2]) {
    const lengthSize = major === 1 ? 2 : 4;
    const unpadded = 8 + lengthSize + dict.length + 1; // +1 for the '\n'
    const headerLength = dict.length + 1 + (ALIGN - (unpadded % ALIGN));
    if (major === 1 && headerLength > 0xffff) continue;
    const text = dict + ' '.repeat(headerLength - dict.length - 1) + '\n';
    const out = new Uint8Array(8 + lengthSize + headerLength);
    out.set(MAGIC);
    out[6] = major;
    out[7] = 0;
    for (let i = 0; i < lengthSize; i++) out[8 + i] = Math.floor(headerLength / 2 ** (8 * i)) & 0xff;
    for (let i = 0; i < text.length; i++) out[8 + lengthSize + i] = text.charCodeAt(i);
    return out;
  }
  throw new Error('unreachable');
}
