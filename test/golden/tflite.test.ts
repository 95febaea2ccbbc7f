/**
 * Golden tests against the real TFLite interpreter: every case in test/golden/tflite/*.json (written by
 * tools/tflite-golden/ from TFLite 2.21's interpreter with each op resolver and from TFLite compiled to
 * WebAssembly, in the format of the layer contract) is checked bit for bit through the library's
 * `fullyConnected`/`conv2d` (FULLY_CONNECTED, CONV_2D) and `elementwise` (ADD, SUB, MUL) on the CPU and
 * on WebGPU (SwiftShader where there is no GPU), with
 * `kernelPath` set to each path whose output the file holds. A self-check recomputes each case with the
 * naive path models of tools/tflite-golden/paths.ts, the evidence by which the generator named the path.
 * Layers sit on top of pack -> gemm -> output; the elementwise ops run between GEMMs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { elementwise } from '../../src/api.ts';
import { activationRange } from '../../src/layers/derive.ts';
import { conv2d, fullyConnected, type KernelPath, type Tensor } from '../../src/layers/layers.ts';
import { runLayers } from '../../src/layers/sequential.ts';
import {
  libraryBuiltinElementwise,
  type NaiveCase,
  type NaiveElementwiseCase,
  naiveLayer,
  naiveXnnpackElementwise,
} from '../../tools/tflite-golden/paths.ts';
import { getGpu, releaseGpu } from '../gpu/gpu-env.ts';

interface GoldenTensor {
  dtype: 'int8' | 'uint8';
  shape: number[];
  data: number[];
  scale: number | number[];
  zeroPoint: number;
}
interface GoldenCase extends NaiveCase {
  name: string;
  weights: GoldenTensor;
  outputs: Partial<Record<KernelPath, number[]>>;
  producedBy: string;
}

/** An ADD, SUB or MUL case: outputs of XNNPACK's arithmetic and, where the interpreter ran it, TFLite's builtin one. */
type ElementwisePath = 'xnnpack' | 'builtin';
interface GoldenElementwiseCase extends NaiveElementwiseCase {
  name: string;
  outputs: Partial<Record<ElementwisePath, number[]>>;
  producedBy: string;
}

const dir = join(__dirname, 'tflite');
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
const all: (GoldenCase | GoldenElementwiseCase)[] = files.flatMap((f) => {
  const j = JSON.parse(readFileSync(join(dir, f), 'utf8'));
  return Array.isArray(j) ? j : [j];
});
const isElementwise = (c: GoldenCase | GoldenElementwiseCase): c is GoldenElementwiseCase => ['ADD', 'SUB', 'MUL'].includes(c.op);
const cases = all.filter((c): c is GoldenCase => !isElementwise(c));
const ewCases = all.filter(isElementwise);
const runs = cases.flatMap((c) => (Object.entries(c.outputs) as [KernelPath, number[]][]).map(([path, want]) => ({ c, path, want })));
const ewRuns = ewCases.flatMap((c) =>
  (Object.entries(c.outputs) as [ElementwisePath, number[]][]).map(([path, want]) => ({ c, path, want })),
);
const ewModel = (c: NaiveElementwiseCase, path: ElementwisePath) =>
  path === 'xnnpack' ? naiveXnnpackElementwise(c) : libraryBuiltinElementwise(c);

/** Count of differing elements, the first one, and its expected and actual values; '' when equal. */
function mismatch(want: number[], got: ArrayLike<number>): string {
  if (got.length !== want.length) return `${got.length} elements, expected ${want.length}`;
  let count = 0;
  let first = -1;
  for (let i = 0; i < want.length; i++)
    if (got[i] !== want[i]) {
      count++;
      if (first < 0) first = i;
    }
  return count ? `${count}/${want.length} elements differ; first at index ${first}: expected ${want[first]}, got ${got[first]}` : '';
}

async function runLayer(c: GoldenCase, path: KernelPath, backend: 'cpu' | 'webgpu'): Promise<Tensor> {
  const arr = (t: { dtype: 'int8' | 'uint8'; data: number[] }) => (t.dtype === 'int8' ? Int8Array.from(t.data) : Uint8Array.from(t.data));
  const scale = Array.isArray(c.weights.scale) ? Float32Array.from(c.weights.scale) : c.weights.scale;
  const weights = { data: arr(c.weights), scale, zeroPoint: c.weights.zeroPoint };
  const common = {
    input: { scale: c.input.scale, zeroPoint: c.input.zeroPoint },
    bias: c.bias ? Int32Array.from(c.bias) : undefined,
    output: { scale: c.output.scale, zeroPoint: c.output.zeroPoint },
    activation: c.activation,
    kernelPath: path,
  };
  const input = { data: arr(c.input), shape: c.input.shape };
  if (c.op === 'FULLY_CONNECTED')
    return fullyConnected(input, { ...common, weights: { ...weights, shape: c.weights.shape as [number, number] } }, { backend });
  const filter = { ...weights, shape: c.weights.shape as [number, number, number, number] };
  return conv2d(input, { ...common, filter, stride: c.stride, dilation: c.dilation, padding: c.padding ?? 'VALID' }, { backend });
}

