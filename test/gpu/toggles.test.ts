// GPU tier for Dawn's device toggles (src/gpu/toggles.ts, docs/gpu.md "Dawn toggles"): a context records
// the toggles its device got (the audited default, none, a caller's device), an unknown toggle is an
// InputError; `disable_robustness` does reach a Dawn device (an out-of-bounds read is clamped with
// robustness, not without); and every kernel stays exact on a device with both toggles on while every
// shader's workgroup memory starts as garbage (test/support/poison-workgroup.ts: SwiftShader zero-fills
// workgroup memory with or without the toggle, so the poison shows what a GPU may do), and makes no
// index out of range into a storage or workgroup array (test/support/bounds-check.ts counts each one:
// with robustness off a GPU would read or write outside the array): every registry kernel forced at its
// tile edges, the gathering forms, the emulated subgroup-matrix kernel, and a sample of the verify suite.

import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { type AcquiredDevice, acquireDevice } from '../../src/gpu/acquire.ts';
import { AUDITED_TOGGLES, type DawnToggle, envToggles } from '../../src/gpu/toggles.ts';
import { EMULATED_CONFIGS, sgmatEmulatedKernel } from '../../src/kernels/sgmat/emulation.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import type { PatchGeometry } from '../../src/pack/patches.ts';
import { createGpuContextWith, GpuContext } from '../../src/scheduler/context.ts';
import type { GemmProblem } from '../../src/types.ts';
import { verifyGpuKernel, verifyProblems } from '../../src/verify.ts';
import { verifyConvProblems } from '../../src/verify-problems.ts';
import { im2colRows } from '../../bench/problems.ts';
import { arbProblemOfShape } from '../support/arbitraries.ts';
import { expectExact } from '../support/kernel-harness.ts';
import { type BoundsCheck, boundsCheckDevice, runProbe } from '../support/bounds-check.ts';
import { poisonDevice } from '../support/poison-workgroup.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });
const gpu = await getGpu();
afterAll(releaseGpu);

const BOTH: DawnToggle[] = ['disable_workgroup_init', 'disable_robustness'];
const sample = (M: number, N: number, K: number, seed: number): GemmProblem =>
  fc.sample(arbProblemOfShape(M, N, K), { numRuns: 1, seed })[0];

