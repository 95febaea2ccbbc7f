// A small graph of TFLite layers (FULLY_CONNECTED, CONV_2D, and the elementwise ADD, SUB and MUL), each
// consuming earlier outputs or the graph's inputs by name, and two ways to run it:
// - Sequential, on one GpuContext (pack -> gemm -> output, layer after layer): every layer's weights are
//   prepacked once, when the Sequential is made; a run uploads the inputs once, keeps every intermediate
//   tensor on the GPU (a GEMM's dst feeds the next GEMM as its lhs, a convolution's patches are read
//   straight from it, an elementwise op reads and writes GPU buffers) and reads back the last output only;
//   a chain of FULLY_CONNECTED layers runs as one chain of GEMMs (GpuContext.gemmChain,
//   src/scheduler/chain-plan.ts): one submit and one map per run, through a plan reused across runs;
// - runLayers, layer by layer through fullyConnected(), conv2d() and elementwise() on any backend, which
//   is also what Sequential is checked against.
// Each GEMM layer's requantization is derived by ./derive.ts for its kernel path, as in fullyConnected()
// and conv2d(). Quantization flows as in a TFLite graph: a layer's input quantization is its producer's
// output quantization (given again on the layer, it must agree), and a graph input's is declared in
// `inputs` or on the layers that read it. The FC reference path requantizes on the host in float64, so a
// Sequential refuses it (runLayers runs it). Every layer's parameters and shapes are checked for the whole graph before anything runs (./graph.ts).

import { elementwise, type Backend } from '../api.ts';
import { InputError, LimitExceededError } from '../errors.ts';
import { elementwiseBetweenBuffers } from '../elementwise/gpu.ts';
import { checkBufferSize } from '../gpu/caps.ts';
import {
  checkCallArguments,
  type GemmCallOptions,
  type GemmTiming,
  GpuContext,
  type GpuGemmProblem,
  type GpuMatrix,
  type PackedOperand,
} from '../scheduler/context.ts';
import { brief } from '../problem/echo.ts';
import { prepareElementwise } from '../problem/elementwise-plan.ts';
import {
  elementwiseProblem,
  type Graph,
  inferShapes,
  namedInputs,
  type Node,
  planGraph,
  prefixed,
  type SequentialInputs,
  type SequentialLayer,
  type SequentialOptions,
  sizeOf,
  type Step,
} from './graph.ts';
import { conv2d, dtypeOf, fullyConnected, type Conv2dParams, type FullyConnectedParams, type Tensor } from './layers.ts';
import { im2col } from '../pack/patches.ts';
import { envTraceListener } from '../scheduler/trace.ts';
import { BufferUsage } from '../gpu/usage.ts';

export {
  checkLayers,
  type ElementwiseLayerParams,
  type RequantizeLayerParams,
  type SequentialFullyConnected,
  type SequentialInputs,
  type SequentialLayer,
  type SequentialOptions,
} from './graph.ts';

/**
 * Runs the layers one by one through fullyConnected(), conv2d() and elementwise() on `backend` (every
 * intermediate on the host): the CLI's CPU path, and what Sequential is checked against.
 */
