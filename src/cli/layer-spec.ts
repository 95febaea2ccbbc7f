// The TFLite layer ops of the `qgemm run` spec contract (src/layers/), parsed and checked before any
// backend runs:
//   {"op": "fullyConnected",
//    "input":   {"data": "x.npy", "scale": 0.0235, "zeroPoint": -3},     uint8 or int8, [..., K], C order
//    "weights": {"data": "w.npy", "scale": 0.01 or [...], "zeroPoint": 0}, [N, K]; zeroPoint optional (0)
//    "bias": "b.npy" or [...],                                            int32, length N, optional
//    "output":  {"scale": 0.05, "zeroPoint": 4},
//    "activation": "NONE"|"RELU"|"RELU6"|"RELU_N1_TO_1",                 optional, default NONE
//    "kernelPath": "xnnpack"|"optimized"|"reference",                    optional, default xnnpack
//    "out": "y.npy"}
//   {"op": "conv2d", ... "filter" (OHWI) in place of "weights", input NHWC,
//    "padding": "SAME"|"VALID", "stride": [h, w], "dilation": [h, w]}  (stride, dilation optional)
// Scales are JSON numbers rounded to float32, as a .tflite file stores them. Every bad field is an
// InputError naming it.

import { InputError } from '../errors.ts';
import type { Conv2dParams, FullyConnectedParams, Tensor } from '../layers/layers.ts';
import { brief } from './json.ts';
import { asSpecIo, checkKeys, int32, int32Vector, isObject, oneOf, readNpyField, type ReadFile, type SpecIo } from './spec.ts';

export const LAYER_OPS = ['fullyConnected', 'conv2d', 'sequential'] as const;
type LayerOp = (typeof LAYER_OPS)[number];

type LayerSpec =
  | { op: 'fullyConnected'; input: Tensor; params: FullyConnectedParams; out: string }
  | { op: 'conv2d'; input: Tensor; params: Conv2dParams; out: string };

export function isLayerOp(op: unknown): op is LayerOp {
  return op === 'fullyConnected' || op === 'conv2d' || op === 'sequential';
}

/**
 * A chain of fullyConnected layers, each consuming the previous one's output:
 *   {"op": "sequential", "input": {"data": "x.npy", "scale": ..., "zeroPoint": ...},
 *    "layers": [{"op": "fullyConnected", "weights": {...}, "bias"?: ..., "output": {...},
 *                "activation"?: ..., "kernelPath"?: ...}, ...],
 *    "out": "y.npy"}
 * Layer i's input quantization is layer i-1's output. Every layer's data is read and checked here.
 */
export function parseSequentialSpec(
  spec: Record<string, unknown>,
  baseDir: string,
  readFile: ReadFile | SpecIo,
): { input: Tensor; layers: FullyConnectedParams[]; out: string } {
  const io = asSpecIo(baseDir, readFile);
  checkKeys('', spec, ['op', 'input', 'layers', 'out']);
  const layers = required('', spec, 'layers');
  if (!Array.isArray(layers) || layers.length === 0)
    throw new InputError('layers', `expected a non-empty array of layers, got ${brief(layers)}`);
  let input: Tensor | undefined;
  let prevOutput: unknown = required('', spec, 'input');
  const params: FullyConnectedParams[] = [];
  layers.forEach((l, i) => {
    const f = `layers[${i}]`;
    if (!isObject(l)) throw new InputError(f, `expected a layer object, got ${brief(l)}`);
    if (l.op !== 'fullyConnected') throw new InputError(`${f}.op`, `expected "fullyConnected", got ${brief(l.op)}`);
    checkKeys(f, l, ['op', 'weights', 'bias', 'output', 'activation', 'kernelPath']);
    const inputJson =
      i === 0 ? prevOutput : { data: (spec.input as Record<string, unknown>).data, ...(prevOutput as Record<string, unknown>) };
    try {
      const parsed = parseLayerSpec({ ...l, input: inputJson, out: spec.out } as Record<string, unknown>, baseDir, io);
      if (parsed.op !== 'fullyConnected') throw new Error('unreachable');
      if (i === 0) input = parsed.input;
      params.push(parsed.params);
    } catch (e) {
      if (!(e instanceof InputError) || e.field === 'out' || (i === 0 && e.field.startsWith('input'))) throw e;
      const message = e.message.slice(e.field.length + 2);
      // a later layer's input is the previous layer's output (its data is the spec's input file)
      if (e.field.startsWith('input.data')) throw e;
      if (e.field.startsWith('input')) throw new InputError(`layers[${i - 1}].output${e.field.slice('input'.length)}`, message);
      throw new InputError(`${f}.${e.field}`, message);
    }
    prevOutput = l.output;
  });
  return { input: input!, layers: params, out: io.resolve('out', required('', spec, 'out')) };
}

function required(field: string, obj: Record<string, unknown>, key: string): unknown {
  if (!(key in obj) || obj[key] === undefined) throw new InputError(field ? `${field}.${key}` : key, 'missing');
  return obj[key];
}

function scale32(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new InputError(field, `expected a positive number, got ${brief(v)}`);
  return Math.fround(v);
}

