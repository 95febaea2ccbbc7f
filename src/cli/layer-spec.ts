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
//   {"op": "sequential", ...}: a graph of such layers and elementwise ops (parseSequentialSpec below).
// Scales are JSON numbers rounded to float32, as a .tflite file stores them. Every bad field is an
// InputError naming it; what the library finds (src/layers/) is named in the spec's terms (specField).

import { InputError } from '../errors.ts';
import type { Conv2dParams, FullyConnectedParams, FusedActivation, QuantParams, Tensor } from '../layers/layers.ts';
import { inputField } from '../layers/graph.ts';
import type { SequentialLayer } from '../layers/sequential.ts';
import { checkScale32, shown } from '../layers/validate.ts';
import { brief } from './json.ts';
import { asSpecIo, checkKeys, int32, int32Vector, isObject, oneOf, readNpyField, type ReadFile, required, type SpecIo } from './spec.ts';

export const LAYER_OPS = ['fullyConnected', 'conv2d', 'sequential'] as const;
type LayerOp = (typeof LAYER_OPS)[number];

type LayerSpec =
  | { op: 'fullyConnected'; input: Tensor; params: FullyConnectedParams; out: string }
  | { op: 'conv2d'; input: Tensor; params: Conv2dParams; out: string };

export function isLayerOp(op: unknown): op is LayerOp {
  return op === 'fullyConnected' || op === 'conv2d' || op === 'sequential';
}

const GRAPH_ELEMENTWISE = ['add', 'sub', 'mul'] as const;

/**
 * A graph of layers (src/layers/sequential.ts), each reading earlier outputs or graph inputs by name:
 *   {"op": "sequential",
 *    "input": {"data": "x.npy", "scale": ..., "zeroPoint": ...},          the graph input "input"
 *    "inputs": {"gain": {"data": "g.npy", "scale": ..., "zeroPoint": ...}},  optional: more, by name
 *    "layers": [
 *      {"op": "conv2d", "name": "conv", "filter": {...}, "padding": "SAME", "output": {...}, ...},
 *      {"op": "add", "name": "sum", "inputs": ["conv", "input"], "output": {...}, "activation"?: ...,
 *       "kernelPath"?: "xnnpack" (default) | "builtin"},
 *      {"op": "requantize", "output": {"scale": ..., "zeroPoint": ...}},     TFLite QUANTIZE, 8-bit to 8-bit
 *      {"op": "fullyConnected", "weights": {...}, "bias"?: ..., "output": {...}, ...}],
 *    "out": "y.npy"}
 * A fullyConnected or conv2d layer takes the fields of its single-layer op but "input" and "out"; it reads
 * the previous layer's output, or the value its optional "input" names, as "requantize" does. "add",
 * "sub" and "mul" read the two values "inputs" names, with XNNPACK's arithmetic (TFLite's default
 * delegate) or TFLite's builtin one. "name" is optional (default "layers[i]"). Each layer's input
 * quantization is its producer's output quantization, as in a TFLite graph. Every file is read and
 * every field checked here.
 */
