// What `qgemm run` and `qgemm gemm` do once their flags are parsed (src/cli/main.ts parses them).
// The order is the contract of README "The CLI": read and check the whole spec (types, then every value
// through normalizeProblem / prepareElementwise), check `out`, check the memory estimate, and only then
// ask for a device and run; the result is written through src/cli/files.ts. Any bad input is an
// InputError (exit 2) before a device is acquired, whatever the backend.

import { dirname, resolve } from 'node:path';
import { InputError } from '../errors.ts';
import { npyParts } from '../io/npy.ts';
import { ELEMENTWISE_OPS } from '../problem/elementwise.ts';
import { normalizeProblem } from '../problem/problem.ts';
import { runOp, type Backend } from '../api.ts';
import type { GpuContextOptions } from '../scheduler/context.ts';
import type { GemmProblem } from '../types.ts';
import { MemoryBudget, elementwiseWorkingBytes, formatBytes, gemmWorkingBytes } from './budget.ts';
import { isElementwiseOp, parseElementwiseSpec } from './elementwise-spec.ts';
import { LAYER_OPS, inSpecTerms, isLayerOp, parseLayerSpec, parseSequentialSpec } from './layer-spec.ts';
import { type Conv2dParams, conv2d, convShape, type FullyConnectedParams, fullyConnected } from '../layers/layers.ts';
import {
  inferShapes,
  namedInputs,
  planGraph,
  type SequentialInputs,
  type SequentialOptions,
  type SequentialLayer,
  sizeOf,
} from '../layers/graph.ts';
import { runLayers, Sequential } from '../layers/sequential.ts';
import { onBackend } from '../api.ts';
import { InputFiles, checkOut, resolveField, writeAtomic, type PathRules, type ReadRecord } from './files.ts';
import { brief, parseStrictJson } from './json.ts';
import { isObject, parseGemmSpec, ROUNDINGS, type SpecIo } from './spec.ts';

/** Largest spec file (or --pipeline value) read; inline per-channel vectors fit, operands go in .npy files. */
const MAX_SPEC_BYTES = 64 * 2 ** 20;

const DST_BYTES = { uint8: 1, int8: 1, int16: 2, int32: 4 } as const;

export interface CommonOptions {
  backend: Backend;
  maxMemory: number;
  /** Where messages go (the CPU fallback warning of --backend auto). */
  warn: (message: string) => void;
  /** -v/--verbose: where the one line of what ran (backend, kernel, time) goes; undefined: silent. */
  verbose?: (message: string) => void;
  /** GPU context options from flags: a tuning table (--tuning FILE). */
  gpu?: Pick<GpuContextOptions, 'tuning' | 'tuningName'>;
  /** Files read before the command (the --tuning table): an output never replaces one. */
  inputs?: readonly ReadRecord[];
}

/** The CLI's SpecIo: paths by the folder rule, reads through InputFiles, `out` checked as soon as it is named. */
function cliSpecIo(files: InputFiles, rules: PathRules): SpecIo {
  return {
    resolve(field, p) {
      const full = resolveField(field, p, rules);
      return field === 'out' ? checkOut(field, full, files) : full;
    },
    readNpy: (field, full) => files.readNpy(field, full),
  };
}

async function runGemm(problem: GemmProblem, out: string, files: InputFiles, budget: MemoryBudget, opts: CommonOptions): Promise<void> {
  const p = normalizeProblem(problem); // every value, before any device
  const bytes = gemmWorkingBytes(p.M, p.N, p.K, DST_BYTES[p.dstType]);
  budget.take('out', bytes, `the [${p.M}, ${p.N}] ${p.dstType} result and its working memory need about ${formatBytes(bytes)}`);
  checkOut('out', out, files); // now that the inputs are known: never the same file as one of them
  const t0 = performance.now();
  let kernel = '';
  const r = await runOp({ op: 'gemm', problem }, opts.backend, { ...opts.gpu, warn: opts.warn, onKernel: (k) => (kernel = k) });
  opts.verbose?.(`qgemm: gemm ${p.M}x${p.N}x${p.K} ran on ${r.backend}, kernel ${kernel}, ${ms(t0)}`);
  if (r.order !== 'row-major') throw new Error('internal: CLI results are row-major');
  writeAtomic('out', out, npyParts({ dtype: r.dtype, shape: [r.rows, r.cols], fortranOrder: false, data: r.data }), files);
}

