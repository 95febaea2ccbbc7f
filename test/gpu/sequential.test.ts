// GPU tier: Sequential (src/layers/sequential.ts), a chain of FULLY_CONNECTED layers on one GpuContext
// with prepacked weights and the intermediate activations kept on the GPU, equals running the layers
// one by one with fullyConnected() on the CPU, bit for bit, for the XNNPACK and optimized paths, int8
// per-channel and legacy uint8; bad chains are InputErrors naming the field.

import { afterAll, describe, expect, test } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { fullyConnected, type FullyConnectedParams, type KernelPath } from '../../src/layers/layers.ts';
import { Sequential } from '../../src/layers/sequential.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { Rng } from '../../tools/random.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

function chain(r: Rng, dims: number[], type: 'int8' | 'uint8', path: KernelPath): FullyConnectedParams[] {
  const q = () => ({
    scale: Math.fround(0.01 + (r.next() % 1000) / 10000),
    zeroPoint: type === 'uint8' ? r.next() % 256 : (r.next() % 256) - 128,
  });
  let input = q();
  return dims.slice(1).map((N, i) => {
    const K = dims[i];
    const output = q();
    const data =
      type === 'uint8'
        ? Uint8Array.from({ length: N * K }, () => r.next() % 256)
        : Int8Array.from({ length: N * K }, () => (r.next() % 255) - 127);
    const p: FullyConnectedParams = {
      input,
      weights: {
        data,
        shape: [N, K],
        scale: type === 'int8' ? Float32Array.from({ length: N }, () => Math.fround(0.001 + (r.next() % 100) / 5000)) : 0.004,
        zeroPoint: type === 'uint8' ? r.next() % 256 : 0,
      },
      bias: Int32Array.from({ length: N }, () => (r.next() % 4001) - 2000),
      output,
      activation: i === dims.length - 2 ? 'NONE' : 'RELU',
      kernelPath: path,
    };
    input = output;
    return p;
  });
}

describe.skipIf(!gpu)('Sequential on WebGPU == the layers one by one on the CPU', () => {
  for (const type of ['int8', 'uint8'] as const)
    for (const path of ['xnnpack', 'optimized'] as const)
      test(`3 FC layers, ${type}, ${path}`, async () => {
        const r = new Rng(type === 'int8' ? 5 : 6);
        const params = chain(r, [37, 50, 29, 18], type, path);
        const M = 9;
        const x =
          type === 'uint8'
            ? Uint8Array.from({ length: M * 37 }, () => r.next() % 256)
            : Int8Array.from({ length: M * 37 }, () => (r.next() % 256) - 128);
        const ctx = await GpuContext.create({ device: gpu!.device });
        const seq = await Sequential.create(
          ctx,
          params.map((p) => ({ op: 'fullyConnected' as const, params: p })),
        );
        const got = await seq.run({ data: x, shape: [M, 37] });
        let want = { data: x as Uint8Array | Int8Array, shape: [M, 37] };
        for (const p of params) want = await fullyConnected(want, p, { backend: 'cpu' });
        expect(got.shape).toEqual([M, 18]);
        expect(Array.from(got.data)).toEqual(Array.from(want.data));
        // a second run reuses the prepacked weights
        expect(Array.from((await seq.run({ data: x, shape: [M, 37] })).data)).toEqual(Array.from(want.data));
        seq.destroy();
        ctx.destroy();
      });

  test('a chain whose quantization does not follow is refused, naming the field', async () => {
    const r = new Rng(7);
    const params = chain(r, [8, 6, 4], 'int8', 'xnnpack');
    params[1].input = { scale: 0.5, zeroPoint: 0 };
    const ctx = await GpuContext.create({ device: gpu!.device });
    const e = await Sequential.create(
      ctx,
      params.map((p) => ({ op: 'fullyConnected' as const, params: p })),
    ).catch((x) => x);
    expect(e).toBeInstanceOf(InputError);
    expect((e as InputError).field).toBe('layers[1].params.input');
    ctx.destroy();
  });
});
