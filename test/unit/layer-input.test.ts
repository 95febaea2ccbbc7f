// Unit tier for what the TFLite layers (src/layers/) refuse before anything runs (pack -> gemm ->
// output never starts): fullyConnected, conv2d, checkLayers and runLayers on the CPU backend. One
// validation serves every backend, so each case here is an InputError naming the field as the caller
// wrote it (the WebGPU side of the same checks: test/gpu/layers.test.ts; the CLI's: test/cli/layer-input-cli.test.ts).

import { describe, expect, test } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { type Conv2dParams, conv2d, fullyConnected, type FullyConnectedParams, type Tensor } from '../../src/layers/layers.ts';
import { checkLayers, runLayers, type SequentialLayer } from '../../src/layers/sequential.ts';
import { checkPatchGeometry, type PatchGeometry } from '../../src/pack/patches.ts';

const fcInput = (): Tensor => ({ data: Int8Array.of(1, -2, 3, 4, 5, -6), shape: [2, 3] });
const fcParams = (): FullyConnectedParams => ({
  input: { scale: 0.1, zeroPoint: 0 },
  weights: { data: Int8Array.of(1, 2, 3, -4, 5, 6), shape: [2, 3], scale: 0.1 },
  output: { scale: 0.1, zeroPoint: 0 },
});
const convInput = (): Tensor => ({ data: Int8Array.from({ length: 12 }, (_, i) => i - 6), shape: [1, 2, 2, 3] });
const convParams = (): Conv2dParams => ({
  input: { scale: 0.1, zeroPoint: 0 },
  filter: { data: Int8Array.of(1, -1, 2), shape: [1, 1, 1, 3], scale: 0.1 },
  padding: 'SAME',
  output: { scale: 0.1, zeroPoint: 0 },
});

/** The InputError a call rejects with (fails the test when it resolves or throws something else). */
async function refusal(p: Promise<unknown> | (() => unknown)): Promise<InputError> {
  let e: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (caught) {
    e = caught;
  }
  expect(e, 'expected an InputError').toBeInstanceOf(InputError);
  return e as InputError;
}
const fc = (p: FullyConnectedParams, x = fcInput()) => fullyConnected(x, p, { backend: 'cpu' });
const conv = (p: Conv2dParams, x = convInput()) => conv2d(x, p, { backend: 'cpu' });

describe('1: scales are checked as the float32 a .tflite file stores (positive, finite, normal)', () => {
  for (const [what, scale] of [
    ['underflows to 0', 1e-46],
    ['overflows to Infinity', 1e39],
    ['is subnormal', 1e-40],
  ] as const) {
    test(`fullyConnected and conv2d: a scale that ${what} in float32`, async () => {
      expect((await refusal(fc({ ...fcParams(), input: { scale, zeroPoint: 0 } }))).field).toBe('params.input.scale');
      expect((await refusal(fc({ ...fcParams(), output: { scale, zeroPoint: 0 } }))).field).toBe('params.output.scale');
      expect((await refusal(fc({ ...fcParams(), weights: { ...fcParams().weights, scale } }))).field).toBe('params.weights.scale');
      expect((await refusal(conv({ ...convParams(), input: { scale, zeroPoint: 0 } }))).field).toBe('params.input.scale');
      expect((await refusal(conv({ ...convParams(), output: { scale, zeroPoint: 0 } }))).field).toBe('params.output.scale');
    });
  }
  test('a graph input declared with a scale that is 0 in float32', async () => {
    const layers: SequentialLayer[] = [{ op: 'fullyConnected', params: { ...fcParams(), input: undefined } }];
    const e = await refusal(() => checkLayers(layers, fcInput(), { inputs: { input: { scale: 1e-46, zeroPoint: 0 } } }));
    expect(e.field).toBe('inputs.input.scale');
  });
});

