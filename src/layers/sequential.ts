// A small graph of TFLite layers (FULLY_CONNECTED, CONV_2D, and the elementwise ADD, SUB and MUL), each
// consuming earlier outputs or the graph's inputs by name, and two ways to run it:
// - Sequential, on one GpuContext (pack -> gemm -> output, layer after layer): every layer's weights are
//   prepacked once, when the Sequential is made; a run uploads the inputs once, keeps every intermediate
//   tensor on the GPU (a GEMM's dst feeds the next GEMM as its lhs, a convolution's patches are packed
//   straight from it, an elementwise op reads and writes GPU buffers) and reads back the last output only;
// - runLayers, layer by layer through fullyConnected(), conv2d() and elementwise() on any backend, which
//   is also what Sequential is checked against.
// Each GEMM layer's requantization is derived by ./derive.ts for its kernel path, as in fullyConnected()
// and conv2d(). Quantization flows as in a TFLite graph: a layer's input quantization is its producer's
// output quantization (given again on the layer, it must agree), and a graph input's is declared in
// `inputs` or on the layers that read it. The FC reference path requantizes on the host in float64, so a
// Sequential refuses it (runLayers runs it). Shapes are checked for the whole graph before anything runs.

import { elementwise, type Backend } from '../api.ts';
import { InputError, LimitExceededError } from '../errors.ts';
import { elementwiseBetweenBuffers } from '../elementwise/gpu.ts';
import type { PatchGeometry } from '../pack/patches.ts';
import type { GpuContext, GpuGemmProblem, GpuMatrix, GpuOperandInput, PackedOperand } from '../scheduler/context.ts';
import {
  broadcastShapes,
  ELEMENTWISE_KERNEL_PATHS,
  prepareElementwise,
  xnnpackTakesElementwise,
  type ElementwiseKernelPath,
  type ElementwiseProblem,
} from '../spec/elementwise.ts';
import { brief } from '../spec/echo.ts';
import { activationRange, type FusedActivation, type QuantParams } from './derive.ts';
import { fcOutShape } from './tflite-params.ts';
import {
  conv2d,
  convShape,
  dtypeOf,
  fcRows,
  fullyConnected,
  im2col,
  layerGemm,
  type Conv2dParams,
  type FullyConnectedParams,
  type LayerGemm,
  type Tensor,
} from './layers.ts';

/** A layer's parameters with its input quantization optional: taken from the producer when left out. */
type InputOptional<P> = Omit<P, 'input'> & { input?: QuantParams };

/**
 * An elementwise layer's quantization: a and b (optional, as the producers' outputs), the output, the
 * fused activation, and whose arithmetic: 'xnnpack' (default), XNNPACK's, which TFLite's default
 * interpreter delegates quantized ADD/SUB/MUL to (with XNNPACK's activation clamp; where the delegate
 * would not take the node for its scales, TFLite's builtin kernel and clamp, as the interpreter does),
 * or 'builtin', TFLite's builtin kernels' (src/spec/elementwise.ts).
 */
export interface ElementwiseLayerParams {
  a?: QuantParams;
  b?: QuantParams;
  output: QuantParams;
  activation?: FusedActivation;
  kernelPath?: ElementwiseKernelPath;
}

/**
 * One layer of a graph. `name` (default `layers[i]`) is what later layers read it by; `input`/`inputs` name
 * an earlier layer or a graph input (default: the previous layer's output, and for the first layer the
 * graph input 'input').
 */
export type SequentialLayer =
  | { op: 'fullyConnected'; name?: string; input?: string; params: InputOptional<FullyConnectedParams> }
  | { op: 'conv2d'; name?: string; input?: string; params: InputOptional<Conv2dParams> }
  | { op: 'add' | 'sub' | 'mul'; name?: string; inputs: [string, string]; params: ElementwiseLayerParams }
  | { op: 'requantize'; name?: string; input?: string; params: RequantizeLayerParams };

/**
 * TFLite's QUANTIZE of an 8-bit tensor to a new scale and zero point (same dtype): zeroPoint' +
 * MultiplyByQuantizedMultiplier(q - zeroPoint, QuantizeMultiplier(scale / scale')), clamped to the type.
 * That is MUL's arithmetic with a second operand of real value 1 (scale 1, zero point 0), which runs it.
 */
