// The onnxruntime peers' models, built in code as onnx.ModelProto bytes with the minimal protobuf
// encoder below (varints and length-delimited fields are all they need; no Python, no .onnx file):
//   - MatMulInteger (CPU peer): Y[int32, MxN] = (A[uint8, MxK] - a_zp) * (B[uint8, KxN] - b_zp), symbolic
//     M, N, K (one session serves every shape), zero points as inputs; and the same with B and b_zp as
//     initializers (the resident CPU peer: onnxruntime prepacks a constant B);
//   - MatMul f32 with the weights as an initializer (the WebGPU peer: weights stay on the GPU);
//   - com.microsoft MatMulNBits (bits 8 or 4, block_size 32, accuracy_level 4, float32 A), its packed
//     weights, scales and zero points as initializers.
// The initializer models fix N and K (one model per weight matrix) and keep M symbolic.
// Field numbers from onnx/onnx.proto3 and onnxruntime's contrib_defs (MatMulNBits).

// ---- protobuf wire format ---------------------------------------------------------------------------

type Field = Uint8Array;

function varint(value: number): number[] {
  if (!Number.isInteger(value) || value < 0) throw new Error(`varint: ${value} is not a non-negative integer`);
  const out: number[] = [];
  let v = value;
  while (v > 127) {
    out.push((v % 128) | 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

const concat = (parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

/** A varint field (wire type 0): int32, int64, enums. */
export function intField(field: number, value: number): Field {
  return Uint8Array.from([...varint(field * 8 + 0), ...varint(value)]);
}

/** A length-delimited field (wire type 2) holding bytes or an embedded message. */
export function bytesField(field: number, payload: Uint8Array): Field {
  return concat([Uint8Array.from([...varint(field * 8 + 2), ...varint(payload.length)]), payload]);
}

export const stringField = (field: number, text: string): Field => bytesField(field, new TextEncoder().encode(text));
export const message = (field: number, ...fields: Field[]): Field => bytesField(field, concat(fields));

// ---- onnx.proto -------------------------------------------------------------------------------------

/** TensorProto.DataType */
export const ONNX_FLOAT = 1;
export const ONNX_UINT8 = 2;
export const ONNX_INT32 = 6;

/** ValueInfoProto{name=1, type=2: TypeProto{tensor_type=1: {elem_type=1, shape=2: {dim=1: {dim_value=1 | dim_param=2}}}}} */
function valueInfo(field: number, name: string, elemType: number, dims: (number | string)[]): Field {
  const dimFields = dims.map((d) => message(1, typeof d === 'number' ? intField(1, d) : stringField(2, d)));
  return message(field, stringField(1, name), message(2, message(1, intField(1, elemType), message(2, ...dimFields))));
}

/** The MatMulInteger model's bytes. Inputs A, B, a_zero_point, b_zero_point; output Y. */
export function matMulIntegerModel(): Uint8Array {
  const node = message(
    1, // GraphProto.node
    stringField(1, 'A'),
    stringField(1, 'B'),
    stringField(1, 'a_zero_point'),
    stringField(1, 'b_zero_point'),
    stringField(2, 'Y'),
    stringField(3, 'matmul_integer'),
    stringField(4, 'MatMulInteger'),
  );
  const graph = message(
    7, // ModelProto.graph
    node,
    stringField(2, 'qgemm_bench_matmul_integer'),
    valueInfo(11, 'A', ONNX_UINT8, ['M', 'K']),
    valueInfo(11, 'B', ONNX_UINT8, ['K', 'N']),
    valueInfo(11, 'a_zero_point', ONNX_UINT8, []),
    valueInfo(11, 'b_zero_point', ONNX_UINT8, []),
    valueInfo(12, 'Y', ONNX_INT32, ['M', 'N']),
  );
  return concat([
    intField(1, 7), // ir_version
    stringField(2, 'qgemm-webgpu bench'), // producer_name
    graph,
    message(8, stringField(1, ''), intField(2, 13)), // opset_import: default domain, opset 13
  ]);
}

// ---- initializers and the com.microsoft opset --------------------------------------------------------

/** TensorProto{dims=1 (repeated int64), data_type=2, name=8, raw_data=9 (little-endian bytes)}. */
function tensor(field: number, name: string, elemType: number, dims: number[], raw: Uint8Array): Field {
  return message(field, ...dims.map((d) => intField(1, d)), intField(2, elemType), stringField(8, name), bytesField(9, raw));
}

/** AttributeProto{name=1, i=3, type=20 (INT = 2)}. */
const intAttribute = (name: string, value: number): Field => message(5, stringField(1, name), intField(3, value), intField(20, 2));

interface NodeSpec {
  op: string;
  domain?: string;
  inputs: string[];
  attributes?: Record<string, number>;
}

interface Initializer {
  name: string;
  elemType: number;
  dims: number[];
  raw: Uint8Array;
}

/** A one-node model: input A (float32 [M, K], M symbolic), output Y (float32 [M, N]), the rest initializers. */
function oneNodeModel(node: NodeSpec, k: number, n: number, initializers: Initializer[]): Uint8Array {
  const nodeField = message(
    1,
    ...node.inputs.map((i) => stringField(1, i)),
    stringField(2, 'Y'),
    stringField(3, node.op.toLowerCase()),
    stringField(4, node.op),
    ...Object.entries(node.attributes ?? {}).map(([name, v]) => intAttribute(name, v)),
    ...(node.domain ? [stringField(7, node.domain)] : []),
  );
  const graph = message(
    7,
    nodeField,
    stringField(2, `qgemm_bench_${node.op.toLowerCase()}`),
    ...initializers.map((t) => tensor(5, t.name, t.elemType, t.dims, t.raw)),
    valueInfo(11, 'A', ONNX_FLOAT, ['M', k]),
    valueInfo(12, 'Y', ONNX_FLOAT, ['M', n]),
  );
  return concat([
    intField(1, 8), // ir_version
    stringField(2, 'qgemm-webgpu bench'),
    graph,
    message(8, stringField(1, ''), intField(2, 17)),
    ...(node.domain ? [message(8, stringField(1, node.domain), intField(2, 1))] : []),
  ]);
}

const bytesOfFloats = (f: Float32Array): Uint8Array => new Uint8Array(f.buffer, f.byteOffset, f.byteLength);

/**
 * MatMulInteger with the weights B (uint8 [K, N], row-major) and b_zero_point as initializers: inputs
 * A (uint8 [M, K], M symbolic) and a_zero_point, output Y (int32 [M, N]). onnxruntime packs a constant
 * B once, when the session is made (the CPU peer of qgemm's prepacked rhs).
 */
export function matMulIntegerWeightsModel(b: Uint8Array, k: number, n: number, bZeroPoint: number): Uint8Array {
  const node = message(
    1,
    ...['A', 'B', 'a_zero_point', 'b_zero_point'].map((i) => stringField(1, i)),
    stringField(2, 'Y'),
    stringField(3, 'matmul_integer'),
    stringField(4, 'MatMulInteger'),
  );
  const graph = message(
    7,
    node,
    stringField(2, 'qgemm_bench_matmul_integer_weights'),
    tensor(5, 'B', ONNX_UINT8, [k, n], b),
    tensor(5, 'b_zero_point', ONNX_UINT8, [], Uint8Array.of(bZeroPoint)),
    valueInfo(11, 'A', ONNX_UINT8, ['M', k]),
    valueInfo(11, 'a_zero_point', ONNX_UINT8, []),
    valueInfo(12, 'Y', ONNX_INT32, ['M', n]),
  );
  return concat([intField(1, 7), stringField(2, 'qgemm-webgpu bench'), graph, message(8, stringField(1, ''), intField(2, 13))]);
}

/** MatMul f32, Y = A x W with W [K, N] (row-major floats) an initializer. */
export function matMulF32Model(w: Float32Array, k: number, n: number): Uint8Array {
  return oneNodeModel({ op: 'MatMul', inputs: ['A', 'W'] }, k, n, [
    { name: 'W', elemType: ONNX_FLOAT, dims: [k, n], raw: bytesOfFloats(w) },
  ]);
}

export const NBITS_BLOCK = 32;

/**
 * com.microsoft MatMulNBits: Y = A x dequant(B)ᵀ, B the weights [K, N] (row-major uint8, already in
 * 0..2^bits-1) quantized per column in blocks of 32 along K, scale 1 and the given zero point per block
 * (so dequant(B) = B - zeroPoint exactly). Layouts (contrib_defs.cc): B [N, K/32, 32*bits/8] with values
 * packed low nibble first; scales float [N * K/32]; zero_points uint8 [N * ceil((K/32)*bits/8)].
 */
export function matMulNBitsModel(weights: Uint8Array, k: number, n: number, bits: 4 | 8, zeroPoint: number): Uint8Array {
  if (k % NBITS_BLOCK) throw new Error(`MatMulNBits: K = ${k} is not a multiple of the block size ${NBITS_BLOCK}`);
  const blocks = k / NBITS_BLOCK;
  const blob = (NBITS_BLOCK * bits) / 8;
  const b = new Uint8Array(n * blocks * blob);
  for (let col = 0; col < n; col++) {
    for (let kk = 0; kk < k; kk++) {
      const v = weights[kk * n + col];
      if (bits === 8) b[col * k + kk] = v;
      else b[col * (k / 2) + (kk >> 1)] |= (v & 15) << ((kk & 1) * 4);
    }
  }
  const zpBytes = Math.ceil((blocks * bits) / 8);
  const zp = new Uint8Array(n * zpBytes);
  for (let col = 0; col < n; col++) {
    for (let blk = 0; blk < blocks; blk++) {
      if (bits === 8) zp[col * zpBytes + blk] = zeroPoint;
      else zp[col * zpBytes + (blk >> 1)] |= (zeroPoint & 15) << ((blk & 1) * 4);
    }
  }
  const scales = new Float32Array(n * blocks).fill(1);
  return oneNodeModel(
    {
      op: 'MatMulNBits',
      domain: 'com.microsoft',
      inputs: ['A', 'B', 'scales', 'zero_points'],
      attributes: { K: k, N: n, bits, block_size: NBITS_BLOCK, accuracy_level: 4 },
    },
    k,
    n,
    [
      { name: 'B', elemType: ONNX_UINT8, dims: [n, blocks, blob], raw: b },
      { name: 'scales', elemType: ONNX_FLOAT, dims: [n * blocks], raw: bytesOfFloats(scales) },
      { name: 'zero_points', elemType: ONNX_UINT8, dims: [n * zpBytes], raw: zp },
    ],
  );
}
