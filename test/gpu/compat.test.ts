// GPU tier: a WebGPU compatibility-mode device (requestAdapter({ featureLevel: 'compatibility' }), then
// requestDevice() with its default limits: 128 invocations per workgroup and 128 along x, where a core
// device has 256). Chrome gives such a device on adapters without core WebGPU (OpenGL ES, Direct3D 11),
// and attempt F of the Chrome probe asks for one. Every pipeline the library makes must fit there: the
// registry never picks a kernel whose workgroup is larger (dot4-64x64's 16 x 16), the pack of a strided
// operand takes its one-row-per-workgroup entry point instead of the 256-invocation transposing one, and
// forcing a kernel that does not fit is an InputError naming `kernel`. Each result is the CPU reference's,
// bit for bit: GEMMs of every shape class, convolution patches gathered in the kernel, an elementwise
// op, both as this adapter runs and with the configurations of a hardware adapter
// (createGpuContextAsHardware), where a core device would take the transposing pack for a strided operand
// (here the row pack) and the kernel gathers the patches.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { im2col, type PatchGeometry } from '../../src/pack/patches.ts';
import { elementwise } from '../../src/api.ts';
import { createGpuContextAsHardware, GpuContext } from '../../src/scheduler/context.ts';
import type { GemmProblem, Operand } from '../../src/types.ts';
import { expectExact } from '../support/kernel-harness.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

/** The Dawn instance of the compatibility-mode device, held for as long as the device is used (a collected instance ends its devices). */
let instance: GPU | undefined;

/** A compatibility-mode device from Dawn (the driver the library's own device came from). */
async function compatDevice(): Promise<GPUDevice | null> {
  const { create } = await import('webgpu');
  instance = create([]);
  const adapter = await instance.requestAdapter({ featureLevel: 'compatibility' } as GPURequestAdapterOptions);
  if (!adapter) return null;
  const features = ['subgroups', 'timestamp-query'].filter((f) => adapter.features.has(f)) as GPUFeatureName[];
  const device = await adapter.requestDevice({ requiredFeatures: features });
  device.addEventListener('uncapturederror', (ev) => uncapturedErrors.push((ev as GPUUncapturedErrorEvent).error.message));
  return device;
}

const bytes = (n: number, seed: number, signed: boolean) => {
  const data = signed ? new Int8Array(n) : new Uint8Array(n);
  for (let i = 0; i < n; i++) data[i] = (i * 73 + seed * 29 + ((i * i) >> 3)) & 0xff;
  return data;
};
const operand = (rows: number, cols: number, seed: number, order: Operand['order'] = 'row-major', signed = false): Operand => ({
  data: bytes(rows * cols, seed, signed),
  rows,
  cols,
  order,
});

/** Shapes of every class: gemv rows, split-K, 32- and 64-tiles, strided operands of 64 rows and more. */
function problems(): [string, GemmProblem][] {
  return [
    ['1x64x200 (gemv)', { lhs: operand(1, 200, 1), rhs: operand(200, 64, 2, 'col-major'), lhsZeroPoint: 3, rhsZeroPoint: 130 }],
    ['16x96x1000 (split-K)', { lhs: operand(16, 1000, 3), rhs: operand(1000, 96, 4, 'col-major'), lhsZeroPoint: 200, rhsZeroPoint: 7 }],
    ['100x100x100, row-major rhs', { lhs: operand(100, 100, 5), rhs: operand(100, 100, 6), lhsZeroPoint: 17, rhsZeroPoint: 129 }],
    [
      '300x260x70, col-major lhs, int8, per-channel rhs',
      {
        lhs: operand(300, 70, 7, 'col-major', true),
        rhs: operand(70, 260, 8, 'row-major', true),
        lhsZeroPoint: -5,
        rhsZeroPoint: Int32Array.from({ length: 260 }, (_, n) => (n % 7) - 3),
        dstOrder: 'col-major',
      },
    ],
  ];
}

const geometry: PatchGeometry = {
  batch: 2,
  height: 9,
  width: 7,
  channels: 16,
  filterHeight: 3,
  filterWidth: 3,
  strideHeight: 1,
  strideWidth: 2,
  dilationHeight: 1,
  dilationWidth: 1,
  padTop: 1,
  padLeft: 1,
  outHeight: 9,
  outWidth: 4,
};

