/**
 * Writes a one-operator .tflite model (schema version 3, file identifier "TFL3") for a golden case:
 * a FULLY_CONNECTED or CONV_2D with a quantized input, constant weights (per-tensor or per-channel
 * scales with quantized_dimension 0), an int32 bias and a quantized output, as TFLite's converter lays
 * them out; or an elementwise ADD, SUB or MUL of two quantized graph inputs (writeElementwiseModel). Field ids follow tensorflow/lite/schema/schema.fbs. Used only by the golden generator; the
 * library's layers (pack -> gemm -> output) take the same numbers directly.
 */
import { Builder, type Offset } from './flatbuffer.ts';

export type Activation = 'NONE' | 'RELU' | 'RELU6' | 'RELU_N1_TO_1';
export type Dtype = 'int8' | 'uint8';

/** One golden case: the layer's numbers as the golden file stores them (test/golden/tflite.test.ts). */
export interface LayerCase {
  name: string;
  op: 'FULLY_CONNECTED' | 'CONV_2D';
  input: { dtype: Dtype; shape: number[]; data: number[]; scale: number; zeroPoint: number };
  weights: { dtype: Dtype; shape: number[]; data: number[]; scale: number | number[]; zeroPoint: number };
  bias: number[] | null;
  stride?: [number, number];
  dilation?: [number, number];
  padding?: 'SAME' | 'VALID';
  output: { dtype: Dtype; scale: number; zeroPoint: number };
  activation: Activation;
  outputShape: number[];
}

const TENSOR_TYPE = { int32: 2, uint8: 3, int8: 9 } as const;
const BUILTIN = { CONV_2D: 3, FULLY_CONNECTED: 9 } as const;
const ACTIVATION = { NONE: 0, RELU: 1, RELU_N1_TO_1: 2, RELU6: 3 } as const;
const OPTIONS = { Conv2DOptions: 1, FullyConnectedOptions: 8 } as const;

interface TensorSpec {
  name: string;
  type: keyof typeof TENSOR_TYPE;
  shape: number[];
  buffer: number;
  scale: number[];
  zeroPoint: number[];
}

function quantization(b: Builder, t: TensorSpec): Offset {
  const scale = b.vectorFloat32(t.scale);
  const zp = b.vectorInt64(t.zeroPoint.map(BigInt));
  b.startTable(7);
  b.fieldOffset(2, scale); // scale:[float]
  b.fieldOffset(3, zp); // zero_point:[long]
  b.fieldInt32(6, 0); // quantized_dimension: 0 (output channels of OHWI and of [N, K])
  return b.endTable();
}

function tensor(b: Builder, t: TensorSpec): Offset {
  const q = quantization(b, t);
  const name = b.string(t.name);
  const shape = b.vectorInt32(t.shape);
  b.startTable(5);
  b.fieldOffset(0, shape); // shape:[int]
  b.fieldUint32(2, t.buffer); // buffer:uint
  b.fieldOffset(3, name); // name:string
  b.fieldOffset(4, q); // quantization
  b.fieldInt8(1, TENSOR_TYPE[t.type]); // type:TensorType
  return b.endTable();
}

function bytesOf(c: LayerCase): { weights: Uint8Array; bias: Uint8Array | null } {
  const weights = c.weights.dtype === 'int8' ? new Uint8Array(Int8Array.from(c.weights.data).buffer) : Uint8Array.from(c.weights.data);
  const bias = c.bias ? new Uint8Array(Int32Array.from(c.bias).buffer) : null;
  return { weights, bias };
}