export async function runLayers(
  layers: SequentialLayer[],
  inputs: SequentialInputs,
  opts: SequentialOptions & { backend?: Backend | undefined } = {},
): Promise<Tensor> {
  // planGraph checks the graph's options (a key undefined is absent); `backend` is this function's own
  const g = planGraph(layers, opts && typeof opts === 'object' ? ({ ...opts, backend: undefined } as SequentialOptions) : opts);
  const named = namedInputs(g, inputs);
  const steps = inferShapes(g, named);
  const values = new Map(named.tensors);
  for (const [i, n] of g.nodes.entries()) {
    // as {data, shape}: a graph input's other keys were checked by namedInputs, under its own field
    const ins = n.inputs.map((r) => values.get(r)!).map((t) => ({ data: t.data, shape: t.shape }));
    const backend = { backend: opts.backend === undefined ? 'auto' : opts.backend };
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

/** A tensor during a GPU run: on the host (a graph input), or a GPU matrix [size / last, last]. */
interface Value {
  shape: number[];
  host?: Uint8Array | Int8Array | undefined;
  gpu?: GpuMatrix | undefined;
  /** The run made this buffer itself (an elementwise output): destroyed, not released to the context. */
  own?: boolean | undefined;
}

/**
 * Options of one Sequential.run. `onTrace` receives one trace per GPU call of GEMMs: the chain's one call
 * where the run is a chain of GEMMs, else one for each fullyConnected or conv2d layer (an elementwise
 * layer's call is not traced).
 */
export interface SequentialRunOptions extends GemmCallOptions {
  /** Receives the GPU time of the run's GEMMs, where the run is a chain of GEMMs (else null). */
  timing?: GemmTiming | undefined;
}

/**
 * The graph is a chain of FULLY_CONNECTED layers, the first reading the graph input 'input' and each next
 * one its predecessor's output, whose depth is that output's width: it runs as one chain of GEMMs
 * (GpuContext.gemmChain: one submit, one map, a plan reused across runs).
 */
function isGemmChain(g: Graph): boolean {
  const weights = (n: Node) => (n.params as FullyConnectedParams).weights.shape;
  return (
    g.inputNames.length === 1 &&
    g.nodes.every(
      (n, i) =>
        n.layer.op === 'fullyConnected' &&
        n.inputs.length === 1 &&
        n.inputs[0] === (i === 0 ? 'input' : g.nodes[i - 1].name) &&
        (i === 0 || weights(n)[1] === weights(g.nodes[i - 1])[0]),
    )
  );
}

export class Sequential {
  private readonly chain: boolean;
  private constructor(
    private readonly ctx: GpuContext,
    private readonly graph: Graph,
    private readonly packed: PackedOperand[],
  ) {
    this.chain = isGemmChain(graph);
  }

  /**
   * Checks the graph, derives each layer's stages and prepacks every layer's weights on `ctx`. The
   * parameters are read here, once: a later edit of a layer's weights, bias, scales, zero points or
   * activation is not seen by run(); create another Sequential for it.
   */
  static async create(ctx: GpuContext, layers: SequentialLayer[], opts: SequentialOptions = {}): Promise<Sequential> {
    if (!(ctx instanceof GpuContext)) throw new InputError('ctx', `expected a GpuContext, got ${brief(ctx)}`);
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

  /** Frees the prepacked weights (the context stays); a later run is an InputError. */
  destroy(): void {
    this.destroyed = true;
    for (const p of this.packed) if (!p.destroyed) p.destroy();
  }

  private destroyed = false;

  /**
   * Runs the graph on its inputs (one tensor: the graph input 'input'); returns the last layer's output.
   * A chain of FULLY_CONNECTED layers runs as one chain of GEMMs: ONE command buffer, ONE submit and ONE
   * map (the last output read back once), its input written into the buffer planned for it, through a
   * plan that a later run of the same shapes and parameters reuses (a changed one makes a new plan).
   */
  async run(inputs: SequentialInputs, opts: SequentialRunOptions = {}): Promise<Tensor> {
    if (this.destroyed) throw new InputError('sequential', 'this Sequential was destroyed: create another');
    try {
      return await this.runLive(inputs, opts);
    } catch (e) {
      // Its weights, destroyed with it while this run waited: the Sequential is what the caller destroyed.
      if (this.destroyed && e instanceof InputError && /destroyed/.test(e.message))
        throw new InputError('sequential', 'this Sequential was destroyed during the run');
      throw e;
    }
  }

  private async runLive(inputs: SequentialInputs, opts: SequentialRunOptions): Promise<Tensor> {
    checkCallArguments((opts as SequentialRunOptions | null)?.timing, opts); // as gemmChain's, before any work
    const g = this.graph;
    const named = namedInputs(g, inputs);
    const steps = inferShapes(g, named);
    if (opts.timing) opts.timing.gpuMs = null;
    if (this.chain) {
      const x = named.tensors.get('input')!;
      const K = (g.nodes[0].params as FullyConnectedParams).weights.shape[1];
      const layers = g.nodes.map((n, i) => {
        const { lhsZeroPoint, rhsZeroPoint, pipeline } = n.gemm!;
        return { rhs: this.packed[i], lhsZeroPoint, rhsZeroPoint, pipeline };
      });
      const lhs = { data: x.data, rows: sizeOf(x.shape) / K, cols: K };
      const out = await this.ctx.gemmChain({ lhs, layers }, opts.timing, { onTrace: opts.onTrace });
      return { data: out.data as Uint8Array | Int8Array, shape: steps[steps.length - 1].outShape };
    }
    const values = new Map<string, Value>([...named.tensors].map(([k, t]) => [k, { shape: [...t.shape], host: t.data }]));
    const free = (v: Value | undefined) => {
      if (!v?.gpu) return;
      if (v.own) v.gpu.buffer.destroy();
      else this.ctx.releaseMatrix(v.gpu);
      v.gpu = undefined;
    };
    // Each GEMM layer's trace: the caller's listener, else QGEMM_TRACE's (gemmOnGpu reads only the option).
    const call: GemmCallOptions = { onTrace: opts.onTrace ?? envTraceListener() ?? undefined };
    try {
      let packedIndex = 0;
      for (const [i, n] of g.nodes.entries()) {
        const last = i === g.nodes.length - 1;
        const ins = n.inputs.map((r) => values.get(r)!);
        const out = n.gemm
          ? await this.gemmLayer(n, steps[i], ins[0], this.packed[packedIndex++], last, call)
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

  private async gemmLayer(n: Node, step: Step, input: Value, rhs: PackedOperand, last: boolean, call: GemmCallOptions): Promise<Value> {
    const { rhsZeroPoint, lhsZeroPoint, pipeline } = n.gemm!;
    const common = { rhs, lhsZeroPoint, rhsZeroPoint, pipeline };
    const gemm = async (lhs: GpuGemmProblem['lhs']): Promise<Value> => {
      const problem: GpuGemmProblem = { ...common, lhs };
      if (last) return { shape: step.outShape, host: (await this.ctx.gemm(problem, undefined, call)).data as Uint8Array | Int8Array };
      return { shape: step.outShape, gpu: await this.ctx.gemmOnGpu(problem, undefined, call) };
    };
    if (!step.conv) {
      const K = (n.params as FullyConnectedParams).weights.shape[1];
      const M = sizeOf(input.shape) / K;
      return gemm(Sequential.viewOf(input, K) ?? { data: await this.hostOf(input), rows: M, cols: K });
    }
    const { geometry, M, K } = step.conv;
    try {
      // the patches packed from the input in the GEMM's own pass
      const patches = Sequential.viewOf(input, geometry.channels) ?? (await this.hostOf(input));
      return await gemm({ input: patches, geometry, zeroPoint: lhsZeroPoint });
    } catch (e) {
      if (!(e instanceof LimitExceededError)) throw e;
      // an input above one storage binding: host im2col rows, which the GEMM splits into bands
      return gemm({ data: im2col(await this.hostOf(input), geometry, lhsZeroPoint), rows: M, cols: K });
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
    const size = Math.max(4, Math.ceil(count / 4) * 4);
    checkBufferSize(this.ctx.limits, size, `${n.field}'s output`);
    const buffer = this.ctx.device.createBuffer({
      size,
      usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC,
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
