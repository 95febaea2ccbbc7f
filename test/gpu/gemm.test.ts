// GPU tier: the WebGPU path (pack -> gemm -> output, src/scheduler/context.ts) against the CPU reference,
// bit for bit, every submission inside validation/out-of-memory error scopes: every kernel of the
// registry forced in turn over the shape sweep and odd rectangles, shapes that cross every tile
// boundary, a K large enough to make int32 wrap, every operand type, storage order, zero-point form
// and stage kind, less-than-8-bit operands; then, with the registry's choice, prepacked operands and
// GPU-resident chaining; splitting of operands and grids past lowered binding-size and workgroup-count
// limits; and the typed errors for exceeded limits, invalid GPU input and a lost device.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Sequential } from '../../src/layers/sequential.ts';
import { DeviceLostError, InputError, LimitExceededError } from '../../src/errors.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { createGpuContextAsHardware, GpuContext, type GpuGemmProblem } from '../../src/scheduler/context.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { type AdapterCaps, adapterCaps } from '../../src/gpu/caps.ts';
import { describeAdapter } from '../../src/gpu/adapter.ts';
import { dot4TiledKernel } from '../../src/kernels/dot4-tiled/kernel.ts';
import { splitKKernel } from '../../src/kernels/splitk/kernel.ts';
import type { GpuGemmKernel } from '../../src/kernels/types.ts';
import { getPipeline } from '../../src/gpu/pipelines.ts';
import { withDevice } from '../../src/gpu/scopes.ts';
import { runGemm } from '../../src/scheduler/gemm.ts';
import { type PatchProblem, patchReference, selfTestConvProblems, selfTestProblems } from '../../src/scheduler/self-test.ts';
import { DeviceResources } from '../../src/scheduler/resources.ts';
import { gemm, runOp, sharedContext } from '../../src/api.ts';
import type { GemmProblem, Operand } from '../../src/types.ts';
import { arbOperand, arbProblem, arbProblemOfShape, describeProblem } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { rejectedField } from '../support/errors.ts';
import { expectExact, kernelProperties } from '../support/kernel-harness.ts';
import { expectResolvedOrDeviceLost, getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

// Every shader module this file's kernels compile on the test device, for the last test: none may draw a
// compiler warning (the subgroup-matrix kernel drew one per call in Dawn's deprecated builtins, and the
// logs filtered them out instead; lavapipe checks that kernel, test/lavapipe/sgmat.test.ts).
const modules: GPUShaderModule[] = [];
if (gpu) {
  const create = gpu.device.createShaderModule.bind(gpu.device);
  gpu.device.createShaderModule = (d: GPUShaderModuleDescriptor) => {
    const m = create(d);
    modules.push(m);
    return m;
  };
}

async function expectGpuMatches(ctx: GpuContext, p: GemmProblem, context = '') {
  expectExact(await ctx.gemm(p), p, context);
}

const sample = <T>(arb: fc.Arbitrary<T>, seed: number) => fc.sample(arb, { numRuns: 1, seed })[0];

// Every GPU kernel of the registry, forced, over the same cases (ruy's test loop over paths): a kernel
// the registry stops choosing for some shape keeps its coverage here.
// The adapter's capabilities, to know which kernels can run here at all (subgroup matrices cannot on
// SwiftShader: sgmat-64x64 skips here with a notice; its emulated variant runs on SwiftShader in
// ./sgmat.test.ts, its real builtins on lavapipe in test/lavapipe/, its self-test on real GPUs).
const caps = gpu ? adapterCaps(gpu.device, gpu.summary, gpu.hasDot4, gpu.adapter?.info) : null;
// The 4-bit-weight kernels only take rhs of <= 4 bits: test/gpu/skinny.test.ts covers them.
const shape8 = { M: 64, N: 64, K: 64, dstType: 'int32', dstOrder: 'row-major' } as const;
const runnable = (k: (typeof GPU_KERNELS)[number]) => !!caps && k.supports(caps, shape8);
const fourBitOnly = (k: (typeof GPU_KERNELS)[number]) =>
  !!caps && !runnable(k) && k.supports(caps, { ...shape8, bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' } });
for (const k of GPU_KERNELS) {
  if (gpu && !runnable(k) && !fourBitOnly(k))
    console.warn(`[gemm.test] kernel ${k.id} cannot run on this adapter (${describeAdapter(gpu.summary)}): its tests are skipped here`);
}

describe.each(GPU_KERNELS.map((k) => [k.id, k] as const))('kernel %s == CPU reference', (id, kernel) => {
  if (!runnable(kernel)) {
    it.skip(
      fourBitOnly(kernel) ? `reads 4-bit weights only: see test/gpu/skinny.test.ts` : `needs an adapter that can run ${id}`,
      () => {},
    );
    return;
  }
  let ctx: GpuContext;
  beforeAll(async () => {
    ctx = await GpuContext.create({ device: gpu!.device, kernel: id });
  });
  const run = async (p: GemmProblem, context = '') => {
    const shape = {
      M: p.lhs.rows,
      N: p.rhs.cols,
      K: p.lhs.cols,
      dstType: 'int32' as const,
      dstOrder: p.dstOrder ?? 'row-major',
      bitDepth: p.bitDepth,
    };
    if (!kernel.supports(ctx.caps, shape)) return;
    await expectGpuMatches(ctx, p, `${id} ${context}`);
    expect(ctx.lastRun.kernel).toBe(id);
  };

  it("gemmlowp's TestWithSmallData", async () => {
    if (!kernel.supports(ctx.caps, { M: 4, N: 2, K: 3, dstType: 'int32', dstOrder: 'row-major' })) return;
    const p: GemmProblem = {
      lhs: { data: Uint8Array.from([7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]), rows: 4, cols: 3, order: 'row-major' },
      rhs: { data: Uint8Array.from([1, 2, 3, 4, 5, 6]), rows: 3, cols: 2, order: 'row-major' },
    };
    expect(Array.from((await ctx.gemm(p)).data)).toEqual([76, 100, 103, 136, 130, 172, 157, 208]);
  });

  // Shapes at every kernel's tile edges: gemv row groups (4), 32- and 64-tiles.
  kernelProperties((p) => run(p), {
    sweep: 15,
    stages: 6,
    stageShapes: [
      [1, 65, 33],
      [5, 4, 1],
      [33, 16, 65],
      [65, 63, 64],
    ],
    bitDepth: 12,
  });

  it('shapes across tile boundaries', async () => {
    let seed = 1;
    for (const M of [4, 63, 65]) {
      for (const N of [63, 65, 127]) await run(sample(arbProblemOfShape(M, N, seed % 2 ? 63 : 65), seed++));
    }
  });

  it('shapes across 128-row tiles and several k stages, both dst orders', async () => {
    for (const [M, N, K, dstOrder] of [
      [257, 131, 130, 'row-major'],
      [129, 260, 97, 'col-major'],
    ] as const) {
      await run({ ...sample(arbProblemOfShape(M, N, K), M + N), dstOrder }, '128-tiles');
    }
  });

  it('int32 wrap: K = 34000 of 255s (raw sums past 2^31) with extreme zero points', async () => {
    const K = 34000;
    for (const [M, N] of [
      [2, 3],
      [33, 36],
    ]) {
      for (const signed of [false, true]) {
        const fill = (rows: number, cols: number): Operand => ({
          data: signed ? new Int8Array(rows * cols).fill(-128) : new Uint8Array(rows * cols).fill(255),
          rows,
          cols,
          order: 'row-major',
        });
        const [zL, zR] = signed ? [2147483647, -2147483648] : [-2147483648, 7];
        await run({ lhs: fill(M, K), rhs: fill(K, N), lhsZeroPoint: zL, rhsZeroPoint: zR }, 'wrap');
      }
    }
  });

  afterAll(() => ctx?.destroy());
});

describe.skipIf(!gpu)('the exactness self-test of kernels CI cannot run', () => {
  // Two test kernels that declare needsSelfTest: one that computes right (a dot4 kernel under another
  // name), and one that records no dispatch at all, so dst holds whatever the pooled buffer held.
  const base = dot4TiledKernel(64, gpu?.hasDot4 ? 'native' : 'emulated');
  const checked: GpuGemmKernel = { ...base, id: 'test-checked', needsSelfTest: true };
  const broken: GpuGemmKernel = { ...base, id: 'test-broken', needsSelfTest: true, prepare: async () => ({ encode: () => {} }) };
  const p = sample(arbProblemOfShape(70, 66, 40), 21);

  /**
   * The scheduler's GEMM path (src/scheduler/gemm.ts, what GpuContext runs) on the test device, choosing
   * among `kernels` (the test kernel first) with `force`: its results and the kernel each call ran.
   */
  const scheduler = (kernels: readonly GpuGemmKernel[], force: string, warnings: string[], limits: Partial<AdapterCaps['limits']> = {}) => {
    const resources = new DeviceResources(gpu!.device, gpu!.summary, { ...caps!, limits: { ...caps!.limits, ...limits } }, false);
    const choice = { kernels, force, warn: (m: string) => void warnings.push(m) };
    return {
      gemm: (q: GemmProblem | PatchProblem) =>
        withDevice(gpu!.device, async () => {
          const run = await runGemm(resources, choice, q, undefined, true);
          try {
            return { result: await run.result!, kernel: run.ran.kernel };
          } finally {
            resources.release(run.dst.buffer);
          }
        }),
      destroy: () => resources.destroy(false),
    };
  };

  it('a kernel that passes is used, without a warning', async () => {
    const warnings: string[] = [];
    const s = scheduler([checked, ...GPU_KERNELS], 'test-checked', warnings);
    const { result, kernel } = await s.gemm(p);
    expect(diffResults(result, referenceGemm(p))).toBeNull();
    expect(kernel).toBe('test-checked');
    expect(warnings).toEqual([]);
    s.destroy();
  });
  it('a kernel that fails is disabled on the device with one warning, and the next kernel runs, exactly', async () => {
    const warnings: string[] = [];
    const s = scheduler([broken, ...GPU_KERNELS], 'test-broken', warnings);
    for (let i = 0; i < 2; i++) {
      const { result, kernel } = await s.gemm(p);
      expect(diffResults(result, referenceGemm(p))).toBeNull();
      expect(kernel).not.toBe('test-broken');
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/kernel test-broken failed its exactness self-test .* disabled on this device \(problem 0/);
    // The verdict belongs to the device: another scheduler on it does not test again.
    const again = scheduler([broken, ...GPU_KERNELS], 'test-broken', warnings);
    expect(diffResults((await again.gemm(p)).result, referenceGemm(p))).toBeNull();
    expect(warnings).toHaveLength(1);
    s.destroy();
    again.destroy();
  });
  it('a wrong gathering form (its GEMM right) fails at a convolution layer, also where a first context could not gather', async () => {
    // The gathering form (PreparedGemmKernel.patchLhs, a pipeline of its own) records no dispatch and is
    // offered only where the workgroup memory reaches 16 KiB (as sgmat's depends on the limits): a context
    // below that passes the kernel packing the patches; the device's verdict must not then vouch for the
    // gathering form in a context that runs it.
    const late: GpuGemmKernel = {
      ...base,
      id: 'test-late-gather',
      needsSelfTest: true,
      prepare: async (device, c, kinds) => {
        const prepared = await base.prepare(device, c, kinds);
        if (c.limits.maxComputeWorkgroupStorageSize < 16384) return { encode: prepared.encode };
        return { ...prepared, patchLhs: async () => ({ encode: () => {} }) };
      },
    };
    const conv = selfTestConvProblems()[0];
    const want = referenceGemm(patchReference(conv));
    const warnings: string[] = [];
    const small = scheduler([late, ...GPU_KERNELS], late.id, warnings, { maxComputeWorkgroupStorageSize: 15360 });
    const packed = await small.gemm(conv);
    expect([packed.kernel, diffResults(packed.result, want), warnings]).toEqual([late.id, null, []]);
    const full = scheduler([late, ...GPU_KERNELS], late.id, warnings);
    const gathered = await full.gemm(conv);
    expect(gathered.kernel).not.toBe(late.id);
    expect(diffResults(gathered.result, want)).toBeNull();
    expect(warnings).toHaveLength(1);
    const first = selfTestProblems().length; // the GEMM problems pass; the first convolution layer fails
    expect(warnings[0]).toMatch(
      new RegExp(
        `test-late-gather failed its exactness self-test .*\\(problem ${first} \\(81x70x144, convolution\\): \\d+ of 5670 elements differ`,
      ),
    );
    small.destroy();
    full.destroy();
  });
  it.skipIf(!gpu?.hasDot4)('a context forced to a kernel prepacks a 4-bit rhs in the lanes that kernel reads, and runs it', async () => {
    const [M, K, N] = [2, 16, 8];
    const p: GemmProblem = {
      lhs: { data: Uint8Array.from({ length: M * K }, (_, i) => (i * 7) % 256), rows: M, cols: K },
      rhs: { data: Uint8Array.from({ length: K * N }, (_, i) => (i * 13) % 256), rows: K, cols: N },
      bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' },
    };
    const want = referenceGemm(p);
    for (const [kernel, format] of [
      ['gemv-workgroup', 'u8k4-r128'],
      ['dot4-32x32', 'u8k4-r128'],
      ['splitk-32x32', 'u8k4-r128'],
      ['gemv-u4-workgroup', 'u4k8-r128'],
      ['splitk-u4-32x32', 'u4k8-r128'],
    ] as const) {
      const forced = await GpuContext.create({ device: gpu!.device, kernel });
      const w = await forced.prepack('rhs', p.rhs, p.bitDepth);
      expect(w.packFormat, kernel).toBe(format);
      expect(diffResults(await forced.gemm({ ...p, rhs: w }), want), kernel).toBeNull();
      expect(forced.lastRun.kernel).toBe(kernel);
      forced.destroy();
    }
    // Forced by QGEMM_KERNEL: the same.
    vi.stubEnv('QGEMM_KERNEL', 'gemv-workgroup');
    try {
      const byEnv = await GpuContext.create({ device: gpu!.device });
      const w = await byEnv.prepack('rhs', p.rhs, p.bitDepth);
      expect(w.packFormat).toBe('u8k4-r128');
      expect(diffResults(await byEnv.gemm({ ...p, rhs: w }), want)).toBeNull();
      byEnv.destroy();
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it.skipIf(!gpu?.hasDot4)('a kernel reading a 4-bit rhs (two per byte) is self-tested over 4-bit problems', async () => {
    // Split-K u4 recording no dispatch, under another name (what sgmat-64x64-u4 is to a GPU with tensor
    // cores): it cannot run the 8-bit problems, so the self-test must give it the 4-bit ones, and they fail.
    const nibbles: GpuGemmKernel = {
      ...splitKKernel(4),
      id: 'test-broken-u4',
      needsSelfTest: true,
      prepare: async () => ({ encode: () => {} }),
    };
    const warnings: string[] = [];
    const s = scheduler([nibbles, ...GPU_KERNELS], 'test-broken-u4', warnings);
    const q = { ...p, bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' as const } };
    const { result, kernel } = await s.gemm(q);
    expect(diffResults(result, referenceGemm(q))).toBeNull();
    expect(kernel).not.toBe('test-broken-u4');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/test-broken-u4 failed its exactness self-test .*\(problem 0 \(67x45x97\): \d+ of 3015 elements differ/);
    s.destroy();
  });
  it('a kernel whose shader the driver rejects is disabled the same way, with no uncaptured GPU error', async () => {
    const warnings: string[] = [];
    const rejected: GpuGemmKernel = {
      ...base,
      id: 'test-rejected',
      needsSelfTest: true,
      prepare: async (device) => {
        await getPipeline(device, { id: 'test-rejected', source: 'enable no_such_extension; fn x() {}', entryPoint: 'x', overrides: {} });
        return { encode: () => {} };
      },
    };
    const s = scheduler([rejected, ...GPU_KERNELS], 'test-rejected', warnings);
    expect(diffResults((await s.gemm(p)).result, referenceGemm(p))).toBeNull();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/test-rejected failed its exactness self-test .*cannot create the test-rejected pipeline/);
    expect(uncapturedErrors).toEqual([]);
    s.destroy();
  });
});

// Where compiling is slow (AdapterCaps.slowCompiler: SwiftShader here) the dot4-tiled kernels take a
// shorter k step and strided operands the plain pack; above, the registry's kernels ran so. Here the
// configurations of hardware adapters run on this one: the full k step (TILE_KW 16) and the transposing
// pack (strided operands of 64 rows or more: a row-major rhs, a column-major lhs), every storage order.
describe.each(['dot4-32x32', 'dot4-64x64'])('%s with the configurations of a hardware adapter == CPU reference', (id) => {
  const kernel = GPU_KERNELS.find((k) => k.id === id)!;
  let ctx: GpuContext;
  beforeAll(async () => {
    if (runnable(kernel)) ctx = await createGpuContextAsHardware({ device: gpu!.device, kernel: id });
  });
  it.skipIf(!runnable(kernel))('shapes across tile boundaries and 64 packed rows, in every operand storage order', async () => {
    expect(ctx.caps.slowCompiler).toBe(false);
    let seed = 500;
    for (const [M, N, K] of [
      [65, 70, 130],
      [7, 64, 65],
      [64, 5, 200],
      [129, 127, 64],
    ] as const) {
      for (const lhsOrder of ['row-major', 'col-major'] as const) {
        for (const rhsOrder of ['row-major', 'col-major'] as const) {
          const p = sample(arbProblemOfShape(M, N, K), seed++);
          await expectGpuMatches(
            ctx,
            { ...p, lhs: { ...p.lhs, order: lhsOrder }, rhs: { ...p.rhs, order: rhsOrder } },
            `${id} as hardware`,
          );
          expect(ctx.lastRun.kernel).toBe(id);
        }
      }
    }
  });
});

describe.skipIf(!gpu)('WebGPU gemm == CPU reference', () => {
  let ctx: GpuContext;
  beforeAll(async () => {
    ctx = await GpuContext.create({ device: gpu!.device });
  });

  it('knows its capabilities, and the registry picks a kernel it supports', () => {
    expect(ctx.dot4).toBe(gpu!.hasDot4 ? 'native' : 'emulated');
    expect(ctx.caps.limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
  });

  it('random problems over the shape sweep and odd rectangles, with the kernel the registry picks', async () => {
    await fc.assert(
      fc.asyncProperty(arbProblem(), (p) => expectGpuMatches(ctx, p)),
      { numRuns: 20 },
    );
  });

  it('operands that do not say their order are row-major', async () => {
    const p = sample(arbProblemOfShape(9, 10, 11), 8);
    const unsaid = { ...p, lhs: { data: p.lhs.data, rows: 9, cols: 11 }, rhs: { data: p.rhs.data, rows: 11, cols: 10 } };
    const rowMajor = { ...p, lhs: { ...p.lhs, order: 'row-major' as const }, rhs: { ...p.rhs, order: 'row-major' as const } };
    expect(diffResults(await ctx.gemm(unsaid), referenceGemm(rowMajor))).toBeNull();
  });

  it('K >= 384 with default rounding switches to probabilistic requantization', async () => {
    await expectGpuMatches(ctx, { ...sample(arbProblemOfShape(9, 33, 400), 7), bitDepth: { lhs: 5, rhs: 3, rounding: 'default' } });
  });

  it('prepacked operands are reused across calls with other lhs, zero points and pipelines', async () => {
    const rhs = sample(arbOperand(70, 45), 11);
    const packed = await ctx.prepack('rhs', rhs);
    for (let seed = 0; seed < 4; seed++) {
      const p = sample(arbProblemOfShape(seed === 0 ? 1 : 30 + seed, 45, 70), 100 + seed);
      const withRhs = { ...p, rhs };
      const got = await ctx.gemm({ ...withRhs, rhs: packed });
      const d = diffResults(got, referenceGemm(withRhs));
      if (d) expect.fail(formatMismatch(d, `prepacked ${describeProblem(withRhs)}`));
    }
    const lowbit = await ctx.prepack('rhs', rhs, { lhs: 4, rhs: 5, rounding: 'probabilistic-xorshift' });
    const p = {
      ...sample(arbProblemOfShape(20, 45, 70), 5),
      rhs,
      bitDepth: { lhs: 4, rhs: 5, rounding: 'probabilistic-xorshift' as const },
    };
    expect(diffResults(await ctx.gemm({ ...p, rhs: lowbit }), referenceGemm(p))).toBeNull();
    await expect(ctx.gemm({ ...p, rhs: packed })).rejects.toThrow(InputError);
    packed.destroy();
    lowbit.destroy();
  });

  it('GPU-resident chaining: a uint8 dst feeds the next GEMM without readback', async () => {
    const a = sample(arbOperand(37, 50), 1);
    const b = sample(arbOperand(50, 29), 2);
    const c = sample(arbOperand(29, 18), 3);
    const layer1 = {
      lhs: a,
      rhs: b,
      lhsZeroPoint: 3,
      rhsZeroPoint: -5,
      pipeline: [
        { type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1518500250, exponent: -9, offsetAfterShift: 128, rounding: 'double' },
        { type: 'saturatingCast', to: 'uint8' },
      ],
    } satisfies GemmProblem;
    const hidden = await ctx.gemmOnGpu(layer1);
    expect(hidden.stride).toBe(32); // rows padded to a multiple of 4
    const layer2: GpuGemmProblem = { lhs: hidden, rhs: c, lhsZeroPoint: 128, rhsZeroPoint: 1 };
    const got = await ctx.gemm(layer2);
    const cpuHidden = referenceGemm(layer1);
    const want = referenceGemm({
      lhs: { data: cpuHidden.data as Uint8Array, rows: 37, cols: 29, order: 'row-major' },
      rhs: c,
      lhsZeroPoint: 128,
      rhsZeroPoint: 1,
    });
    expect(diffResults(got, want)).toBeNull();
    expect(diffResults(await ctx.read(hidden), cpuHidden)).toBeNull();
    ctx.releaseMatrix(hidden);
    // A second release would let two later GEMMs share one buffer: refused.
    expect(() => ctx.releaseMatrix(hidden)).toThrow(InputError);
  });

  describe('limits lowered so operands, bands and grids must split', () => {
    let small: GpuContext;
    beforeAll(async () => {
      // As on a hardware adapter, so that strided operands of 64 rows or more take the transposing pack.
      small = await createGpuContextAsHardware({
        device: gpu!.device,
        limits: { maxStorageBufferBindingSize: 32768, maxComputeWorkgroupsPerDimension: 3 },
      });
    });
    // (M, N, K): k-bands of column-major operands and outer bands of row-major ones (100 x 512 and
    // 120 x 400 bytes > 32 KiB), 64-row gemm bands, grids of far more than 3 x 3 workgroups.
    // The dst order is the one whose lines (64 of them per band) fit in 32 KiB even as int32.
    const shapes: [number, number, number][] = [
      [100, 70, 512],
      [120, 40, 400],
      [7, 300, 64],
      [128, 100, 300],
    ];
    it.each(shapes)('M=%i N=%i K=%i in every operand storage order', async (M, N, K) => {
      let seed = 0;
      for (const lhsOrder of ['row-major', 'col-major'] as const) {
        for (const rhsOrder of ['row-major', 'col-major'] as const) {
          const p = sample(arbProblemOfShape(M, N, K), 1000 + seed++);
          const dstOrder = N <= 128 ? 'row-major' : 'col-major';
          const q: GemmProblem = { ...p, lhs: { ...p.lhs, order: lhsOrder }, rhs: { ...p.rhs, order: rhsOrder }, dstOrder };
          await expectGpuMatches(small, q, 'lowered limits');
          // The plan really split: several gemm dispatches for one GEMM, and pack dispatches for both operands
          // (a transposing pack handles 64 rows per workgroup, so strided operands of 64 rows or more may fit one dispatch;
          // test/unit/plan.test.ts covers pack splitting over many limit sets).
          expect(small.lastRun.packDispatches).toBeGreaterThanOrEqual(2);
          expect(small.lastRun.gemmDispatches).toBeGreaterThan(1);
        }
      }
    });
    it('fails with LimitExceededError when even one band cannot fit', async () => {
      const p = sample(arbProblemOfShape(70, 70, 2000), 3); // one 64-row packed band: 64 * 2048 bytes
      await expect(small.gemm(p)).rejects.toThrow(LimitExceededError);
      const tiny = await GpuContext.create({ device: gpu!.device, limits: { maxBufferSize: 1000 } });
      await expect(tiny.gemm(sample(arbProblemOfShape(40, 40, 40), 4))).rejects.toThrow(LimitExceededError);
    });
    it("under 'auto' such a problem runs on the CPU, with a warning naming the limit; under 'webgpu' it fails", async () => {
      const p = sample(arbProblemOfShape(70, 70, 2000), 3);
      const limits = { maxStorageBufferBindingSize: 32768 };
      const warnings: string[] = [];
      const got = await gemm(p, { backend: 'auto', device: gpu!.device, limits, warn: (m) => warnings.push(m) });
      expect(got.backend).toBe('cpu');
      expect(Array.from(got.data)).toEqual(Array.from(referenceGemm(p).data));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/storage binding.*; falling back to the CPU$/);
      await expect(gemm(p, { backend: 'webgpu', device: gpu!.device, limits })).rejects.toThrow(LimitExceededError);
    });
  });

  it('a GPU operand that cannot hold its shape, or whose buffer cannot serve its use, is an InputError naming its buffer', async () => {
    const rhs = sample(arbOperand(64, 8), 1);
    const small = gpu!.device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
    await expect(
      ctx.gemm({ lhs: { buffer: small, rows: 64, cols: 64, order: 'row-major', dtype: 'uint8', stride: 64 }, rhs }),
    ).rejects.toThrow(/lhs\.buffer: holds 16 bytes/);
    // Large enough, but not usable as a storage binding or a copy source: WebGPU's validation would fail
    // naming no field (GpuValidationError), after work was encoded.
    const notStorage = gpu!.device.createBuffer({ size: 64 * 64, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
    const m = { buffer: notStorage, rows: 64, cols: 64, order: 'row-major', dtype: 'uint8', stride: 64 } as const;
    for (const call of [ctx.gemm({ lhs: m, rhs }), ctx.gemmOnGpu({ lhs: m, rhs }), ctx.prepack('lhs', m)])
      await expect(call).rejects.toThrow(/^lhs\.buffer: needs GPUBufferUsage\.STORAGE \(its usage is 12\)/);
    await expect(ctx.gemm({ lhs: { ...rhs, rows: 8, cols: 64, data: new Uint8Array(512) }, rhs: m })).rejects.toThrow(
      /^rhs\.buffer: needs/,
    );
    const noCopy = gpu!.device.createBuffer({ size: 64, usage: GPUBufferUsage.STORAGE });
    await expect(ctx.read({ ...m, buffer: noCopy, rows: 8, cols: 8, stride: 8 })).rejects.toThrow(
      /^matrix\.buffer: needs GPUBufferUsage\.COPY_SRC/,
    );
    // A size that is not whole words (10 bytes for a [2,5] matrix): WebGPU binds storage in words.
    const odd = gpu!.device.createBuffer({ size: 10, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const oddM = { buffer: odd, rows: 2, cols: 5, order: 'row-major', dtype: 'uint8', stride: 5 } as const;
    await expect(ctx.gemm({ lhs: oddM, rhs: { data: new Uint8Array(5), rows: 5, cols: 1 } })).rejects.toThrow(
      /^lhs\.buffer: holds 10 bytes/,
    );
    const odd14 = gpu!.device.createBuffer({ size: 14, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    await expect(ctx.gemm({ lhs: { ...oddM, buffer: odd14 }, rhs: { data: new Uint8Array(5), rows: 5, cols: 1 } })).rejects.toThrow(
      /^lhs\.buffer: holds 14 bytes, not a whole number of 4-byte words/,
    );
    // A convolution's input is bound by the word-rounded range it spans, not whole: a 14-byte buffer
    // holding a 3x3 image serves a 3x3 filter with padding 1, exactly (the sums of each pixel's neighbours).
    const image = gpu!.device.createBuffer({ size: 14, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    gpu!.device.queue.writeBuffer(image, 0, Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0));
    const one = { strideHeight: 1, strideWidth: 1, dilationHeight: 1, dilationWidth: 1, padTop: 1, padLeft: 1, outHeight: 3, outWidth: 3 };
    const geometry = { batch: 1, height: 3, width: 3, channels: 1, filterHeight: 3, filterWidth: 3, ...one };
    const input = { buffer: image, rows: 9, cols: 1, order: 'row-major', dtype: 'uint8', stride: 1 } as const;
    const conv = await ctx.gemm({ lhs: { input, geometry, zeroPoint: 0 }, rhs: { data: new Uint8Array(9).fill(1), rows: 9, cols: 1 } });
    expect(Array.from(conv.data)).toEqual([12, 21, 16, 27, 45, 33, 24, 39, 28]);
    // ... but it must be a storage buffer.
    const imageNoStorage = gpu!.device.createBuffer({ size: 16, usage: GPUBufferUsage.COPY_DST });
    await expect(
      ctx.gemm({
        lhs: { input: { ...input, buffer: imageNoStorage }, geometry, zeroPoint: 0 },
        rhs: { data: new Uint8Array(9), rows: 9, cols: 1 },
      }),
    ).rejects.toThrow(/^lhs\.input\.buffer: needs GPUBufferUsage\.STORAGE/);
    // The context is still usable after each refusal.
    expect(
      Array.from(
        (await ctx.gemm({ lhs: { data: Uint8Array.of(1, 2), rows: 1, cols: 2 }, rhs: { data: Uint8Array.of(3, 4), rows: 2, cols: 1 } }))
          .data,
      ),
    ).toEqual([11]);
    for (const b of [small, notStorage, noCopy, odd, odd14, image, imageNoStorage]) b.destroy();
  });

  it("a GpuMatrix's every field is checked, as an operand (gemm, gemmOnGpu, prepack) and in read: an InputError naming it", async () => {
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const buffer = gpu!.device.createBuffer({ size: 8, usage });
    gpu!.device.queue.writeBuffer(buffer, 0, Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8));
    const good = { buffer, rows: 4, cols: 2, order: 'row-major', dtype: 'uint8', stride: 2 } as const;
    const rhs = { data: Uint8Array.of(1, 1), rows: 2, cols: 1 };
    const bad: [object, string][] = [
      [{ ...good, order: undefined, stride: 4 }, 'order'], // read as row-major, 14 bytes: it was checked as col-major
      [{ ...good, order: 'diag' }, 'order'],
      [{ ...good, rows: 1.5 }, 'rows'],
      [{ ...good, cols: -1 }, 'cols'],
      [{ ...good, stride: Number.NaN }, 'stride'],
      [{ ...good, stride: 1 }, 'stride'],
      [{ ...good, dtype: 'float' }, 'dtype'],
      [{ ...good, rows: 5 }, 'buffer'],
      [{ ...good, buffer: { size: 100 } }, 'buffer'],
    ];
    for (const [m, key] of bad) {
      const what = JSON.stringify({ ...m, buffer: undefined });
      expect(await rejectedField(ctx.gemm({ lhs: m, rhs } as never)), `gemm ${what}`).toBe(`lhs.${key}`);
      expect(await rejectedField(ctx.gemmOnGpu({ lhs: m, rhs } as never)), `gemmOnGpu ${what}`).toBe(`lhs.${key}`);
      expect(await rejectedField(ctx.prepack('lhs', m as never)), `prepack ${what}`).toBe(`lhs.${key}`);
      expect(await rejectedField(ctx.read(m as never)), `read ${what}`).toBe(`matrix.${key}`);
    }
    // read copies the lines at their stride, the last to its end, in 4-byte words: an int16 [4,2] matrix
    // needs 16 bytes; a [2,2] one reads back, and so does a [2,1] one of stride 3 (4 bytes of the 8 copied).
    expect(await rejectedField(ctx.read({ ...good, dtype: 'int16' }))).toBe('matrix.buffer');
    expect(Array.from((await ctx.read({ ...good, rows: 2, dtype: 'int16' })).data)).toEqual([0x201, 0x403, 0x605, 0x807]);
    expect(Array.from((await ctx.read({ ...good, rows: 2, cols: 1, stride: 3, dtype: 'int16' })).data)).toEqual([0x201, 0x807]);
    expect(Array.from((await ctx.read({ ...good, rows: 3, cols: 2, stride: 3 })).data)).toEqual([1, 2, 4, 5, 7, 8]);
    expect(Array.from((await ctx.gemm({ lhs: good, rhs })).data)).toEqual([3, 7, 11, 15]);
    buffer.destroy();
  });

  it('a CPU operand whose data is not its shape is an InputError naming it, in gemm, gemmOnGpu and prepack', async () => {
    const field = rejectedField;
    const [M, K, N] = [2, 8, 4];
    const lhs = { data: new Uint8Array(M * K).fill(1), rows: M, cols: K };
    const rhs = { data: Int8Array.from({ length: K * N }, (_, i) => (i % 7) - 3), rows: K, cols: N };
    const bad: [object, object, string][] = [
      [{ ...lhs, data: new Uint8Array(M * K - 3) }, rhs, 'lhs'], // short: it read what the pooled upload held
      [{ ...lhs, data: new Uint8Array(M * K + 5) }, rhs, 'lhs'],
      [lhs, { ...rhs, data: rhs.data.slice(0, 20) }, 'rhs'],
      [{ ...lhs, data: new Uint16Array(M * K) }, rhs, 'lhs'],
    ];
    for (const [l, r, name] of bad) {
      expect(await field(ctx.gemm({ lhs: l, rhs: r } as never)), `gemm ${name}`).toBe(name);
      expect(await field(ctx.gemmOnGpu({ lhs: l, rhs: r } as never)), `gemmOnGpu ${name}`).toBe(name);
    }
    for (const [x, name] of [
      [{ ...rhs, data: rhs.data.slice(0, 20) }, 'rhs'],
      [{ ...rhs, data: new Int8Array(K * N + 1) }, 'rhs'],
      [{ ...rhs, data: new Uint16Array(K * N) }, 'rhs'],
      [{ ...rhs, data: Array.from(rhs.data) }, 'rhs'],
      [{ ...rhs, order: 'column' }, 'rhs.order'],
      [{ ...rhs, rows: 0, data: new Int8Array(0) }, 'rhs.rows'],
      [{ ...rhs, rows: 2.5 }, 'rhs.rows'],
    ] as const) {
      expect(await field(ctx.prepack('rhs', x as never)), `prepack ${JSON.stringify({ ...x, data: x.data.length })}`).toBe(name);
    }
  });

  it("arguments of the wrong type are an InputError naming them, as a rejection: create's options, the problem, timing, warmup items, a Sequential's context", async () => {
    const field = async (p: Promise<unknown>) => {
      const e = await p.catch((x) => x);
      expect(e).toBeInstanceOf(InputError);
      return (e as InputError).field;
    };
    expect(await field(GpuContext.create({ device: {} as never }))).toBe('device');
    expect(await field(GpuContext.create(5 as never))).toBe('options');
    const p = { lhs: { data: new Uint8Array(6), rows: 2, cols: 3 }, rhs: { data: new Uint8Array(12), rows: 3, cols: 4 } };
    expect(await field(ctx.gemm(p, 5 as never))).toBe('timing');
    expect(await field(ctx.gemm(p, undefined, { onTrace: 1 as never }))).toBe('onTrace');
    expect(await field(ctx.gemmOnGpu(p, 'ms' as never))).toBe('timing');
    expect(await field(ctx.warmup(5 as never))).toBe('items');
    expect(
      await field(
        ctx.warmup([
          { m: 4, n: 4, k: 4 },
          { m: -1, n: 2, k: 3 },
        ]),
      ),
    ).toBe('items[1].m');
    expect(await field(ctx.warmup([null as never]))).toBe('items[0]');
    // a type that is not a dtype, was compiled for uint8; the problem's fields are the item's
    expect(await field(ctx.warmup([{ m: 2, n: 2, k: 2, lhsType: 'Int8' as never }]))).toBe('items[0].lhsType');
    expect(
      await field(
        ctx.warmup([
          { m: 1, n: 1, k: 1 },
          { m: 1, n: 1, k: 1, pipeline: 'x' as never },
        ]),
      ),
    ).toBe('items[1].pipeline');
    expect(await field(ctx.warmup([{ m: 2, n: 2, k: 2, dstOrder: 'diagonal' as never }]))).toBe('items[0].dstOrder');
    expect(await field(ctx.warmup([{ ...p, lhsZeroPoint: 1.5 }]))).toBe('items[0].lhsZeroPoint');
    expect(await field(ctx.warmup([{ ...p, lhsZeropoint: 1 } as never]))).toBe('items[0].lhsZeropoint');
    const forced = await GpuContext.create({ device: gpu!.device, kernel: 'gemv-u4-workgroup' }); // the context's own field stays its own
    expect(await field(forced.warmup([{ m: 2, n: 8, k: 8 }]))).toBe('kernel');
    forced.destroy();
    // A shape whose stand-in operands cannot be allocated: a LimitExceededError, not a RangeError.
    await expect(ctx.warmup([{ m: 1e6, n: 8, k: 1e6 }])).rejects.toMatchObject({ name: 'LimitExceededError', limit: 'memory' });
    expect(await field(Sequential.create({} as never, []))).toBe('ctx');
    expect(await field(GpuContext.create({ powerPreference: 'fast' as never }))).toBe('powerPreference');
    for (const bad of [undefined, null, 3, []]) {
      expect(await field(ctx.gemm(bad as never))).toBe('problem');
      expect(await field(ctx.gemmOnGpu(bad as never))).toBe('problem');
      expect(await field(ctx.gemmChain(bad as never))).toBe('chain');
    }
  });

  it('limits that are not positive integers (alignments: powers of two), or unknown, are an InputError naming the limit, before any device', async () => {
    for (const [limits, name] of [
      [{ maxStorageBufferBindingSize: Number.NaN }, 'limits.maxStorageBufferBindingSize'], // planned no dispatch: zeros
      [{ maxStorageBufferBindingSize: -1 }, 'limits.maxStorageBufferBindingSize'], // planned forever
      [{ maxStorageBufferBindingSize: 'x' }, 'limits.maxStorageBufferBindingSize'],
      [{ maxComputeWorkgroupsPerDimension: 0 }, 'limits.maxComputeWorkgroupsPerDimension'], // planned forever
      [{ maxComputeWorkgroupsPerDimension: 2.5 }, 'limits.maxComputeWorkgroupsPerDimension'],
      [{ minStorageBufferOffsetAlignment: 384 }, 'limits.minStorageBufferOffsetAlignment'],
      [{ maxComputeInvocationsPerWorkgroup: 32 }, 'limits.maxComputeInvocationsPerWorkgroup'], // under the packs' 64
      [{ maxComputeWorkgroupSizeX: 63 }, 'limits.maxComputeWorkgroupSizeX'],
      [{ maxBindingSize: 1024 }, 'limits.maxBindingSize'],
      [[], 'limits'],
    ] as const) {
      const e = await GpuContext.create({ device: gpu!.device, limits: limits as never }).catch((x) => x);
      expect(e, JSON.stringify(limits)).toBeInstanceOf(InputError);
      expect((e as InputError).field).toBe(name);
    }
  });

  afterAll(() => {
    expect(uncapturedErrors).toEqual([]);
    ctx?.destroy();
  });
});

describe.skipIf(!gpu)('device loss', () => {
  it('a context on a lost device throws DeviceLostError', async () => {
    const own = await GpuContext.create({ allowSoftware: true });
    own.device.destroy();
    await own.device.lost;
    await expect(own.gemm(sample(arbProblemOfShape(4, 4, 4), 1))).rejects.toThrow(DeviceLostError);
  });
  it('destroy() during calls rejects them with DeviceLostError, never with another error', async () => {
    const own = await GpuContext.create({ device: gpu!.device });
    const p = sample(arbProblemOfShape(40, 50, 60), 5);
    const calls = [own.gemm(p), own.gemm(p), own.gemmOnGpu(p)];
    await new Promise((r) => setTimeout(r, 0));
    own.destroy();
    // A call that finished before destroy() may resolve; one that did not must be a DeviceLostError.
    await expectResolvedOrDeviceLost(calls);
    await expect(own.gemm(p)).rejects.toThrow(DeviceLostError);
  });
  it('a released matrix or a destroyed prepacked operand is refused, never read', async () => {
    const own = await GpuContext.create({ device: gpu!.device });
    const p = sample(arbProblemOfShape(8, 9, 10), 6);
    const m = await own.gemmOnGpu({ ...p, pipeline: [{ type: 'saturatingCast', to: 'uint8' }] });
    const copy = { ...m }; // a copy carries the matrix's lease
    own.releaseMatrix(m);
    await expect(own.read(m)).rejects.toThrow(/released/);
    await expect(own.read(copy)).rejects.toThrow(/released/);
    await expect(own.gemm({ lhs: m, rhs: sample(arbOperand(9, 3), 7) })).rejects.toThrow(InputError);
    // The pool hands the same buffer to the next result: that one (and its copies) is usable, the released
    // one and its copy still not, nor can they release it.
    const next = await own.gemmOnGpu({ ...p, pipeline: [{ type: 'saturatingCast', to: 'uint8' }] });
    expect(next.buffer).toBe(m.buffer);
    const expected = referenceGemm({ ...p, pipeline: [{ type: 'saturatingCast', to: 'uint8' }] });
    expect(diffResults(await own.read(next), expected)).toBeNull();
    expect(diffResults(await own.read({ ...next }), expected)).toBeNull();
    await expect(own.read(m)).rejects.toThrow(/released/);
    await expect(own.read(copy)).rejects.toThrow(/released/);
    await expect(own.gemm({ lhs: copy, rhs: sample(arbOperand(9, 3), 7) })).rejects.toThrow(/released/);
    expect(() => own.releaseMatrix(copy)).toThrow(/released/);
    expect(diffResults(await own.read(next), expected)).toBeNull();
    // A matrix built field by field around the live buffer has no lease: refused, in read and in release.
    const byHand = { buffer: next.buffer, rows: next.rows, cols: next.cols, order: next.order, dtype: next.dtype, stride: next.stride };
    await expect(own.read(byHand)).rejects.toThrow(/copy of it/);
    expect(() => own.releaseMatrix(byHand)).toThrow(/copy of it/);
    expect(diffResults(await own.read(Object.assign({}, next)), expected)).toBeNull();
    const packed = await own.prepack('rhs', p.rhs);
    expect(packed.bytes).toBeGreaterThan(0);
    packed.destroy();
    await expect(own.gemm({ ...p, rhs: packed })).rejects.toThrow(/destroyed/);
    own.destroy();
  });
  it('the next runOp call re-acquires a device and is still exact', async () => {
    const first = await sharedContext();
    first.device.destroy();
    await first.device.lost;
    const p = sample(arbProblemOfShape(9, 10, 11), 2);
    const got = await runOp({ op: 'gemm', problem: p }, 'webgpu');
    expect(got.backend).toBe('webgpu');
    expect(diffResults(got, referenceGemm(p))).toBeNull();
    expect(await sharedContext()).not.toBe(first);
  });
  it('shared contexts honour their options', async () => {
    const plain = await sharedContext();
    const forced = await sharedContext({ kernel: 'dot4-32x32-emulated' });
    expect(forced).not.toBe(plain);
    expect(await sharedContext({ kernel: 'dot4-32x32-emulated' })).toBe(forced);
    const p = sample(arbProblemOfShape(9, 10, 11), 3);
    expect(diffResults(await forced.gemm(p), referenceGemm(p))).toBeNull();
    expect(forced.lastRun.kernel).toBe('dot4-32x32-emulated');
  });
  it('at most 4 shared contexts per device: the least recently used is destroyed, and its options make a new one', async () => {
    const device = gpu!.device;
    const named = (i: number) => sharedContext({ device, tuningName: `t${i}` });
    const made: GpuContext[] = [];
    for (let i = 0; i < 4; i++) made.push(await named(i));
    expect(await named(0)).toBe(made[0]); // used again: t1 is now the least recent
    await named(4);
    await new Promise((r) => setTimeout(r, 0));
    await made[1].exclusive(async () => {}); // its destroy waited for the calls queued on the device
    expect([made[0].lostReason, made[1].lostReason, made[2].lostReason]).toEqual([null, 'destroyed', null]);
    expect(await named(1)).not.toBe(made[1]);
    const p = sample(arbProblemOfShape(5, 6, 7), 4);
    const got = await gemm(p, { backend: 'webgpu', device, tuningName: 't1' });
    expect(got.backend).toBe('webgpu');
    expect(diffResults(got, referenceGemm(p))).toBeNull();
  });
  it('shared contexts under concurrent calls: an evicted one is destroyed only once its calls are done', async () => {
    const device = gpu!.device;
    const p = sample(arbProblemOfShape(4, 5, 8), 5);
    // 6 option sets, 3 rounds at once: each call finds its context evicted by the others meanwhile
    const calls = Array.from({ length: 18 }, (_, i) => gemm(p, { backend: 'webgpu', device, tuningName: `r${i % 6}` }));
    for (const got of await Promise.all(calls)) expect(diffResults(got, referenceGemm(p))).toBeNull();
    // two waiters on an entry evicted while they wait share the one context made again; it is cached
    const named = (i: number) => sharedContext({ device, tuningName: `w${i}` });
    const w: GpuContext[] = [];
    for (let i = 0; i < 4; i++) w.push(await named(i));
    const [a, b] = await Promise.all([named(0), named(0), named(4)]);
    expect(a).toBe(b);
    expect(await named(0)).toBe(a);
    // a context made again for a lost one is the most recently used, not the next evicted: the cache
    // holds w2 (least recent), w3, w4, w0; w2 is lost and made again, then w5 evicts w3
    w[2].destroy();
    const remade = await named(2);
    await named(5);
    await new Promise((r) => setTimeout(r, 0));
    await remade.exclusive(async () => {});
    expect([remade.lost, w[3].lost]).toEqual([false, true]);
  });
});

describe.skipIf(!gpu)("the kernels' shaders", () => {
  it('compiled in this file without a compiler warning', async () => {
    expect(modules.length).toBeGreaterThan(10);
    const warnings: string[] = [];
    for (const m of modules) {
      for (const x of (await m.getCompilationInfo()).messages) {
        if (x.type === 'warning') warnings.push(`${m.label} ${x.lineNum}: ${x.message.split('\n')[0]}`);
      }
    }
    expect(warnings).toEqual([]);
  });
});