/** The .tflite bytes of one case. Bias scales are f32(input scale * weight scale), as TFLite requires. */
export function writeModel(c: LayerCase): Uint8Array {
  const b = new Builder();
  const wScales = Array.isArray(c.weights.scale) ? c.weights.scale : [c.weights.scale];
  const tensors: TensorSpec[] = [
    { name: 'input', type: c.input.dtype, shape: c.input.shape, buffer: 1, scale: [c.input.scale], zeroPoint: [c.input.zeroPoint] },
    {
      name: 'weights',
      type: c.weights.dtype,
      shape: c.weights.shape,
      buffer: 2,
      scale: wScales,
      zeroPoint: wScales.map(() => c.weights.zeroPoint),
    },
    { name: 'output', type: c.output.dtype, shape: c.outputShape, buffer: 3, scale: [c.output.scale], zeroPoint: [c.output.zeroPoint] },
  ];
  if (c.bias)
    tensors.push({
      name: 'bias',
      type: 'int32',
      shape: [c.bias.length],
      buffer: 4,
      scale: wScales.map((s) => Math.fround(c.input.scale * s)),
      zeroPoint: wScales.map(() => 0),
    });
  const { weights, bias } = bytesOf(c);

  // Buffers: 0 the empty sentinel, 1 input, 2 weights, 3 output, 4 bias.
  const bufferData = [null, null, weights, null, bias];
  const buffers = bufferData.slice(0, c.bias ? 5 : 4).map((data) => {
    const v = data ? b.vectorBytes(data, 16) : 0;
    b.startTable(3);
    if (v) b.fieldOffset(0, v);
    return b.endTable();
  });
  const tensorOffsets = tensors.map((t) => tensor(b, t));

  let options: Offset;
  if (c.op === 'CONV_2D') {
    const [sh, sw] = c.stride ?? [1, 1];
    const [dh, dw] = c.dilation ?? [1, 1];
    b.startTable(6);
    b.fieldInt32(1, sw); // stride_w
    b.fieldInt32(2, sh); // stride_h
    b.fieldInt32(4, dw); // dilation_w_factor
    b.fieldInt32(5, dh); // dilation_h_factor
    b.fieldInt8(0, c.padding === 'VALID' ? 1 : 0); // padding: SAME 0, VALID 1
    b.fieldInt8(3, ACTIVATION[c.activation]); // fused_activation_function
    options = b.endTable();
  } else {
    b.startTable(3);
    b.fieldInt8(0, ACTIVATION[c.activation]); // fused_activation_function
    b.fieldInt8(1, 0); // weights_format: DEFAULT
    b.fieldUint8(2, 0); // keep_num_dims: false
    options = b.endTable();
  }
  const opInputs = b.vectorInt32([0, 1, c.bias ? 3 : -1]);
  const opOutputs = b.vectorInt32([2]);
  b.startTable(5);
  b.fieldUint32(0, 0); // opcode_index
  b.fieldOffset(1, opInputs);
  b.fieldOffset(2, opOutputs);
  b.fieldOffset(4, options); // builtin_options
  b.fieldUint8(3, c.op === 'CONV_2D' ? OPTIONS.Conv2DOptions : OPTIONS.FullyConnectedOptions); // builtin_options_type
  const operator = b.endTable();

  const sgTensors = b.vectorOffsets(tensorOffsets);
  const sgInputs = b.vectorInt32([0]);
  const sgOutputs = b.vectorInt32([2]);
  const sgOperators = b.vectorOffsets([operator]);
  const sgName = b.string('main');
  b.startTable(5);
  b.fieldOffset(0, sgTensors);
  b.fieldOffset(1, sgInputs);
  b.fieldOffset(2, sgOutputs);
  b.fieldOffset(3, sgOperators);
  b.fieldOffset(4, sgName);
  const subgraph = b.endTable();

  // OperatorCode: deprecated_builtin_code (byte, id 0), custom_code (1), version (2), builtin_code (int, 3).
  // Versions: uint8 is version 1 of both ops; int8 is CONV_2D version 3 and FULLY_CONNECTED version 4.
  const version = c.input.dtype === 'uint8' ? 1 : c.op === 'CONV_2D' ? 3 : 4;
  b.startTable(4);
  b.fieldInt32(3, BUILTIN[c.op]);
  b.fieldInt32(2, version);
  b.fieldInt8(0, BUILTIN[c.op]);
  const opcode = b.endTable();

  const codes = b.vectorOffsets([opcode]);
  const subgraphs = b.vectorOffsets([subgraph]);
  const description = b.string('qgemm-webgpu TFLite golden');
  const bufferVec = b.vectorOffsets(buffers);
  b.startTable(5);
  b.fieldUint32(0, 3); // version
  b.fieldOffset(1, codes);
  b.fieldOffset(2, subgraphs);
  b.fieldOffset(3, description);
  b.fieldOffset(4, bufferVec);
  const model = b.endTable();
  return b.finish(model, 'TFL3');
}

