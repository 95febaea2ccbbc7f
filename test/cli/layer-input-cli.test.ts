// CLI tier for what `qgemm run` refuses in the layer ops ("fullyConnected", "conv2d", "sequential";
// src/cli/layer-spec.ts over src/layers/): exit 2 with one line naming the field as the spec writes it
// (no `params.` prefix, no internal GEMM names), nothing written, and, with --backend webgpu and no
// adapter, still exit 2, since every layer is checked before a device is asked for. Graph input names
// are data ("data", "shape", "__proto__").

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseNpy } from '../../src/io/npy.ts';
import { runLayers } from '../../src/layers/sequential.ts';
import { cleanup, expectNothingWritten, expectOneLine, freshDir, npy, runMain } from './support.ts';

afterAll(cleanup);

const x = Int8Array.from({ length: 12 }, (_, i) => i * 9 - 50);
const files = () => ({
  'x.npy': npy('int8', [2, 6], x),
  'w.npy': npy(
    'int8',
    [3, 6],
    Int8Array.from({ length: 18 }, (_, i) => i * 7 - 60),
  ),
  'wu8.npy': npy(
    'uint8',
    [3, 6],
    Uint8Array.from({ length: 18 }, (_, i) => i * 7),
  ),
  'img.npy': npy('int8', [1, 2, 2, 3], x),
  'f.npy': npy('int8', [2, 1, 1, 3], Int8Array.of(1, -2, 3, 4, 5, -6)),
  'empty.npy': npy('int8', [1, 100_000, 100_000, 0], new Int8Array(0)),
  'f0.npy': npy('int8', [3, 1, 1, 0], new Int8Array(0)),
});
const fc = {
  op: 'fullyConnected',
  input: { data: 'x.npy', scale: 0.02, zeroPoint: 1 },
  weights: { data: 'w.npy', scale: 0.01 },
  output: { scale: 0.05, zeroPoint: 0 },
  out: 'y.npy',
};
const conv = {
  op: 'conv2d',
  input: { data: 'img.npy', scale: 0.02, zeroPoint: 1 },
  filter: { data: 'f.npy', scale: 0.01 },
  padding: 'SAME',
  output: { scale: 0.05, zeroPoint: 0 },
  out: 'y.npy',
};
/** fc -> add(fc, fc) -> the `tail` layers. */
const graph = (add: Record<string, unknown>, tail: Record<string, unknown>[] = []) => ({
  op: 'sequential',
  input: { data: 'x.npy', scale: 0.02, zeroPoint: 1 },
  layers: [
    { op: 'fullyConnected', name: 'fc', weights: { data: 'w.npy', scale: 0.01 }, output: { scale: 0.05, zeroPoint: 0 } },
    { op: 'add', name: 'sum', inputs: ['fc', 'fc'], output: { scale: 0.1, zeroPoint: 0 }, ...add },
    ...tail,
  ],
  out: 'y.npy',
});

async function run(spec: Record<string, unknown>, backend = 'cpu') {
  const dir = freshDir(files());
  const path = join(dir, 'spec.json');
  writeFileSync(path, JSON.stringify(spec));
  return { dir, r: await runMain(['run', path, '--backend', backend]) };
}

const bad: [string, Record<string, unknown>, string][] = [
  // 1: scales as float32
  ['an input scale of 0 in float32', { ...fc, input: { ...fc.input, scale: 1e-46 } }, 'input.scale'],
  ['a subnormal weight scale', { ...fc, weights: { ...fc.weights, scale: 1e-40 } }, 'weights.scale'],
  // 3: weight zero points by dtype; one dtype for input and weights
  ['int8 weights with zeroPoint 1000', { ...fc, weights: { ...fc.weights, zeroPoint: 1000 } }, 'weights.zeroPoint'],
  ['int8 input with uint8 weights', { ...fc, weights: { data: 'wu8.npy', scale: 0.01, zeroPoint: 128 } }, 'input.data'],
  // 4: 0 channels, refused before any im2col work
  [
    'conv2d over 0 channels',
    { ...conv, input: { ...conv.input, data: 'empty.npy' }, filter: { data: 'f0.npy', scale: 0.01 } },
    'input.data',
  ],
  // 10: one stride limit, stated
  ['a stride of 2^31', { ...conv, stride: [2 ** 31, 1] }, 'stride'],
  // 11: the spec's own field names
  ['an input zero point out of range', { ...fc, input: { ...fc.input, zeroPoint: 1000 } }, 'input.zeroPoint'],
  [
    'an effective scale of 2^32 (optimized)',
    { ...fc, kernelPath: 'optimized', output: { scale: 2 ** -32 * 0.02 * 0.01, zeroPoint: 0 } },
    'output.scale',
  ],
  [
    "an add's output zero point, followed by a layer",
    graph({ output: { scale: 0.1, zeroPoint: 1000 } }, [{ op: 'requantize', output: { scale: 0.1, zeroPoint: 0 } }]),
    'layers[1].output.zeroPoint',
  ],
  [
    'an "out" inside a layer: the layer\'s unknown field, not the spec\'s out',
    { ...graph({}), layers: [{ ...graph({}).layers[0], out: 'z.npy' }] },
    'layers[0].out',
  ],
  [
    'an input named "x.shape" that no layer reads: named in brackets, not as an input x\'s data',
    { ...graph({}), inputs: { 'x.shape': { data: 'x.npy', scale: 0.02, zeroPoint: 1 } } },
    'inputs["x.shape"]',
  ],
];