export interface RequantizeLayerParams {
  input?: QuantParams;
  output: QuantParams;
}

/** A FULLY_CONNECTED layer of a graph (the first form Sequential took). */
export type SequentialFullyConnected = Extract<SequentialLayer, { op: 'fullyConnected' }>;

export interface SequentialOptions {
  /** The quantization of each graph input, by name (else taken from the layers that read it). */
  inputs?: Record<string, QuantParams>;
}

/** The graph's inputs: one tensor (the graph input 'input'), or tensors by name. */
export type SequentialInputs = Tensor | Record<string, Tensor>;

/** A layer resolved: what it reads (by name, with their quantization), its GEMM for FC and conv. */
interface Node {
  layer: SequentialLayer;
  field: string;
  name: string;
  inputs: string[];
  quant: QuantParams[];
  output: QuantParams;
  gemm?: LayerGemm;
  /** The layer's parameters with every quantization filled in (what fullyConnected/conv2d take). */
  params?: FullyConnectedParams | Conv2dParams;
}

/** A graph checked once: its nodes, the graph inputs it reads, its activations' dtype (from the weights). */
interface Graph {
  nodes: Node[];
  inputNames: string[];
  dtype: 'uint8' | 'int8' | null;
  /** Index of the last layer that reads each value. */
  lastUse: Map<string, number>;
}

const ELEMENTWISE = ['add', 'sub', 'mul', 'requantize'] as const;
const sameQuant = (a: QuantParams, b: QuantParams) => Math.fround(a.scale) === Math.fround(b.scale) && a.zeroPoint === b.zeroPoint;

