// The graphs of TFLite layers (FULLY_CONNECTED, CONV_2D, ADD, SUB, MUL, QUANTIZE) that ./sequential.ts
// runs, planned and checked: names resolved, quantizations carried from producer to consumer, every
// layer's parameters and shapes checked, each GEMM layer's stages derived (pack -> gemm -> output), all
// before any backend or device is asked for. One check for every backend: runLayers, Sequential and the
// CLI start from the same plan, and checkLayers runs it alone. Names are data: graph inputs are read
// from a Map or from an object's own keys ("data", "shape" and "__proto__" included).

import { InputError } from '../errors.ts';
import type { PatchGeometry } from '../pack/patches.ts';
import {
  ELEMENTWISE_KERNEL_PATHS,
  type ElementwiseKernelPath,
  type ElementwiseProblem,
  MAX_RANK,
  REQUANTIZE,
} from '../problem/elementwise.ts';
import { broadcastShapes, prepareElementwise, xnnpackTakesElementwise } from '../problem/elementwise-plan.ts';
import { checkKnownKeys, everyItem, keyField } from '../problem/check.ts';
import { brief } from '../problem/echo.ts';
import { activationRange, type FusedActivation, type QuantParams } from './derive.ts';
import {
  convShape,
  dtypeOf,
  fcRows,
  layerGemm,
  type Conv2dParams,
  type FullyConnectedParams,
  type LayerGemm,
  checkLayerParamKeys,
  checkTensorKeys,
  type Tensor,
} from './layers.ts';
import { checkQuant, shown } from './validate.ts';
import { fcOutShape } from './tflite-params.ts';

/** A layer's parameters with its input quantization optional: taken from the producer when left out. */
type InputOptional<P> = Omit<P, 'input'> & { input?: QuantParams | undefined };

/**
 * An elementwise layer's quantization: a and b (optional, as the producers' outputs), the output, the
 * fused activation, and whose arithmetic: 'xnnpack' (default), XNNPACK's, which TFLite's default
 * interpreter delegates quantized ADD/SUB/MUL to (with XNNPACK's activation clamp; where the delegate
 * would not take the node for its scales, TFLite's builtin kernel and clamp, as the interpreter does),
 * or 'builtin', TFLite's builtin kernels' (src/problem/elementwise.ts).
 */
export interface ElementwiseLayerParams {
  a?: QuantParams | undefined;
  b?: QuantParams | undefined;
  output: QuantParams;
  activation?: FusedActivation | undefined;
  kernelPath?: ElementwiseKernelPath | undefined;
}

/**
 * One layer of a graph. `name` (default `layers[i]`) is what later layers read it by; `input`/`inputs` name
 * an earlier layer or a graph input (default: the previous layer's output, and for the first layer the
 * graph input 'input').
 */
export type SequentialLayer =
  | { op: 'fullyConnected'; name?: string | undefined; input?: string | undefined; params: InputOptional<FullyConnectedParams> }
  | { op: 'conv2d'; name?: string | undefined; input?: string | undefined; params: InputOptional<Conv2dParams> }
  | { op: 'add' | 'sub' | 'mul'; name?: string | undefined; inputs: [string, string]; params: ElementwiseLayerParams }
  | { op: 'requantize'; name?: string | undefined; input?: string | undefined; params: RequantizeLayerParams };

/**
 * TFLite's QUANTIZE of an 8-bit tensor to a new scale and zero point (same dtype): zeroPoint' +
 * MultiplyByQuantizedMultiplier(q - zeroPoint, QuantizeMultiplier(scale / scale')), clamped to the type,
 * the float32 scales divided in double (quantize.cc). MUL's builtin arithmetic with a second operand of
 * real value 1 (scale 1, zero point 0) runs it, with that multiplier (REQUANTIZE).
 */
export interface RequantizeLayerParams {
  input?: QuantParams | undefined;
  output: QuantParams;
}

