// Unit tier for the TFLite layers (src/layers/): fullyConnected and conv2d against a naive oracle that
// convolves the NHWC input directly (TFLite's SAME/VALID padding arithmetic written out again, padded
// positions at the input zero point) and requantizes with the BigInt oracles of each kernel path:
// XNNPACK's fp32 requantization, ruy's 'double-up' fixed point, gemmlowp's 'double' (conv reference), the
// FC reference's float64. int8 per-tensor and per-channel, legacy uint8 with a weight zero point, every
// activation, strides 1 and 2, dilation, on the CPU backend (the WebGPU backend: test/gpu/layers.test.ts).

import { describe, expect, test } from 'vitest';
import { type Conv2dParams, conv2d, fullyConnected, type FullyConnectedParams, type KernelPath } from '../../src/layers/layers.ts';
import { activationRange, deriveStages, float64Requantize, float64Scales } from '../../src/layers/derive.ts';
import { runLayers } from '../../src/layers/sequential.ts';
import { multiplyByQuantizedMultiplier } from '../../src/quant/fixedpoint.ts';
import { quantizeMultiplier } from '../../src/quant/quantize.ts';
import type { InputError } from '../../src/errors.ts';
import { CASES, PATHS, checkConv, checkFc } from '../support/layer-oracle.ts';

describe('TFLite layers on the CPU == the oracle of each kernel path', () => {
  for (const c of CASES)
    for (const path of PATHS) {
      test(`fullyConnected ${c.name} ${path}`, async () => {
        for (let seed = 1; seed <= 4; seed++) await checkFc(c, path, 'cpu', seed * 31 + c.name.length);
      });
      test(`conv2d ${c.name} ${path}`, async () => {
        let seed = 100;
        for (const padding of ['SAME', 'VALID'] as const)
          for (const stride of [1, 2]) for (const dilation of [1, 2]) await checkConv(c, path, 'cpu', seed++, padding, stride, dilation);
      });
    }

  test('CalculateActivationRangeQuantized', () => {
    expect(activationRange('RELU6', { scale: 0.05, zeroPoint: -128 }, 'int8')).toEqual([-128, -8]);
    expect(activationRange('RELU', { scale: 0.1, zeroPoint: 3 }, 'uint8')).toEqual([3, 255]);
    expect(activationRange('RELU_N1_TO_1', { scale: Math.fround(1 / 128), zeroPoint: 0 }, 'int8')).toEqual([-128, 127]);
    expect(activationRange('NONE', { scale: 1, zeroPoint: 0 }, 'uint8')).toEqual([0, 255]);
  });

  test('bad parameters are InputErrors naming the field', async () => {
    const input = { data: new Int8Array(6), shape: [2, 3] };
    const base: FullyConnectedParams = {
      input: { scale: 0.1, zeroPoint: 0 },
      weights: { data: new Int8Array(6), shape: [2, 3], scale: 0.1 },
      output: { scale: 0.1, zeroPoint: 0 },
    };
    const field = async (p: FullyConnectedParams) => (await fullyConnected(input, p, { backend: 'cpu' }).catch((e) => e)) as InputError;
    expect((await field({ ...base, weights: { ...base.weights, scale: new Float32Array(3) } })).field).toBe('params.weights.scale');
    expect((await field({ ...base, output: { scale: 0.1, zeroPoint: 200 } })).field).toBe('params.output.zeroPoint');
    expect((await field({ ...base, kernelPath: 'fast' as KernelPath })).field).toBe('params.kernelPath');
    expect((await field({ ...base, kernelPath: null as never })).field).toBe('params.kernelPath'); // null is not absent
    expect((await field({ ...base, activation: null as never })).field).toBe('params.activation');
    expect((await field({ ...base, bias: new Int32Array(3) })).field).toBe('params.bias');
    // An unknown backend is refused by name, by fullyConnected (through gemm) and by conv2d alike.
    expect(((await fullyConnected(input, base, { backend: 'gpu' as 'cpu' }).catch((e) => e)) as InputError).field).toBe('backend');
    const conv: Conv2dParams = {
      input: { scale: 0.1, zeroPoint: 0 },
      filter: { data: new Int8Array(3), shape: [1, 1, 1, 3], scale: 0.1 },
      padding: 'VALID',
      output: { scale: 0.1, zeroPoint: 0 },
    };
    const image = { data: new Int8Array(12), shape: [1, 2, 2, 3] };
    expect(((await conv2d(image, conv, { backend: 'gpu' as 'cpu' }).catch((e) => e)) as InputError).field).toBe('backend');
  });
});

