// Tests for src/io/npy.ts: byte-exact goldens taken from numpy 2.4 (np.save),
// version 2.0/3.0 and big-endian reads, round trips of every dtype in both
// orders, and one test per way a file can be malformed.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QgemmError } from '../../src/errors.ts';
import {
  NpyFormatError,
  elementIndex,
  npyDtypeOf,
  npyParts,
  parseNpy,
  serializeNpy,
  type NpyArray,
  type NpyData,
  type NpyDtype,
} from '../../src/io/npy.ts';

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59];

function ascii(text: string): number[] {
  return Array.from(text, (c) => c.charCodeAt(0));
}

function hex(text: string): number[] {
  return (text.match(/../g) ?? []).map((b) => parseInt(b, 16));
}

// A file with the given raw header text (no padding added) and data bytes.
function npyFile(header: string | Uint8Array, data: number[] = [], major = 1): Uint8Array {
  const text = typeof header === 'string' ? ascii(header) : Array.from(header);
  const n = text.length;
  const length = major === 1 ? [n & 0xff, n >> 8] : [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >>> 24];
  return new Uint8Array([...MAGIC, major, 0, ...length, ...text, ...data]);
}

function dict(descr: string, shape: string, fortran = 'False'): string {
  return `{'descr': '${descr}', 'fortran_order': ${fortran}, 'shape': ${shape}, }`;
}