function tensor(field: string, v: Record<string, unknown>, io: SpecIo): { data: Uint8Array | Int8Array; shape: number[] } {
  const arr = readNpyField(`${field}.data`, required(field, v, 'data'), io);
  if (arr.dtype !== 'uint8' && arr.dtype !== 'int8') throw new InputError(`${field}.data`, `dtype must be uint8 or int8, got ${arr.dtype}`);
  if (arr.fortranOrder && arr.shape.length > 1)
    throw new InputError(`${field}.data`, 'expected C order (TFLite layouts), got Fortran order');
  return { data: arr.data as Uint8Array | Int8Array, shape: arr.shape };
}

function pair(field: string, v: unknown): [number, number] {
  if (!Array.isArray(v) || v.length !== 2 || !v.every((x) => Number.isInteger(x) && x >= 1)) {
    throw new InputError(field, `expected [h, w] of positive integers, got ${brief(v)}`);
  }
  return [v[0], v[1]];
}

/** A layer op of the spec contract; `spec` is the parsed JSON, `baseDir` the spec file's folder. */
export function parseLayerSpec(spec: Record<string, unknown>, baseDir: string, readFile: ReadFile | SpecIo): LayerSpec {
  const io = asSpecIo(baseDir, readFile);
  const op = spec.op as 'fullyConnected' | 'conv2d';
  const wKey = op === 'conv2d' ? 'filter' : 'weights';
  const common = ['op', 'input', wKey, 'bias', 'output', 'activation', 'kernelPath', 'out'];
  checkKeys('', spec, op === 'conv2d' ? [...common, 'padding', 'stride', 'dilation'] : common);
  const inJson = required('', spec, 'input');
  if (!isObject(inJson)) throw new InputError('input', `expected {"data": "x.npy", "scale": ..., "zeroPoint": ...}, got ${brief(inJson)}`);
  checkKeys('input', inJson, ['data', 'scale', 'zeroPoint']);
  const input = tensor('input', inJson, io);
  const wJson = required('', spec, wKey);
  if (!isObject(wJson)) throw new InputError(wKey, `expected {"data": "w.npy", "scale": ..., "zeroPoint"?: ...}, got ${brief(wJson)}`);
  checkKeys(wKey, wJson, ['data', 'scale', 'zeroPoint']);
  const w = tensor(wKey, wJson, io);
  const rawScale = required(wKey, wJson, 'scale');
  const scale = Array.isArray(rawScale)
    ? Float32Array.from(rawScale, (s, i) => scale32(`${wKey}.scale[${i}]`, s))
    : scale32(`${wKey}.scale`, rawScale);
  const outJson = required('', spec, 'output');
  if (!isObject(outJson)) throw new InputError('output', `expected {"scale": ..., "zeroPoint": ...}, got ${brief(outJson)}`);
  checkKeys('output', outJson, ['scale', 'zeroPoint']);
  let bias: Int32Array | undefined;
  if (spec.bias !== undefined) {
    bias = Array.isArray(spec.bias)
      ? Int32Array.from(spec.bias, (v, i) => int32(`bias[${i}]`, v))
      : int32Vector('bias', readNpyField('bias', spec.bias, io));
  }
  const out = io.resolve('out', required('', spec, 'out'));
  const base = {
    input: {
      scale: scale32('input.scale', required('input', inJson, 'scale')),
      zeroPoint: int32('input.zeroPoint', required('input', inJson, 'zeroPoint')),
    },
    ...(bias ? { bias } : {}),
    output: {
      scale: scale32('output.scale', required('output', outJson, 'scale')),
      zeroPoint: int32('output.zeroPoint', required('output', outJson, 'zeroPoint')),
    },
    activation:
      spec.activation === undefined ? 'NONE' : oneOf('activation', spec.activation, ['NONE', 'RELU', 'RELU6', 'RELU_N1_TO_1'] as const),
    kernelPath:
      spec.kernelPath === undefined ? 'xnnpack' : oneOf('kernelPath', spec.kernelPath, ['xnnpack', 'optimized', 'reference'] as const),
  };
  const weights = {
    data: w.data,
    scale,
    ...(wJson.zeroPoint === undefined ? {} : { zeroPoint: int32(`${wKey}.zeroPoint`, wJson.zeroPoint) }),
  };
  if (op === 'fullyConnected') {
    if (w.shape.length !== 2) throw new InputError('weights.data', `expected [N, K], got shape (${w.shape.join(', ')})`);
    return { op, input, params: { ...base, weights: { ...weights, shape: [w.shape[0], w.shape[1]] } }, out };
  }
  if (w.shape.length !== 4) throw new InputError('filter.data', `expected OHWI [O, KH, KW, C], got shape (${w.shape.join(', ')})`);
  return {
    op,
    input,
    params: {
      ...base,
      filter: { ...weights, shape: [w.shape[0], w.shape[1], w.shape[2], w.shape[3]] },
      padding: oneOf('padding', required('', spec, 'padding'), ['SAME', 'VALID'] as const),
      ...(spec.stride === undefined ? {} : { stride: pair('stride', spec.stride) }),
      ...(spec.dilation === undefined ? {} : { dilation: pair('dilation', spec.dilation) }),
    },
    out,
  };
}
