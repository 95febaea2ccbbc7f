// Runs the fuzz harness's layer and graph cases (./layer-cases.ts): each case becomes a valid layer or
// graph with its one spoiled parameter, then library calls (fullyConnected / conv2d; checkLayers,
// runLayers and, on WebGPU, Sequential) or a spec with its .npy files for `qgemm run` (./harness.ts
// runCliCase). A library case is clean when every call refuses it with an InputError naming the field
// the case expects, as a rejection (never a synchronous throw), before any output.

import { conv2d, fullyConnected, type Conv2dParams, type FullyConnectedParams, type Tensor } from '../../src/layers/layers.ts';
import { checkLayers, runLayers, Sequential, type SequentialLayer } from '../../src/layers/sequential.ts';
import { InputError } from '../../src/errors.ts';
import { serializeNpy } from '../../src/io/npy.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { type Bad, type Dtype, type GraphCase, graphFields, graphIndex, type LayerCase, layerFields, namesField } from './layer-cases.ts';

export interface Outcome {
  clean: boolean;
  why?: string;
}

const other = (d: Dtype): Dtype => (d === 'uint8' ? 'int8' : 'uint8');
const zpOf = (d: Dtype) => (d === 'uint8' ? 128 : 0);
const weightZpOf = (d: Dtype) => (d === 'uint8' ? 120 : 0);
function values(d: Dtype, n: number, seed: number): Uint8Array | Int8Array {
  const a = d === 'uint8' ? new Uint8Array(n) : new Int8Array(n);
  for (let i = 0; i < n; i++) a[i] = d === 'uint8' ? (i * 37 + seed * 11) % 256 : ((i * 37 + seed * 11) % 255) - 127;
  return a;
}

/** A layer in neutral form: what both the library call and the spec say. `undefined`: left out. */
interface LayerDesc {
  op: 'fullyConnected' | 'conv2d';
  input: { data: Uint8Array | Int8Array; shape: number[]; scale: number; zeroPoint: number };
  w: { data: Uint8Array | Int8Array; shape: number[]; scale: number | number[]; zeroPoint?: number };
  output: { scale: number; zeroPoint: number };
  padding?: 'SAME' | 'VALID';
  stride?: [number, number];
  activation?: unknown;
  kernelPath?: unknown;
}

/** A valid layer of `dtype` with `inputShape` (default FC [2, 3], conv [1, 3, 3, 2]) and `wShape`. */
function validLayer(op: LayerDesc['op'], dtype: Dtype, inputShape?: number[], wShape?: number[]): LayerDesc {
  const iShape = inputShape ?? (op === 'fullyConnected' ? [2, 3] : [1, 3, 3, 2]);
  const ws = wShape ?? (op === 'fullyConnected' ? [4, 3] : [2, 2, 2, 2]);
  const size = (s: number[]) => s.reduce((a, b) => a * b, 1);
  return {
    op,
    input: { data: values(dtype, size(iShape), 1), shape: iShape, scale: 0.5, zeroPoint: zpOf(dtype) },
    w: { data: values(dtype, size(ws), 2), shape: ws, scale: 0.02, zeroPoint: weightZpOf(dtype) },
    output: { scale: 0.25, zeroPoint: zpOf(dtype) },
    ...(op === 'conv2d' ? { padding: 'SAME' as const } : {}),
  };
}

/** `l` with `bad` applied. */
function spoil(l: LayerDesc, dtype: Dtype, bad: Bad): LayerDesc {
  const c = { ...l, input: { ...l.input }, w: { ...l.w }, output: { ...l.output } };
  switch (bad.kind) {
    case 'scale':
      if (bad.where === 'input' || bad.where === 'output') c[bad.where].scale = bad.value;
      else if (bad.where === 'weights') c.w.scale = bad.value;
      else c.w.scale = Array.from({ length: c.w.shape[0] }, (_, j) => (j === 1 ? bad.value : 0.02));
      break;
    case 'shape':
      if (bad.where === 'weights') c.w.shape = bad.shape;
      else c.input.shape = bad.shape;
      break;
    case 'channels':
      c.input = { ...c.input, shape: [1, bad.height, bad.width, 0], data: values(dtype, 0, 0) };
      c.w = { ...c.w, shape: [2, 1, 1, 0], data: values(dtype, 0, 0) };
      break;
    case 'weightZeroPoint':
      c.w.zeroPoint = bad.value;
      break;
    case 'mixedDtype':
      c.w = { ...c.w, data: values(other(dtype), c.w.data.length, 2), zeroPoint: weightZpOf(other(dtype)) };
      break;
    case 'stride':
      c.stride = bad.stride;
      break;
    case 'activation':
      c.activation = bad.value;
      break;
    case 'kernelPath':
      c.kernelPath = bad.value;
      break;
    case 'zeroPoint':
      c[bad.where].zeroPoint = bad.value;
      break;
  }
  return c;
}

