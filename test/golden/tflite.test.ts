/**
 * Golden tests against the real TFLite interpreter: every case in test/golden/tflite/*.json (written by
 * tools/tflite-golden/ from TFLite compiled to WebAssembly, in the format of the layer contract) is
 * checked bit for bit through the library's `fullyConnected`/`conv2d` on the CPU and on WebGPU
 * (SwiftShader where there is no GPU), with `kernelPath` set to each path whose output the file holds.
 * A self-check recomputes each case with the naive path models of tools/tflite-golden/paths.ts, the
 * evidence by which the generator named the path. Layers sit on top of pack -> gemm -> output.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { conv2d, fullyConnected, type KernelPath, type Tensor } from '../../src/layers/layers.ts';
import { type NaiveCase, naiveLayer } from '../../tools/tflite-golden/paths.ts';
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

const dir = join(__dirname, 'tflite');
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
const cases: GoldenCase[] = files.flatMap((f) => {
  const j = JSON.parse(readFileSync(join(dir, f), 'utf8'));
  return Array.isArray(j) ? j : [j];
});
const runs = cases.flatMap((c) => (Object.entries(c.outputs) as [KernelPath, number[]][]).map(([path, want]) => ({ c, path, want })));

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
    for (const c of cases)
      expect(Object.keys(c.outputs).length, `${c.name}: no kernel path identified (${c.producedBy})`).toBeGreaterThan(0);
  });
  for (const { c, path, want } of runs)
    it(`naive ${path} model reproduces ${c.name}`, () => {
      expect(mismatch(want, naiveLayer(c, path)), c.producedBy).toBe('');
    });
});

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
  });