/** A FULLY_CONNECTED layer of a graph (the first form Sequential took). */
export type SequentialFullyConnected = Extract<SequentialLayer, { op: 'fullyConnected' }>;

export interface SequentialOptions {
  /** The quantization of each graph input, by name (else taken from the layers that read it). */
  inputs?: Record<string, QuantParams> | Map<string, QuantParams> | undefined;
}

/** The graph's inputs: one tensor (the graph input 'input'), or tensors by name (an object's own keys, or a Map). */
export type SequentialInputs = Tensor | Record<string, Tensor> | Map<string, Tensor>;

/** A layer resolved: what it reads (by name, with their quantization), its GEMM for FC and conv. */
export interface Node {
  layer: SequentialLayer;
  field: string;
  name: string;
  inputs: string[];
  quant: QuantParams[];
  output: QuantParams;
  gemm?: LayerGemm | undefined;
  /** The layer's parameters with every quantization filled in (what fullyConnected/conv2d take). */
  params?: FullyConnectedParams | Conv2dParams | undefined;
  /** The graph runs on TFLite's builtin kernels (XNNPACK refused one of its layers): no node on the delegate. */
  builtin?: boolean | undefined;
}

/** A graph checked once: its nodes, the graph inputs it reads, its activations' dtype (from the weights). */
export interface Graph {
  nodes: Node[];
  inputNames: string[];
  dtype: 'uint8' | 'int8' | null;
  /** Index of the last layer that reads each value. */
  lastUse: Map<string, number>;
  /** Where each graph input's quantization was given: `inputs.NAME` or a layer's `params.input`, `.a`, `.b`. */
  inputQuant: Map<string, { quant: QuantParams; field: string }>;
}

const ELEMENTWISE = ['add', 'sub', 'mul', 'requantize'] as const;

/** The keys a layer and its params may have, by op (SequentialLayer's types): another is a misspelling. */
const LAYER_KEYS: Record<string, readonly string[]> = {
  fullyConnected: ['op', 'name', 'input', 'params'],
  conv2d: ['op', 'name', 'input', 'params'],
  add: ['op', 'name', 'inputs', 'params'],
  sub: ['op', 'name', 'inputs', 'params'],
  mul: ['op', 'name', 'inputs', 'params'],
  requantize: ['op', 'name', 'input', 'params'],
};
const ELEMENTWISE_PARAMS = ['a', 'b', 'output', 'activation', 'kernelPath'];
/** The elementwise layers' params keys (the GEMM layers': ./layers.ts checkLayerParamKeys). */
const PARAM_KEYS: Record<string, readonly string[]> = {
  add: ELEMENTWISE_PARAMS,
  sub: ELEMENTWISE_PARAMS,
  mul: ELEMENTWISE_PARAMS,
  requantize: ['input', 'output'],
};

/** A quantization given as {scale, zeroPoint} of numbers (its values are checked where the dtype is known). */
function checkQuantShape(field: string, q: unknown): QuantParams {
  if (!q || typeof q !== 'object') throw new InputError(field, `expected {scale, zeroPoint}, got ${brief(q)}`);
  for (const key of ['scale', 'zeroPoint'] as const) {
    const v = (q as Record<string, unknown>)[key];
    if (typeof v !== 'number') throw new InputError(`${field}.${key}`, `expected a number, got ${brief(v)}`);
  }
  return q as QuantParams;
}
const sameQuant = (a: QuantParams, b: QuantParams) => Math.fround(a.scale) === Math.fround(b.scale) && a.zeroPoint === b.zeroPoint;
/** Entries of a Map, or of an object's own enumerable keys (a key "__proto__" is data). */
const entriesOf = <T>(v: Map<string, T> | Record<string, T>): [string, T][] => (v instanceof Map ? [...v] : Object.entries(v));

/** The activations' dtype: the first GEMM layer's weights' (as in TFLite's int8 and legacy uint8 models), else null. */
function weightsDtype(layers: SequentialLayer[]): 'uint8' | 'int8' | null {
  for (const l of layers) {
    const w = l?.op === 'conv2d' ? l.params?.filter : l?.op === 'fullyConnected' ? l.params?.weights : undefined;
    if (w?.data instanceof Int8Array) return 'int8';
    if (w?.data instanceof Uint8Array) return 'uint8';
  }
  return null;
}

