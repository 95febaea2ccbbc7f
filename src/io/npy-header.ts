// The .npy preamble and header dict (numpy/lib/format.py): what an .npy file holds (dtype, shape,
// order) and where its data starts and ends, read from the first bytes alone. Callers that read files
// use it to size and check the data before reading it (src/cli/files.ts); parseNpy and serializeNpy in
// ./npy.ts build on it. Version 1.0 has a u16 header length, 2.0 and 3.0 a u32 (3.0 headers are UTF-8,
// older ones latin1); the header is a Python dict literal such as
//   {'descr': '<i4', 'fortran_order': False, 'shape': (3, 4), }
// parsed by a small strict parser.

import { QgemmError } from '../errors.ts';

export type NpyDtype = 'uint8' | 'int8' | 'int16' | 'uint16' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'float32' | 'float64' | 'bool';

export type NpyData =
  | Uint8Array
  | Int8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array
  | Float32Array
  | Float64Array;

export interface NpyArray {
  dtype: NpyDtype;
  shape: number[];
  fortranOrder: boolean;
  data: NpyData;
}

/** A malformed or unsupported .npy file, or an array that cannot be written as one. */
export class NpyFormatError extends QgemmError {
  override name = 'NpyFormatError';
}

type TypedArrayCtor = new (buffer: ArrayBuffer, byteOffset: number, length: number) => NpyData;

export interface DtypeInfo {
  code: string; // descr without the byte-order character
  size: number; // bytes per element
  ctor: TypedArrayCtor;
}

export const DTYPES: Record<NpyDtype, DtypeInfo> = {
  bool: { code: 'b1', size: 1, ctor: Uint8Array },
  uint8: { code: 'u1', size: 1, ctor: Uint8Array },
  int8: { code: 'i1', size: 1, ctor: Int8Array },
  int16: { code: 'i2', size: 2, ctor: Int16Array },
  uint16: { code: 'u2', size: 2, ctor: Uint16Array },
  int32: { code: 'i4', size: 4, ctor: Int32Array },
  uint32: { code: 'u4', size: 4, ctor: Uint32Array },
  int64: { code: 'i8', size: 8, ctor: BigInt64Array },
  uint64: { code: 'u8', size: 8, ctor: BigUint64Array },
  float32: { code: 'f4', size: 4, ctor: Float32Array },
  float64: { code: 'f8', size: 8, ctor: Float64Array },
};

export const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // "\x93NUMPY"

export function fail(message: string): never {
  throw new NpyFormatError(message);
}

export function elementCount(shape: number[]): number {
  let count = 1;
  for (const dim of shape) {
    if (!Number.isSafeInteger(dim) || dim < 0) fail(`shape entry ${dim} is not a non-negative integer`);
    count *= dim;
  }
  if (shape.includes(0)) return 0; // even if the other dims overflowed
  if (!Number.isSafeInteger(count)) fail(`shape (${shape.join(', ')}) has too many elements`);
  return count;
}

/** Bytes of the fixed preamble before the header dict: magic, version, header length. */
export const NPY_PREAMBLE_BYTES = 12;

/** Where an .npy file's header ends (= where its data starts), from its first 10-12 bytes. */
export function npyHeaderEnd(bytes: Uint8Array): number {
  if (bytes.length < 10) fail(`file too short for an .npy preamble (${bytes.length} bytes)`);
  if (!MAGIC.every((b, i) => bytes[i] === b)) {
    fail('bad magic: not an .npy file (expected "\\x93NUMPY")');
  }
  const major = bytes[6];
  const minor = bytes[7];
  if (major < 1 || major > 3 || minor !== 0) fail(`unsupported .npy format version ${major}.${minor}`);
  const lengthSize = major === 1 ? 2 : 4;
  if (bytes.length < 8 + lengthSize) fail('file too short for the header length');
  const headerLength = major === 1 ? bytes[8] | (bytes[9] << 8) : (bytes[8] | (bytes[9] << 8) | (bytes[10] << 16)) + bytes[11] * 2 ** 24;
  return 8 + lengthSize + headerLength;
}

/** What an .npy file holds and where: everything but the data. */
export interface NpyLayout {
  dtype: NpyDtype;
  shape: number[];
  fortranOrder: boolean;
  littleEndian: boolean;
  /** Elements, and bytes of data after the header (count * itemsize). */
  count: number;
  dataStart: number;
  dataBytes: number;
}

/** The layout of an .npy file from its first bytes: `bytes` must hold at least npyHeaderEnd(bytes). */
export function parseNpyLayout(bytes: Uint8Array): NpyLayout {
  const dataStart = npyHeaderEnd(bytes);
  const headerStart = bytes[6] === 1 ? 10 : 12;
  if (bytes.length < dataStart) {
    fail(`header is truncated: needs ${dataStart - headerStart} bytes, file has ${bytes.length - headerStart}`);
  }
  const header = new HeaderParser(decodeHeader(bytes.subarray(headerStart, dataStart), bytes[6])).parse();
  const { dtype, littleEndian } = dtypeFromDescr(header.descr);
  const count = elementCount(header.shape);
  return {
    dtype,
    shape: header.shape,
    fortranOrder: header.fortranOrder,
    littleEndian,
    count,
    dataStart,
    dataBytes: count * DTYPES[dtype].size,
  };
}

// ---------------------------------------------------------------- header dict

interface Header {
  descr: string;
  fortranOrder: boolean;
  shape: number[];
}