describe('activationRange per kernel path: a bound on an exact half', () => {
  // RELU6 at output scale 4: 6 / 4 = 1.5; RELU_N1_TO_1 at scale 2: +-1 / 2 = +-0.5 (also in test/golden/tflite/)
  test('builtin paths round ties away from zero, XNNPACK to even', () => {
    for (const path of ['optimized', 'reference'] as const) {
      expect(activationRange('RELU6', { scale: 4, zeroPoint: 1 }, 'int8', path)).toEqual([1, 3]);
      expect(activationRange('RELU_N1_TO_1', { scale: 2, zeroPoint: 0 }, 'int8', path)).toEqual([-1, 1]);
    }
    expect(activationRange('RELU6', { scale: 4, zeroPoint: 1 }, 'int8', 'xnnpack')).toEqual([1, 2]);
    expect(activationRange('RELU6', { scale: 4, zeroPoint: 129 }, 'uint8', 'xnnpack')).toEqual([129, 130]);
    expect(activationRange('RELU_N1_TO_1', { scale: 2, zeroPoint: 0 }, 'int8', 'xnnpack')).toEqual([0, 0]);
    expect(activationRange('RELU6', { scale: 0.001, zeroPoint: 100 }, 'int8', 'xnnpack')).toEqual([100, 127]);
    expect(activationRange('NONE', { scale: 1, zeroPoint: 0 }, 'uint8', 'xnnpack')).toEqual([0, 255]);
    // f32(6 / s) + 21 = 72.50000381 in double, 72.5 once rounded to float32 as XNNPACK holds it: to even, 72.
    expect(activationRange('RELU6', { scale: Math.fround(0.11650484800338745), zeroPoint: 21 }, 'int8', 'xnnpack')).toEqual([21, 72]);
  });
});

// Where each kernel path rounds the product of the input and weight scales (src/layers/derive.ts), on
// scales where one ulp of it moves an output: the layer oracle models each, but its random layers are
// too shallow for one ulp to show.
describe('the scale product of each kernel path, to the ulp', () => {
  const f = Math.fround;
  const base = {
    op: 'CONV_2D' as const,
    input: { scale: f(0.020222149789333344), zeroPoint: 0 },
    weightScales: Float32Array.of(f(0.00026087884907610714)),
    output: { scale: f(0.009132150560617447), zeroPoint: 3 },
    channels: 1,
    dtype: 'uint8' as const,
    activation: 'NONE' as const,
  };
  test("optimized, uint8 weights: in * w rounded to float32 first (1270348745, not in double's 1270348713)", () => {
    expect(deriveStages({ ...base, path: 'optimized', weightType: 'uint8' })[0]).toMatchObject({ multiplier: 1270348745 });
  });
  test('xnnpack: f32(f32(in * w) / out)', () => {
    expect(deriveStages({ ...base, path: 'xnnpack', weightType: 'uint8' })[0]).toMatchObject({ scale: f(0.0005776877515017986) });
  });
  test('the FC reference: in * w / out in double (242.4999936 at 27273 rounds to 242, not 243)', () => {
    const s = float64Scales({ scale: f(0.040784802287817), zeroPoint: 0 }, Float32Array.of(f(0.0015848608454689384)), {
      scale: f(0.007269602734595537),
      zeroPoint: -128,
    });
    expect(float64Requantize(27273, s[0], -128, -128, 127)).toBe(114);
  });
  test("an effective scale in [2^30, 2^31) keeps QuantizeMultiplier's exponent 31 (double rounding)", () => {
    const st = deriveStages({
      ...base,
      path: 'optimized',
      weightType: 'int8',
      dtype: 'int8',
      input: { scale: f(1886762333 / 1024), zeroPoint: 0 },
      weightScales: Float32Array.of(1024),
      output: { scale: 1, zeroPoint: 86 },
    })[0];
    expect(st).toMatchObject({ exponent: 31 });
  });
});

describe('a requantize layer is TFLite QUANTIZE (8-bit to 8-bit): MultiplyByQuantizedMultiplier of q - zeroPoint', () => {
  for (const dtype of ['int8', 'uint8'] as const)
    test(`${dtype}, every input value, scales below and above 1`, async () => {
      const [lo, hi] = dtype === 'int8' ? [-128, 127] : [0, 255];
      const data = dtype === 'int8' ? Int8Array.from({ length: 256 }, (_, i) => i - 128) : Uint8Array.from({ length: 256 }, (_, i) => i);
      for (const [input, output] of [
        [
          { scale: Math.fround(0.05), zeroPoint: dtype === 'int8' ? -3 : 125 },
          { scale: Math.fround(0.07), zeroPoint: dtype === 'int8' ? 9 : 130 },
        ],
        [
          { scale: Math.fround(0.3), zeroPoint: dtype === 'int8' ? 0 : 128 },
          { scale: Math.fround(0.125), zeroPoint: dtype === 'int8' ? -5 : 100 },
        ],
      ]) {
        const y = await runLayers(
          [{ op: 'requantize', params: { output } }],
          { data, shape: [16, 16] },
          { inputs: { input }, backend: 'cpu' },
        );
        const { multiplier, shift } = quantizeMultiplier(input.scale / output.scale);
        const want = Array.from(data, (q) =>
          Math.min(hi, Math.max(lo, output.zeroPoint + multiplyByQuantizedMultiplier(q - input.zeroPoint, multiplier, shift))),
        );
        expect(y.shape).toEqual([16, 16]);
        expect(Array.from(y.data)).toEqual(want);
      }
    });
});