export function planGraph(layers: SequentialLayer[], opts: SequentialOptions = {}): Graph {
  if (!opts || typeof opts !== 'object' || Array.isArray(opts)) throw new InputError('options', `expected an object, got ${brief(opts)}`);
  checkKnownKeys('', opts, ['inputs']); // a misspelt `input` would be ignored
  if (!Array.isArray(layers) || layers.length === 0) throw new InputError('layers', 'expected at least one layer');
  // A hole ([a, , b]) is a missing layer, named as any other (forEach would skip it).
  layers = Array.from(layers);
  if (opts.inputs !== undefined && (!opts.inputs || typeof opts.inputs !== 'object'))
    throw new InputError('inputs', `expected {name: {scale, zeroPoint}} or a Map, got ${brief(opts.inputs)}`);
  const produced = new Map<string, QuantParams>(); // layer name -> output quantization
  const inputQuant = new Map(
    entriesOf(opts.inputs ?? {}).map(([k, q]) => {
      const field = inputField(k);
      return [k, { quant: checkQuantShape(field, q), field }];
    }),
  );
  const declared = new Set(inputQuant.keys());
  const used = new Set<string>();
  const nodes: Node[] = [];
  const lastUse = new Map<string, number>();
  const dtype = weightsDtype(layers);
  // the GEMM layers on the delegate, and whether XNNPACK refuses one of them (then none runs on it)
  const onXnnpack: { node: Node; derive: (p: FullyConnectedParams & Conv2dParams) => LayerGemm }[] = [];
  let declined = false;
  // a graph input's quantization is checked where it was given, before a layer that reads it
  const checkInput = (ref: string) => {
    const q = inputQuant.get(ref);
    if (q && dtype) checkQuant(q.field, q.quant, dtype);
  };
  for (const [i, layer] of layers.entries()) {
    const field = `layers[${i}]`;
    if (!layer || typeof layer !== 'object') throw new InputError(field, `expected a layer object, got ${brief(layer)}`);
    const { op } = layer;
    const gemmLayer = op === 'fullyConnected' || op === 'conv2d';
    if (!gemmLayer && !(ELEMENTWISE as readonly string[]).includes(op)) {
      throw new InputError(`${field}.op`, `expected "fullyConnected", "conv2d", "add", "sub", "mul" or "requantize", got ${brief(op)}`);
    }
    const name = layer.name === undefined ? field : layer.name; // null is not absent
    if (typeof name !== 'string' || name === '') throw new InputError(`${field}.name`, `expected a non-empty string, got ${brief(name)}`);
    if (produced.has(name) || declared.has(name) || used.has(name)) {
      // A default name taken by an earlier layer's own name: that name is the one to change.
      const k = layer.name === undefined ? layers.slice(0, i).findIndex((l) => l?.name === name) : -1;
      if (k >= 0) throw new InputError(`layers[${k}].name`, `"${name}" is the default name of layers[${i}]`);
      // the same for a graph input's name
      const input = layer.name === undefined ? inputQuant.get(name) : undefined;
      if (input) throw new InputError(input.field, `"${name}" is the default name of layers[${i}]`);
      throw new InputError(`${field}.name`, `"${name}" names an earlier layer or a graph input already`);
    }
    checkKnownKeys(field, layer, LAYER_KEYS[op]);
    const params = layer.params;
    if (!params || typeof params !== 'object') throw new InputError(`${field}.params`, 'missing');
    if (op === 'fullyConnected' || op === 'conv2d') checkLayerParamKeys(`${field}.params`, op, params);
    else {
      checkKnownKeys(`${field}.params`, params, PARAM_KEYS[op]);
      // their quantizations are rebuilt from scale and zeroPoint: another key would be dropped unread
      for (const q of op === 'requantize' ? ['input', 'output'] : ['a', 'b', 'output']) {
        const v = (params as Record<string, unknown>)[q];
        if (v && typeof v === 'object') checkKnownKeys(`${field}.params.${q}`, v, ['scale', 'zeroPoint']);
      }
    }
    let refs: string[];
    let given: (QuantParams | undefined)[];
    let refFields: string[];
    const single = gemmLayer || op === 'requantize';
    if (single) {
      const written = 'input' in layer && layer.input !== undefined;
      const ref = written ? layer.input! : i === 0 ? 'input' : nodes[i - 1].name;
      if (!written && i === 0) {
        // the first layer reads the graph input 'input' by default: a layer named so is blamed on its name
        const k = layers.findIndex((l) => l?.name === ref);
        if (k >= 0) throw new InputError(`layers[${k}].name`, `"${ref}" is the graph input that layers[0] reads by default`);
      }
      refs = [ref];
      given = [(params as { input?: QuantParams }).input];
      refFields = [`${field}.input`];
    } else {
      const ins = (layer as { inputs?: unknown }).inputs;
      if (!Array.isArray(ins) || ins.length !== 2) throw new InputError(`${field}.inputs`, `expected two names, got ${brief(ins)}`);
      refs = ins;
      const p = params as ElementwiseLayerParams;
      given = [p.a, p.b];
      refFields = [`${field}.inputs[0]`, `${field}.inputs[1]`];
    }
    const quant = Array.from(refs, (ref, j) => {
      const qField = single ? `${field}.params.input` : `${field}.params.${'ab'[j]}`;
      if (typeof ref !== 'string' || ref === '') throw new InputError(refFields[j], `expected a name, got ${brief(ref)}`);
      // A name an earlier layer has, or a graph input (declared, read before, or given its quantization
      // here), is theirs: a later layer of that name is the duplicate, named there.
      const input = declared.has(ref) || used.has(ref) || given[j] !== undefined;
      if (!produced.has(ref) && !input && layers.slice(i).some((l, k) => (l?.name ?? `layers[${i + k}]`) === ref)) {
        throw new InputError(refFields[j], `"${ref}" is this or a later layer: a layer reads earlier layers only`);
      }
      lastUse.set(ref, i);
      const g = given[j];
      // Given (not undefined), a quantization is {scale, zeroPoint} of numbers, before it is compared or declared.
      if (g !== undefined) checkQuantShape(qField, g);
      const known = produced.get(ref) ?? inputQuant.get(ref)?.quant;
      if (!produced.has(ref)) {
        used.add(ref);
        if (known === undefined) {
          if (!g) throw new InputError(qField, `missing: the quantization of graph input "${ref}" is declared nowhere`);
          inputQuant.set(ref, { quant: g, field: qField });
          checkInput(ref);
          return g;
        }
        checkInput(ref);
      }
      if (g && !sameQuant(g, known!)) {
        const what = produced.has(ref) ? `layer "${ref}"'s output` : `graph input "${ref}"`;
        throw new InputError(qField, `expected ${what} quantization (scale ${known!.scale}, zero point ${known!.zeroPoint})`);
      }
      return known!;
    });
    const node: Node = { layer, field, name, inputs: refs, quant, output: params.output };
    if (op === 'fullyConnected' || op === 'conv2d') {
      const wKey = op === 'conv2d' ? 'filter' : 'weights';
      const w = op === 'conv2d' ? (params as Conv2dParams).filter : (params as FullyConnectedParams).weights;
      if (!w || typeof w !== 'object') throw new InputError(`${field}.params.${wKey}`, `expected {data, shape, scale}, got ${brief(w)}`);
      const wDtype = dtypeOf(w.data, `${field}.params.${wKey}.data`);
      if (dtype && wDtype !== dtype)
        throw new InputError(`${field}.params.${wKey}.data`, `expected ${dtype} weights, as the earlier layers'`);
      const full = { ...params, input: quant[0] } as FullyConnectedParams & Conv2dParams;
      node.params = full;
      const shape: readonly number[] | undefined = w.shape;
      if (!shape || !Array.isArray(shape) || shape.length !== (op === 'conv2d' ? 4 : 2)) {
        throw new InputError(`${field}.params.${wKey}.shape`, op === 'conv2d' ? 'expected OHWI [O, KH, KW, C]' : 'expected [N, K]');
      }
      if (!everyItem(shape, (d) => Number.isInteger(d) && (d as number) >= 1))
        throw new InputError(`${field}.params.${wKey}.shape`, `expected integers >= 1, got ${shown(shape)}`);
      const N = shape[0];
      const K = op === 'conv2d' ? shape[1] * shape[2] * shape[3] : shape[1];
      const weights = w;
      const derive = (q: typeof full) =>
        prefixed(field, () => layerGemm(op === 'conv2d' ? 'CONV_2D' : 'FULLY_CONNECTED', wDtype, K, weights, `params.${wKey}`, N, q));
      node.gemm = derive(full);
      if ((full.kernelPath ?? 'xnnpack') === 'xnnpack') {
        onXnnpack.push({ node, derive });
        declined ||= node.gemm.path !== 'xnnpack';
      }
    } else if (!params.output || typeof params.output !== 'object') {
      throw new InputError(`${field}.params.output`, 'expected {scale, zeroPoint}');
    } else if (dtype) checkElementwiseNode(node, dtype);
    produced.set(name, params.output);
    nodes.push(node);
  }
  if (declined) {
    // XNNPACK refuses a GEMM layer's operator: the delegate fails and TFLite restores its original
    // execution plan, so the builtin kernels run every layer of the graph (LayerGemm.path, ./derive.ts xnnpackTakesGemm).
    for (const { node, derive } of onXnnpack) {
      node.params = { ...node.params!, kernelPath: 'optimized' };
      node.gemm = derive(node.params as FullyConnectedParams & Conv2dParams);
    }
    for (const n of nodes) {
      n.builtin = true;
      if (!n.gemm && dtype) checkElementwiseNode(n, dtype);
    }
  }
  return { nodes, inputNames: [...used], dtype, lastUse, inputQuant };
}