describe('2: conv2d shapes are integers >= 1 on every backend', () => {
  test('a negative filter shape', async () => {
    const p = { ...convParams(), filter: { data: Int8Array.of(1), shape: [1, -1, -1, 1] as [number, number, number, number], scale: 0.1 } };
    const x = { data: Int8Array.of(1, 2, 3, 4), shape: [1, 2, 2, 1] };
    expect((await refusal(conv(p, x))).field).toBe('params.filter.shape');
    expect((await refusal(() => checkLayers([{ op: 'conv2d', params: p }], x))).field).toBe('layers[0].params.filter.shape');
  });
  test('a fractional input shape', async () => {
    const p = { ...convParams(), filter: { data: Int8Array.of(1), shape: [1, 1, 1, 1] as [number, number, number, number], scale: 0.1 } };
    expect((await refusal(conv(p, { data: Int8Array.of(1, 2, 3, 4, 5), shape: [1, 2.5, 2, 1] }))).field).toBe('input.shape');
  });
  test('negative input dimensions under SAME name the input shape, not a VALID-padding filter', async () => {
    const p = { ...convParams(), filter: { data: Int8Array.of(1), shape: [1, 1, 1, 1] as [number, number, number, number], scale: 0.1 } };
    const e = await refusal(conv(p, { data: Int8Array.of(1, 2, 3, 4), shape: [1, -2, -2, 1] }));
    expect(e.field).toBe('input.shape');
    expect(e.message).not.toMatch(/VALID/);
  });
  test('fullyConnected: a negative or empty weight shape, an input with no rows', async () => {
    const neg = { ...fcParams(), weights: { data: Int8Array.of(1, 2), shape: [-1, -2] as [number, number], scale: 0.1 } };
    expect((await refusal(fc(neg))).field).toBe('params.weights.shape');
    const empty = { ...fcParams(), weights: { data: new Int8Array(0), shape: [0, 3] as [number, number], scale: 0.1 } };
    expect((await refusal(fc(empty))).field).toBe('params.weights.shape');
    expect((await refusal(fc(fcParams(), { data: new Int8Array(0), shape: [0, 3] }))).field).toBe('input.shape');
  });
  test('conv2d: a batch of 0', async () => {
    expect((await refusal(conv(convParams(), { data: new Int8Array(0), shape: [0, 2, 2, 3] }))).field).toBe('input.shape');
  });
});

describe('3: weight zero points are range-checked by dtype, and input and weights share a dtype', () => {
  test('int8 weights with zeroPoint 1000, uint8 weights with 300 or -1', async () => {
    const w = fcParams().weights;
    expect((await refusal(fc({ ...fcParams(), weights: { ...w, zeroPoint: 1000 } }))).field).toBe('params.weights.zeroPoint');
    const u8 = (zeroPoint: number): FullyConnectedParams => ({
      input: { scale: 0.1, zeroPoint: 0 },
      weights: { data: Uint8Array.of(1, 2, 3, 4, 5, 6), shape: [2, 3], scale: 0.1, zeroPoint },
      output: { scale: 0.1, zeroPoint: 0 },
    });
    const x = { data: Uint8Array.of(1, 2, 3, 4, 5, 6), shape: [2, 3] };
    for (const z of [300, -1]) expect((await refusal(fc(u8(z), x))).field).toBe('params.weights.zeroPoint');
    const f = convParams().filter;
    expect((await refusal(conv({ ...convParams(), filter: { ...f, zeroPoint: -129 } }))).field).toBe('params.filter.zeroPoint');
  });
  test('int8 input with uint8 weights', async () => {
    const p = { ...fcParams(), weights: { ...fcParams().weights, data: Uint8Array.of(1, 2, 3, 4, 5, 6), zeroPoint: 128 } };
    expect((await refusal(fc(p))).field).toBe('input.data');
    const c = { ...convParams(), filter: { ...convParams().filter, data: Uint8Array.of(1, 2, 3) } };
    expect((await refusal(conv(c))).field).toBe('input.data');
  });
});

describe('4: conv2d with 0 channels is refused before any im2col work', () => {
  test('input [1, 100000, 100000, 0], filter [3, 1, 1, 0]', async () => {
    const p = { ...convParams(), filter: { data: new Int8Array(0), shape: [3, 1, 1, 0] as [number, number, number, number], scale: 0.1 } };
    const x = { data: new Int8Array(0), shape: [1, 100_000, 100_000, 0] };
    expect((await refusal(conv(p, x))).field).toBe('input.shape');
    // the graph checks every layer's parameters before the shapes of its inputs: the filter's 0 first
    expect((await refusal(() => checkLayers([{ op: 'conv2d', params: p }], x))).field).toBe('layers[0].params.filter.shape');
  });
});

/** fc (int8, K = 3, N = 2) -> add(fc, fc) -> ...: the elementwise layer's parameters vary. */
const graph = (add: Record<string, unknown>, tail: SequentialLayer[] = []): SequentialLayer[] => [
  { op: 'fullyConnected', name: 'fc', params: fcParams() },
  { op: 'add', name: 'sum', inputs: ['fc', 'fc'], params: { output: { scale: 0.2, zeroPoint: 0 }, ...add } } as SequentialLayer,
  ...tail,
];

