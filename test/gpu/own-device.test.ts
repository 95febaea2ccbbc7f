// GPU tier: a GPUDevice the caller brings, in a Node process that never installed WebGPU's globals
// (GPUBufferUsage, GPUMapMode...: the `webgpu` package exports them, and only a process that loads Dawn
// through the library gets them as globals). Every entry point that creates, maps or checks a buffer on
// that device (a GpuContext's gemm, prepack and gemmOnGpu, the one-shot gemm and elementwise with
// `device`, a Sequential) runs, bit for bit equal to the CPU reference, where each failed with a raw
// ReferenceError. A context destroyed on the caller's device (which it leaves alive) destroys what it
// made there: the prepacked operands, patches and a Sequential's weights, which held their buffers.
// releaseSharedContexts(device) frees what one-shot calls keep on it; releaseSharedContexts() the
// contexts on the devices the library acquired, with the devices.

import { afterAll, describe, expect, it, vi } from 'vitest';
import { DeviceLostError } from '../../src/errors.ts';
import {
  elementwise,
  elementwiseReference,
  gemm,
  GpuContext,
  referenceGemm,
  releaseSharedContexts,
  runLayers,
  Sequential,
  type ElementwiseProblem,
  type GemmProblem,
  type SequentialLayer,
} from '../../src/index.ts';
import { sharedContext } from '../../src/api.ts';
import { withDevice } from '../../src/gpu/scopes.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

const GLOBALS = ['GPUBufferUsage', 'GPUMapMode', 'GPUShaderStage', 'GPUTextureUsage', 'GPUColorWrite'];

/** Runs fn with WebGPU's globals removed from globalThis, as in a process that brought its own device. */
async function withoutGlobals<T>(fn: () => Promise<T>): Promise<T> {
  const g = globalThis as Record<string, unknown>;
  const saved = GLOBALS.filter((n) => n in g).map((n) => [n, g[n]] as const);
  for (const [n] of saved) delete g[n];
  try {
    return await fn();
  } finally {
    for (const [n, v] of saved) g[n] = v;
  }
}

const M = 5, K = 40, N = 9; // biome-ignore format: one line
const problem: GemmProblem = {
  lhs: { data: Uint8Array.from({ length: M * K }, (_, i) => (i * 37) % 256), rows: M, cols: K, order: 'row-major' },
  rhs: { data: Int8Array.from({ length: K * N }, (_, i) => ((i * 53) % 256) - 128), rows: K, cols: N, order: 'col-major' },
  lhsZeroPoint: 7,
  rhsZeroPoint: 0,
  pipeline: [
    { type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1518500250, exponent: -6, offsetAfterShift: 10 },
    { type: 'saturatingCast', to: 'int8' },
  ],
};

/** Every buffer created on `device` from now on, with whether it was destroyed (spy.mockRestore() ends it). */
function watchBuffers(device: GPUDevice) {
  const made: { label: string; destroyed: boolean }[] = [];
  const create = device.createBuffer.bind(device);
  const spy = vi.spyOn(device, 'createBuffer').mockImplementation((d) => {
    const b = create(d);
    const entry = { label: d.label ?? '', destroyed: false };
    made.push(entry);
    const destroy = b.destroy.bind(b);
    b.destroy = () => {
      entry.destroyed = true;
      destroy();
    };
    return b;
  });
  return { made, spy };
}

