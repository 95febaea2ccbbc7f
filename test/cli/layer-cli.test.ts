// CLI tier for the layer ops of `qgemm run` ("op": "fullyConnected" | "conv2d", src/cli/layer-spec.ts):
// a spec with .npy inputs gives the same bytes as the library's layer on the CPU, for each kernel path;
// bad fields exit 2 with one line naming the field and write nothing.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { elementwise } from '../../src/api.ts';
import { activationRange } from '../../src/layers/derive.ts';
import { conv2d, fullyConnected } from '../../src/layers/layers.ts';
import { runLayers } from '../../src/layers/sequential.ts';
import { parseSequentialSpec } from '../../src/cli/layer-spec.ts';
import { parseNpy } from '../../src/io/npy.ts';
import { cleanup, expectNothingWritten, expectOneLine, freshDir, npy, runMain } from './support.ts';

afterAll(cleanup);

const x = Int8Array.from({ length: 2 * 5 * 5 * 3 }, (_, i) => ((i * 37) % 251) - 125);
const w = Int8Array.from({ length: 4 * 3 * 3 * 3 }, (_, i) => ((i * 53) % 255) - 127);
const fcW = Int8Array.from({ length: 4 * 75 }, (_, i) => ((i * 29) % 255) - 127);
const bias = [100, -200, 3000, -4];

function files() {
  return {
    'x.npy': npy('int8', [2, 5, 5, 3], x),
    'w.npy': npy('int8', [4, 3, 3, 3], w),
    'fcx.npy': npy('int8', [2, 75], x),
    'fcw.npy': npy('int8', [4, 75], fcW),
    'bias.npy': npy('int32', [4], Int32Array.from(bias)),
  };
}

describe('qgemm run with layer ops', () => {
  for (const kernelPath of ['xnnpack', 'optimized', 'reference'] as const) {
    it(`conv2d (${kernelPath}) == the library's conv2d`, async () => {
      const dir = freshDir(files());
      const spec = {
        op: 'conv2d',
        input: { data: 'x.npy', scale: 0.0235, zeroPoint: -3 },
        filter: { data: 'w.npy', scale: [0.01, 0.02, 0.005, 0.0125] },
        bias: 'bias.npy',
        output: { scale: 0.05, zeroPoint: 4 },
        activation: 'RELU6',
        kernelPath,
        padding: 'SAME',
        stride: [2, 2],
        out: 'y.npy',
      };
      const path = join(dir, 'spec.json');
      writeFileSync(path, JSON.stringify(spec));
      const r = await runMain(['run', path, '--backend', 'cpu']);
      expect(r.code, r.err).toBe(0);
      const got = parseNpy(readFileSync(join(dir, 'y.npy')));
      const want = await conv2d(
        { data: x, shape: [2, 5, 5, 3] },
        {
          input: { scale: Math.fround(0.0235), zeroPoint: -3 },
          filter: { data: w, shape: [4, 3, 3, 3], scale: Float32Array.of(0.01, 0.02, 0.005, 0.0125) },
          bias: Int32Array.from(bias),
          output: { scale: Math.fround(0.05), zeroPoint: 4 },
          activation: 'RELU6',
          kernelPath,
          padding: 'SAME',
          stride: [2, 2],
        },
        { backend: 'cpu' },
      );
      expect(got.shape).toEqual(want.shape);
      expect(got.dtype).toBe('int8');
      expect(Array.from(got.data as Int8Array)).toEqual(Array.from(want.data));
    });
  }

  it('fullyConnected (default path xnnpack) == the library', async () => {
    const dir = freshDir(files());
    const spec = {
      op: 'fullyConnected',
      input: { data: 'fcx.npy', scale: 0.02, zeroPoint: 1 },
      weights: { data: 'fcw.npy', scale: 0.003 },
      bias,
      output: { scale: 0.1, zeroPoint: -5 },
      out: 'y.npy',
    };
    const path = join(dir, 'spec.json');
    writeFileSync(path, JSON.stringify(spec));
    const r = await runMain(['run', path, '--backend', 'cpu', '-v']);
    expect(r.code, r.err).toBe(0);
    // -v names the backend that ran (not the flag's value) and the kernel
    expect(r.err).toMatch(/^qgemm: fullyConnected ran on cpu, kernel cpu-[\w-]+, [\d.]+ m?s\n$/);
    const got = parseNpy(readFileSync(join(dir, 'y.npy')));
    const want = await fullyConnected(
      { data: x, shape: [2, 75] },
      {
        input: { scale: 0.02, zeroPoint: 1 },
        weights: { data: fcW, shape: [4, 75], scale: 0.003 },
        bias: Int32Array.from(bias),
        output: { scale: 0.1, zeroPoint: -5 },
      },
      { backend: 'cpu' },
    );
    expect(Array.from(got.data as Int8Array)).toEqual(Array.from(want.data));
  });

  it('bad fields exit 2 naming the field, nothing written', async () => {
    for (const [patch, field] of [
      [{ kernelPath: 'fast' }, 'kernelPath'],
      [{ padding: 'FULL' }, 'padding'],
      [{ stride: [0, 1] }, 'stride'],
      [{ output: { scale: -1, zeroPoint: 0 } }, 'output.scale'],
      [{ bias: [1, 2] }, 'bias'],
      [{ filter: { data: 'w.npy', scale: [0.5, 0.25] } }, 'filter.scale'],
    ] as const) {
      const dir = freshDir(files());
      const spec = {
        op: 'conv2d',
        input: { data: 'x.npy', scale: 0.02, zeroPoint: 0 },
        filter: { data: 'w.npy', scale: 0.01 },
        output: { scale: 0.05, zeroPoint: 0 },
        padding: 'VALID',
        out: 'y.npy',
        ...patch,
      };
      const path = join(dir, 'spec.json');
      writeFileSync(path, JSON.stringify(spec));
      const line = expectOneLine(await runMain(['run', path, '--backend', 'cpu']), 2, field);
      expect(line).not.toMatch(/Int32Array|Float32Array/); // the spec's terms: a JSON array
      expectNothingWritten(dir, join(dir, 'y.npy'));
    }
  });
});