/** Runs fn, naming a layer's fields from the graph (`params.bias` -> `layers[2].params.bias`). */
export function prefixed<T>(field: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof InputError && !e.field.startsWith('layers['))
      throw new InputError(`${field}.${e.field}`, e.message.slice(e.field.length + 2));
    throw e;
  }
}

/**
 * A graph input's field: `inputs.x`, or `inputs["x.shape"]` where the name is not an identifier, so that
 * no name reads as another field (an input "x.shape" is not input x's shape); the name whole, so that
 * two names are two fields.
 */
export const inputField = (name: string): string => keyField('inputs', name);

/** The graph's input tensors by name, checked against what the graph reads; the activations' dtype. */
export function namedInputs(g: Graph, inputs: SequentialInputs): NamedInputs {
  if (!inputs || typeof inputs !== 'object') throw new InputError('input', 'expected a Tensor or tensors by name');
  // one tensor has typed-array data; tensors by name have tensors, even under the names "data" and "shape"
  const one = !(inputs instanceof Map) && (ArrayBuffer.isView((inputs as Tensor).data) || Array.isArray((inputs as Tensor).shape));
  const map = new Map<string, Tensor>(one ? [['input', inputs as Tensor]] : entriesOf(inputs as Record<string, Tensor>));
  let dtype = g.dtype;
  let first = '';
  for (const name of g.inputNames) {
    const t = map.get(name);
    const field = name === 'input' && one ? 'input' : inputField(name);
    if (!t || typeof t !== 'object') throw new InputError(field, `missing: the graph reads "${name}"`);
    checkTensorKeys(field, t);
    const own = dtypeOf(t.data, `${field}.data`);
    if (dtype && own !== dtype) {
      const why = g.dtype ? "as the layers' weights" : `as graph input "${first}"`;
      throw new InputError(`${field}.data`, `expected ${dtype} activations, ${why}`);
    }
    dtype ??= own;
    first ||= name;
    if (!Array.isArray(t.shape) || !everyItem(t.shape, (d) => Number.isInteger(d) && (d as number) >= 0)) {
      throw new InputError(`${field}.shape`, `expected a list of sizes, got ${brief(t.shape)}`);
    }
    if (t.shape.reduce((a, b) => a * b, 1) !== t.data.length)
      throw new InputError(`${field}.shape`, `[${t.shape}] does not hold ${t.data.length} values`);
  }
  for (const name of map.keys()) if (!g.inputNames.includes(name)) throw new InputError(inputField(name), 'no layer reads this input');
  return { tensors: map, dtype: dtype!, fieldOf: (name) => (name === 'input' && one ? 'input' : inputField(name)) };
}