describe.skipIf(!gpu)("a caller's device without WebGPU's globals", () => {
  it('GpuContext (gemm, prepack, gemmOnGpu) and the one-shot gemm and elementwise run, bit-exact', async () => {
    const want = referenceGemm(problem).data;
    const ctx = await GpuContext.create({ device: gpu!.device });
    try {
      await withoutGlobals(async () => {
        expect((await ctx.gemm(problem)).data).toEqual(want);
        const rhs = await ctx.prepack('rhs', problem.rhs);
        expect((await ctx.gemm({ ...problem, rhs })).data).toEqual(want);
        const onGpu = await ctx.gemmOnGpu({ ...problem, rhs });
        expect((await ctx.read(onGpu)).data).toEqual(want);
        rhs.destroy();
        expect((await gemm(problem, { backend: 'webgpu', device: gpu!.device })).data).toEqual(want);
        const add: ElementwiseProblem = {
          op: 'add',
          a: { data: Uint8Array.of(10, 200, 3), shape: [3], scale: 0.5, zeroPoint: 1 },
          b: { data: Uint8Array.of(6), shape: [1], scale: 0.25, zeroPoint: 0 },
          output: { scale: 1, zeroPoint: 2 },
        };
        expect((await elementwise(add, { backend: 'webgpu', device: gpu!.device })).data).toEqual(elementwiseReference(add).data);
      });
    } finally {
      ctx.destroy();
    }
  });
  it('a Sequential of two FC layers runs, equal to runLayers on the CPU', async () => {
    const fc = (n: number, k: number, seed: number): SequentialLayer => ({
      op: 'fullyConnected',
      params: {
        weights: { data: Int8Array.from({ length: n * k }, (_, i) => ((i * seed) % 255) - 127), shape: [n, k], scale: 0.02 },
        bias: Int32Array.from({ length: n }, (_, i) => i * 100 - 300),
        output: { scale: 0.4, zeroPoint: -3 },
      },
    });
    const layers = [fc(12, 8, 31), fc(6, 12, 17)];
    const input = { data: Int8Array.from({ length: 24 }, (_, i) => i * 5 - 60), shape: [3, 8] };
    const opts = { inputs: { input: { scale: 0.1, zeroPoint: 2 } } };
    const want = (await runLayers(layers, input, { ...opts, backend: 'cpu' })).data;
    const ctx = await GpuContext.create({ device: gpu!.device });
    try {
      await withoutGlobals(async () => {
        const seq = await Sequential.create(ctx, layers, opts);
        expect((await seq.run(input)).data).toEqual(want);
        seq.destroy();
      });
    } finally {
      ctx.destroy();
    }
  });
  it("ctx.destroy() on the caller's device destroys the prepacked operands, patches and a Sequential's weights made on it", async () => {
    const device = gpu!.device;
    const { made: all, spy } = watchBuffers(device);
    const prepacked = () => all.filter((b) => b.label.startsWith('qgemm prepacked'));
    try {
      const ctx = await GpuContext.create({ device });
      const rhs = await ctx.prepack('rhs', problem.rhs);
      const g = { batch: 1, height: 4, width: 4, channels: 2, filterHeight: 3, filterWidth: 3, strideHeight: 1, strideWidth: 1 };
      const geometry = { ...g, dilationHeight: 1, dilationWidth: 1, padTop: 0, padLeft: 0, outHeight: 2, outWidth: 2 };
      const patches = await ctx.packPatches(new Uint8Array(32), geometry, 0);
      const weights = { data: new Int8Array(24), shape: [4, 6], scale: 0.02 };
      const seq = await Sequential.create(ctx, [{ op: 'fullyConnected', params: { weights, output: { scale: 0.1, zeroPoint: 0 } } }], {
        inputs: { input: { scale: 0.1, zeroPoint: 0 } },
      });
      const dropped = await ctx.prepack('rhs', problem.rhs);
      dropped.destroy(); // destroyed by the caller first: destroyed once
      expect(prepacked()).toHaveLength(8); // packed rows and sums, four times
      ctx.destroy();
      expect([rhs.destroyed, patches.destroyed]).toEqual([true, true]);
      await withDevice(device, async () => {}); // each operand frees its buffers once the calls queued before it end
      expect(prepacked().filter((b) => !b.destroyed)).toEqual([]);
      await expect(seq.run({ data: new Int8Array(6), shape: [1, 6] })).rejects.toBeInstanceOf(DeviceLostError);
      expect(device.lost).toBeInstanceOf(Promise); // the caller's device is left as it was
      expect((await gemm(problem, { backend: 'webgpu', device })).data).toEqual(referenceGemm(problem).data);
    } finally {
      spy.mockRestore();
    }
  });
  it('releaseSharedContexts(device) frees what the one-shot calls on that device keep; a later call makes a new context', async () => {
    const device = gpu!.device;
    const { made, spy } = watchBuffers(device);
    try {
      const want = referenceGemm(problem).data;
      for (const kernel of [undefined, 'dot4-32x32']) {
        expect((await gemm(problem, { backend: 'webgpu', device, ...(kernel ? { kernel } : {}) })).data).toEqual(want);
      }
      expect(made.filter((b) => !b.destroyed).length).toBeGreaterThan(0); // two contexts' pools, slabs, staging
      await releaseSharedContexts(device);
      expect(made.filter((b) => !b.destroyed)).toEqual([]);
      expect((await gemm(problem, { backend: 'webgpu', device })).data).toEqual(want);
      await releaseSharedContexts(device);
      await expect(releaseSharedContexts({} as GPUDevice)).rejects.toMatchObject({ name: 'InputError', field: 'device' });
    } finally {
      spy.mockRestore();
    }
  });
  it('releaseSharedContexts() destroys the shared contexts on the devices the library acquired, with the devices', async () => {
    const want = referenceGemm(problem).data;
    expect((await gemm(problem, { backend: 'webgpu' })).data).toEqual(want);
    const ctx = await sharedContext({});
    await releaseSharedContexts();
    expect(ctx.lost).toBe(true);
    expect((await gemm(problem, { backend: 'webgpu' })).data).toEqual(want); // a new one
    expect(await sharedContext({})).not.toBe(ctx);
    // a limit given as undefined is absent: the same shared context, not a second one
    expect(await sharedContext({ limits: { maxBufferSize: undefined } })).toBe(await sharedContext({}));
    await releaseSharedContexts();
  });
});