export function parseSequentialSpec(
  spec: Record<string, unknown>,
  baseDir: string,
  readFile: ReadFile | SpecIo,
): { inputs: Record<string, Tensor>; quant: Record<string, QuantParams>; layers: SequentialLayer[]; out: string } {
  const io = asSpecIo(baseDir, readFile);
  checkKeys('', spec, ['op', 'input', 'inputs', 'layers', 'out']);
  const graphInputs: [string, string, unknown][] = [['input', 'input', required('', spec, 'input')]];
  if (spec.inputs !== undefined) {
    if (!isObject(spec.inputs))
      throw new InputError('inputs', `expected {"name": {"data": ..., "scale": ..., "zeroPoint": ...}}, got ${brief(spec.inputs)}`);
    for (const [name, v] of Object.entries(spec.inputs)) {
      if (name === 'input') throw new InputError('inputs.input', 'the graph input "input" is the spec\'s "input"');
      graphInputs.push([name, inputField(name), v]);
    }
  }
  // names are data: no key (not even "__proto__") reaches a prototype
  const inputs: Record<string, Tensor> = Object.create(null);
  const quant: Record<string, QuantParams> = Object.create(null);
  for (const [name, field, v] of graphInputs) {
    if (!isObject(v)) throw new InputError(field, `expected {"data": "x.npy", "scale": ..., "zeroPoint": ...}, got ${brief(v)}`);
    checkKeys(field, v, ['data', 'scale', 'zeroPoint']);
    inputs[name] = tensor(field, v, io);
    quant[name] = quantParams(field, v);
  }
  const layers = required('', spec, 'layers');
  if (!Array.isArray(layers) || layers.length === 0)
    throw new InputError('layers', `expected a non-empty array of layers, got ${brief(layers)}`);
  const parsed = layers.map((l, i): SequentialLayer => {
    const f = `layers[${i}]`;
    if (!isObject(l)) throw new InputError(f, `expected a layer object, got ${brief(l)}`);
    const name = l.name === undefined ? {} : { name: nameOf(`${f}.name`, l.name) };
    if (l.op === 'fullyConnected' || l.op === 'conv2d') {
      const input = l.input === undefined ? {} : { input: nameOf(`${f}.input`, l.input) };
      const { name: _n, input: _i, ...body } = l;
      // Its files are read under the layer's field too, so that an `out` naming one of them says which.
      const layerIo: SpecIo = { resolve: (k, p) => io.resolve(`${f}.${k}`, p), readNpy: (k, full) => io.readNpy(`${f}.${k}`, full) };
      const params = prefixed(f, () => layerParams(body, layerIo, l.op as 'fullyConnected' | 'conv2d', false));
      return { op: l.op, ...name, ...input, params } as SequentialLayer;
    }
    if (l.op === 'requantize') {
      checkKeys(f, l, ['op', 'name', 'input', 'output']);
      const outJson = required(f, l, 'output');
      if (!isObject(outJson)) throw new InputError(`${f}.output`, `expected {"scale": ..., "zeroPoint": ...}, got ${brief(outJson)}`);
      checkKeys(`${f}.output`, outJson, ['scale', 'zeroPoint']);
      const input = l.input === undefined ? {} : { input: nameOf(`${f}.input`, l.input) };
      return { op: 'requantize', ...name, ...input, params: { output: quantParams(`${f}.output`, outJson) } };
    }
    if (!(GRAPH_ELEMENTWISE as readonly unknown[]).includes(l.op)) {
      throw new InputError(`${f}.op`, `expected "fullyConnected", "conv2d", "add", "sub", "mul" or "requantize", got ${brief(l.op)}`);
    }
    checkKeys(f, l, ['op', 'name', 'inputs', 'output', 'activation', 'kernelPath']);
    const ins = required(f, l, 'inputs');
    if (!Array.isArray(ins) || ins.length !== 2) throw new InputError(`${f}.inputs`, `expected two names, got ${brief(ins)}`);
    const outJson = required(f, l, 'output');
    if (!isObject(outJson)) throw new InputError(`${f}.output`, `expected {"scale": ..., "zeroPoint": ...}, got ${brief(outJson)}`);
    checkKeys(`${f}.output`, outJson, ['scale', 'zeroPoint']);
    return {
      op: l.op as (typeof GRAPH_ELEMENTWISE)[number],
      ...name,
      inputs: [nameOf(`${f}.inputs[0]`, ins[0]), nameOf(`${f}.inputs[1]`, ins[1])],
      params: {
        output: quantParams(`${f}.output`, outJson),
        activation: activationOf(`${f}.activation`, l.activation),
        kernelPath: l.kernelPath === undefined ? 'xnnpack' : oneOf(`${f}.kernelPath`, l.kernelPath, ['xnnpack', 'builtin'] as const),
      },
    };
  });
  return { inputs, quant, layers: parsed, out: io.resolve('out', required('', spec, 'out')) };
}

