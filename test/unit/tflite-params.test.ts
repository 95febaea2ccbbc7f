// TFLite's layer parameters as a .tflite file stores them (src/layers/tflite-params.ts): a weight zero
// point given as TFLite's array (numbers or int64 bigints, one entry or one per output channel) gives
// exactly the result of the one integer; different zero points per channel are refused naming the entry;
// FULLY_CONNECTED's keepNumDims returns TFLite's shape (the input's, last dimension N) with the same
// values, in fullyConnected and in runLayers. CPU backend.

import { describe, expect, test } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { conv2d, fullyConnected, type FullyConnectedParams } from '../../src/layers/layers.ts';
import { runLayers } from '../../src/layers/sequential.ts';

const N = 3;
const K = 8;
const weights = (zeroPoint: FullyConnectedParams['weights']['zeroPoint']) => ({
  data: Uint8Array.from({ length: N * K }, (_, i) => (i * 37) % 256),
  shape: [N, K],
  scale: 0.02,
  zeroPoint,
});
const fc = (zeroPoint: FullyConnectedParams['weights']['zeroPoint'], extra: Partial<FullyConnectedParams> = {}): FullyConnectedParams => ({
  input: { scale: 0.05, zeroPoint: 128 },
  weights: weights(zeroPoint),
  output: { scale: 0.5, zeroPoint: 120 },
  ...extra,
});
const input = { data: Uint8Array.from({ length: 2 * K }, (_, i) => (i * 11) % 256), shape: [2, K] };

async function fieldOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(InputError);
  return (e as InputError).field;
}

describe('weight zero points as TFLite stores them', () => {
  test('an array of 1 or N equal values, numbers or bigints, is the one integer', async () => {
    const want = Array.from((await fullyConnected(input, fc(131), { backend: 'cpu' })).data);
    expect(new Set(want).size).toBeGreaterThan(1);
    for (const zp of [[131], [131, 131, 131], Int32Array.of(131, 131, 131), BigInt64Array.of(131n), BigInt64Array.of(131n, 131n, 131n)]) {
      expect(Array.from((await fullyConnected(input, fc(zp), { backend: 'cpu' })).data), String(zp)).toEqual(want);
    }
  });
  test('int8 per-channel weights with TFLite zero points [0, ..., 0] in conv2d', async () => {
    const q = { scale: 0.05, zeroPoint: -3 };
    const filter = { data: Int8Array.from({ length: 2 * K }, (_, i) => i - 7), shape: [2, 1, 1, K], scale: Float32Array.of(0.01, 0.02) };
    const x = { data: Int8Array.from({ length: 4 * K }, (_, i) => (i % 9) - 4), shape: [1, 2, 2, K] };
    const p = { input: q, filter, padding: 'VALID' as const, output: { scale: 0.1, zeroPoint: 2 } };
    const want = Array.from((await conv2d(x, p, { backend: 'cpu' })).data);
    const got = await conv2d(x, { ...p, filter: { ...filter, zeroPoint: BigInt64Array.of(0n, 0n) } }, { backend: 'cpu' });
    expect(Array.from(got.data)).toEqual(want);
  });
  test('different zero points per channel, a wrong length or a non-integer are InputErrors naming the entry', async () => {
    expect(await fieldOf(fullyConnected(input, fc([131, 131, 130]), { backend: 'cpu' }))).toBe('params.weights.zeroPoint[2]');
    expect(await fieldOf(fullyConnected(input, fc([131, 131]), { backend: 'cpu' }))).toBe('params.weights.zeroPoint');
    expect(await fieldOf(fullyConnected(input, fc([]), { backend: 'cpu' }))).toBe('params.weights.zeroPoint');
    expect(await fieldOf(fullyConnected(input, fc([131, 1.5, 131]), { backend: 'cpu' }))).toBe('params.weights.zeroPoint[1]');
  });
});

describe("FULLY_CONNECTED's keepNumDims", () => {
  test("returns TFLite's shape, the input's with its last dimension N, and the same values", async () => {
    const flat = await fullyConnected(input, fc(131), { backend: 'cpu' });
    expect(flat.shape).toEqual([2, N]);
    expect(flat.backend).toBe('cpu');
    const x = { data: input.data, shape: [1, 2, K] };
    const kept = await fullyConnected(x, fc(131, { keepNumDims: true }), { backend: 'cpu' });
    expect(kept.shape).toEqual([1, 2, N]);
    expect(Array.from(kept.data)).toEqual(Array.from(flat.data));
    expect((await fullyConnected(x, fc(131, { keepNumDims: false }), { backend: 'cpu' })).shape).toEqual([2, N]);
  });
  test('in runLayers too', async () => {
    const p = fc(131, { keepNumDims: true });
    const y = await runLayers(
      [{ op: 'fullyConnected', params: { weights: p.weights, output: p.output, keepNumDims: true } }],
      {
        data: input.data,
        shape: [2, 1, K],
      },
      { inputs: { input: p.input }, backend: 'cpu' },
    );
    expect(y.shape).toEqual([2, 1, N]);
  });
  test('a last dimension other than K, or a keepNumDims that is not a boolean, is an InputError', async () => {
    expect(await fieldOf(fullyConnected({ data: input.data, shape: [4, 4] }, fc(131, { keepNumDims: true }), { backend: 'cpu' }))).toBe(
      'input.shape',
    );
    const p = { ...fc(131), keepNumDims: 1 } as unknown as FullyConnectedParams;
    expect(await fieldOf(fullyConnected(input, p, { backend: 'cpu' }))).toBe('params.keepNumDims');
  });
});