describe.skipIf(!gpu)('a compatibility-mode device', () => {
  let device: GPUDevice;
  beforeAll(async () => {
    const d = await compatDevice();
    if (!d) throw new Error('no compatibility-mode adapter from Dawn, where a core one exists');
    device = d;
  });
  afterAll(() => {
    device?.destroy();
    instance = undefined;
    expect(uncapturedErrors).toEqual([]);
  });

  it('has compatibility limits: 128 invocations per workgroup, no core features', () => {
    expect(device.features.has('core-features-and-limits' as GPUFeatureName)).toBe(false);
    expect(device.limits.maxComputeInvocationsPerWorkgroup).toBe(128);
    expect(device.limits.maxComputeWorkgroupSizeX).toBe(128);
  });

  it('an elementwise add: exact', async () => {
    const p = {
      op: 'add' as const,
      a: { data: bytes(1000, 1, true), shape: [10, 100], scale: 0.5, zeroPoint: 3 },
      b: { data: bytes(100, 2, true), shape: [100], scale: 0.25, zeroPoint: -7 },
      output: { scale: 0.75, zeroPoint: 1 },
    };
    const got = await elementwise(p, { backend: 'webgpu', device });
    expect(got.backend).toBe('webgpu');
    expect(got.data).toEqual((await elementwise(p, { backend: 'cpu' })).data);
  });

  for (const [name, make] of [
    ['as this adapter runs', (d: GPUDevice) => GpuContext.create({ device: d })],
    ['with a hardware adapter configurations', (d: GPUDevice) => createGpuContextAsHardware({ device: d })],
  ] as const) {
    describe(name, () => {
      let ctx: GpuContext;
      beforeAll(async () => {
        ctx = await make(device);
        expect(ctx.caps.limits.maxComputeInvocationsPerWorkgroup).toBe(128);
      });
      afterAll(() => ctx?.destroy());

      it('the registry picks kernels that fit, for GEMMs of every shape class: exact', async () => {
        const kernels: string[] = [];
        for (const [label, p] of problems()) {
          expectExact(await ctx.gemm(p), p, label);
          kernels.push(ctx.lastRun.kernel ?? '');
        }
        // On a core device the last two are dot4-64x64's (256 invocations): here the 32-tiles serve them.
        expect(kernels[0]).toMatch(/^gemv/);
        expect(kernels[1]).toMatch(/^(dot4-32x32|splitk-32x32)$/);
        expect(kernels.slice(2)).toEqual(['dot4-32x32', 'dot4-32x32']);
      });

      it('a prepacked strided rhs, then GEMMs on it: exact', async () => {
        const rhs = operand(130, 90, 11);
        const packed = await ctx.prepack('rhs', rhs);
        try {
          for (const M of [1, 40, 150]) {
            const p = { lhs: operand(M, 130, M), rhs, lhsZeroPoint: 100, rhsZeroPoint: 20 };
            expectExact(await ctx.gemm({ ...p, rhs: packed }), p, `M=${M}, prepacked row-major rhs`);
          }
        } finally {
          packed.destroy();
        }
      });

      it('convolution patches (gathered where the kernel gathers): exact', async () => {
        const input = bytes(2 * 9 * 7 * 16, 13, false);
        const K = 3 * 3 * 16;
        const M = 2 * 9 * 4;
        for (const N of [8, 70]) {
          const rhs = operand(K, N, N, 'col-major');
          const p = { lhs: { input, geometry, zeroPoint: 37 }, rhs, lhsZeroPoint: 37, rhsZeroPoint: 121 };
          const got = await ctx.gemm(p);
          expectExact(got, { ...p, lhs: { data: im2col(input, geometry, 37), rows: M, cols: K } }, `conv to ${N} channels`);
          expect(ctx.lastRun.patchesGathered, `conv to ${N} channels`).toBe(true);
        }
      });

      it('forcing a kernel whose workgroup does not fit is an InputError naming kernel', async () => {
        const forced = await GpuContext.create({ device, kernel: 'dot4-64x64' });
        try {
          const e = await forced.gemm(problems()[2][1]).catch((x) => x);
          expect(e).toBeInstanceOf(InputError);
          expect((e as InputError).field).toBe('kernel');
          expect((e as Error).message).toMatch(/dot4-64x64 cannot run/);
        } finally {
          forced.destroy();
        }
      });
    });
  }
});