describe('qgemm run: bad layer input is exit 2 naming the spec field, nothing written', () => {
  for (const [what, spec, field] of bad)
    it(what, async () => {
      const { dir, r } = await run(spec);
      const line = expectOneLine(r, 2, field);
      if (field === 'stride') expect(line).toMatch(/2147483647/);
      if (what.includes('uint8 weights')) expect(line).toMatch(/as the weights \(weights\.data\)$/); // the spec's name in the message too
      expect(line).not.toMatch(/params\./);
      expectNothingWritten(dir, join(dir, 'y.npy'));
    });
});

describe('6: with --backend webgpu and no adapter, bad graph input is still exit 2', () => {
  // A Dawn that cannot load: any attempt to acquire a device fails with NoAdapterError (exit 1).
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.QGEMM_DAWN_NODE;
    process.env.QGEMM_DAWN_NODE = '/nonexistent/dawn.node';
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.QGEMM_DAWN_NODE;
    else process.env.QGEMM_DAWN_NODE = saved;
  });
  it('the last layer, an add, with an output zero point of 1000', async () => {
    const { dir, r } = await run(graph({ output: { scale: 0.1, zeroPoint: 1000 } }), 'webgpu');
    expectOneLine(r, 2, 'layers[1].output.zeroPoint');
    expectNothingWritten(dir, join(dir, 'y.npy'));
  });
  it('a conv2d layer over 0 channels', async () => {
    const spec = {
      op: 'sequential',
      input: { ...conv.input, data: 'empty.npy' },
      layers: [{ op: 'conv2d', filter: { data: 'f0.npy', scale: 0.01 }, padding: 'VALID', output: conv.output }],
      out: 'y.npy',
    };
    expectOneLine((await run(spec, 'webgpu')).r, 2, 'layers[0].filter.data');
  });
  it('an FC on the reference path, which a graph on the GPU does not take: said in CLI terms', async () => {
    const { r } = await run(
      graph({}, [
        {
          op: 'fullyConnected',
          weights: { data: 'w.npy', scale: 0.01 },
          kernelPath: 'reference',
          output: { scale: 0.05, zeroPoint: 0 },
          input: 'input',
        },
      ]),
      'webgpu',
    );
    const line = expectOneLine(r, 2, 'layers[2].kernelPath');
    expect(line).toMatch(/--backend cpu/);
    expect(line).not.toMatch(/runLayers/);
  });
  it('(control: the same valid graph is NoAdapterError, exit 1)', async () => {
    expectOneLine((await run(graph({}), 'webgpu')).r, 1, 'NoAdapterError');
  });
});

describe('7: graph input names are data', () => {
  it('inputs named "data", "shape" and "__proto__" run, == runLayers', async () => {
    const dir = freshDir(files());
    const names = ['data', 'shape', '__proto__'];
    const layers = names.map((n, i) => ({
      op: 'add',
      name: `s${i}`,
      inputs: [i ? `s${i - 1}` : 'input', n],
      output: { scale: 0.1, zeroPoint: i },
    }));
    const quant = (i: number) => ({ scale: 0.02 * (i + 1), zeroPoint: i });
    const entries = names.map((n, i) => `"${n}": ${JSON.stringify({ data: 'x.npy', ...quant(i) })}`);
    const text = `{"op": "sequential", "input": {"data": "x.npy", "scale": 0.03, "zeroPoint": -1}, "inputs": {${entries.join(', ')}}, "layers": ${JSON.stringify(layers)}, "out": "y.npy"}`;
    writeFileSync(join(dir, 'spec.json'), text);
    const r = await runMain(['run', join(dir, 'spec.json'), '--backend', 'cpu']);
    expect(r.code, r.err).toBe(0);
    const t = { data: x, shape: [2, 6] };
    const want = await runLayers(
      layers.map(({ output, ...l }) => ({ ...l, op: 'add', params: { output } })) as never,
      new Map([['input', t], ...names.map((n) => [n, t] as [string, typeof t])]),
      {
        backend: 'cpu',
        inputs: new Map([
          ['input', { scale: Math.fround(0.03), zeroPoint: -1 }],
          ...names.map(
            (n, i) => [n, { scale: Math.fround(quant(i).scale), zeroPoint: i }] as [string, { scale: number; zeroPoint: number }],
          ),
        ]),
      },
    );
    expect(Array.from(parseNpy(readFileSync(join(dir, 'y.npy'))).data as Int8Array)).toEqual(Array.from(want.data));
  });
});