test('a requantize layer takes its scales as the float32 a .tflite file stores, divided in double (quantize.cc)', async () => {
  const [input, output] = [
    { scale: 1.073, zeroPoint: 0 },
    { scale: 0.37, zeroPoint: 0 },
  ];
  const y = await runLayers(
    [{ op: 'requantize', params: { output } }],
    { data: Int8Array.of(-35), shape: [1] },
    { inputs: { input }, backend: 'cpu' },
  );
  const { multiplier, shift } = quantizeMultiplier(Math.fround(1.073) / Math.fround(0.37));
  expect(Array.from(y.data)).toEqual([multiplyByQuantizedMultiplier(-35, multiplier, shift)]); // -101; the unrounded scales give -102
  expect(Array.from(y.data)).toEqual([-101]);
});

describe('a layer whose XNNPACK scale is 256 or more: XNNPACK refuses it, TFLite runs its builtin kernels', () => {
  // f32(f32(in * w) / out) = 1024 / 4 = 256: "requantization scale ... is greater or equal to 256.0"
  const input = { scale: 1, zeroPoint: 0 };
  const output = { scale: 4, zeroPoint: 1 };
  const fc = (kernelPath: KernelPath, scale = 1024): FullyConnectedParams => ({
    input,
    weights: { data: Int8Array.of(1), shape: [1, 1], scale },
    output,
    activation: 'RELU6',
    kernelPath,
  });
  const x = { data: Int8Array.of(1), shape: [1, 1] };
  test("a single layer on 'xnnpack' computes what 'optimized' does (RELU6's bound 3, not XNNPACK's 2)", async () => {
    for (const [kernelPath, want] of [
      ['xnnpack', [3]],
      ['optimized', [3]],
    ] as const) {
      expect(Array.from((await fullyConnected(x, fc(kernelPath), { backend: 'cpu' })).data), kernelPath).toEqual(want);
      const { weights, ...common } = fc(kernelPath);
      const conv: Conv2dParams = { ...common, filter: { ...weights, shape: [1, 1, 1, 1] }, padding: 'VALID' };
      const image = { data: Int8Array.of(1), shape: [1, 1, 1, 1] };
      expect(Array.from((await conv2d(image, conv, { backend: 'cpu' })).data), kernelPath).toEqual(want);
    }
    expect(Array.from((await fullyConnected(x, fc('xnnpack', 1000), { backend: 'cpu' })).data)).toEqual([2]); // 250: XNNPACK's clamp
  });
  test('in a graph, every layer runs on the builtin kernels then, the elementwise ones too', async () => {
    const graph = (scale: number, path?: { fc: KernelPath; add: 'builtin' | 'xnnpack' }) => [
      { op: 'fullyConnected' as const, name: 'a', params: { ...fc(path?.fc ?? 'xnnpack', 1000), kernelPath: path?.fc } },
      {
        op: 'fullyConnected' as const,
        name: 'b',
        params: { ...fc(path?.fc ?? 'xnnpack', scale), kernelPath: path?.fc },
        input: 'input',
      },
      { op: 'add' as const, inputs: ['a', 'b'], params: { output: { scale: 0.75, zeroPoint: 0 }, kernelPath: path?.add } },
    ];
    const inputs = { data: Int8Array.from({ length: 16 }, (_, i) => i * 9 - 64), shape: [16, 1] };
    const run = async (layers: ReturnType<typeof graph>) =>
      Array.from((await runLayers(layers as never, inputs, { inputs: { input }, backend: 'cpu' })).data);
    expect(await run(graph(1024))).toEqual(await run(graph(1024, { fc: 'optimized', add: 'builtin' })));
    // the control: below 256 the add stays on XNNPACK's arithmetic, which differs here
    expect(await run(graph(1000))).toEqual(await run(graph(1000, { fc: 'xnnpack', add: 'xnnpack' })));
    expect(await run(graph(1000))).not.toEqual(await run(graph(1000, { fc: 'optimized', add: 'builtin' })));
  });
});
