// GPU tier for the TFLite layers (src/layers/): fullyConnected and conv2d on WebGPU (SwiftShader on
// machines without a GPU) against the oracle of test/support/layer-oracle.ts, for every kernel path
// (XNNPACK's float32 requantization in integers in WGSL, the optimized kernels' 'double-up', the
// reference paths), int8 per-tensor and per-channel, legacy uint8, SAME and VALID, strides 1 and 2; and
// that WebGPU refuses what the CPU refuses, with the same field, and runs what the CPU runs (the stride limit).

import { afterAll, describe, expect, test } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { type Conv2dParams, conv2d, fullyConnected } from '../../src/layers/layers.ts';
import { CASES, PATHS, checkConv, checkFc } from '../support/layer-oracle.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

describe.skipIf(!gpu)('TFLite layers on WebGPU == the oracle of each kernel path', () => {
  for (const c of CASES)
    for (const path of PATHS) {
      test(`fullyConnected ${c.name} ${path}`, async () => {
        for (let seed = 1; seed <= 2; seed++) await checkFc(c, path, 'webgpu', seed * 17 + c.name.length);
      });
      test(`conv2d ${c.name} ${path}`, async () => {
        let seed = 300;
        for (const padding of ['SAME', 'VALID'] as const)
          for (const stride of [1, 2]) await checkConv(c, path, 'webgpu', seed++, padding, stride, stride);
      });
    }
});

describe.skipIf(!gpu)('WebGPU takes the layers validation of every backend (issue 38)', () => {
  const conv: Conv2dParams = {
    input: { scale: 0.1, zeroPoint: 0 },
    filter: { data: Int8Array.of(1, -1, 2), shape: [1, 1, 1, 3], scale: 0.1 },
    padding: 'SAME',
    output: { scale: 0.1, zeroPoint: 0 },
  };
  const image = { data: Int8Array.from({ length: 12 }, (_, i) => i - 6), shape: [1, 2, 2, 3] };
  const field = async (p: Promise<unknown>) => {
    const e = await p.catch((x) => x);
    expect(e).toBeInstanceOf(InputError);
    return (e as InputError).field;
  };
  test('float32 scales, shapes >= 1, weight zero points: the same fields as on the CPU', async () => {
    const fc = {
      input: { scale: 1e-46, zeroPoint: 0 },
      weights: { data: new Int8Array(6), shape: [2, 3] as [number, number], scale: 0.1 },
      output: { scale: 0.1, zeroPoint: 0 },
    };
    expect(await field(fullyConnected({ data: new Int8Array(6), shape: [2, 3] }, fc, { backend: 'webgpu' }))).toBe('params.input.scale');
    const neg = { ...conv, filter: { data: Int8Array.of(1), shape: [1, -1, -1, 1] as [number, number, number, number], scale: 0.1 } };
    expect(await field(conv2d({ data: Int8Array.of(1, 2, 3, 4), shape: [1, 2, 2, 1] }, neg, { backend: 'webgpu' }))).toBe(
      'params.filter.shape',
    );
    const zero = { ...conv, filter: { data: new Int8Array(0), shape: [3, 1, 1, 0] as [number, number, number, number], scale: 0.1 } };
    expect(await field(conv2d({ data: new Int8Array(0), shape: [1, 100_000, 100_000, 0] }, zero, { backend: 'webgpu' }))).toBe(
      'input.shape',
    );
    expect(await field(conv2d(image, { ...conv, filter: { ...conv.filter, zeroPoint: 1000 } }, { backend: 'webgpu' }))).toBe(
      'params.filter.zeroPoint',
    );
  });
  test("a layer's options are a GEMM's: a context's options (a tuning table, a device), onKernel; not an object: InputError", async () => {
    const other = {
      format: 'qgemm-tuning-1',
      adapter: { vendor: 'nvidia', architecture: 'hopper', device: 'nvidia-h100-80gb-hbm3', description: '' },
      entries: [],
    };
    expect(await field(conv2d(image, conv, { backend: 'webgpu', tuning: other }))).toBe('tuning.adapter');
    const fc = {
      input: conv.input,
      weights: { data: new Int8Array(6), shape: [2, 3] as [number, number], scale: 0.1 },
      output: conv.output,
    };
    expect(await field(fullyConnected({ data: new Int8Array(6), shape: [2, 3] }, fc, { backend: 'webgpu', tuning: other }))).toBe(
      'tuning.adapter',
    );
    expect(await field(conv2d(image, conv, null as never))).toBe('options');
    const kernels: string[] = [];
    const onKernel = (k: string) => kernels.push(k);
    const got = await conv2d(image, conv, { backend: 'webgpu', device: gpu!.device, onKernel });
    const want = await conv2d(image, conv, { backend: 'cpu', onKernel });
    expect(Array.from(got.data)).toEqual(Array.from(want.data));
    expect(kernels).toHaveLength(2);
    expect(kernels[0]).toMatch(/^gemv/); // 4 output pixels
    expect([got.backend, want.backend]).toEqual(['webgpu', 'cpu']); // the result says where it ran
  });
  test('a stride of 1e9 runs as on the CPU; 2^31 is refused, naming the limit', async () => {
    const p = { ...conv, stride: [1e9, 1e9] as [number, number] };
    const [gpuOut, cpuOut] = [await conv2d(image, p, { backend: 'webgpu' }), await conv2d(image, p, { backend: 'cpu' })];
    expect(gpuOut.shape).toEqual([1, 1, 1, 1]);
    expect(Array.from(gpuOut.data)).toEqual(Array.from(cpuOut.data));
    const e = await conv2d(image, { ...conv, stride: [2 ** 31, 1] }, { backend: 'webgpu' }).catch((x) => x);
    expect((e as InputError).field).toBe('params.stride');
    expect((e as InputError).message).toMatch(/2147483647/);
  });
});