function planGraph(layers: SequentialLayer[], opts: SequentialOptions = {}): Graph {
  if (!Array.isArray(layers) || layers.length === 0) throw new InputError('layers', 'expected at least one layer');
  const produced = new Map<string, QuantParams>(); // layer name -> output quantization
  const graphInputs = new Map<string, QuantParams | undefined>(Object.entries(opts.inputs ?? {}));
  const declared = new Set(graphInputs.keys());
  const used = new Set<string>();
  const nodes: Node[] = [];
  const lastUse = new Map<string, number>();
  let dtype: 'uint8' | 'int8' | null = null;
  layers.forEach((layer, i) => {
    const field = `layers[${i}]`;
    if (!layer || typeof layer !== 'object') throw new InputError(field, `expected a layer object, got ${brief(layer)}`);
    const { op } = layer;
    const gemmLayer = op === 'fullyConnected' || op === 'conv2d';
    if (!gemmLayer && !(ELEMENTWISE as readonly string[]).includes(op)) {
      throw new InputError(`${field}.op`, `expected "fullyConnected", "conv2d", "add", "sub", "mul" or "requantize", got ${brief(op)}`);
    }
    const name = layer.name ?? field;
    if (typeof name !== 'string' || name === '') throw new InputError(`${field}.name`, `expected a non-empty string, got ${brief(name)}`);
    if (produced.has(name) || declared.has(name) || used.has(name)) {
      throw new InputError(`${field}.name`, `"${name}" names an earlier layer or a graph input already`);
    }
    const params = layer.params;
    if (!params || typeof params !== 'object') throw new InputError(`${field}.params`, 'missing');
    let refs: string[];
    let given: (QuantParams | undefined)[];
    let refFields: string[];
    const single = gemmLayer || op === 'requantize';
    if (single) {
      const ref = 'input' in layer && layer.input !== undefined ? layer.input : i === 0 ? 'input' : nodes[i - 1].name;
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
    const quant = refs.map((ref, j) => {
      const qField = single ? `${field}.params.input` : `${field}.params.${'ab'[j]}`;
      if (typeof ref !== 'string' || ref === '') throw new InputError(refFields[j], `expected a name, got ${brief(ref)}`);
      if (layers.slice(i).some((l, k) => (l?.name ?? `layers[${i + k}]`) === ref)) {
        throw new InputError(refFields[j], `"${ref}" is this or a later layer: a layer reads earlier layers only`);
      }
      lastUse.set(ref, i);
      const g = given[j];
      const known = produced.get(ref) ?? graphInputs.get(ref);
      if (!produced.has(ref)) {
        used.add(ref);
        if (known === undefined) {
          if (!g) throw new InputError(qField, `missing: the quantization of graph input "${ref}" is declared nowhere`);
          graphInputs.set(ref, g);
          return g;
        }
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
      const wDtype = dtypeOf(w?.data, `${field}.params.${wKey}.data`);
      if (dtype && wDtype !== dtype)
        throw new InputError(`${field}.params.${wKey}.data`, `expected ${dtype} weights, as the earlier layers'`);
      dtype = wDtype; // activations take the weights' dtype, as in TFLite's int8 and legacy uint8 models
      const full = { ...params, input: quant[0] } as FullyConnectedParams & Conv2dParams;
      node.params = full;
      const shape: readonly number[] | undefined = w?.shape;
      if (!shape || !Array.isArray(shape) || shape.length !== (op === 'conv2d' ? 4 : 2)) {
        throw new InputError(`${field}.params.${wKey}.shape`, op === 'conv2d' ? 'expected OHWI [O, KH, KW, C]' : 'expected [N, K]');
      }
      const N = shape[0];
      const K = op === 'conv2d' ? shape[1] * shape[2] * shape[3] : shape[1];
      const weights = w!;
      node.gemm = prefixed(field, () =>
        layerGemm(op === 'conv2d' ? 'CONV_2D' : 'FULLY_CONNECTED', wDtype, K, weights, `params.${wKey}`, N, full),
      );
    } else if (!params.output || typeof params.output !== 'object') {
      throw new InputError(`${field}.params.output`, 'expected {scale, zeroPoint}');
    }
    produced.set(name, params.output);
    nodes.push(node);
  });
  return { nodes, inputNames: [...used], dtype, lastUse };
}

/** Runs fn, naming a layer's fields from the graph (`params.bias` -> `layers[2].params.bias`). */
function prefixed<T>(field: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof InputError && !e.field.startsWith('layers['))
      throw new InputError(`${field}.${e.field}`, e.message.slice(e.field.length + 2));
    throw e;
  }
}

/** The graph's input tensors by name, checked against what the graph reads. */
function namedInputs(g: Graph, inputs: SequentialInputs): Map<string, Tensor> {
  if (!inputs || typeof inputs !== 'object') throw new InputError('input', 'expected a Tensor or tensors by name');
  const map = new Map<string, Tensor>(
    'data' in inputs && 'shape' in inputs ? [['input', inputs as Tensor]] : Object.entries(inputs as Record<string, Tensor>),
  );
  for (const name of g.inputNames) {
    const t = map.get(name);
    const field = name === 'input' ? 'input' : `inputs.${name}`;
    if (!t) throw new InputError(field, `missing: the graph reads "${name}"`);
    const dtype = dtypeOf(t.data, `${field}.data`);
    if (g.dtype && dtype !== g.dtype) throw new InputError(`${field}.data`, `expected ${g.dtype} activations, as the layers' weights`);
    if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new InputError(`${field}.shape`, `expected a list of sizes, got ${brief(t.shape)}`);
    }
    if (t.shape.reduce((a, b) => a * b, 1) !== t.data.length)
      throw new InputError(`${field}.shape`, `[${t.shape}] does not hold ${t.data.length} values`);
  }
  for (const name of map.keys()) if (!g.inputNames.includes(name)) throw new InputError(`inputs.${name}`, 'no layer reads this input');
  return map;
}

/** What each layer computes for these input shapes (its output shape; conv: its patches), checked before anything runs. */
interface Step {
  outShape: number[];
  conv?: { geometry: PatchGeometry; M: number; K: number };
}