describe('6: checkLayers checks every layer, elementwise ones included, before any device', () => {
  for (const [what, add, field] of [
    ['an output zero point out of range', { output: { scale: 0.2, zeroPoint: 1000 } }, 'layers[1].params.output.zeroPoint'],
    ['an output scale of 0 in float32', { output: { scale: 1e-46, zeroPoint: 0 } }, 'layers[1].params.output.scale'],
    ['an unknown kernelPath', { kernelPath: 'fast' }, 'layers[1].params.kernelPath'],
    ['an unknown activation', { activation: 'TANH' }, 'layers[1].params.activation'],
  ] as const) {
    test(`the last layer, an add with ${what}`, async () => {
      expect((await refusal(() => checkLayers(graph(add), fcInput()))).field).toBe(field);
    });
  }
  test('a requantize layer with an output zero point out of range, in a graph of no GEMM layer', async () => {
    const layers: SequentialLayer[] = [
      { op: 'requantize', params: { input: { scale: 0.1, zeroPoint: 0 }, output: { scale: 0.1, zeroPoint: -200 } } },
    ];
    expect((await refusal(() => checkLayers(layers, fcInput()))).field).toBe('layers[0].params.output.zeroPoint');
  });
});

describe('7: graph input names are data', () => {
  const two = (a: string, b: string): SequentialLayer[] => [
    {
      op: 'add',
      inputs: [a, b],
      params: { a: { scale: 0.1, zeroPoint: 0 }, b: { scale: 0.1, zeroPoint: 1 }, output: { scale: 0.2, zeroPoint: 0 } },
    },
  ];
  const t = (k: number): Tensor => ({ data: Int8Array.from({ length: 6 }, (_, i) => i * k - 7), shape: [2, 3] });
  test('inputs named "data" and "shape", and "__proto__" (an own key), by object and by Map', async () => {
    const want = await runLayers(two('a', 'b'), { a: t(3), b: t(-2) }, { backend: 'cpu' });
    expect(Array.from((await runLayers(two('data', 'shape'), { data: t(3), shape: t(-2) }, { backend: 'cpu' })).data)).toEqual(
      Array.from(want.data),
    );
    const named = Object.fromEntries([
      ['__proto__', t(3)],
      ['b', t(-2)],
    ]); // own data keys, as JSON.parse makes them
    expect(Object.keys(named)).toEqual(['__proto__', 'b']);
    const got = await runLayers(two('__proto__', 'b'), named, { backend: 'cpu' });
    expect(Array.from(got.data)).toEqual(Array.from(want.data));
    const byMap = await runLayers(
      two('data', 'b'),
      new Map([
        ['data', t(3)],
        ['b', t(-2)],
      ]),
      { backend: 'cpu' },
    );
    expect(Array.from(byMap.data)).toEqual(Array.from(want.data));
  });
});

describe('10: one limit on stride and dilation, stated in the message, on every backend', () => {
  test('a stride of 1e9 over a small input runs (one output pixel)', async () => {
    const r = await conv({ ...convParams(), stride: [1e9, 1e9] });
    expect(r.shape).toEqual([1, 1, 1, 1]);
  });
  test('the GPU patch packing (ctx.packPatches) states the same limit', () => {
    const g: PatchGeometry = {
      batch: 1,
      height: 2,
      width: 2,
      channels: 3,
      filterHeight: 1,
      filterWidth: 1,
      strideHeight: 1e9,
      strideWidth: 1,
      dilationHeight: 1,
      dilationWidth: 1,
      padTop: 0,
      padLeft: 0,
      outHeight: 1,
      outWidth: 2,
    };
    checkPatchGeometry(g, 12); // one output row: the stride moves no tap
    const e = (() => {
      try {
        checkPatchGeometry({ ...g, strideHeight: 2 ** 31 }, 12);
      } catch (x) {
        return x as InputError;
      }
    })();
    expect(e?.field).toBe('geometry.strideHeight');
    expect(e?.message).toMatch(/2147483647/);
  });
  test('a stride or a dilated filter extent beyond 2^31 - 1 names the field and the limit', async () => {
    const e = await refusal(conv({ ...convParams(), stride: [2 ** 31, 1] }));
    expect(e.field).toBe('params.stride');
    expect(e.message).toMatch(/2147483647/);
    const f = { data: Int8Array.of(1, 2, 3, 4, 5, 6, 7, 8, 9), shape: [1, 3, 1, 3] as [number, number, number, number], scale: 0.1 };
    const d = await refusal(conv({ ...convParams(), filter: f, dilation: [2 ** 30, 1] }));
    expect(d.field).toBe('params.dilation');
    expect(d.message).toMatch(/2147483647/);
  });
  test('VALID: a filter that fits but whose dilation does not names params.dilation, one that does not fit the filter', async () => {
    const x = { data: new Int8Array(27), shape: [1, 3, 3, 3] };
    const f = { data: new Int8Array(12), shape: [1, 2, 2, 3] as [number, number, number, number], scale: 0.1 };
    const dilated = await refusal(conv({ ...convParams(), filter: f, padding: 'VALID', dilation: [3, 1] }, x));
    expect([dilated.field, dilated.message]).toEqual(['params.dilation', expect.stringMatching(/extent 4 x 2.*3 x 3 input/)]);
    const big = { data: new Int8Array(48), shape: [1, 4, 4, 3] as [number, number, number, number], scale: 0.1 };
    expect((await refusal(conv({ ...convParams(), filter: big, padding: 'VALID' }, x))).field).toBe('params.filter.shape');
  });
});