// Recursive-descent parser for the subset of Python literals that .npy headers
// use: a dict of string keys to a string, True/False, or a tuple of ints.
class HeaderParser {
  private pos = 0;
  constructor(private readonly text: string) {}

  parse(): Header {
    const seen = new Map<string, unknown>();
    this.expect('{');
    for (;;) {
      this.skipSpace();
      if (this.peek() === '}') break;
      const keyPos = this.pos;
      const key = this.string();
      if (key !== 'descr' && key !== 'fortran_order' && key !== 'shape') {
        this.error(`unknown key '${key}'`, keyPos);
      }
      if (seen.has(key)) this.error(`duplicate key '${key}'`, keyPos);
      this.expect(':');
      this.skipSpace();
      if (key === 'descr' && !`'"`.includes(this.peek())) {
        this.error("'descr' must be a string (structured dtypes are not supported)");
      }
      seen.set(key, key === 'descr' ? this.string() : key === 'shape' ? this.tuple() : this.bool());
      this.skipSpace();
      if (this.peek() === ',') this.pos++;
      else if (this.peek() !== '}') this.error("expected ',' or '}'");
    }
    this.pos++;
    this.skipSpace();
    if (this.pos < this.text.length) this.error('unexpected text after the header dict');
    const missing = ['descr', 'fortran_order', 'shape'].filter((k) => !seen.has(k));
    if (missing.length > 0) fail(`header is missing key(s) ${missing.map((k) => `'${k}'`).join(', ')}`);
    return {
      descr: seen.get('descr') as string,
      fortranOrder: seen.get('fortran_order') as boolean,
      shape: seen.get('shape') as number[],
    };
  }

  private string(): string {
    const quote = this.peek();
    if (quote !== "'" && quote !== '"') this.error('expected a quoted string');
    const end = this.text.indexOf(quote, this.pos + 1);
    if (end < 0) this.error('unterminated string');
    const value = this.text.slice(this.pos + 1, end);
    if (/[\\\n]/.test(value)) this.error('escapes and newlines in strings are not supported');
    this.pos = end + 1;
    return value;
  }

  private bool(): boolean {
    const word = this.word();
    if (word === 'True') return true;
    if (word === 'False') return false;
    return this.error(`fortran_order must be True or False, got '${word}'`);
  }

  private tuple(): number[] {
    const start = this.pos;
    this.expect('(');
    const dims: number[] = [];
    let trailingComma = false;
    for (;;) {
      this.skipSpace();
      if (this.peek() === ')') break;
      dims.push(this.dim());
      this.skipSpace();
      trailingComma = this.peek() === ',';
      if (trailingComma) this.pos++;
      else if (this.peek() !== ')') this.error("expected ',' or ')' in shape");
    }
    this.pos++;
    if (dims.length === 1 && !trailingComma) {
      this.error(`shape ${this.text.slice(start, this.pos)} is an int, not a tuple (write '(${dims[0]},)')`, start);
    }
    return dims;
  }

  private dim(): number {
    const start = this.pos;
    const word = this.word();
    if (!/^(0|[1-9][0-9]*)$/.test(word)) this.error(`shape entry '${word}' is not a non-negative integer`, start);
    const value = Number(word);
    if (!Number.isSafeInteger(value)) this.error(`shape entry ${word} is too large`, start);
    return value;
  }

  // A run of characters that can make up a Python name or number literal.
  private word(): string {
    const pattern = /[-+.\w]*/y;
    pattern.lastIndex = this.pos;
    const word = pattern.exec(this.text)![0];
    if (word === '') this.error('expected a value');
    this.pos += word.length;
    return word;
  }

  private expect(c: string): void {
    this.skipSpace();
    if (this.peek() !== c) this.error(`expected '${c}'`);
    this.pos++;
  }

  private skipSpace(): void {
    while (/^[ \t\r\n]$/.test(this.peek())) this.pos++;
  }

  private peek(): string {
    return this.text.charAt(this.pos);
  }

  private error(message: string, at = this.pos): never {
    const near = JSON.stringify(this.text.slice(at, at + 20));
    return fail(`bad .npy header: ${message} at character ${at} (near ${near})`);
  }
}

/** An .npy descr: a byte order ('<', '>', '=' native, '|' none) and a code; numpy reads a code alone ('i4') as native. */
function dtypeFromDescr(descr: string): { dtype: NpyDtype; littleEndian: boolean } {
  const ordered = ['<', '>', '=', '|'].includes(descr.charAt(0));
  const order = ordered ? descr.charAt(0) : '=';
  const code = ordered ? descr.slice(1) : descr;
  const dtype = (Object.keys(DTYPES) as NpyDtype[]).find((d) => DTYPES[d].code === code);
  if (dtype === undefined) {
    return fail(`unsupported descr '${descr}' (supported: u1 i1 b1 i2 u2 i4 u4 i8 u8 f4 f8)`);
  }
  if (order === '|' && DTYPES[dtype].size > 1) {
    fail(`descr '${descr}' has no byte order; use '<' or '>' for multi-byte types`);
  }
  return { dtype, littleEndian: order !== '>' };
}

function decodeHeader(raw: Uint8Array, major: number): string {
  if (major < 3) {
    let text = ''; // latin1: one byte per code point
    for (let i = 0; i < raw.length; i += 4096) text += String.fromCharCode(...raw.subarray(i, i + 4096));
    return text;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    return fail('version 3.0 header is not valid UTF-8');
  }
}