function inferShapes(g: Graph, inputs: Map<string, Tensor>): Step[] {
  const shapes = new Map<string, readonly number[]>([...inputs].map(([k, t]) => [k, t.shape]));
  return g.nodes.map((n) => {
    const ins = n.inputs.map((r) => shapes.get(r)!);
    const step: Step = prefixed(n.field, () => {
      const { op } = n.layer;
      if (op === 'fullyConnected') {
        const p = n.params as FullyConnectedParams;
        const [N, K] = p.weights.shape;
        return {
          outShape: fcOutShape(
            ins[0],
            fcRows(
              ins[0],
              ins[0].reduce((a, b) => a * b, 1),
              K,
            ),
            K,
            N,
            p.keepNumDims,
          ),
        };
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
 * The elementwise problem of an add/sub/mul/requantize layer over `ins`: add/sub/mul on the layer's kernel
 * path (XNNPACK's arithmetic and clamp where the delegate takes the node, else the builtin kernels'); a
 * requantize is the builtin MUL by the scalar 1 of scale 1 and zero point 0.
 */
function elementwiseProblem(n: Node, dtype: 'uint8' | 'int8', ins: Tensor[]): ElementwiseProblem {
  const p = n.layer.params as ElementwiseLayerParams;
  const tensor = (j: number) => ({ data: ins[j].data, shape: ins[j].shape, scale: n.quant[j].scale, zeroPoint: n.quant[j].zeroPoint });
  if (n.layer.op === 'requantize') {
    // TFLite's builtin QUANTIZE: no fused activation, the type's whole range
    const [min, max] = activationRange('NONE', p.output, dtype);
    const one = { data: dtype === 'int8' ? Int8Array.of(1) : Uint8Array.of(1), shape: [], scale: 1, zeroPoint: 0 };
    return { op: 'mul', a: tensor(0), b: one, output: { ...p.output, min, max }, kernelPath: 'builtin' };
  }
  const op = n.layer.op as 'add' | 'sub' | 'mul';
  const asked = p.kernelPath ?? 'xnnpack';
  if (!ELEMENTWISE_KERNEL_PATHS.includes(asked))
    throw new InputError(`${n.field}.params.kernelPath`, `expected one of ${ELEMENTWISE_KERNEL_PATHS.join(', ')}, got ${brief(asked)}`);
  // The delegate leaves a node whose scales XNNPACK cannot take to the builtin kernel, clamp included.
  const xnnpack = asked === 'xnnpack' && xnnpackTakesElementwise(op, n.quant[0].scale, n.quant[1].scale, p.output?.scale);
  const [min, max] = prefixed(n.field, () => activationRange(p.activation ?? 'NONE', p.output, dtype, xnnpack ? 'xnnpack' : 'optimized'));
  const output = { scale: p.output.scale, zeroPoint: p.output.zeroPoint, min, max };
  return { op, a: tensor(0), b: tensor(1), output, kernelPath: xnnpack ? 'xnnpack' : 'builtin' };
}

const sizeOf = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/**
 * Runs the layers one by one through fullyConnected(), conv2d() and elementwise() on `backend` (every
 * intermediate on the host): the CLI's CPU path, and what Sequential is checked against.
 */
export async function runLayers(
  layers: SequentialLayer[],
  inputs: SequentialInputs,
  opts: SequentialOptions & { backend?: Backend } = {},
): Promise<Tensor> {
  const g = planGraph(layers, opts);
  const named = namedInputs(g, inputs);
  const steps = inferShapes(g, named);
  const values = new Map(named);
  for (const [i, n] of g.nodes.entries()) {
    const ins = n.inputs.map((r) => values.get(r)!);
    const backend = { backend: opts.backend ?? 'auto' };
    let out: Tensor;
    if (n.layer.op === 'fullyConnected') out = await fullyConnected(ins[0], n.params as FullyConnectedParams, backend);
    else if (n.layer.op === 'conv2d') out = await conv2d(ins[0], n.params as Conv2dParams, backend);
    else {
      const problem = elementwiseProblem(n, dtypeOf(ins[0].data, `${n.field}.inputs[0]`), ins);
      prefixed(`${n.field}.params`, () => prepareElementwise(problem)); // its fields named from the layer
      const r = await elementwise(problem, backend);
      out = { data: r.data, shape: r.shape };
    }
    values.set(n.name, { data: out.data, shape: steps[i].outShape });
  }
  return values.get(g.nodes[g.nodes.length - 1].name)!;
}

/**
 * Checks a graph for these inputs without running it: names, quantizations, dtypes and every layer's
 * shape (what Sequential.create and run, and runLayers, check first). The CLI calls it before it
 * acquires a device.
 */
export function checkLayers(layers: SequentialLayer[], inputs: SequentialInputs, opts: SequentialOptions = {}): void {
  const g = planGraph(layers, opts);
  inferShapes(g, namedInputs(g, inputs));
}

/** A tensor during a GPU run: on the host (a graph input), or a GPU matrix [size / last, last]. */
interface Value {
  shape: number[];
  host?: Uint8Array | Int8Array;
  gpu?: GpuMatrix;
  /** The run made this buffer itself (an elementwise output): destroyed, not released to the context. */
  own?: boolean;
}

export class Sequential {
  private constructor(
    private readonly ctx: GpuContext,
    private readonly graph: Graph,
    private readonly packed: PackedOperand[],
  ) {}

  /** Checks the graph, derives each layer's stages and prepacks every layer's weights on `ctx`. */
  static async create(ctx: GpuContext, layers: SequentialLayer[], opts: SequentialOptions = {}): Promise<Sequential> {
    const graph = planGraph(layers, opts);
    for (const n of graph.nodes) {
      if (n.layer.op === 'fullyConnected' && (n.params?.kernelPath ?? 'xnnpack') === 'reference') {
        throw new InputError(
          `${n.field}.params.kernelPath`,
          'the FC reference path requantizes on the host in float64: run it with runLayers() or fullyConnected()',
        );
      }
    }
    const packed: PackedOperand[] = [];
    try {
      for (const n of graph.nodes) if (n.gemm) packed.push(await ctx.prepack('rhs', n.gemm.rhs));
    } catch (e) {
      for (const p of packed) p.destroy();
      throw e;
    }
    return new Sequential(ctx, graph, packed);
  }

  /** Frees the prepacked weights (the context stays). */
  destroy(): void {
    for (const p of this.packed) if (!p.destroyed) p.destroy();
  }

  /** Runs the graph on its inputs (one tensor: the graph input 'input'); returns the last layer's output. */
  async run(inputs: SequentialInputs): Promise<Tensor> {
    const g = this.graph;
    const named = namedInputs(g, inputs);
    const steps = inferShapes(g, named);
    const values = new Map<string, Value>([...named].map(([k, t]) => [k, { shape: [...t.shape], host: t.data }]));
    const free = (v: Value | undefined) => {
      if (!v?.gpu) return;
      if (v.own) v.gpu.buffer.destroy();
      else this.ctx.releaseMatrix(v.gpu);
      v.gpu = undefined;
    };
    try {
      let packedIndex = 0;
      for (const [i, n] of g.nodes.entries()) {
        const last = i === g.nodes.length - 1;
        const ins = n.inputs.map((r) => values.get(r)!);
        const out = n.gemm
          ? await this.gemmLayer(n, steps[i], ins[0], this.packed[packedIndex++], last)
          : await this.elementwiseLayer(n, steps[i], ins, last);
        if (last) return { data: out.host!, shape: steps[i].outShape };
        values.set(n.name, out);
        for (const r of new Set(n.inputs)) if (g.lastUse.get(r) === i) free(values.get(r));
      }
      throw new Error('unreachable');
    } finally {
      for (const v of values.values()) free(v);
    }
  }

  /** A value's bytes on the host (a GPU matrix read back, dense). */
  private async hostOf(v: Value): Promise<Uint8Array | Int8Array> {
    return v.host ?? ((await this.ctx.read(v.gpu!)).data as Uint8Array | Int8Array);
  }

  /**
   * v as a GPU matrix of `cols` columns over the same bytes (TFLite's flatten of [..., last] to
   * [size / cols, cols]): itself, a view where its rows are dense, else null.
   */
  private static viewOf(v: Value, cols: number): GpuMatrix | null {
    const m = v.gpu;
    if (!m) return null;
    if (m.cols === cols) return m;
    if (m.stride !== m.cols) return null;
    return { ...m, rows: sizeOf(v.shape) / cols, cols, stride: cols };
  }

  private async gemmLayer(n: Node, step: Step, input: Value, rhs: PackedOperand, last: boolean): Promise<Value> {
    const { rhsZeroPoint, lhsZeroPoint, pipeline } = n.gemm!;
    const common = { rhs, lhsZeroPoint, rhsZeroPoint, pipeline };
    const gemm = async (lhs: GpuOperandInput): Promise<Value> => {
      const problem: GpuGemmProblem = { ...common, lhs };
      if (last) return { shape: step.outShape, host: (await this.ctx.gemm(problem)).data as Uint8Array | Int8Array };
      return { shape: step.outShape, gpu: await this.ctx.gemmOnGpu(problem) };
    };
    if (!step.conv) {
      const K = (n.params as FullyConnectedParams).weights.shape[1];
      const M = sizeOf(input.shape) / K;
      return gemm(Sequential.viewOf(input, K) ?? { data: await this.hostOf(input), rows: M, cols: K });
    }
    const { geometry, M, K } = step.conv;
    let lhs: PackedOperand;
    try {
      lhs = await this.ctx.packPatches(Sequential.viewOf(input, geometry.channels) ?? (await this.hostOf(input)), geometry, lhsZeroPoint);
    } catch (e) {
      if (!(e instanceof LimitExceededError)) throw e;
      // an input above one storage binding: host im2col rows, which the GEMM splits into bands
      return gemm({ data: im2col(await this.hostOf(input), geometry, lhsZeroPoint), rows: M, cols: K });
    }
    try {
      return await gemm(lhs);
    } finally {
      lhs.destroy();
    }
  }

  private async elementwiseLayer(n: Node, step: Step, ins: Value[], last: boolean): Promise<Value> {
    const dtype = this.graph.dtype ?? (ins[0].gpu?.dtype as 'uint8' | 'int8' | undefined) ?? dtypeOf(ins[0].host!, `${n.field}.inputs[0]`);
    const placeholder = (v: Value) => v.host ?? (dtype === 'int8' ? new Int8Array(sizeOf(v.shape)) : new Uint8Array(sizeOf(v.shape)));
    const problem = elementwiseProblem(
      n,
      dtype,
      ins.map((v) => ({ data: placeholder(v), shape: v.shape })),
    );
    const plan = prefixed(`${n.field}.params`, () => prepareElementwise(problem));
    const [a, b] = n.layer.op === 'requantize' ? [ins[0], { shape: [], host: problem.b.data }] : ins;
    // a GPU input's rows lie `stride` apart: scale the plan's dense strides (multiples of the last size) by stride / last
    const strided = (s4: number[], v: Value) =>
      v.gpu && v.gpu.stride !== v.gpu.cols ? s4.map((s, k) => (k === 3 || s === 0 ? s : (s / v.gpu!.cols) * v.gpu!.stride)) : s4;
    const resident = { ...plan, aStrides4: strided(plan.aStrides4, a), bStrides4: strided(plan.bStrides4, b) };
    const cols = step.outShape.length ? step.outShape[step.outShape.length - 1] : 1;
    const count = sizeOf(step.outShape);
    const buffer = this.ctx.device.createBuffer({
      size: Math.max(4, Math.ceil(count / 4) * 4),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
      label: `qgemm ${n.layer.op} ${n.name}`,
    });
    const out: Value = {
      shape: step.outShape,
      gpu: { buffer, rows: cols ? count / cols : 0, cols, stride: cols, order: 'row-major', dtype },
      own: true,
    };
    let kept = false;
    try {
      const sources = [a, b].map((v) => v.gpu?.buffer ?? v.host!) as [GPUBuffer | Uint8Array, GPUBuffer | Uint8Array];
      await this.ctx.exclusive(() => elementwiseBetweenBuffers(this.ctx, resident, sources, buffer));
      if (!last) {
        kept = true;
        return out;
      }
      return { shape: step.outShape, host: count ? await this.hostOf(out) : placeholder({ shape: step.outShape }) };
    } finally {
      if (!kept) buffer.destroy();
    }
  }
}