const defined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** The library's parameters of `l` (its input quantization left out with `noInput`). */
function libParams(l: LayerDesc, noInput = false): FullyConnectedParams & Conv2dParams {
  const w = {
    data: l.w.data,
    shape: l.w.shape,
    scale: Array.isArray(l.w.scale) ? Float32Array.from(l.w.scale) : l.w.scale,
    zeroPoint: l.w.zeroPoint,
  };
  return defined({
    input: noInput ? undefined : { scale: l.input.scale, zeroPoint: l.input.zeroPoint },
    [l.op === 'conv2d' ? 'filter' : 'weights']: w,
    output: l.output,
    padding: l.padding,
    stride: l.stride,
    activation: l.activation,
    kernelPath: l.kernelPath,
  }) as unknown as FullyConnectedParams & Conv2dParams;
}

const npy = (d: Uint8Array | Int8Array, shape: number[]) =>
  serializeNpy({ dtype: d instanceof Int8Array ? 'int8' : 'uint8', shape, fortranOrder: false, data: d });

/** The spec's fields of `l` but "op", "input" and "out", reading its weights from `wFile` (written into `files`). */
function specBody(l: LayerDesc, wFile: string, files: Record<string, Uint8Array>): Record<string, unknown> {
  files[wFile] = npy(l.w.data, l.w.shape);
  return defined({
    [l.op === 'conv2d' ? 'filter' : 'weights']: { data: wFile, scale: l.w.scale, zeroPoint: l.w.zeroPoint },
    output: l.output,
    padding: l.padding,
    stride: l.stride,
    activation: l.activation,
    kernelPath: l.kernelPath,
  });
}

/** What a case becomes for the CLI: the spec's text, its files, and the fields its one error line may name. */
export interface SpecCase {
  text: string;
  files: Record<string, Uint8Array>;
  expect: string[];
}

export function layerSpec(c: LayerCase): SpecCase {
  const l = spoil(validLayer(c.op, c.dtype), c.dtype, c.bad);
  const files: Record<string, Uint8Array> = { 'x.npy': npy(l.input.data, l.input.shape) };
  const spec = {
    op: c.op,
    input: { data: 'x.npy', scale: l.input.scale, zeroPoint: l.input.zeroPoint },
    ...specBody(l, 'w.npy', files),
    out: 'C.npy',
  };
  return { text: JSON.stringify(spec), files, expect: layerFields(c.op, c.bad, false) };
}

/** Runs `call` (which must reject with an InputError naming one of `want`); '' when it does, else why not. */
async function refuses(what: string, call: () => Promise<unknown> | unknown, want: string[]): Promise<string> {
  let p: Promise<unknown>;
  try {
    const r = call();
    p = r instanceof Promise ? r : Promise.resolve(r);
  } catch (e) {
    if (what !== 'checkLayers') return `${what} threw synchronously: ${String(e).slice(0, 200)}`;
    p = Promise.reject(e); // checkLayers is synchronous by contract
  }
  try {
    await p;
    return `${what} accepted it`;
  } catch (e) {
    if (!(e instanceof InputError)) return `${what}: ${(e as Error)?.name}: ${String((e as Error)?.message).slice(0, 200)}`;
    if (e.message.length > 1100) return `${what}: a message of ${e.message.length} characters`;
    if (!namesField(e.field, want)) return `${what} named ${e.field}, not ${want.join(' or ')}: ${e.message.slice(0, 160)}`;
    return '';
  }
}

const backendOf = (backend: string) => (backend === 'cpu' ? 'cpu' : 'webgpu');

export async function runLayerLibraryCase(c: LayerCase, backend: string): Promise<Outcome> {
  const l = spoil(validLayer(c.op, c.dtype), c.dtype, c.bad);
  const input: Tensor = { data: l.input.data, shape: l.input.shape };
  const opts = { backend: backendOf(backend) } as const;
  const why = await refuses(
    c.op,
    () => (c.op === 'fullyConnected' ? fullyConnected(input, libParams(l), opts) : conv2d(input, libParams(l), opts)),
    layerFields(c.op, c.bad, true),
  );
  return why ? { clean: false, why } : { clean: true };
}