function nameOf(field: string, v: unknown): string {
  if (typeof v !== 'string' || v === '') throw new InputError(field, `expected a name (a non-empty string), got ${brief(v)}`);
  return v;
}

/** Runs fn, naming its fields from the layer (`weights.scale` -> `layers[2].weights.scale`). */
function prefixed<T>(field: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof InputError && !e.field.startsWith(`${field}.`))
      throw new InputError(`${field}.${e.field}`, e.message.slice(e.field.length + 2));
    throw e;
  }
}

const scale32 = checkScale32;

/**
 * A library field (src/layers/) as the spec writes it: no `params.` level (`params.input.scale` ->
 * `input.scale`, `layers[2].params.bias` -> `layers[2].bias`), shapes as the .npy files that carry them
 * (`params.filter.shape` -> `filter.data`), the graph input "input" as the spec's "input", an elementwise
 * layer's operands as its "inputs".
 */
export function specField(field: string): string {
  return field
    .replace(/^(layers\[\d+\]\.)?params\./, '$1')
    .replace(/^inputs\.input(?=\.|$)/, 'input')
    .replace(/^(layers\[\d+\]\.)a(?=\.|$)/, '$1inputs[0]')
    .replace(/^(layers\[\d+\]\.)b(?=\.|$)/, '$1inputs[1]')
    .replace(/^((?:layers\[\d+\]\.)?(?:weights|filter)|input|inputs\.[\w$]+|inputs\[".*"\])\.shape$/, '$1.data');
}

/** Runs fn (the library on a parsed spec), naming its InputErrors' fields in the spec's terms. */
export async function inSpecTerms<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    // The field, and any field the message names in parentheses ("as the weights (params.weights.data)");
    // the library's typed arrays as the spec's JSON arrays ("an Int32Array of 2": a bias given in JSON).
    const message = e.message.slice(e.field.length + 2);
    const spec = message
      .replace(/\(([\w.[\]]+)\)/g, (_, f: string) => `(${specField(f)})`)
      .replace(
        /\ban? (Int32|Float32)Array of (\d+)/g,
        (_, t: string, n: string) => `an array of ${n} ${t === 'Int32' ? 'integers' : 'numbers'}`,
      );
    if (specField(e.field) !== e.field || spec !== message) throw new InputError(specField(e.field), spec);
    throw e;
  }
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
    throw new InputError(field, `expected [h, w] of positive integers, got ${shown(v)}`);
  }
  return [v[0], v[1]];
}

/** A layer op of the spec contract; `spec` is the parsed JSON, `baseDir` the spec file's folder. */
export function parseLayerSpec(spec: Record<string, unknown>, baseDir: string, readFile: ReadFile | SpecIo): LayerSpec {
  const io = asSpecIo(baseDir, readFile);
  const op = spec.op as 'fullyConnected' | 'conv2d';
  const inJson = required('', spec, 'input');
  if (!isObject(inJson)) throw new InputError('input', `expected {"data": "x.npy", "scale": ..., "zeroPoint": ...}, got ${brief(inJson)}`);
  checkKeys('input', inJson, ['data', 'scale', 'zeroPoint']);
  const { input: _i, out: _o, ...body } = spec;
  const params = layerParams(body, io, op, true, spec);
  const input = tensor('input', inJson, io);
  const out = io.resolve('out', required('', spec, 'out'));
  const withInput = { ...params, input: quantParams('input', inJson) };
  return op === 'fullyConnected'
    ? { op, input, params: withInput as FullyConnectedParams, out }
    : { op, input, params: withInput as Conv2dParams, out };
}

