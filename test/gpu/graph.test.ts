// GPU tier: Sequential graphs of mixed layers (src/layers/sequential.ts): CONV_2D, ADD/SUB/MUL and
// FULLY_CONNECTED, reading earlier outputs and graph inputs by name, run on one GpuContext with the
// intermediate tensors kept on the GPU, equal runLayers() (the layers one by one on the CPU) bit for bit.
// The graphs cover a residual add of the graph input, a flatten into a FULLY_CONNECTED, a convolution
// reading a GPU matrix whose rows are padded (5 channels, stride 8), a broadcast elementwise op with a
// second graph input, a requantize, an elementwise op as the last layer, int8 and uint8, the xnnpack and
// optimized paths, and add/sub/mul on both elementwise kernel paths. Read-backs are counted: one per run,
// of the last layer; a later run, new input included, replays every GEMM's plan (src/scheduler/plans.ts). Bad graphs are InputErrors naming the field; an output above maxBufferSize is a
// LimitExceededError.

import { afterAll, describe, expect, test, vi } from 'vitest';
import { InputError } from '../../src/errors.ts';
import type { KernelPath, QuantParams, Tensor } from '../../src/layers/layers.ts';
import { runLayers, Sequential, type SequentialLayer } from '../../src/layers/sequential.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { Rng } from '../../tools/random.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

type Dtype = 'int8' | 'uint8';

function maker(r: Rng, dtype: Dtype) {
  const quant = (): QuantParams => ({
    scale: Math.fround(0.005 + (r.next() % 1000) / 20000),
    zeroPoint: dtype === 'uint8' ? 64 + (r.next() % 128) : (r.next() % 128) - 64,
  });
  const values = (n: number) =>
    dtype === 'uint8' ? Uint8Array.from({ length: n }, () => r.next() % 256) : Int8Array.from({ length: n }, () => (r.next() % 256) - 128);
  const weights = (n: number) =>
    dtype === 'uint8' ? Uint8Array.from({ length: n }, () => r.next() % 256) : Int8Array.from({ length: n }, () => (r.next() % 255) - 127);
  const weightQuant = (channels: number) =>
    dtype === 'int8'
      ? { scale: Float32Array.from({ length: channels }, () => Math.fround(0.001 + (r.next() % 100) / 20000)) }
      : { scale: Math.fround(0.002), zeroPoint: 100 + (r.next() % 50) };
  const bias = (n: number) => Int32Array.from({ length: n }, () => (r.next() % 4001) - 2000);
  return { quant, values, weights, weightQuant, bias };
}

/** conv (SAME, stride 1, O = C) -> add(conv, input) -> FC over the flattened [B, H * W * O]. */
function residualGraph(r: Rng, dtype: Dtype, path: KernelPath, [B, H, W, C]: number[], N: number) {
  const m = maker(r, dtype);
  const inQ = m.quant();
  const convQ = m.quant();
  const addQ = m.quant();
  const layers: SequentialLayer[] = [
    {
      op: 'conv2d',
      name: 'conv',
      params: {
        filter: { data: m.weights(C * 9 * C), shape: [C, 3, 3, C], ...m.weightQuant(C) },
        bias: m.bias(C),
        padding: 'SAME',
        output: convQ,
        activation: 'RELU',
        kernelPath: path,
      },
    },
    { op: 'add', name: 'residual', inputs: ['conv', 'input'], params: { output: addQ, activation: 'RELU6' } },
    {
      op: 'fullyConnected',
      params: {
        weights: { data: m.weights(N * H * W * C), shape: [N, H * W * C], ...m.weightQuant(N) },
        bias: m.bias(N),
        output: m.quant(),
        kernelPath: path,
      },
    },
  ];
  const input: Tensor = { data: m.values(B * H * W * C), shape: [B, H, W, C] };
  return { layers, input, inputs: { input: inQ } };
}

/** conv (5 channels: GPU rows padded to 8) -> conv stride 2 VALID -> mul by a per-channel graph input -> requantize -> sub(that, c2). */
function paddedRowsGraph(r: Rng, dtype: Dtype, path: KernelPath) {
  const m = maker(r, dtype);
  const layers: SequentialLayer[] = [
    {
      op: 'conv2d',
      name: 'c1',
      params: {
        filter: { data: m.weights(5 * 2 * 2 * 3), shape: [5, 2, 2, 3], ...m.weightQuant(5) },
        padding: 'SAME',
        output: m.quant(),
        kernelPath: path,
      },
    },
    {
      op: 'conv2d',
      name: 'c2',
      params: {
        filter: { data: m.weights(6 * 3 * 3 * 5), shape: [6, 3, 3, 5], ...m.weightQuant(6) },
        bias: m.bias(6),
        stride: [2, 2],
        padding: 'VALID',
        output: m.quant(),
        activation: 'RELU',
        kernelPath: path,
      },
    },
    { op: 'mul', name: 'scaled', inputs: ['c2', 'gain'], params: { output: m.quant() } },
    { op: 'requantize', name: 'rescaled', params: { output: m.quant() } },
    { op: 'sub', inputs: ['rescaled', 'c2'], params: { output: m.quant(), activation: 'RELU_N1_TO_1' } },
  ];
  const inputs = { input: m.quant(), gain: m.quant() };
  const tensors = { input: { data: m.values(2 * 9 * 7 * 3), shape: [2, 9, 7, 3] }, gain: { data: m.values(6), shape: [6] } };
  return { layers, tensors, inputs };
}