/** One elementwise golden case: TFLite's ADD, SUB or MUL of two graph inputs, as the golden file stores it. */
export interface ElementwiseCase {
  name: string;
  op: 'ADD' | 'SUB' | 'MUL';
  a: { dtype: Dtype; shape: number[]; data: number[]; scale: number; zeroPoint: number };
  b: { dtype: Dtype; shape: number[]; data: number[]; scale: number; zeroPoint: number };
  output: { dtype: Dtype; scale: number; zeroPoint: number };
  activation: Activation;
  outputShape: number[];
}

/** BuiltinOperator codes and BuiltinOptions union tags of the elementwise ops (schema.fbs). */
const ELEMENTWISE_OP = { ADD: { code: 0, options: 11 }, MUL: { code: 18, options: 21 }, SUB: { code: 41, options: 28 } } as const;

/**
 * The .tflite bytes of one elementwise case: tensors a (0) and b (1) are the subgraph's inputs, the output
 * (2) its output; the options table holds fused_activation_function (field 0) only.
 */
export function writeElementwiseModel(c: ElementwiseCase): Uint8Array {
  const b = new Builder();
  const tensors: TensorSpec[] = [
    { name: 'a', type: c.a.dtype, shape: c.a.shape, buffer: 1, scale: [c.a.scale], zeroPoint: [c.a.zeroPoint] },
    { name: 'b', type: c.b.dtype, shape: c.b.shape, buffer: 2, scale: [c.b.scale], zeroPoint: [c.b.zeroPoint] },
    { name: 'output', type: c.output.dtype, shape: c.outputShape, buffer: 3, scale: [c.output.scale], zeroPoint: [c.output.zeroPoint] },
  ];
  // Buffers: 0 the empty sentinel, then one empty buffer per tensor.
  const buffers = [0, 1, 2, 3].map(() => {
    b.startTable(3);
    return b.endTable();
  });
  const tensorOffsets = tensors.map((t) => tensor(b, t));
  b.startTable(2);
  b.fieldInt8(0, ACTIVATION[c.activation]); // fused_activation_function
  const options = b.endTable();
  const opInputs = b.vectorInt32([0, 1]);
  const opOutputs = b.vectorInt32([2]);
  b.startTable(5);
  b.fieldUint32(0, 0); // opcode_index
  b.fieldOffset(1, opInputs);
  b.fieldOffset(2, opOutputs);
  b.fieldOffset(4, options); // builtin_options
  b.fieldUint8(3, ELEMENTWISE_OP[c.op].options); // builtin_options_type
  const operator = b.endTable();

  const sgTensors = b.vectorOffsets(tensorOffsets);
  const sgInputs = b.vectorInt32([0, 1]);
  const sgOutputs = b.vectorInt32([2]);
  const sgOperators = b.vectorOffsets([operator]);
  const sgName = b.string('main');
  b.startTable(5);
  b.fieldOffset(0, sgTensors);
  b.fieldOffset(1, sgInputs);
  b.fieldOffset(2, sgOutputs);
  b.fieldOffset(3, sgOperators);
  b.fieldOffset(4, sgName);
  const subgraph = b.endTable();

  // Versions: uint8 is version 1 of the three ops, int8 version 2.
  const version = c.a.dtype === 'uint8' ? 1 : 2;
  b.startTable(4);
  b.fieldInt32(3, ELEMENTWISE_OP[c.op].code);
  b.fieldInt32(2, version);
  b.fieldInt8(0, ELEMENTWISE_OP[c.op].code);
  const opcode = b.endTable();

  const codes = b.vectorOffsets([opcode]);
  const subgraphs = b.vectorOffsets([subgraph]);
  const description = b.string('qgemm-webgpu TFLite golden');
  const bufferVec = b.vectorOffsets(buffers);
  b.startTable(5);
  b.fieldUint32(0, 3); // version
  b.fieldOffset(1, codes);
  b.fieldOffset(2, subgraphs);
  b.fieldOffset(3, description);
  b.fieldOffset(4, bufferVec);
  const model = b.endTable();
  return b.finish(model, 'TFL3');
}