describe('--max-memory counts what a layer or a graph makes, not only what it reads', () => {
  it('tiny files whose layers make a large result: exit 2 naming out, nothing written; under the default cap they run', async () => {
    const i8 = (shape: number[], v: number) => npy('int8', shape, new Int8Array(shape.reduce((a, b) => a * b, 1)).fill(v));
    // FULLY_CONNECTED [2000, 1] x [2000, 1]: 4 KB read, a [2000, 2000] result (4 M values, 16 MB of accumulators).
    const fc = { op: 'fullyConnected', input: { data: 'x.npy', scale: 0.5, zeroPoint: 0 }, weights: { data: 'w.npy', scale: 0.01 } };
    // A 1x1 conv of a [1, 32, 32, 1] image to 1024 channels (1 M values), then a requantize.
    const conv = { op: 'conv2d', filter: { data: 'f.npy', scale: 0.01 }, padding: 'SAME', output: { scale: 0.25, zeroPoint: 0 } };
    const seq = {
      op: 'sequential',
      input: { data: 'xs.npy', scale: 0.5, zeroPoint: 0 },
      layers: [conv, { op: 'requantize', output: { scale: 0.3, zeroPoint: 1 } }],
      out: 'S.npy',
    };
    const dir = freshDir({
      'x.npy': i8([2000, 1], 3),
      'w.npy': i8([2000, 1], 2),
      'xs.npy': i8([1, 32, 32, 1], 3),
      'f.npy': i8([1024, 1, 1, 1], 2),
      'fc.json': JSON.stringify({ ...fc, output: { scale: 0.25, zeroPoint: 0 }, out: 'C.npy' }),
      'seq.json': JSON.stringify(seq),
    });
    for (const spec of ['fc.json', 'seq.json']) {
      expect(expectOneLine(await runMain(['run', join(dir, spec), '--max-memory', '2M']), 2, 'out')).toMatch(
        /over the 2\.0 MiB memory cap/,
      );
      expectNothingWritten(dir);
    }
    for (const spec of ['fc.json', 'seq.json']) expect((await runMain(['run', join(dir, spec)])).code).toBe(0);
  });
});