function quantParams(field: string, v: Record<string, unknown>): QuantParams {
  return {
    scale: scale32(`${field}.scale`, required(field, v, 'scale')),
    zeroPoint: int32(`${field}.zeroPoint`, required(field, v, 'zeroPoint')),
  };
}

function activationOf(field: string, v: unknown): FusedActivation {
  return v === undefined ? 'NONE' : oneOf(field, v, ['NONE', 'RELU', 'RELU6', 'RELU_N1_TO_1'] as const);
}

/**
 * A FC or conv layer's parameters but its input quantization: the weights or filter, bias, output,
 * activation, kernel path, and a conv's padding, stride and dilation. `single`: the fields of a
 * single-layer op (with "input" and "out", checked by the caller) are allowed.
 */
function layerParams(
  body: Record<string, unknown>,
  io: SpecIo,
  op: 'fullyConnected' | 'conv2d',
  single: boolean,
  whole: Record<string, unknown> = body,
): Omit<FullyConnectedParams, 'input'> | Omit<Conv2dParams, 'input'> {
  const wKey = op === 'conv2d' ? 'filter' : 'weights';
  const common = ['op', wKey, 'bias', 'output', 'activation', 'kernelPath', ...(single ? ['input', 'out'] : [])];
  checkKeys('', whole, op === 'conv2d' ? [...common, 'padding', 'stride', 'dilation'] : common);
  const wJson = required('', body, wKey);
  if (!isObject(wJson)) throw new InputError(wKey, `expected {"data": "w.npy", "scale": ..., "zeroPoint"?: ...}, got ${brief(wJson)}`);
  checkKeys(wKey, wJson, ['data', 'scale', 'zeroPoint']);
  const w = tensor(wKey, wJson, io);
  const rawScale = required(wKey, wJson, 'scale');
  const scale = Array.isArray(rawScale)
    ? Float32Array.from(rawScale, (s, i) => scale32(`${wKey}.scale[${i}]`, s))
    : scale32(`${wKey}.scale`, rawScale);
  const outJson = required('', body, 'output');
  if (!isObject(outJson)) throw new InputError('output', `expected {"scale": ..., "zeroPoint": ...}, got ${brief(outJson)}`);
  checkKeys('output', outJson, ['scale', 'zeroPoint']);
  let bias: Int32Array | undefined;
  if (body.bias !== undefined) {
    bias = Array.isArray(body.bias)
      ? Int32Array.from(body.bias, (v, i) => int32(`bias[${i}]`, v))
      : int32Vector('bias', readNpyField('bias', body.bias, io));
  }
  const base = {
    ...(bias ? { bias } : {}),
    output: quantParams('output', outJson),
    activation: activationOf('activation', body.activation),
    kernelPath:
      body.kernelPath === undefined ? 'xnnpack' : oneOf('kernelPath', body.kernelPath, ['xnnpack', 'optimized', 'reference'] as const),
  };
  const weights = {
    data: w.data,
    scale,
    ...(wJson.zeroPoint === undefined ? {} : { zeroPoint: int32(`${wKey}.zeroPoint`, wJson.zeroPoint) }),
  };
  if (op === 'fullyConnected') {
    if (w.shape.length !== 2) throw new InputError('weights.data', `expected [N, K], got shape (${w.shape.join(', ')})`);
    return { ...base, weights: { ...weights, shape: [w.shape[0], w.shape[1]] } };
  }
  if (w.shape.length !== 4) throw new InputError('filter.data', `expected OHWI [O, KH, KW, C], got shape (${w.shape.join(', ')})`);
  return {
    ...base,
    filter: { ...weights, shape: [w.shape[0], w.shape[1], w.shape[2], w.shape[3]] },
    padding: oneOf('padding', required('', body, 'padding'), ['SAME', 'VALID'] as const),
    ...(body.stride === undefined ? {} : { stride: pair('stride', body.stride) }),
    ...(body.dilation === undefined ? {} : { dilation: pair('dilation', body.dilation) }),
  };
}