describe('11: the field is the path the caller wrote', () => {
  test('an effective scale too large for the fixed-point stages, or for float32', async () => {
    const huge = {
      ...fcParams(),
      input: { scale: 1, zeroPoint: 0 },
      weights: { ...fcParams().weights, scale: 1 },
      output: { scale: 2 ** -32, zeroPoint: 0 },
    };
    expect((await refusal(fc({ ...huge, kernelPath: 'optimized' }))).field).toBe('params.output.scale');
    const convHuge = { ...convParams(), input: huge.input, output: huge.output, filter: { ...convParams().filter, scale: 1 } };
    expect((await refusal(conv({ ...convHuge, kernelPath: 'reference' }))).field).toBe('params.output.scale');
    const inf = {
      ...fcParams(),
      input: { scale: 1e20, zeroPoint: 0 },
      weights: { ...fcParams().weights, scale: 1e20 },
      output: { scale: 1e-20, zeroPoint: 0 },
    };
    expect((await refusal(fc(inf))).field).toBe('params.output.scale');
  });
  test('activation carries its prefix', async () => {
    expect((await refusal(fc({ ...fcParams(), activation: 'TANH' as 'RELU' }))).field).toBe('params.activation');
    const layers: SequentialLayer[] = [{ op: 'fullyConnected', params: { ...fcParams(), activation: 'TANH' as 'RELU' } }];
    expect((await refusal(() => checkLayers(layers, fcInput()))).field).toBe('layers[0].params.activation');
  });
  test("a bad add output zero point is the add's, not the next layer's input", async () => {
    const tail: SequentialLayer[] = [
      {
        op: 'fullyConnected',
        params: { ...fcParams(), input: undefined, weights: { ...fcParams().weights, shape: [3, 2], data: new Int8Array(6) } },
      },
    ];
    const e = await refusal(() => checkLayers(graph({ output: { scale: 0.2, zeroPoint: 1000 } }, tail), fcInput()));
    expect(e.field).toBe('layers[1].params.output.zeroPoint');
  });
  test("an add whose inputs do not broadcast is blamed on the add's inputs, either order (not a weight, not the graph's inputs)", async () => {
    const filter = { data: new Int8Array(3 * 3 * 3 * 2).fill(1), shape: [3, 3, 3, 2] as [number, number, number, number], scale: 0.25 };
    const c: SequentialLayer = { op: 'conv2d', name: 'c', params: { filter, output: { scale: 1, zeroPoint: 0 }, padding: 'SAME' } };
    const input = { data: new Int8Array(50), shape: [1, 5, 5, 2] }; // c's output is [1, 5, 5, 3]
    const orders: [string, string][] = [
      ['c', 'input'],
      ['input', 'c'],
    ];
    for (const inputs of orders) {
      const layers: SequentialLayer[] = [c, { op: 'add', inputs, params: { output: { scale: 1, zeroPoint: 0 } } }];
      const e = await refusal(() => runLayers(layers, { input }, { inputs: { input: { scale: 0.5, zeroPoint: 0 } }, backend: 'cpu' }));
      expect(e.field, JSON.stringify(inputs)).toBe('layers[1].inputs');
    }
  });
  test('a layer named "input" is blamed on its name, not on an input field the caller left out', async () => {
    const layers: SequentialLayer[] = [{ op: 'fullyConnected', name: 'input', params: fcParams() }];
    expect((await refusal(() => checkLayers(layers, fcInput()))).field).toBe('layers[0].name');
  });
});