/** Wall time since t0, for -v. */
function ms(t0: number): string {
  const t = performance.now() - t0;
  return t >= 1000 ? `${(t / 1000).toFixed(2)} s` : `${t.toFixed(1)} ms`;
}

function broadcastCount(a: readonly number[], b: readonly number[]): number {
  let count = 1;
  for (let i = 1; i <= Math.max(a.length, b.length); i++) count *= Math.max(a.at(-i) ?? 1, b.at(-i) ?? 1);
  return count;
}

/** `qgemm run SPEC.json`. */
export async function cmdRun(specArg: string, allowOutside: boolean, opts: CommonOptions): Promise<void> {
  const budget = new MemoryBudget(opts.maxMemory);
  const files = new InputFiles(budget, opts.inputs);
  const specPath = resolveField('SPEC', specArg, { baseDir: process.cwd(), confine: false });
  const json = parseStrictJson(files.readText('SPEC', specPath, MAX_SPEC_BYTES), 'SPEC');
  if (!isObject(json)) throw new InputError('SPEC', `expected a JSON object, got ${brief(json)}`);
  const baseDir = dirname(specPath);
  const io = cliSpecIo(files, { baseDir, confine: !allowOutside });
  const op = json.op;
  if (op === 'gemm') {
    const spec = parseGemmSpec(json, baseDir, io);
    await runGemm(spec.problem, spec.out, files, budget, opts);
  } else if (isElementwiseOp(op)) {
    const spec = parseElementwiseSpec(json, baseDir, io); // every value checked here
    const { a, b } = spec.problem;
    const count = broadcastCount(a.shape, b.shape);
    const bytes = elementwiseWorkingBytes(count);
    budget.take('out', bytes, `the ${count}-element result and its working memory need about ${formatBytes(bytes)}`);
    checkOut('out', spec.out, files);
    const t0 = performance.now();
    const r = await runOp({ op: 'elementwise', problem: spec.problem }, opts.backend, { ...opts.gpu, warn: opts.warn });
    opts.verbose?.(`qgemm: ${String(op)} of ${count} elements ran on ${r.backend}, ${ms(t0)}`);
    writeAtomic('out', spec.out, npyParts({ dtype: r.dtype, shape: r.shape, fortranOrder: false, data: r.data }), files);
  } else if (op === 'sequential') {
    const spec = parseSequentialSpec(json, baseDir, io); // every layer read and checked here
    const graph = { inputs: spec.quant };
    // every layer and shape, before any device; then what the layers' results and working memory take
    const bytes = await inSpecTerms(() => layersWorkingBytes(spec.layers, spec.inputs, graph));
    budget.take('out', bytes, `the layers' results and working memory need about ${formatBytes(bytes)}`);
    checkOut('out', spec.out, files);
    // the FC reference path requantizes on the host in float64: the graph on the GPU does not take it
    const hostOnly = spec.layers.findIndex((l) => l.op === 'fullyConnected' && l.params.kernelPath === 'reference');
    if (hostOnly >= 0 && opts.backend === 'webgpu') {
      const why = 'the FC reference path requantizes on the host in float64, which a graph on the GPU does not: run it with --backend cpu';
      throw new InputError(`layers[${hostOnly}].kernelPath`, why);
    }
    const t0 = performance.now();
    // on the GPU one context: weights prepacked once, intermediates kept on the GPU
    const r = await inSpecTerms(() =>
      onBackend(
        () => runLayers(spec.layers, spec.inputs, { ...graph, backend: 'cpu' }),
        async (ctx) => {
          const seq = await Sequential.create(ctx, spec.layers, graph);
          try {
            return await seq.run(spec.inputs);
          } finally {
            seq.destroy();
          }
        },
        hostOnly >= 0 ? 'cpu' : opts.backend, // 'auto' runs such a graph on the CPU
        { ...opts.gpu, warn: opts.warn },
      ),
    );
    const ops = spec.layers.map((l) => l.op).join(' -> ');
    opts.verbose?.(`qgemm: sequential of ${spec.layers.length} layers (${ops}) ran on ${r.backend}, ${ms(t0)}`);
    const dtype = r.data instanceof Uint8Array ? 'uint8' : 'int8';
    writeAtomic('out', spec.out, npyParts({ dtype, shape: r.shape, fortranOrder: false, data: r.data }), files);
  } else if (isLayerOp(op)) {
    const spec = parseLayerSpec(json, baseDir, io);
    const bytes = await inSpecTerms(() => layerWorkingBytes(spec)); // its shapes checked, named as in the spec
    budget.take('out', bytes, `the layer's result and working memory need about ${formatBytes(bytes)}`);
    checkOut('out', spec.out, files);
    let kernel = '';
    const layerOpts = { ...opts.gpu, backend: opts.backend, warn: opts.warn, onKernel: (k: string) => (kernel = k) };
    const t0 = performance.now();
    const r = await inSpecTerms(() =>
      spec.op === 'fullyConnected' ? fullyConnected(spec.input, spec.params, layerOpts) : conv2d(spec.input, spec.params, layerOpts),
    );
    opts.verbose?.(`qgemm: ${spec.op} ran on ${r.backend}, kernel ${kernel}, ${ms(t0)}`);
    const dtype = r.data instanceof Uint8Array ? 'uint8' : 'int8';
    writeAtomic('out', spec.out, npyParts({ dtype, shape: r.shape, fortranOrder: false, data: r.data }), files);
  } else {
    const expected = `expected one of: gemm, ${ELEMENTWISE_OPS.join(', ')}, ${LAYER_OPS.join(', ')}`;
    throw new InputError('op', op === undefined ? `missing (${expected})` : `unknown op ${brief(op)} (${expected})`);
  }
}