/** The graph of a case in neutral form: its input, its three layers (index by graphIndex), the tail's fields. */
function graphOf(c: GraphCase) {
  const at = graphIndex(c);
  const d = c.dtype;
  const x = { data: values(d, 32, 3), shape: [1, 4, 4, 2], scale: 0.5, zeroPoint: zpOf(d) };
  let conv = { ...validLayer('conv2d', d, x.shape, [3, 1, 1, 2]), input: x };
  let fcl = validLayer('fullyConnected', d, [16, 3], [3, 3]);
  fcl = { ...fcl, w: { ...fcl.w, scale: 0.03 }, output: { scale: 0.3, zeroPoint: zpOf(d) } };
  const tail: { output: { scale: number; zeroPoint: number }; activation?: unknown; kernelPath?: unknown } = {
    output: { scale: c.tail === 'requantize' ? 0.4 : 0.6, zeroPoint: zpOf(d) },
  };
  const b = c.bad;
  if (b.kind === 'tailOutput') tail.output = { ...tail.output, [b.what]: b.value };
  if (b.kind === 'tailActivation') tail.activation = b.value;
  if (b.kind === 'tailKernelPath') tail.kernelPath = b.value;
  if (b.kind === 'referenceFc') fcl.kernelPath = 'reference';
  if (b.kind === 'graphInput') conv.input = { ...conv.input, [b.what]: b.value };
  if (b.kind === 'layer' && b.layer === 'conv') conv = spoil(conv, d, b.bad);
  if (b.kind === 'layer' && b.layer === 'fc') fcl = spoil(fcl, d, b.bad);
  const tailReads = at.tail === 1 ? 'conv' : 'fc';
  return { at, x: conv.input, conv, fc: fcl, tail, tailReads };
}

export function graphSpec(c: GraphCase): SpecCase {
  const g = graphOf(c);
  const files: Record<string, Uint8Array> = { 'x.npy': npy(g.x.data, g.x.shape) };
  const layers: Record<string, unknown>[] = [];
  layers[g.at.conv] = { op: 'conv2d', name: 'conv', ...specBody(g.conv, 'f.npy', files) };
  layers[g.at.fc] = { op: 'fullyConnected', name: 'fc', ...specBody(g.fc, 'w.npy', files) };
  layers[g.at.tail] = defined({
    op: c.tail,
    name: 'tail',
    ...(c.tail === 'requantize' ? {} : { inputs: [g.tailReads, g.tailReads] }),
    output: g.tail.output,
    activation: g.tail.activation,
    kernelPath: g.tail.kernelPath,
  });
  const spec = { op: 'sequential', input: { data: 'x.npy', scale: g.x.scale, zeroPoint: g.x.zeroPoint }, layers, out: 'C.npy' };
  return { text: JSON.stringify(spec), files, expect: graphFields(c, false) };
}

let gpuContext: Promise<GpuContext> | null = null;

/** checkLayers and runLayers on `backend`; on webgpu also Sequential (create, then run). */
export async function runGraphLibraryCase(c: GraphCase, backend: string): Promise<Outcome> {
  const g = graphOf(c);
  const layers: SequentialLayer[] = [];
  layers[g.at.conv] = { op: 'conv2d', name: 'conv', params: libParams(g.conv) };
  layers[g.at.fc] = { op: 'fullyConnected', name: 'fc', params: libParams(g.fc, true) };
  const tailParams = defined({ output: g.tail.output, activation: g.tail.activation, kernelPath: g.tail.kernelPath });
  layers[g.at.tail] =
    c.tail === 'requantize'
      ? { op: 'requantize', name: 'tail', params: tailParams as never }
      : { op: c.tail, name: 'tail', inputs: [g.tailReads, g.tailReads], params: tailParams as never };
  const input: Tensor = { data: g.x.data, shape: g.x.shape };
  const want = graphFields(c, true);
  const whys: string[] = [];
  // checkLayers knows no backend: the FC reference path is bad only for a graph run on WebGPU.
  if (c.bad.kind !== 'referenceFc') whys.push(await refuses('checkLayers', () => checkLayers(layers, input), want));
  if (c.bad.kind !== 'referenceFc')
    whys.push(await refuses('runLayers', () => runLayers(layers, input, { backend: backendOf(backend) }), want));
  // Sequential needs a context: on webgpu, where there is an adapter (SwiftShader included).
  if (backend === 'webgpu') gpuContext ??= GpuContext.create({ allowSoftware: true });
  const ctx = backend === 'webgpu' ? await gpuContext!.catch(() => null) : null;
  if (ctx) {
    whys.push(
      await refuses(
        'Sequential',
        async () => {
          const seq = await Sequential.create(ctx, layers);
          try {
            return await seq.run(input);
          } finally {
            seq.destroy();
          }
        },
        want,
      ),
    );
  }
  const why = whys.filter(Boolean).join('; ');
  return why ? { clean: false, why } : { clean: true };
}

/** Frees the WebGPU context the graph cases made, if any. */
export async function releaseLayerFuzz(): Promise<void> {
  const ctx = await gpuContext?.catch(() => null);
  ctx?.destroy();
  gpuContext = null;
}
