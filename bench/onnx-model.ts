// The onnxruntime peer's model, built in code: one MatMulInteger node (ONNX opset 10+),
//   Y[int32, M x N] = (A[uint8, M x K] - a_zero_point) * (B[uint8, K x N] - b_zero_point)
// with symbolic M, N, K (one session serves every shape) and scalar uint8 zero points as inputs.
// The bytes are an onnx.ModelProto written with the minimal protobuf encoder below (varints and
// length-delimited fields are all this model needs); no Python, no .onnx file in the tree.
// Field numbers from onnx/onnx.proto3.

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