/**
 * A layer's result and working memory on the CPU path, as a GEMM's (gemmWorkingBytes: its M x N result of
 * bytes, its K), a convolution's with its im2col rows on the host. Its shapes are checked here
 * (convShape), each error naming the spec's field.
 */
function layerWorkingBytes(spec: ReturnType<typeof parseLayerSpec>): number {
  if (spec.op === 'conv2d') {
    const { M, K, outShape } = convShape(spec.input.shape, spec.params);
    return gemmWorkingBytes(M, outShape[3], K, 1) + M * K;
  }
  const [N, K] = spec.params.weights.shape;
  return gemmWorkingBytes(Math.ceil(spec.input.data.length / K), N, K, 1);
}

/**
 * The results and working memory of a graph's layers on the CPU path, each layer's as if alone and all
 * held at once (a bound): a GEMM layer's as layerWorkingBytes', an elementwise one's as elementwise. Every
 * layer and shape is checked first (InputErrors naming the graph's fields).
 */
function layersWorkingBytes(layers: SequentialLayer[], inputs: SequentialInputs, opts: SequentialOptions): number {
  const g = planGraph(layers, opts);
  const steps = inferShapes(g, namedInputs(g, inputs));
  return steps.reduce((sum, step, i) => {
    const n = g.nodes[i];
    const count = sizeOf(step.outShape);
    if (!n.gemm) return sum + elementwiseWorkingBytes(count);
    const w = n.layer.op === 'conv2d' ? (n.params as Conv2dParams).filter.shape : (n.params as FullyConnectedParams).weights.shape;
    const M = count / w[0];
    const K = step.conv ? step.conv.K : w[1];
    return sum + gemmWorkingBytes(M, w[0], K, 1) + (step.conv ? M * K : 0);
  }, 0);
}

interface GemmFlags {
  lhs: string;
  rhs: string;
  out: string;
  lhsZeroPoint?: string;
  rhsZeroPoint?: string;
  pipeline?: string;
  bitDepth?: string;
}