function bytesOf(data: NpyData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

function expectNpyError(bytes: Uint8Array, message: RegExp): void {
  let error: unknown;
  try {
    parseNpy(bytes);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(NpyFormatError);
  expect((error as Error).message).toMatch(message);
}

const CTORS: Record<NpyDtype, new (n: number) => NpyData> = {
  bool: Uint8Array,
  uint8: Uint8Array,
  int8: Int8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  float32: Float32Array,
  float64: Float64Array,
};
const DTYPES = Object.keys(CTORS) as NpyDtype[];
const ITEMSIZE: Record<NpyDtype, number> = {
  bool: 1,
  uint8: 1,
  int8: 1,
  int16: 2,
  uint16: 2,
  int32: 4,
  uint32: 4,
  int64: 8,
  uint64: 8,
  float32: 4,
  float64: 8,
};

describe('serializeNpy matches numpy byte for byte', () => {
  // Each golden is what np.save wrote (numpy 2.4.6): the dict, then `spaces`
  // spaces and '\n', so that 10 + headerLength is a multiple of 64. numpy
  // pads a full 64 when the header is already aligned, and reserves
  // 21 - len(str(growth axis)) spaces beyond the dict, where the growth axis
  // is shape[0] (C order) or shape[-1] (Fortran order).
  const goldens: {
    name: string;
    arr: NpyArray;
    dict: string;
    spaces: number;
    headerLength: number;
    fileLength: number;
    data: string;
  }[] = [
    {
      name: "np.arange(6, dtype='<i4').reshape(2, 3)",
      arr: { dtype: 'int32', shape: [2, 3], fortranOrder: false, data: new Int32Array([0, 1, 2, 3, 4, 5]) },
      dict: "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
      spaces: 58,
      headerLength: 118,
      fileLength: 152,
      data: '000000000100000002000000030000000400000005000000',
    },
    {
      name: "np.zeros((), '<f8')",
      arr: { dtype: 'float64', shape: [], fortranOrder: false, data: new Float64Array([0]) },
      dict: "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
      spaces: 62,
      headerLength: 118,
      fileLength: 136,
      data: '0000000000000000',
    },
    {
      name: "np.asfortranarray(np.arange(6, dtype='u1').reshape(2, 3))",
      arr: { dtype: 'uint8', shape: [2, 3], fortranOrder: true, data: new Uint8Array([0, 3, 1, 4, 2, 5]) },
      dict: "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }",
      spaces: 59,
      headerLength: 118,
      fileLength: 134,
      data: '000301040205',
    },
    {
      name: "np.zeros((0, 3), '?')",
      arr: { dtype: 'bool', shape: [0, 3], fortranOrder: false, data: new Uint8Array(0) },
      dict: "{'descr': '|b1', 'fortran_order': False, 'shape': (0, 3), }",
      spaces: 58,
      headerLength: 118,
      fileLength: 128,
      data: '',
    },
    {
      name: 'np.array([True, False, True])',
      arr: { dtype: 'bool', shape: [3], fortranOrder: false, data: new Uint8Array([1, 0, 1]) },
      dict: "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
      spaces: 60,
      headerLength: 118,
      fileLength: 131,
      data: '010001',
    },
    {
      name: "np.arange(5, dtype='<u2')",
      arr: { dtype: 'uint16', shape: [5], fortranOrder: false, data: new Uint16Array([0, 1, 2, 3, 4]) },
      dict: "{'descr': '<u2', 'fortran_order': False, 'shape': (5,), }",
      spaces: 60,
      headerLength: 118,
      fileLength: 138,
      data: '00000100020003000400',
    },
    {
      name: "np.array([-1.5, 2**-20], '<f4')",
      arr: { dtype: 'float32', shape: [2], fortranOrder: false, data: new Float32Array([-1.5, 2 ** -20]) },
      dict: "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
      spaces: 60,
      headerLength: 118,
      fileLength: 136,
      data: '0000c0bf00008035',
    },
    {
      name: "np.array([-2**63], '<i8')",
      arr: { dtype: 'int64', shape: [1], fortranOrder: false, data: new BigInt64Array([-(2n ** 63n)]) },
      dict: "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
      spaces: 60,
      headerLength: 118,
      fileLength: 136,
      data: '0000000000000080',
    },
    {
      name: "np.array([2**64 - 1], '<u8')",
      arr: { dtype: 'uint64', shape: [1], fortranOrder: false, data: new BigUint64Array([2n ** 64n - 1n]) },
      dict: "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }",
      spaces: 60,
      headerLength: 118,
      fileLength: 136,
      data: 'ffffffffffffffff',
    },
    {
      name: "np.zeros((123456789, 0), '<f4') (growth room shrinks with len(str(shape[0])))",
      arr: { dtype: 'float32', shape: [123456789, 0], fortranOrder: false, data: new Float32Array(0) },
      dict: "{'descr': '<f4', 'fortran_order': False, 'shape': (123456789, 0), }",
      spaces: 50,
      headerLength: 118,
      fileLength: 128,
      data: '',
    },
    {
      // With shape[-1] as the growth axis this header would need 182 bytes.
      name: "np.zeros((10**9,) + (1,) * 10 + (0,), '<f8') (C growth axis is shape[0])",
      arr: { dtype: 'float64', shape: [1e9, ...Array(10).fill(1), 0], fortranOrder: false, data: new Float64Array(0) },
      dict: "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0), }",
      spaces: 19,
      headerLength: 118,
      fileLength: 128,
      data: '',
    },
    {
      // With shape[0] as the growth axis this header would need 182 bytes.
      name: "np.asfortranarray(np.zeros((2,) + (1,) * 12 + (1000,), 'u1')) (Fortran growth axis is shape[-1])",
      arr: { dtype: 'uint8', shape: [2, ...Array(12).fill(1), 1000], fortranOrder: true, data: new Uint8Array(2000) },
      dict: "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1000), }",
      spaces: 20,
      headerLength: 118,
      fileLength: 2128,
      data: '00'.repeat(2000),
    },
    {
      // 10 + 161 + 20 + 1 = 192 is already aligned: numpy still pads 64.
      name: "np.zeros((1,) * 36, 'u1') (aligned header gets a full 64 spaces)",
      arr: { dtype: 'uint8', shape: Array(36).fill(1), fortranOrder: false, data: new Uint8Array(1) },
      dict: `{'descr': '|u1', 'fortran_order': False, 'shape': (${Array(36).fill(1).join(', ')}), }`,
      spaces: 84,
      headerLength: 246,
      fileLength: 257,
      data: '00',
    },
  ];

  for (const g of goldens) {
    it(g.name, () => {
      expect(g.dict.length + g.spaces + 1).toBe(g.headerLength);
      expect((10 + g.headerLength) % 64).toBe(0);
      const expected = new Uint8Array([
        ...MAGIC,
        1,
        0,
        g.headerLength & 0xff,
        g.headerLength >> 8,
        ...ascii(g.dict),
        ...ascii(' '.repeat(g.spaces)),
        0x0a,
        ...hex(g.data),
      ]);
      expect(expected.length).toBe(g.fileLength);

      expect(serializeNpy(g.arr)).toEqual(expected);
      expect(parseNpy(expected)).toEqual(g.arr);
    });
  }

  it('np.arange(6, dtype=int32).reshape(2, 3) has its data at byte 128', () => {
    const arr: NpyArray = { dtype: 'int32', shape: [2, 3], fortranOrder: false, data: new Int32Array([0, 1, 2, 3, 4, 5]) };
    const bytes = serializeNpy(arr);
    expect(bytes.length).toBe(128 + 24);
    expect(Array.from(bytes.subarray(0, 10))).toEqual([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, 118, 0]);
    expect(bytes[127]).toBe(0x0a);
    expect(bytes[126]).toBe(0x20);
    expect(Array.from(bytes.subarray(128, 132))).toEqual([0, 0, 0, 0]);
    expect(Array.from(bytes.subarray(132, 136))).toEqual([1, 0, 0, 0]);
  });

  it('writes version 2.0 when the header does not fit a u16 length', () => {
    const shape = Array(22000).fill(1); // "1, " x 22000 is more than 65535 characters
    const arr: NpyArray = { dtype: 'int16', shape, fortranOrder: false, data: new Int16Array([-7]) };
    const bytes = serializeNpy(arr);
    expect(bytes[6]).toBe(2);
    expect(bytes[7]).toBe(0);
    const headerLength = bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (bytes[11] << 24);
    expect(headerLength).toBeGreaterThan(0xffff);
    expect((12 + headerLength) % 64).toBe(0);
    expect(bytes.length).toBe(12 + headerLength + 2);
    expect(bytes[12 + headerLength - 1]).toBe(0x0a);
    expect(parseNpy(bytes)).toEqual(arr);
  });

  it('refuses what is not an array of this shape with an NpyFormatError, a GemmResult with a hint', () => {
    const result = { data: Int32Array.of(1, 2), rows: 1, cols: 2, order: 'row-major', dtype: 'int32' };
    expect(() => serializeNpy(result as never)).toThrow(NpyFormatError);
    expect(() => serializeNpy(result as never)).toThrow(/a GemmResult: give shape \[rows, cols\]/);
    expect(() => serializeNpy(null as never)).toThrow(NpyFormatError);
    const wrongOrder = { dtype: 'int32', shape: [2], fortranOrder: 'no', data: Int32Array.of(1, 2) };
    expect(() => serializeNpy(wrongOrder as never)).toThrow(/fortranOrder must be true or false/);
  });
});

describe('npyParts', () => {
  it("is serializeNpy's bytes in two parts, the data the array itself (no copy of a large result)", () => {
    const data = Int32Array.from({ length: 1000 }, (_, i) => i * 65537 - 2 ** 30);
    const arr: NpyArray = { dtype: 'int32', shape: [10, 100], fortranOrder: false, data };
    const [header, body] = npyParts(arr);
    expect(body).toBe(data);
    expect(Uint8Array.from([...header, ...new Uint8Array(data.buffer)])).toEqual(serializeNpy(arr));
  });
});

describe('parseNpy', () => {
  // np.lib.format.write_array(f, np.array([[1, 2, 3], [4, 5, 6]], '>i2'), version=(2, 0)), and (3, 0).
  const bigEndianV2 =
    '934e554d50590200740000007b276465736372273a20273e6932272c2027666f727472616e5f6f72646572273a204661' +
    '6c73652c20277368617065273a2028322c2033292c207d20202020202020202020202020202020202020202020202020' +
    '202020202020202020202020202020202020202020202020202020202020200a000100020003000400050006';

  it('reads numpy version 2.0 and 3.0 files (big-endian data)', () => {
    for (const major of [2, 3]) {
      const bytes = new Uint8Array(hex(bigEndianV2));
      bytes[6] = major;
      expect(bytes.length).toBe(140);
      const arr = parseNpy(bytes);
      expect(arr).toEqual({ dtype: 'int16', shape: [2, 3], fortranOrder: false, data: new Int16Array([1, 2, 3, 4, 5, 6]) });
    }
  });

  it('reads a version 3.0 header as UTF-8', () => {
    const header = new TextEncoder().encode(`${dict('<i4', '(1,)')}\n`);
    expect(parseNpy(npyFile(header, [5, 0, 0, 0], 3)).data).toEqual(new Int32Array([5]));
  });

  it("reads a descr without a byte order ('i4', 'u1') as numpy does: native order", () => {
    expect(parseNpy(npyFile(dict('i4', '(2,)'), [5, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff])).data).toEqual(new Int32Array([5, -2]));
    expect(parseNpy(npyFile(dict('u1', '(2,)'), [7, 200])).data).toEqual(new Uint8Array([7, 200]));
  });

  it('byte-swaps big-endian data of every multi-byte dtype', () => {
    const cases: [string, number[], NpyData][] = [
      ['>i2', [0x80, 0x00, 0x00, 0x01], new Int16Array([-32768, 1])],
      ['>u2', [0xff, 0xfe], new Uint16Array([0xfffe])],
      ['>i4', [0x00, 0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 0xfe], new Int32Array([1, -2])],
      ['>u4', [0x12, 0x34, 0x56, 0x78], new Uint32Array([0x12345678])],
      ['>i8', [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd], new BigInt64Array([-3n])],
      ['>u8', [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08], new BigUint64Array([0x0102030405060708n])],
      ['>f4', [0xbf, 0xc0, 0x00, 0x00], new Float32Array([-1.5])],
      ['>f8', [0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18], new Float64Array([Math.PI])],
    ];
    for (const [descr, data, expected] of cases) {
      const arr = parseNpy(npyFile(dict(descr, `(${expected.length},)`), data));
      expect(arr.data, descr).toEqual(expected);
      // Re-serialized little-endian: the same bytes, reversed per element.
      const size = data.length / expected.length;
      const le = serializeNpy(arr).subarray(128);
      const swapped = data.map((_, i) => data[i - (i % size) + size - 1 - (i % size)]);
      expect(Array.from(le), descr).toEqual(swapped);
    }
  });

  it("accepts '<', '=' and (for one-byte types) '|' and '>'", () => {
    expect(parseNpy(npyFile(dict('=i4', '(1,)'), [1, 2, 0, 0])).data).toEqual(new Int32Array([0x201]));
    expect(parseNpy(npyFile(dict('<u2', '(1,)'), [1, 2])).data).toEqual(new Uint16Array([0x201]));
    for (const descr of ['|u1', '<u1', '>u1', '=u1']) {
      expect(parseNpy(npyFile(dict(descr, '(2,)'), [7, 255])).data).toEqual(new Uint8Array([7, 255]));
    }
    const i8 = parseNpy(npyFile(dict('|i1', '(2,)'), [7, 255]));
    expect(i8).toEqual({ dtype: 'int8', shape: [2], fortranOrder: false, data: new Int8Array([7, -1]) });
    expect(parseNpy(npyFile(dict('>b1', '(1,)'), [1])).dtype).toBe('bool');
  });

  it('accepts any key order, either quote, optional trailing commas and free whitespace', () => {
    const headers = [
      "{'shape': (2, 2), 'fortran_order': True, 'descr': '<i2'}",
      '{"fortran_order":True,"descr":"<i2","shape":(2,2)}',
      "{ 'descr' : '<i2' ,\n\t'shape' : ( 2 , 2 , ) , 'fortran_order' : True , }   \n",
    ];
    for (const header of headers) {
      const arr = parseNpy(npyFile(header, [1, 0, 2, 0, 3, 0, 4, 0]));
      expect(arr, header).toEqual({ dtype: 'int16', shape: [2, 2], fortranOrder: true, data: new Int16Array([1, 2, 3, 4]) });
    }
  });

  it('copies data from an unaligned offset into its own aligned buffer', () => {
    const file = serializeNpy({ dtype: 'float64', shape: [3], fortranOrder: false, data: new Float64Array([1, -2, 0.5]) });
    const backing = new Uint8Array(file.length + 3);
    backing.set(file, 3);
    for (const input of [backing.subarray(3), Buffer.from(backing.buffer, 3, file.length)]) {
      const arr = parseNpy(input);
      expect(arr.data).toEqual(new Float64Array([1, -2, 0.5]));
      expect(arr.data.byteOffset).toBe(0);
      expect(arr.data.buffer).not.toBe(backing.buffer);
    }
    backing.fill(0);
    expect(parseNpy(file).data).toEqual(new Float64Array([1, -2, 0.5]));
  });

  it('reports Fortran order without transposing', () => {
    const arr = parseNpy(npyFile(dict('|u1', '(2, 3)', 'True'), [0, 3, 1, 4, 2, 5]));
    expect(arr.fortranOrder).toBe(true);
    expect(arr.data).toEqual(new Uint8Array([0, 3, 1, 4, 2, 5]));
    for (let i = 0; i < 2; i++) {
      for (let j = 0; j < 3; j++) expect(arr.data[elementIndex(arr.shape, true, [i, j])]).toBe(3 * i + j);
    }
  });
});

describe('parseNpy rejects malformed files with NpyFormatError', () => {
  const ok = dict('<i4', '(2,)');
  const data8 = [1, 0, 0, 0, 2, 0, 0, 0];
  const cases: [string, Uint8Array, RegExp][] = [
    ['empty input', new Uint8Array(0), /too short/],
    ['short preamble', new Uint8Array([...MAGIC, 1, 0]), /too short/],
    ['bad magic', npyFile(ok, data8).map((b, i) => (i === 1 ? 0x6e : b)), /bad magic/],
    ['version 4.0', npyFile(ok, data8, 4), /version 4\.0/],
    ['version 1.1', npyFile(ok, data8).map((b, i) => (i === 7 ? 1 : b)), /version 1\.1/],
    ['version 0.0', npyFile(ok, data8).map((b, i) => (i === 6 ? 0 : b)), /version 0\.0/],
    ['version 2.0 without a u32 length', new Uint8Array([...MAGIC, 2, 0, 4, 0]), /header length/],
    ['header longer than the file', npyFile(ok).subarray(0, 40), /header is truncated/],
    ['truncated data', npyFile(ok, data8.slice(0, 7)), /data is truncated: expected 8 bytes, got 7/],
    ['no data at all', npyFile(ok), /data is truncated: expected 8 bytes, got 0/],
    ['trailing bytes', npyFile(ok, [...data8, 0]), /1 trailing bytes/],
    ['empty header', npyFile(''), /expected '\{'/],
    ['header not a dict', npyFile('[1, 2]'), /expected '\{'/],
    ['unknown key', npyFile("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'x': 1}", data8), /unknown key 'x'/],
    ['missing shape', npyFile("{'descr': '<i4', 'fortran_order': False}", data8), /missing key\(s\) 'shape'/],
    ['missing descr and order', npyFile("{'shape': (2,)}", data8), /missing key\(s\) 'descr', 'fortran_order'/],
    ['duplicate key', npyFile("{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (2,)}", data8), /duplicate key 'descr'/],
    ['unquoted key', npyFile("{descr: '<i4', 'fortran_order': False, 'shape': (2,)}", data8), /expected a quoted string/],
    ['missing colon', npyFile("{'descr' '<i4', 'fortran_order': False, 'shape': (2,)}", data8), /expected ':'/],
    ['missing comma', npyFile("{'descr': '<i4' 'fortran_order': False, 'shape': (2,)}", data8), /expected ',' or '\}'/],
    ['unterminated dict', npyFile("{'descr': '<i4', 'fortran_order': False, 'shape': (2,)", data8), /expected ',' or '\}'/],
    ['unterminated string', npyFile("{'descr: '<i4'}", data8), /unknown key|unterminated/],
    ['text after the dict', npyFile(`${ok} x`, data8), /unexpected text after the header dict/],
    ['two dicts', npyFile(`${ok}${ok}`, data8), /unexpected text after the header dict/],
    ['shape (2) is an int', npyFile(dict('<i4', '(2)'), data8), /is an int, not a tuple/],
    ['shape as a list', npyFile(dict('<i4', '[2]'), data8), /expected '\('/],
    ['shape as a bare int', npyFile(dict('<i4', '2'), data8), /expected '\('/],
    ['float shape entry', npyFile(dict('<i4', '(2.0,)'), data8), /shape entry '2\.0' is not a non-negative integer/],
    ['negative shape entry', npyFile(dict('<i4', '(-2,)'), [], 1), /shape entry '-2' is not a non-negative integer/],
    ['string shape entry', npyFile(dict('<i4', "('2',)"), data8), /expected a value/],
    ['leading zero', npyFile(dict('<i4', '(02,)'), data8), /shape entry '02'/],
    ['huge shape entry', npyFile(dict('<i4', '(99999999999999999999,)'), data8), /too large/],
    ['element count overflow', npyFile(dict('<i4', '(4294967296, 4294967296)'), data8), /too many elements/],
    [
      'zero-size array with data',
      npyFile(
        dict(
          '<i4',
          `(${Array(20)
            .fill(2 ** 53 - 1)
            .join(', ')}, 0)`,
        ),
        data8,
      ),
      /8 trailing bytes/,
    ],
    ['unclosed shape', npyFile("{'descr': '<i4', 'fortran_order': False, 'shape': (2,", data8), /expected a value/],
    ['empty shape entry', npyFile(dict('<i4', '(2,,)'), data8), /expected a value/],
    ['fortran_order 0', npyFile(dict('<i4', '(2,)', '0'), data8), /fortran_order must be True or False, got '0'/],
    ['fortran_order true', npyFile(dict('<i4', '(2,)', 'true'), data8), /fortran_order must be True or False/],
    ['fortran_order string', npyFile(dict('<i4', '(2,)', "'True'"), data8), /expected a value/],
    ['descr <U4', npyFile(dict('<U4', '(2,)'), data8), /unsupported descr '<U4'/],
    ['descr |O', npyFile(dict('|O', '(2,)'), data8), /unsupported descr '\|O'/],
    ['descr <c8', npyFile(dict('<c8', '(1,)'), data8), /unsupported descr '<c8'/],
    ['descr <f2', npyFile(dict('<f2', '(4,)'), data8), /unsupported descr '<f2'/],
    ['descr of a code numpy does not know', npyFile(dict('i3', '(2,)'), data8), /unsupported descr 'i3'/],
    ['descr empty', npyFile(dict('', '(2,)'), data8), /unsupported descr ''/],
    ['descr |i4', npyFile(dict('|i4', '(2,)'), data8), /'\|i4' has no byte order/],
    ['structured descr', npyFile("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,)}", data8), /'descr' must be a string/],
    ['escape in a string', npyFile(dict('<i\\x34', '(2,)'), data8), /escapes/],
    ['invalid UTF-8 in 3.0', npyFile(new Uint8Array([...ascii(ok), 0xff, 0x0a]), data8, 3), /not valid UTF-8/],
    ['latin1 junk in 1.0', npyFile(new Uint8Array([...ascii(ok), 0xa0, 0x0a]), data8), /unexpected text after/],
    [
      'latin1 junk in 2.0 (read as latin1, not UTF-8)',
      npyFile(new Uint8Array([...ascii(ok), 0xa0, 0x0a]), data8, 2),
      /unexpected text after/,
    ],
  ];

  for (const [name, bytes, message] of cases) {
    it(name, () => expectNpyError(bytes, message));
  }

  it('accepts the unmodified file those cases are built from', () => {
    expect(parseNpy(npyFile(ok, data8)).data).toEqual(new Int32Array([1, 2]));
    expect(parseNpy(npyFile(`${ok}  \n`, data8)).shape).toEqual([2]);
  });

  it('NpyFormatError is a QgemmError', () => {
    expect(new NpyFormatError('x')).toBeInstanceOf(QgemmError);
    expect(new NpyFormatError('x').name).toBe('NpyFormatError');
  });
});

describe('serializeNpy rejects arrays it cannot write', () => {
  const cases: [string, NpyArray, RegExp][] = [
    [
      'dtype/data mismatch',
      { dtype: 'int32', shape: [2], fortranOrder: false, data: new Uint32Array(2) },
      /'int32' does not match the data array \(uint32\)/,
    ],
    [
      'uint8 data for a wider dtype',
      { dtype: 'int32', shape: [2], fortranOrder: false, data: new Uint8Array(2) },
      /'int32' does not match the data array \(uint8\)/,
    ],
    ['bool needs bytes', { dtype: 'bool', shape: [2], fortranOrder: false, data: new Int8Array(2) }, /'bool' does not match/],
    [
      'too few elements',
      { dtype: 'uint8', shape: [2, 3], fortranOrder: false, data: new Uint8Array(5) },
      /5 elements but shape \(2, 3\) needs 6/,
    ],
    ['too many elements', { dtype: 'uint8', shape: [], fortranOrder: false, data: new Uint8Array(2) }, /2 elements but shape \(\) needs 1/],
    ['negative dim', { dtype: 'uint8', shape: [-1], fortranOrder: false, data: new Uint8Array(0) }, /shape entry -1/],
    ['fractional dim', { dtype: 'uint8', shape: [1.5], fortranOrder: false, data: new Uint8Array(1) }, /shape entry 1\.5/],
    [
      'unknown dtype',
      { dtype: 'float16' as NpyDtype, shape: [1], fortranOrder: false, data: new Uint16Array(1) },
      /unsupported dtype 'float16'/,
    ],
    [
      'inherited key as dtype',
      { dtype: 'toString' as NpyDtype, shape: [1], fortranOrder: false, data: new Uint8Array(1) },
      /unsupported dtype/,
    ],
  ];
  for (const [name, arr, message] of cases) {
    it(name, () => {
      expect(() => serializeNpy(arr)).toThrow(NpyFormatError);
      expect(() => serializeNpy(arr)).toThrow(message);
    });
  }

  it('writes only the view, not the whole backing buffer', () => {
    const backing = new Int16Array([9, 1, 2, 9]);
    const bytes = serializeNpy({ dtype: 'int16', shape: [2], fortranOrder: false, data: backing.subarray(1, 3) });
    expect(Array.from(bytes.subarray(128))).toEqual([1, 0, 2, 0]);
  });
});

describe('round trips', () => {
  const shapes = [[], [0], [1], [7], [3, 4], [4, 0], [0, 5], [2, 3, 4], [1, 1, 1, 1]];

  // Deterministic values that include each type's extremes.
  function sample(dtype: NpyDtype, n: number): NpyData {
    const out = new CTORS[dtype](n);
    for (let i = 0; i < n; i++) {
      const k = i * 37 - 50;
      if (dtype === 'int64') (out as BigInt64Array)[i] = i === 0 ? -(2n ** 63n) : BigInt(k) * 1234567891011n;
      else if (dtype === 'uint64') (out as BigUint64Array)[i] = i === 0 ? 2n ** 64n - 1n : BigInt(i) * 98765432109876n;
      else if (dtype === 'bool') out[i] = i % 3 === 0 ? 1 : 0;
      else if (dtype.startsWith('float')) out[i] = i === 0 ? -0 : i === 1 ? NaN : k / 7 + (i === 2 ? Infinity : 0);
      else out[i] = i === 0 ? -1 : k * 1001; // wraps to the type's range
    }
    return out;
  }

  for (const dtype of DTYPES) {
    it(dtype, () => {
      for (const shape of shapes) {
        for (const fortranOrder of [false, true]) {
          const n = shape.reduce((a, b) => a * b, 1);
          const arr: NpyArray = { dtype, shape, fortranOrder, data: sample(dtype, n) };
          const bytes = serializeNpy(arr);
          const headerLength = bytes[8] | (bytes[9] << 8);
          expect((10 + headerLength) % 64).toBe(0);
          expect(bytes.length).toBe(10 + headerLength + n * ITEMSIZE[dtype]);
          const back = parseNpy(bytes);
          expect(back.dtype).toBe(dtype);
          expect(back.shape).toEqual(shape);
          expect(back.fortranOrder).toBe(fortranOrder);
          expect(back.data).toBeInstanceOf(CTORS[dtype]);
          expect(bytesOf(back.data)).toEqual(bytesOf(arr.data));
          expect(serializeNpy(back)).toEqual(bytes);
        }
      }
    });
  }

  it('holds for arbitrary dtypes, shapes and bit patterns (fast-check)', () => {
    const arrays = fc
      .record({
        dtype: fc.constantFrom(...DTYPES),
        shape: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 4 }),
        fortranOrder: fc.boolean(),
      })
      .chain(({ dtype, shape, fortranOrder }) => {
        const byteLength = shape.reduce((a, b) => a * b, 1) * ITEMSIZE[dtype];
        return fc.uint8Array({ minLength: byteLength, maxLength: byteLength }).map((raw) => {
          const data = new CTORS[dtype](raw.length / ITEMSIZE[dtype]);
          bytesOf(data).set(raw);
          return { dtype, shape, fortranOrder, data } as NpyArray;
        });
      });
    fc.assert(
      fc.property(arrays, (arr) => {
        const back = parseNpy(serializeNpy(arr));
        expect(back.dtype).toBe(arr.dtype);
        expect(back.shape).toEqual(arr.shape);
        expect(back.fortranOrder).toBe(arr.fortranOrder);
        expect(bytesOf(back.data)).toEqual(bytesOf(arr.data));
      }),
      { numRuns: 300 },
    );
  });
});