/** The graph inputs by name, the activations' dtype, and the field each input's tensor was given as. */
export interface NamedInputs {
  tensors: Map<string, Tensor>;
  dtype: 'uint8' | 'int8';
  fieldOf: (name: string) => string;
}

/** What each layer computes for these input shapes (its output shape; conv: its patches), checked before anything runs. */
export interface Step {
  outShape: number[];
  conv?: { geometry: PatchGeometry; M: number; K: number };
}

/**
 * Every layer's shapes for these inputs; in a graph of no GEMM layer (whose dtype the inputs give), the
 * quantizations that planGraph could not check without a dtype.
 */
export function inferShapes(g: Graph, { tensors: inputs, dtype, fieldOf }: NamedInputs): Step[] {
  if (!g.dtype) {
    for (const q of g.inputQuant.values()) checkQuant(q.field, q.quant, dtype);
    for (const n of g.nodes) if (!n.gemm) checkElementwiseNode(n, dtype);
  }
  const shapes = new Map<string, readonly number[]>([...inputs].map(([k, t]) => [k, t.shape]));
  return g.nodes.map((n) => {
    const ins = n.inputs.map((r) => shapes.get(r)!);
    // An elementwise operand has at most MAX_RANK dimensions: named where its shape came from.
    if (!n.gemm)
      ins.forEach((shape, j) => {
        if (shape.length <= MAX_RANK) return;
        const ref = n.inputs[j];
        const field = inputs.has(ref) ? `${fieldOf(ref)}.shape` : `${n.field}.inputs[${j}]`;
        throw new InputError(
          field,
          `${n.layer.op} takes operands of at most ${MAX_RANK} dimensions; "${ref}" has shape (${shape.join(', ')})`,
        );
      });
    const step: Step = shapeFields(n, inputs.has(n.inputs[0]) ? fieldOf(n.inputs[0]) : null, () => {
      const { op } = n.layer;
      if (op === 'fullyConnected') {
        const p = n.params as FullyConnectedParams;
        const [N, K] = p.weights.shape;
        return { outShape: fcOutShape(ins[0], fcRows(ins[0], sizeOf(ins[0]), K), K, N, p.keepNumDims) };
      }
      if (op === 'conv2d') {
        const c = convShape(ins[0], n.params as Conv2dParams);
        return { outShape: c.outShape, conv: c };
      }
      if (op === 'requantize') return { outShape: [...ins[0]] };
      return { outShape: broadcastShapes([...ins[0]], [...ins[1]], 'inputs') };
    });
    shapes.set(n.name, step.outShape);
    return step;
  });
}