/** Counts the context's read-backs (gemm with read-back, read) over fn. */
async function readBacks(ctx: GpuContext, fn: () => Promise<unknown>): Promise<number> {
  const gemm = vi.spyOn(ctx, 'gemm');
  const read = vi.spyOn(ctx, 'read');
  try {
    await fn();
    return gemm.mock.calls.length + read.mock.calls.length;
  } finally {
    gemm.mockRestore();
    read.mockRestore();
  }
}

function expectSame(got: Tensor, want: Tensor): void {
  expect(got.shape).toEqual(want.shape);
  const g = Array.from(got.data);
  const w = Array.from(want.data);
  const bad = g.flatMap((v, i) => (v === w[i] ? [] : [i]));
  expect(bad.length === 0 ? 'exact' : `${bad.length} of ${w.length} differ, first at ${bad[0]}: ${g[bad[0]]} != ${w[bad[0]]}`).toBe(
    'exact',
  );
  expect(g.length).toBe(w.length);
}

describe.skipIf(!gpu)('Sequential graphs on WebGPU == runLayers on the CPU', () => {
  for (const [dtype, path] of [
    ['int8', 'xnnpack'],
    ['uint8', 'optimized'],
  ] as const) {
    test(`conv -> add(residual) -> FC (flatten), ${dtype}, ${path}: one read-back per run`, async () => {
      const r = new Rng(dtype === 'int8' ? 41 : 42);
      const { layers, input, inputs } = residualGraph(r, dtype, path, [2, 6, 5, 4], 7);
      const want = await runLayers(layers, input, { inputs, backend: 'cpu' });
      expect(want.shape).toEqual([2, 7]);
      const ctx = await GpuContext.create({ device: gpu!.device });
      const seq = await Sequential.create(ctx, layers, { inputs });
      let got: Tensor | undefined;
      expect(await readBacks(ctx, async () => (got = await seq.run(input)))).toBe(1);
      expectSame(got!, want);
      // Later runs, new input included, replay every GEMM's plan (the conv's and the FC's): none is made.
      const plans = (ctx as unknown as { resources: { plans: { add(...a: unknown[]): void; addOnGpu(...a: unknown[]): unknown } } })
        .resources.plans;
      const made = [vi.spyOn(plans, 'add'), vi.spyOn(plans, 'addOnGpu')];
      try {
        expectSame(await seq.run(input), want); // the prepacked weights again
        const next = { ...input, data: input.data.map((v) => v ^ 0x55) as typeof input.data };
        expectSame(await seq.run(next), await runLayers(layers, next, { inputs, backend: 'cpu' }));
        expect(made.map((m) => m.mock.calls.length)).toEqual([0, 0]);
      } finally {
        for (const m of made) m.mockRestore();
      }
      seq.destroy();
      ctx.destroy();
    });

    test(`conv (rows padded on the GPU) -> conv -> mul by a graph input -> requantize -> sub, ${dtype}, ${path}`, async () => {
      const r = new Rng(dtype === 'int8' ? 43 : 44);
      const { layers, tensors, inputs } = paddedRowsGraph(r, dtype, path);
      const want = await runLayers(layers, tensors, { inputs, backend: 'cpu' });
      expect(want.shape).toEqual([2, 4, 3, 6]);
      const ctx = await GpuContext.create({ device: gpu!.device });
      const seq = await Sequential.create(ctx, layers, { inputs });
      let got: Tensor | undefined;
      expect(await readBacks(ctx, async () => (got = await seq.run(tensors)))).toBe(1);
      expectSame(got!, want);
      seq.destroy();
      ctx.destroy();
    });
  }

  test('add -> sub -> mul on each elementwise kernelPath, on ties: GPU == CPU, and the paths differ', async () => {
    // a [16, 1] and b [1, 16], values -8..7 at scales 1/2 and 1/4: exact ties at every op
    const values = Int8Array.from({ length: 16 }, (_, i) => i - 8);
    const tensors = { a: { data: values, shape: [16, 1] }, b: { data: values, shape: [1, 16] } };
    const inputs = { a: { scale: 0.5, zeroPoint: 0 }, b: { scale: 0.25, zeroPoint: 0 } };
    const graph = (kernelPath?: 'builtin'): SequentialLayer[] => [
      { op: 'add', name: 's', inputs: ['a', 'b'], params: { output: { scale: 1, zeroPoint: 0 }, kernelPath } },
      { op: 'sub', name: 'd', inputs: ['s', 'b'], params: { output: { scale: 2, zeroPoint: 1 }, kernelPath } },
      { op: 'mul', inputs: ['d', 'a'], params: { output: { scale: 0.5, zeroPoint: -1 }, activation: 'RELU6', kernelPath } },
    ];
    const ctx = await GpuContext.create({ device: gpu!.device });
    const outs: number[][] = [];
    for (const kernelPath of [undefined, 'builtin'] as const) {
      const want = await runLayers(graph(kernelPath), tensors, { inputs, backend: 'cpu' });
      const seq = await Sequential.create(ctx, graph(kernelPath), { inputs });
      expectSame(await seq.run(tensors), want);
      seq.destroy();
      outs.push(Array.from(want.data));
    }
    expect(outs[0]).not.toEqual(outs[1]);
    ctx.destroy();
  });

  test("an elementwise layer's output above maxBufferSize is a LimitExceededError, as the op's own buffers are", async () => {
    // a [100, 1] + [1, 60] add: 6000 output bytes; inputs of 100 and 60 bytes
    const values = (n: number) => Int8Array.from({ length: n }, (_, i) => (i % 200) - 100);
    const tensors = { a: { data: values(100), shape: [100, 1] }, b: { data: values(60), shape: [1, 60] } };
    const inputs = { a: { scale: 0.5, zeroPoint: 0 }, b: { scale: 0.25, zeroPoint: 0 } };
    const layers: SequentialLayer[] = [{ op: 'add', inputs: ['a', 'b'], params: { output: { scale: 1, zeroPoint: 0 } } }];
    const ctx = await GpuContext.create({ device: gpu!.device, limits: { maxBufferSize: 4096 } });
    const seq = await Sequential.create(ctx, layers, { inputs });
    await expect(seq.run(tensors)).rejects.toMatchObject({ name: 'LimitExceededError', limit: 'maxBufferSize' });
    seq.destroy();
    ctx.destroy();
  });

  test('bad graphs are InputErrors naming the field, before any GPU work', async () => {
    const r = new Rng(45);
    const ctx = await GpuContext.create({ device: gpu!.device });
    const { layers, input, inputs } = residualGraph(r, 'int8', 'xnnpack', [1, 4, 4, 4], 3);
    const field = async (ls: SequentialLayer[], opts = { inputs }, x: unknown = input) => {
      const e = await (async () => (await Sequential.create(ctx, ls, opts)).run(x as Tensor))().catch((err) => err);
      expect(e).toBeInstanceOf(InputError);
      return (e as InputError).field;
    };
    const at = (i: number, patch: object) => layers.map((l, k) => (k === i ? ({ ...l, ...patch } as SequentialLayer) : l));
    expect(await field(at(1, { inputs: ['conv', 'nowhere'] }))).toBe('layers[1].params.b');
    expect(await field(at(1, { inputs: ['conv', 'layers[2]'] }))).toBe('layers[1].inputs[1]');
    expect(await field(at(1, { name: 'conv' }))).toBe('layers[1].name');
    expect(await field(layers, { inputs: {} as typeof inputs })).toBe('layers[0].params.input');
    expect(await field(at(1, { params: { a: { scale: 1, zeroPoint: 0 }, output: inputs.input } }))).toBe('layers[1].params.a');
    expect(await field(layers, { inputs }, { data: new Int8Array(4 * 4 * 5), shape: [1, 4, 4, 5] })).toBe('layers[0].params.filter.shape');
    expect(await field(layers, { inputs }, { data: new Uint8Array(64), shape: [1, 4, 4, 4] })).toBe('input.data');
    expect(await field(layers, { inputs }, { input, extra: input })).toBe('inputs.extra');
    const fc = layers[2] as Extract<SequentialLayer, { op: 'fullyConnected' }>;
    const wide = { ...fc, params: { ...fc.params, weights: { ...fc.params.weights, data: new Int8Array(3 * 48), shape: [3, 48] } } };
    // the weights that do not fit the output the layer reads (layers[2].input is a name, with no shape)
    expect(await field([layers[0], layers[1], wide as SequentialLayer])).toBe('layers[2].params.weights.shape');
    ctx.destroy();
  });
});