describe('helpers', () => {
  it('npyDtypeOf names every typed array (and a Node Buffer as uint8)', () => {
    for (const dtype of DTYPES.filter((d) => d !== 'bool')) {
      expect(npyDtypeOf(new CTORS[dtype](1))).toBe(dtype);
    }
    expect(npyDtypeOf(Buffer.alloc(1))).toBe('uint8');
    expect(() => npyDtypeOf(new Uint8ClampedArray(1) as unknown as Uint8Array)).toThrow(/Uint8ClampedArray/);
  });

  it('elementIndex walks C order row-major and Fortran order column-major', () => {
    expect(elementIndex([2, 3], false, [1, 2])).toBe(5);
    expect(elementIndex([2, 3], false, [1, 0])).toBe(3);
    expect(elementIndex([2, 3], true, [1, 0])).toBe(1);
    expect(elementIndex([2, 3], true, [0, 2])).toBe(4);
    expect(elementIndex([2, 3, 4], false, [1, 2, 3])).toBe(23);
    expect(elementIndex([2, 3, 4], true, [1, 2, 3])).toBe(1 + 2 * 2 + 3 * 6);
    expect(elementIndex([], false, [])).toBe(0);
    expect(() => elementIndex([2, 3], false, [2, 0])).toThrow(RangeError);
    expect(() => elementIndex([2, 3], false, [0])).toThrow(RangeError);
  });
});