describe('qgemm run with a sequential spec (fullyConnected layers)', () => {
  const layerFiles = () => ({
    'x.npy': npy(
      'int8',
      [3, 12],
      Int8Array.from({ length: 36 }, (_, i) => ((i * 41) % 255) - 127),
    ),
    'w1.npy': npy(
      'int8',
      [8, 12],
      Int8Array.from({ length: 96 }, (_, i) => ((i * 23) % 255) - 127),
    ),
    'w2.npy': npy(
      'int8',
      [5, 8],
      Int8Array.from({ length: 40 }, (_, i) => ((i * 31) % 255) - 127),
    ),
  });
  const spec = {
    op: 'sequential',
    input: { data: 'x.npy', scale: 0.02, zeroPoint: -1 },
    layers: [
      {
        op: 'fullyConnected',
        weights: { data: 'w1.npy', scale: 0.004 },
        bias: [1, 2, 3, 4, 5, 6, 7, 8],
        output: { scale: 0.05, zeroPoint: -128 },
        activation: 'RELU',
      },
      {
        op: 'fullyConnected',
        weights: { data: 'w2.npy', scale: [0.01, 0.02, 0.03, 0.004, 0.005] },
        output: { scale: 0.1, zeroPoint: 3 },
        kernelPath: 'optimized',
      },
    ],
    out: 'y.npy',
  };
  for (const backend of ['cpu', 'webgpu'] as const)
    it(`${backend}: == fullyConnected layer by layer on the CPU`, async () => {
      const dir = freshDir(layerFiles());
      const path = join(dir, 'spec.json');
      writeFileSync(path, JSON.stringify(spec));
      const r = await runMain(['run', path, '--backend', backend]);
      expect(r.code, r.err).toBe(0);
      const got = parseNpy(readFileSync(join(dir, 'y.npy')));
      const f = layerFiles();
      const x = parseNpy(f['x.npy']).data as Int8Array;
      const h = await fullyConnected(
        { data: x, shape: [3, 12] },
        {
          input: { scale: 0.02, zeroPoint: -1 },
          weights: { data: parseNpy(f['w1.npy']).data as Int8Array, shape: [8, 12], scale: 0.004 },
          bias: Int32Array.of(1, 2, 3, 4, 5, 6, 7, 8),
          output: { scale: 0.05, zeroPoint: -128 },
          activation: 'RELU',
        },
        { backend: 'cpu' },
      );
      const want = await fullyConnected(
        h,
        {
          input: { scale: 0.05, zeroPoint: -128 },
          weights: { data: parseNpy(f['w2.npy']).data as Int8Array, shape: [5, 8], scale: Float32Array.of(0.01, 0.02, 0.03, 0.004, 0.005) },
          output: { scale: 0.1, zeroPoint: 3 },
          kernelPath: 'optimized',
        },
        { backend: 'cpu' },
      );
      expect(got.shape).toEqual([3, 5]);
      expect(Array.from(got.data as Int8Array)).toEqual(Array.from(want.data));
    });

  it("an out that is a layer's weights file names that layer's field, the file left as it was", async () => {
    const dir = freshDir(layerFiles());
    const path = join(dir, 'spec.json');
    writeFileSync(path, JSON.stringify({ ...spec, out: 'w2.npy' }));
    const before = readFileSync(join(dir, 'w2.npy'));
    const line = expectOneLine(await runMain(['run', path, '--backend', 'cpu']), 2, 'out');
    expect(line).toMatch(/is the same file as layers\[1\]\.weights\.data;/);
    expect(readFileSync(join(dir, 'w2.npy'))).toEqual(before);
    // A bad file of a layer is named once by its layer (not layers[1].layers[1]).
    writeFileSync(
      path,
      JSON.stringify({ ...spec, layers: [spec.layers[0], { ...spec.layers[1], weights: { data: 'none.npy', scale: 0.1 } }] }),
    );
    expectOneLine(await runMain(['run', path, '--backend', 'cpu']), 2, 'layers[1].weights.data');
  });

  it('a bad field of a later layer names the layer', async () => {
    const dir = freshDir(layerFiles());
    const path = join(dir, 'spec.json');
    writeFileSync(path, JSON.stringify({ ...spec, layers: [spec.layers[0], { ...spec.layers[1], activation: 'TANH' }] }));
    expectOneLine(await runMain(['run', path, '--backend', 'cpu']), 2, 'layers[1].activation');
    expectNothingWritten(dir, join(dir, 'y.npy'));
  });
});