describe('TFLite golden files', () => {
  it('are present, and every case holds the output of an identified kernel path', () => {
    expect(files.length, 'no golden files in test/golden/tflite/ (tools/tflite-golden/README.md)').toBeGreaterThan(0);
    expect(ewCases.length, 'no ADD/SUB/MUL golden cases').toBeGreaterThan(0);
    for (const c of all) expect(Object.keys(c.outputs).length, `${c.name}: no kernel path identified (${c.producedBy})`).toBeGreaterThan(0);
  });
  for (const { c, path, want } of runs)
    it(`naive ${path} model reproduces ${c.name}`, () => {
      expect(mismatch(want, naiveLayer(c, path)), c.producedBy).toBe('');
    });
  for (const { c, path, want } of ewRuns)
    it(`${path} model reproduces ${c.name}`, () => {
      expect(mismatch(want, ewModel(c, path)), c.producedBy).toBe('');
    });
});

/** An elementwise case through the library's elementwise(), with the activation clamp of the path. */
async function runElementwise(c: GoldenElementwiseCase, path: ElementwisePath, backend: 'cpu' | 'webgpu'): Promise<Tensor> {
  const arr = (t: { dtype: 'int8' | 'uint8'; data: number[] }) => (t.dtype === 'int8' ? Int8Array.from(t.data) : Uint8Array.from(t.data));
  const [min, max] = activationRange(c.activation, c.output, c.output.dtype, path === 'xnnpack' ? 'xnnpack' : 'optimized');
  const op = c.op === 'ADD' ? 'add' : c.op === 'SUB' ? 'sub' : 'mul';
  const r = await elementwise(
    {
      op,
      a: { data: arr(c.a), shape: c.a.shape, scale: c.a.scale, zeroPoint: c.a.zeroPoint },
      b: { data: arr(c.b), shape: c.b.shape, scale: c.b.scale, zeroPoint: c.b.zeroPoint },
      output: { scale: c.output.scale, zeroPoint: c.output.zeroPoint, min, max },
      ...(path === 'xnnpack' ? { kernelPath: 'xnnpack' as const } : {}),
    },
    { backend },
  );
  return { data: r.data, shape: r.shape };
}

/** The naive models, each with the activation clamp of TFLite (CalculateActivationRangeQuantized) or of XNNPACK. */
const MODELS = (['xnnpack', 'optimized', 'reference'] as const).flatMap((path) =>
  (['tflite', 'xnnpack'] as const).map((clamp) => ({ name: `${path} with ${clamp}'s activation clamp`, path, clamp })),
);

const gpu = await getGpu();
afterAll(releaseGpu);

for (const backend of ['cpu', 'webgpu'] as const)
  describe.skipIf(backend === 'webgpu' && !gpu)(`TFLite goldens: fullyConnected/conv2d on ${backend} == the interpreter`, () => {
    for (const { c, path, want } of runs)
      it(`${c.name} ${path}`, async () => {
        const out = await runLayer(c, path, backend);
        expect(out.shape).toEqual(c.outputShape);
        const diff = mismatch(want, out.data);
        // On a mismatch, name the naive models (tools/tflite-golden/paths.ts) that reproduce the library's output.
        const alike = diff ? MODELS.filter((m) => mismatch(naiveLayer(c, m.path, m.clamp), out.data) === '').map((m) => m.name) : [];
        const why = diff ? `; the library's output equals the naive model(s): ${alike.join(', ') || 'none'}` : '';
        expect(diff, `${c.name}, kernelPath '${path}', backend ${backend} vs the interpreter${why}`).toBe('');
      });
    for (const { c, path, want } of ewRuns)
      it(`${c.name} ${path}`, async () => {
        const out = await runElementwise(c, path, backend);
        expect(out.shape).toEqual(c.outputShape);
        expect(mismatch(want, out.data), `${c.name}, kernelPath '${path}', backend ${backend} vs the interpreter`).toBe('');
      });
    // A graph layer on its default path equals TFLite's default interpreter (LiteRT): XNNPACK's outputs
    // where the delegate took the node, the builtin kernel's where its scales kept it out.
    for (const c of ewCases)
      it(`${c.name}: the ${c.op.toLowerCase()} graph layer's default path`, async () => {
        const arr = (t: { dtype: 'int8' | 'uint8'; data: number[] }) =>
          t.dtype === 'int8' ? Int8Array.from(t.data) : Uint8Array.from(t.data);
        const op = c.op === 'ADD' ? 'add' : c.op === 'SUB' ? 'sub' : 'mul';
        const out = await runLayers(
          [
            {
              op,
              inputs: ['a', 'b'],
              params: { output: { scale: c.output.scale, zeroPoint: c.output.zeroPoint }, activation: c.activation },
            },
          ],
          { a: { data: arr(c.a), shape: c.a.shape }, b: { data: arr(c.b), shape: c.b.shape } },
          { inputs: { a: c.a, b: c.b }, backend },
        );
        expect(mismatch((c.outputs.xnnpack ?? c.outputs.builtin)!, out.data), `${c.name}, layer default, backend ${backend}`).toBe('');
      });
  });