/** Reads a[5g + 2] of a 4-word buffer for g = 0..3: indices 2, 7, 12, 17, three past the end. */
async function outOfBoundsReads(device: GPUDevice): Promise<number[]> {
  const code = `@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@compute @workgroup_size(1) fn main(@builtin(workgroup_id) g: vec3<u32>) { o[g.x] = a[g.x * 5u + 2u]; }`;
  const pipeline = device.createComputePipeline({
    layout: 'auto',
    compute: { module: device.createShaderModule({ code }), entryPoint: 'main' },
  });
  const out = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const input = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE, mappedAtCreation: true });
  new Uint32Array(input.getMappedRange()).set([11, 22, 33, 44]);
  input.unmap();
  const read = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const entries = [out, input].map((buffer, binding) => ({ binding, resource: { buffer } }));
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries }));
  pass.dispatchWorkgroups(4);
  pass.end();
  encoder.copyBufferToBuffer(out, 0, read, 0, 16);
  device.queue.submit([encoder.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const values = Array.from(new Uint32Array(read.getMappedRange()));
  read.unmap();
  for (const b of [out, input, read]) b.destroy();
  return values;
}

describe.skipIf(gpu?.source !== 'dawn')('Dawn device toggles', () => {
  it('a context records its toggles: the audited default, none, or unknown on a caller device; an unknown toggle is an InputError', async () => {
    expect(gpu!.toggles).toEqual(envToggles(process.env.QGEMM_DAWN_TOGGLES) ?? [...AUDITED_TOGGLES]);
    const none = await GpuContext.create({ toggles: [] });
    expect(none.caps.toggles).toEqual([]);
    const mine = await GpuContext.create({ device: none.device });
    expect(mine.caps.toggles).toBeNull();
    mine.destroy();
    none.destroy();
    const e = await GpuContext.create({ toggles: ['disable_everything' as DawnToggle] }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(InputError);
    expect((e as InputError).field).toBe('toggles');
  });

  it('disable_robustness reaches the device: out-of-bounds reads are clamped with robustness, not without', async () => {
    const robust = await acquireDevice({ allowSoftware: true, toggles: [] });
    const clamped = await outOfBoundsReads(robust.device);
    robust.device.destroy();
    expect(clamped).toEqual([33, 44, 44, 44]); // Tint clamps each index to the last element
    const bare = await acquireDevice({ allowSoftware: true, toggles: ['disable_robustness'] });
    const unclamped = await outOfBoundsReads(bare.device);
    bare.device.destroy();
    expect(unclamped[0]).toBe(33);
    expect(unclamped.slice(1)).not.toEqual([44, 44, 44]); // SwiftShader: zeros (Vulkan's robustBufferAccess)
  });

  it('the bounds check counts each index out of range, by variable and level, comments aside', async () => {
    const d = await acquireDevice({ allowSoftware: true, toggles: ['disable_robustness'] });
    const bounds = boundsCheckDevice(d.device);
    // w[g % 3]: 2 of 6 out of its 2; w[..][g]: 2 past a vec4; o[g]: 2 past 4 words; a[5g + 2]: 5 past 4.
    const code = `@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@group(0) @binding(1) var<storage, read> a: array<u32>;
var<workgroup> w: array<vec4<u32>, 2>; // w[ in a comment
@compute @workgroup_size(1) fn main(@builtin(workgroup_id) g: vec3<u32>) {
  w[g.x % 3u][g.x] = 1u; /* o[ */
  o[g.x] = a[g.x * 5u + 2u] + w[0].x;
}`;
    const run = async (workgroups: number) => {
      await runProbe(d.device, code, [16, 16], workgroups);
      return bounds.take();
    };
    expect(await run(6)).toEqual({ 'probe: w[]': 2, 'probe: w[][]': 2, 'probe: o[]': 2, 'probe: a[]': 5 });
    expect(await run(2)).toEqual({ 'probe: a[]': 1 }); // a[7]
    expect(bounds.modules).toBe(2);
    d.device.destroy();
  });

  describe('every kernel exact with both toggles and poisoned workgroup memory, every index in range', () => {
    let toggled: AcquiredDevice;
    let poisoned: { rewritten: number };
    let bounds: BoundsCheck;
    beforeAll(async () => {
      toggled = await acquireDevice({ allowSoftware: true, toggles: BOTH });
      poisoned = poisonDevice(toggled.device);
      bounds = boundsCheckDevice(toggled.device); // after the poison: its fills run unchecked
    });
    afterEach(async () => {
      expect(await bounds.take(), 'indices out of range').toEqual({});
      expect(bounds.uncompiled).toEqual([]);
    });
    afterAll(() => {
      // Each poisoned module is a kernel, pack or reduction that declares workgroup memory.
      expect(poisoned.rewritten).toBeGreaterThan(0);
      expect(bounds.modules).toBeGreaterThan(0);
      toggled?.device.destroy();
    });

    // Tile edges of every kernel: gemv row groups (4), 32-, 64- and 128-tiles, k steps of 64 bytes.
    const EDGES: [number, number, number][] = [
      [1, 65, 33],
      [4, 63, 200],
      [33, 16, 65],
      [65, 63, 64],
      [129, 131, 97],
    ];
    const FOUR_BIT = { lhs: 8, rhs: 4, rounding: 'nearest' } as const;
    // The '-emulated' kernels differ from their native twins only in the dot4 function (src/wgsl/dot4-*.wgsl),
    // not in what they stage: the native ones stand for both here (test/gpu/gemm.test.ts runs every kernel).
    const KERNELS = GPU_KERNELS.filter((k) => !k.id.endsWith('-emulated'));
    it.each(KERNELS.map((k) => [k.id, k] as const))('%s at its tile edges', async (id, kernel) => {
      const ctx = await GpuContext.create({ device: toggled.device, kernel: id });
      let ran = 0;
      for (const [i, [M, N, K]] of EDGES.entries()) {
        for (const bitDepth of [undefined, FOUR_BIT]) {
          const p = { ...sample(M, N, K, 7 * i + 1), ...(bitDepth ? { bitDepth } : {}) };
          const shape = { M, N, K, dstType: 'int32' as const, dstOrder: p.dstOrder ?? 'row-major', bitDepth: p.bitDepth };
          if (ran === 2 || !kernel.supports(ctx.caps, shape)) continue; // two shapes per kernel
          expectExact(await ctx.gemm(p), p, `${id} poisoned ${M}x${N}x${K}${bitDepth ? ' 4-bit rhs' : ''}`);
          expect(ctx.lastRun.kernel).toBe(id);
          ran++;
        }
      }
      ctx.destroy();
      if (!ran) console.warn(`[toggles.test] ${id} cannot run on this adapter`);
    });

    it('dot4-tiled, dot4-wide and split-K gathering a convolution lhs themselves (row-sum parts in workgroup memory)', async () => {
      // 9 x 9 x 8 under a 3x3 SAME filter: 81 patch rows of 72; 65 output channels go to dot4-64x64, 17 to
      // dot4-32x32; dot4-128x128 forced (its row sums pass through lhsTile after the k loop).
      const g: PatchGeometry = {
        ...{ batch: 1, height: 9, width: 9, channels: 8, filterHeight: 3, filterWidth: 3 },
        ...{ strideHeight: 1, strideWidth: 1, dilationHeight: 1, dilationWidth: 1, padTop: 1, padLeft: 1, outHeight: 9, outWidth: 9 },
      };
      const input = Uint8Array.from({ length: 9 * 9 * 8 }, (_, i) => (Math.imul(i + 1, 2654435761) >>> 24) & 0xff);
      const ctx = await GpuContext.create({ device: toggled.device });
      const wide = await GpuContext.create({ device: toggled.device, kernel: ctx.caps.dot4 ? 'dot4-128x128' : 'dot4-128x128-emulated' });
      for (const [N, id, c] of [
        [65, 'dot4-64x64', ctx],
        [17, 'dot4-32x32', ctx],
        [33, 'dot4-128x128', wide],
      ] as const) {
        const rhs = {
          data: Uint8Array.from({ length: 72 * N }, (_, i) => (i * 29 + 5) & 0xff),
          rows: 72,
          cols: N,
          order: 'col-major' as const,
        };
        const got = await c.gemm({ lhs: { input, geometry: g, zeroPoint: 77 }, rhs, lhsZeroPoint: 77, rhsZeroPoint: 140 });
        expect(c.lastRun).toMatchObject({ kernel: c.caps.dot4 ? id : `${id}-emulated`, packDispatches: 1 }); // the rhs's pack only
        const p = { lhs: { data: im2colRows(input, g, 77), rows: 81, cols: 72 }, rhs, lhsZeroPoint: 77, rhsZeroPoint: 140 };
        expectExact(got, p, `${id} gathering, poisoned`);
      }
      wide.destroy();
      // split-K (native dot4 only): a deep layer, 5 x 5 x 128 (1152 k), gathered in slices whose row sums
      // pass through the same parts.
      if (ctx.caps.dot4) {
        const split = await GpuContext.create({ device: toggled.device, kernel: 'splitk-32x32' });
        const deep: PatchGeometry = { ...g, height: 5, width: 5, channels: 128, outHeight: 5, outWidth: 5 };
        const deepInput = Uint8Array.from({ length: 5 * 5 * 128 }, (_, i) => (Math.imul(i + 7, 2654435761) >>> 24) & 0xff);
        const rhs = {
          data: Uint8Array.from({ length: 1152 * 40 }, (_, i) => (i * 13 + 1) & 0xff),
          rows: 1152,
          cols: 40,
          order: 'col-major' as const,
        };
        const got = await split.gemm({ lhs: { input: deepInput, geometry: deep, zeroPoint: 3 }, rhs, lhsZeroPoint: 3, rhsZeroPoint: 200 });
        expect(split.lastRun).toMatchObject({ kernel: 'splitk-32x32', patchesGathered: true });
        const p = { lhs: { data: im2colRows(deepInput, deep, 3), rows: 25, cols: 1152 }, rhs, lhsZeroPoint: 3, rhsZeroPoint: 200 };
        expectExact(got, p, 'splitk-32x32 gathering, poisoned');
        split.destroy();
      }
      ctx.destroy();
    });

    it("the emulated subgroup-matrix kernel (its gathering form on verify's conv layers) and the registry, on a sample of the verify suite", async () => {
      const suite = verifyProblems().filter((p, i) => i % 4 === 0 && p.lhs.cols <= 10000);
      const conv = verifyConvProblems();
      const sgmat = sgmatEmulatedKernel(EMULATED_CONFIGS[0]);
      const row = await verifyGpuKernel(toggled.device, sgmat, suite, { kernels: [sgmat, ...GPU_KERNELS], conv });
      expect([row.detail, row.mismatches, row.problems]).toEqual(['', 0, suite.length + conv.length]);
      const ctx = await createGpuContextWith(GPU_KERNELS, { device: toggled.device });
      for (const p of suite) expectExact(await ctx.gemm(p), p, 'registry, poisoned');
      ctx.destroy();
    });
  });
});