/**
 * Runs fn (a layer's shapes), naming its fields from the graph: the layer's own as `layers[i].params...`;
 * its input's shape as the graph input's (`input.shape`, `inputs.x.shape`) where it reads one, else (an
 * earlier layer's output, whose shape is valid) as the weights' or filter's that do not fit it.
 */
function shapeFields<T>(n: Node, readsField: string | null, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    // The layer's input tensor ('input', 'input.shape'...), not its list of inputs ('inputs': broadcasting).
    if (!(e instanceof InputError) || !/^input($|[.[])/.test(e.field))
      return prefixed(n.field, () => {
        throw e;
      });
    const message = e.message.slice(e.field.length + 2);
    if (readsField) throw new InputError(`${readsField}${e.field.slice('input'.length)}`, message);
    throw new InputError(
      `${n.field}.params.${n.layer.op === 'conv2d' ? 'filter' : 'weights'}.shape`,
      `${message} (the output of the layer it reads)`,
    );
  }
}

export const sizeOf = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** An elementwise or requantize layer's quantization, activation and kernel path for `dtype`, on scalar stand-ins. */
function checkElementwiseNode(n: Node, dtype: 'uint8' | 'int8'): void {
  checkQuant(`${n.field}.params.output`, n.output, dtype);
  const one = { data: dtype === 'int8' ? new Int8Array(1) : new Uint8Array(1), shape: [] };
  const problem = elementwiseProblem(n, dtype, [one, one]);
  prefixed(`${n.field}.params`, () => prepareElementwise(problem));
}