describe('qgemm run with a sequential spec of mixed layers (conv2d -> add -> fullyConnected)', () => {
  const graphFiles = () => ({
    'x.npy': npy(
      'int8',
      [1, 6, 6, 4],
      Int8Array.from({ length: 144 }, (_, i) => ((i * 41) % 255) - 127),
    ),
    'f.npy': npy(
      'int8',
      [4, 3, 3, 4],
      Int8Array.from({ length: 144 }, (_, i) => ((i * 23) % 255) - 127),
    ),
    'g.npy': npy('int8', [4], Int8Array.of(5, -7, 0, -128)),
    'w.npy': npy(
      'int8',
      [3, 144],
      Int8Array.from({ length: 432 }, (_, i) => ((i * 31) % 255) - 127),
    ),
    'w5.npy': npy(
      'int8',
      [3, 5],
      Int8Array.from({ length: 15 }, (_, i) => i - 7),
    ),
  });
  const spec = {
    op: 'sequential',
    input: { data: 'x.npy', scale: 0.02, zeroPoint: -1 },
    inputs: { shift: { data: 'g.npy', scale: 0.025, zeroPoint: 2 } },
    layers: [
      {
        op: 'conv2d',
        name: 'conv',
        filter: { data: 'f.npy', scale: [0.004, 0.002, 0.003, 0.005] },
        bias: [10, -20, 30, -40],
        padding: 'SAME',
        output: { scale: 0.05, zeroPoint: -10 },
        activation: 'RELU',
      },
      { op: 'add', name: 'sum', inputs: ['conv', 'shift'], output: { scale: 0.1, zeroPoint: 1 }, activation: 'RELU_N1_TO_1' },
      { op: 'fullyConnected', weights: { data: 'w.npy', scale: 0.003 }, output: { scale: 0.1, zeroPoint: 3 }, kernelPath: 'optimized' },
    ],
    out: 'y.npy',
  };
  /** The same three layers through conv2d(), elementwise() (the add on `addPath`) and fullyConnected() on the CPU. */
  async function layerByLayer(addPath: 'xnnpack' | 'builtin'): Promise<Int8Array> {
    const f = graphFiles();
    const data = (k: keyof typeof f) => parseNpy(f[k]).data as Int8Array;
    const c = await conv2d(
      { data: data('x.npy'), shape: [1, 6, 6, 4] },
      {
        input: { scale: 0.02, zeroPoint: -1 },
        filter: { data: data('f.npy'), shape: [4, 3, 3, 4], scale: Float32Array.of(0.004, 0.002, 0.003, 0.005) },
        bias: Int32Array.of(10, -20, 30, -40),
        padding: 'SAME',
        output: { scale: 0.05, zeroPoint: -10 },
        activation: 'RELU',
      },
      { backend: 'cpu' },
    );
    const clampPath = addPath === 'xnnpack' ? 'xnnpack' : 'optimized';
    const [lo, hi] = activationRange('RELU_N1_TO_1', { scale: Math.fround(0.1), zeroPoint: 1 }, 'int8', clampPath);
    const s = await elementwise(
      {
        op: 'add',
        a: { data: c.data, shape: c.shape, scale: Math.fround(0.05), zeroPoint: -10 },
        b: { data: data('g.npy'), shape: [4], scale: Math.fround(0.025), zeroPoint: 2 },
        output: { scale: Math.fround(0.1), zeroPoint: 1, min: lo, max: hi },
        kernelPath: addPath,
      },
      { backend: 'cpu' },
    );
    const y = await fullyConnected(
      { data: s.data, shape: s.shape },
      {
        input: { scale: 0.1, zeroPoint: 1 },
        weights: { data: data('w.npy'), shape: [3, 144], scale: 0.003 },
        output: { scale: 0.1, zeroPoint: 3 },
        kernelPath: 'optimized',
      },
      { backend: 'cpu' },
    );
    expect(y.shape).toEqual([1, 3]);
    return y.data as Int8Array;
  }
  it("the add's kernel paths give different outputs on this graph (a tie at -0.5 wherever the conv clamps to 0)", async () => {
    expect(Array.from(await layerByLayer('xnnpack'))).not.toEqual(Array.from(await layerByLayer('builtin')));
  });
  for (const backend of ['cpu', 'webgpu'] as const)
    for (const addPath of [undefined, 'builtin'] as const)
      it(`${backend}: == the layers one by one on the CPU${backend === 'webgpu' ? ', intermediates on the GPU' : ''}, add kernelPath ${addPath ?? 'xnnpack (default)'}`, async () => {
        const dir = freshDir(graphFiles());
        const path = join(dir, 'spec.json');
        const layers = addPath ? [spec.layers[0], { ...spec.layers[1], kernelPath: addPath }, spec.layers[2]] : spec.layers;
        writeFileSync(path, JSON.stringify({ ...spec, layers }));
        const r = await runMain(['run', path, '--backend', backend, '-v']);
        expect(r.code, r.err).toBe(0);
        expect(r.err).toContain(`conv2d -> add -> fullyConnected) ran on ${backend}`);
        const got = parseNpy(readFileSync(join(dir, 'y.npy')));
        expect(got.shape).toEqual([1, 3]);
        expect(Array.from(got.data as Int8Array)).toEqual(Array.from(await layerByLayer(addPath ?? 'xnnpack')));
      });

  it('a requantize layer between them: == the library graph on the CPU', async () => {
    const dir = freshDir(graphFiles());
    const path = join(dir, 'spec.json');
    const rq = { op: 'requantize', name: 'rq', output: { scale: 0.045, zeroPoint: -2 } };
    const fc = { ...spec.layers[2], input: 'rq' };
    writeFileSync(path, JSON.stringify({ ...spec, layers: [spec.layers[0], spec.layers[1], rq, fc] }));
    const r = await runMain(['run', path, '--backend', 'webgpu']);
    expect(r.code, r.err).toBe(0);
    const got = parseNpy(readFileSync(join(dir, 'y.npy')));
    const parsed = parseSequentialSpec(JSON.parse(readFileSync(path, 'utf8')), dir, (p) => readFileSync(p));
    expect(parsed.layers[2]).toEqual({ op: 'requantize', name: 'rq', params: { output: { scale: Math.fround(0.045), zeroPoint: -2 } } });
    const want = await runLayers(parsed.layers, parsed.inputs, { inputs: parsed.quant, backend: 'cpu' });
    expect(Array.from(got.data as Int8Array)).toEqual(Array.from(want.data));
  });

  for (const [what, layers, field] of [
    [
      'a name read before it is made',
      [spec.layers[0], { ...spec.layers[1], inputs: ['conv', 'later'] }, { ...spec.layers[2], name: 'later' }],
      'layers[1].inputs[1]',
    ],
    ['an elementwise op with one input', [spec.layers[0], { ...spec.layers[1], inputs: ['conv'] }, spec.layers[2]], 'layers[1].inputs'],
    [
      'FC weights that are not [N, K]',
      [spec.layers[0], spec.layers[1], { ...spec.layers[2], weights: { data: 'f.npy', scale: 0.003 } }],
      'layers[2].weights.data',
    ],
    [
      'a FC whose K does not divide its input',
      [spec.layers[0], spec.layers[1], { ...spec.layers[2], weights: { data: 'w5.npy', scale: 0.003 } }],
      'layers[2].weights.data', // the weights that do not fit the output it reads (the spec has no layers[2].input.shape)
    ],
    ['a stray key', [spec.layers[0], { ...spec.layers[1], rounding: 'double' }, spec.layers[2]], 'layers[1].rounding'],
    [
      "a GEMM layer's kernel path on an add",
      [spec.layers[0], { ...spec.layers[1], kernelPath: 'optimized' }, spec.layers[2]],
      'layers[1].kernelPath',
    ],
  ] as const)
    it(`${what}: exit 2 naming ${field}, nothing written`, async () => {
      const dir = freshDir(graphFiles());
      const path = join(dir, 'spec.json');
      writeFileSync(path, JSON.stringify({ ...spec, layers }));
      expectOneLine(await runMain(['run', path, '--backend', 'cpu']), 2, field);
      expectNothingWritten(dir, join(dir, 'y.npy'));
    });
});