/** A zero-point flag: an int32 written as a number, or a path to an .npy vector. */
function zeroPointFlag(flag: string, v: string | undefined): number | string | undefined {
  if (v === undefined) return undefined;
  if (/^\s*[-+]?(\d|\.\d)/.test(v) && !v.toLowerCase().endsWith('.npy')) {
    const n = Number(v);
    if (!/^[-+]?\d+$/.test(v.trim()) || !Number.isInteger(n) || n < -(2 ** 31) || n > 2 ** 31 - 1) {
      throw new InputError(flag, `expected an int32 or a path to an .npy vector, got ${brief(v)}`);
    }
    return n;
  }
  return v;
}

/** `--bit-depth L,R[,ROUNDING]`. */
function bitDepthFlag(v: string): Record<string, unknown> {
  const parts = v.split(',');
  const usage = `expected L,R[,ROUNDING] with L and R in 1..8 and ROUNDING one of ${ROUNDINGS.join(', ')}; got ${brief(v)}`;
  if (parts.length < 2 || parts.length > 3) throw new InputError('--bit-depth', usage);
  const depth = (s: string) => {
    if (!/^\s*\d+\s*$/.test(s)) throw new InputError('--bit-depth', usage);
    return Number(s);
  };
  const rounding = parts[2]?.trim() ?? 'default';
  if (!(ROUNDINGS as readonly string[]).includes(rounding)) throw new InputError('--bit-depth', usage);
  return { lhs: depth(parts[0]), rhs: depth(parts[1]), rounding };
}

/** `qgemm gemm --lhs A.npy --rhs B.npy --out C.npy ...`: paths are the user's own, relative to the cwd. */
export async function cmdGemm(flags: GemmFlags, opts: CommonOptions): Promise<void> {
  try {
    const budget = new MemoryBudget(opts.maxMemory);
    const files = new InputFiles(budget, opts.inputs);
    const rules = { baseDir: process.cwd(), confine: false };
    let pipeline: unknown = [];
    if (flags.pipeline !== undefined) {
      const text = flags.pipeline.startsWith('@')
        ? files.readText('--pipeline', resolveField('--pipeline', flags.pipeline.slice(1), rules), MAX_SPEC_BYTES)
        : flags.pipeline;
      pipeline = parseStrictJson(text, '--pipeline', 'pipeline');
    }
    const spec: Record<string, unknown> = { op: 'gemm', lhs: flags.lhs, rhs: flags.rhs, out: flags.out, pipeline };
    const lz = zeroPointFlag('--lhs-zero-point', flags.lhsZeroPoint);
    const rz = zeroPointFlag('--rhs-zero-point', flags.rhsZeroPoint);
    if (lz !== undefined) spec.lhsZeroPoint = lz;
    if (rz !== undefined) spec.rhsZeroPoint = rz;
    if (flags.bitDepth !== undefined) spec.bitDepth = bitDepthFlag(flags.bitDepth);
    const parsed = parseGemmSpec(spec, rules.baseDir, cliSpecIo(files, rules));
    await runGemm(parsed.problem, resolve(parsed.out), files, budget, opts);
  } catch (e) {
    throw flagError(e);
  }
}

/** The spec fields that `qgemm gemm` fills from flags; errors name the flag (`--pipeline[0].shift`). */
const FLAG_OF: [string, string][] = [
  ['lhsZeroPoint', '--lhs-zero-point'],
  ['rhsZeroPoint', '--rhs-zero-point'],
  ['pipeline', '--pipeline'],
  ['bitDepth', '--bit-depth'],
  ['lhs', '--lhs'],
  ['rhs', '--rhs'],
  ['out', '--out'],
];

function flagError(e: unknown): unknown {
  if (!(e instanceof InputError)) return e;
  // An output refused as the file of an input (src/cli/files.ts checkOut) names that input by its flag too.
  const flagOf = (f: string) => FLAG_OF.find(([field]) => field === f)?.[1] ?? f;
  const message = e.message.slice(e.field.length + 2).replace(/^(.* is the same file as )(\w+);/, (_, head, f) => `${head}${flagOf(f)};`);
  for (const [field, flag] of FLAG_OF) {
    if (e.field === field || e.field.startsWith(`${field}[`) || e.field.startsWith(`${field}.`)) {
      return new InputError(flag + e.field.slice(field.length), message);
    }
  }
  return e;
}