/**
 * The elementwise problem of an add/sub/mul/requantize layer over `ins`: add/sub/mul on the layer's kernel
 * path (XNNPACK's arithmetic and clamp where the delegate takes the node, else the builtin kernels'); a
 * requantize is the builtin MUL by the scalar 1 of scale 1 and zero point 0.
 */
export function elementwiseProblem(n: Node, dtype: 'uint8' | 'int8', ins: Tensor[]): ElementwiseProblem {
  const p = n.layer.params as ElementwiseLayerParams;
  const tensor = (j: number) => ({ data: ins[j].data, shape: ins[j].shape, scale: n.quant[j].scale, zeroPoint: n.quant[j].zeroPoint });
  if (n.layer.op === 'requantize') {
    // TFLite's builtin QUANTIZE: no fused activation, the type's whole range
    const [min, max] = activationRange('NONE', p.output, dtype);
    const one = { data: dtype === 'int8' ? Int8Array.of(1) : Uint8Array.of(1), shape: [], scale: 1, zeroPoint: 0 };
    const mul: ElementwiseProblem = { op: 'mul', a: tensor(0), b: one, output: { ...p.output, min, max }, kernelPath: 'builtin' };
    return Object.assign(mul, { [REQUANTIZE]: true as const });
  }
  const op = n.layer.op as 'add' | 'sub' | 'mul';
  const asked = p.kernelPath === undefined ? 'xnnpack' : p.kernelPath; // null is not absent
  if (!ELEMENTWISE_KERNEL_PATHS.includes(asked))
    throw new InputError(`${n.field}.params.kernelPath`, `expected one of ${ELEMENTWISE_KERNEL_PATHS.join(', ')}, got ${brief(asked)}`);
  // The delegate leaves a node whose scales XNNPACK cannot take to the builtin kernel, clamp included.
  const xnnpack = asked === 'xnnpack' && !n.builtin && xnnpackTakesElementwise(op, n.quant[0].scale, n.quant[1].scale, p.output?.scale);
  const path = xnnpack ? 'xnnpack' : 'optimized';
  const [min, max] = prefixed(`${n.field}.params`, () =>
    activationRange(p.activation === undefined ? 'NONE' : p.activation, p.output, dtype, path),
  );
  const output = { scale: p.output.scale, zeroPoint: p.output.zeroPoint, min, max };
  return { op, a: tensor(0), b: tensor(1), output, kernelPath: xnnpack ? 'xnnpack' : 'builtin' };
}

/**
 * Checks a graph for these inputs without running it: names, quantizations, dtypes and every layer's
 * parameters and shapes (what Sequential.create and run, and runLayers, check first). The CLI calls it
 * before it acquires a device.
 */
export function checkLayers(layers: SequentialLayer[], inputs: SequentialInputs, opts: SequentialOptions = {}): void {
  const g = planGraph(layers, opts);
  inferShapes(g, namedInputs(g, inputs));
}
