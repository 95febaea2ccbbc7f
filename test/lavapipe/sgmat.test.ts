// Lavapipe tier: the subgroup-matrix kernel with Dawn's REAL builtins, on Mesa's lavapipe (>= 26), which
// offers M8 N8 K8 fragments (u8 -> u32 and i8 -> i32) with subgroups of 8. Run by tools/test-lavapipe.sh
// (it fetches lavapipe into .lavapipe/ and points Vulkan at it), never by the default `vitest run`. It
// FAILS, never skips, where the adapter is not lavapipe with subgroup matrices. Covers the registry's
// kernel (the adapter's best configuration, u8: at 8x8x8 its 64 x 64 tile gives each subgroup 4 x 4
// fragments, so all 16 named accumulators run) and the same source at the i8 configuration over the
// fixed exactness suite of src/verify.ts (the self-test problems and a sweep of every type, order,
// zero-point form and stage kind, shapes of several tiles and k steps), the direct forms (fragments loaded
// from the packed operands in storage: `sgmat-64x64-dd`, and `sgmat-64x64-dr` under 'all'), the context's self-test gate,
// lowered limits that split operands and grids into bands, split-K (4 slices; the registry's '-sk'), a
// conv layer (patches gathered by the kernel into its staging, u8 and i8), and the '-u4' variant (a 4-bit rhs read two values per byte,
// unpacked into the staging) at u8 on a 128-wide tiling or i8 on the default one (a seeded one) over
// 4-bit problems at tile edges.

import { afterAll, describe, expect, it, vi } from 'vitest';
import { createGpuContextWith, GpuContext } from '../../src/scheduler/context.ts';
import {
  bestConfig,
  configLabel,
  DEFAULT_TILING,
  sampleTilings,
  SPLITK_TILING,
  type SgmatConfig,
  type SgmatTiling,
  sgmatTilings,
  tilingId,
} from '../../src/kernels/sgmat/config.ts';
import {
  SGMAT_SPLITK_ID,
  sgmatKernel,
  sgmatSource,
  sgmatSourceU4,
  sgmatSplitKKernel,
  sgmatU4Kernel,
  sgmatVariant,
} from '../../src/kernels/sgmat/kernel.ts';
import { loadForm, toLegacyForm } from '../../src/kernels/sgmat/load-form.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import type { GpuGemmKernel } from '../../src/kernels/types.ts';
import type { GemmProblem } from '../../src/types.ts';
import { verifyGpuKernel, verifyProblems } from '../../src/verify.ts';
import { nibbleProblems } from '../support/nibble-problems.ts';
import { getGpu, releaseGpu, uncapturedErrors } from '../gpu/gpu-env.ts';

// Pipelines compile slowly on software adapters (seconds each, more on a loaded machine).
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const gpu = await getGpu();
afterAll(releaseGpu);
if (!gpu) throw new Error('no WebGPU adapter: run this file through tools/test-lavapipe.sh');

/** `kernel` over `problems` (src/verify.ts verifyGpuKernel): every problem runs, 0 mismatches. */
const expectExact = async (kernel: GpuGemmKernel, problems: GemmProblem[]): Promise<void> => {
  const row = await verifyGpuKernel(gpu.device, kernel, problems, { kernels: [kernel, ...GPU_KERNELS] });
  console.log(`[lavapipe] ${kernel.id}: ${row.problems} problems, ${row.mismatches} mismatches, ${(row.ms / 1000).toFixed(1)} s`);
  expect(row.detail).toBe('');
  expect(row.problems).toBe(problems.length);
  expect(row.mismatches).toBe(0);
};
/** The exactness suite but its 40000-deep problem, which runs in the self-test gate (16 slices on this adapter). */
const shallowSuite = () => verifyProblems().filter((p) => p.lhs.cols <= 10000);

describe('sgmat-64x64 with the real builtins on lavapipe', () => {
  let caps: GpuContext['caps'];
  it('the adapter is lavapipe with 8x8x8 subgroup matrices, and the registry kernel takes them', async () => {
    const ctx = await GpuContext.create({ device: gpu.device });
    caps = ctx.caps;
    ctx.destroy();
    console.log(
      `[lavapipe] ${gpu.summary.description}; subgroups ${caps.subgroupMinSize}-${caps.subgroupMaxSize}; configs ${caps.subgroupMatrix.map((c) => `${c.componentType}->${c.resultComponentType} ${c.M}x${c.N}x${c.K}`).join(', ')}`,
    );
    expect(gpu.summary.description).toMatch(/llvmpipe/);
    expect(bestConfig(caps)).toEqual({ componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 });
    expect(sgmatKernel.supports(caps, { M: 256, N: 256, K: 256, dstType: 'int32', dstOrder: 'row-major' })).toBe(true);
  });

  const i8: SgmatConfig = { componentType: 'i8', M: 8, N: 8, K: 8, subgroupSize: 8 };
  const variants = [
    ['u8 -> u32 (the registry kernel, self-test gate included)', sgmatKernel],
    [
      'i8 -> i32',
      sgmatVariant('sgmat-64x64-i8', (c) => (c.subgroupMatrix.some((x) => x.componentType === 'i8') ? i8 : null), sgmatSource, false),
    ],
  ] as const;
  it.each(variants)('%s: the exactness suite, 0 mismatches', async (_, kernel) => {
    await expectExact(kernel, shallowSuite());
  });
  // Right fragments loaded by subgroupMatrixLoad straight from the packed rhs in storage (sgmat-rhs-direct.wgsl),
  // and, '-dd', left ones too from the packed lhs (sgmat-lhs-direct.wgsl): in CI the '-dd' form only (its right
  // fragments are the '-dr' form's loads), both under QGEMM_SGMAT_SAMPLE=all.
  const u8: SgmatConfig = { ...i8, componentType: 'u8' };
  const rhsOnly = { ...DEFAULT_TILING, rhsDirect: true };
  const bothDirect = { ...rhsOnly, lhsDirect: true };
  const directForms = (process.env.QGEMM_SGMAT_SAMPLE ?? '1') === 'all' ? [bothDirect, rhsOnly] : [bothDirect];
  it.each(directForms.map((t) => [tilingId(t), t] as const))(
    '%s (fragments from storage) at u8: the exactness suite, 0 mismatches',
    async (id, t) => {
      const kernel = sgmatVariant(`${id}-lavapipe`, (c) => (c.subgroupMatrix.length ? u8 : null), sgmatSource, false, t);
      await expectExact(kernel, shallowSuite());
    },
  );

  // The registry's '-u4' kernel as built, without its self-test gate (the gate's 40000-deep problem takes
  // minutes here; test/gpu/gemm.test.ts checks that the gate gives such a kernel its 4-bit problems).
  const u4 = (id: string, c: SgmatConfig, tiling?: SgmatTiling) =>
    sgmatVariant(
      id,
      (x) => (x.subgroupMatrix.some((y) => y.componentType === c.componentType) ? c : null),
      sgmatSourceU4,
      false,
      tiling,
      4,
    );
  // u8 at a 128-wide tiling (nibble rows padded to 128, 'u4k8-r128') and i8 at the default one: a seeded
  // one of the two in CI (QGEMM_SGMAT_SAMPLE, QGEMM_SGMAT_SEED as below; 'all' for both).
  const wide: SgmatTiling = { tileM: 128, tileN: 64, sgRows: 4, sgCols: 2, kStep: 64, buffers: 2 };
  const both = [
    ['u8 -> u32, sgmat-128x64-w4x2-k64-b2-u4', u4('sgmat-128x64-w4x2-k64-b2-u4-u8', { ...i8, componentType: 'u8' }, wide)],
    ['i8 -> i32, sgmat-64x64-u4', u4('sgmat-64x64-u4-i8', i8)],
  ] as const;
  const nibbles = (process.env.QGEMM_SGMAT_SAMPLE ?? '1') === 'all' ? both : [both[Number(process.env.QGEMM_SGMAT_SEED ?? 34) % 2]];
  it('the registry kernel sgmat-64x64-u4 runs here, at u8 8x8x8', () => {
    expect(
      sgmatU4Kernel().supports(caps, {
        M: 256,
        N: 256,
        K: 256,
        dstType: 'int32',
        dstOrder: 'row-major',
        bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' },
      }),
    ).toBe(true);
    expect(sgmatU4Kernel().rhsPackFormat).toBe('u4k8-r64');
  });
  it.each(nibbles)("-u4 at %s: 4-bit rhs at tile edges and the suite's 4-bit problems, 0 mismatches", async (_, kernel) => {
    await expectExact(kernel, [...nibbleProblems(4, 340), ...verifyProblems().filter((p) => (p.bitDepth?.rhs ?? 8) <= 4)]);
  });

  it('lowered limits: operands, bands and grids split', async () => {
    // The self-test gate runs once per device, at the device's limits (its 64 x 40000 problem cannot fit 32 KiB bindings).
    const plain = await GpuContext.create({ device: gpu.device, kernel: 'sgmat-64x64' });
    await plain.gemm(verifyProblems()[0]);
    expect(plain.lastRun.kernel).toBe('sgmat-64x64');
    plain.destroy();
    const small = await GpuContext.create({
      device: gpu.device,
      kernel: 'sgmat-64x64',
      limits: { maxStorageBufferBindingSize: 32768, maxComputeWorkgroupsPerDimension: 3 },
    });
    // Those whose 64-row packed bands (K <= 512) and 64 dst lines (as int32) fit in 32 KiB.
    const problems = verifyProblems().filter(
      (p) => p.lhs.rows >= 64 && p.lhs.cols <= 512 && (p.dstOrder === 'col-major' ? p.lhs.rows : p.rhs.cols) <= 128,
    );
    expect(problems.length).toBeGreaterThanOrEqual(3);
    const row = await verifyProblemsWithContext(small, problems);
    expect(row).toBe('');
    expect(small.lastRun.gemmDispatches).toBeGreaterThan(1);
    small.destroy();
  });

  // The kernel gathers each lhs tile's patches from the input into its staging and sums their rows
  // itself (sgmat-lhs-patches.wgsl): one dispatch, no pack, at u8 (the registry's) and i8 fragments; its
  // split-K forms gather each slice's k range (a deep layer: 1440 k in slices), u8 (the registry's, self-test
  // gate included) and i8.
  const i8Split = sgmatVariant(
    'sgmat-64x64-sk-i8',
    (c) => (c.subgroupMatrix.some((x) => x.componentType === 'i8') ? i8 : null),
    sgmatSource,
    false,
    SPLITK_TILING,
  );
  it.each([
    ['sgmat-64x64', sgmatKernel],
    ['sgmat-64x64-i8', variants[1][1]],
    ['sgmat-64x64-sk', sgmatSplitKKernel],
    ['sgmat-64x64-sk-i8', i8Split],
  ] as const)('a conv layer gathered by %s from the NHWC input: 0 mismatches', async (id, kernel) => {
    const { im2col } = await import('../../src/pack/patches.ts');
    const { referenceGemm } = await import('../../src/reference/gemm.ts');
    const { diffResults, formatMismatch } = await import('../support/compare.ts');
    const ctx = await createGpuContextWith([kernel, ...GPU_KERNELS], { device: gpu.device, kernel: id });
    // 9x9x3 at stride 1 (SAME), 2 x 16x12x33 at stride 2 with dilation 2, 4x4x160: rows 81, 96 and 16, K 27, 297 and 1440.
    const cases = [
      { batch: 1, height: 9, width: 9, channels: 3, stride: 1, dilation: 1, pad: 1, out: [9, 9], O: 70, zeroPoint: 255 },
      { batch: 2, height: 16, width: 12, channels: 33, stride: 2, dilation: 2, pad: 2, out: [8, 6], O: 9, zeroPoint: 0 },
      { batch: 1, height: 4, width: 4, channels: 160, stride: 1, dilation: 1, pad: 1, out: [4, 4], O: 24, zeroPoint: 9 },
    ];
    for (const c of cases) {
      const geometry = {
        ...{ batch: c.batch, height: c.height, width: c.width, channels: c.channels, filterHeight: 3, filterWidth: 3 },
        ...{ strideHeight: c.stride, strideWidth: c.stride, dilationHeight: c.dilation, dilationWidth: c.dilation },
        ...{ padTop: c.pad, padLeft: c.pad, outHeight: c.out[0], outWidth: c.out[1] },
      };
      const input = Uint8Array.from({ length: c.batch * c.height * c.width * c.channels }, (_, i) => (i * 2654435761) >>> 24);
      const [M, K] = [c.batch * c.out[0] * c.out[1], 9 * c.channels];
      const rhs = {
        data: Uint8Array.from({ length: K * c.O }, (_, i) => (i * 40503) & 0xff),
        rows: K,
        cols: c.O,
        order: 'col-major' as const,
      };
      const common = { rhs, lhsZeroPoint: c.zeroPoint, rhsZeroPoint: 77 };
      const got = await ctx.gemm({ ...common, lhs: { input, geometry, zeroPoint: c.zeroPoint } });
      expect(ctx.lastRun).toMatchObject({ kernel: id, patchesGathered: true, packDispatches: 1 }); // the rhs's pack only
      const want = referenceGemm({ ...common, lhs: { data: im2col(input, geometry, c.zeroPoint), rows: M, cols: K } });
      const d = diffResults(got, want);
      if (d) expect.fail(formatMismatch(d, `conv ${JSON.stringify(geometry)}`));
    }
    ctx.destroy();
  });

  afterAll(() => expect(uncapturedErrors).toEqual([]));
});

// Tilings of the family (src/kernels/sgmat/config.ts), with the real builtins at 8x8x8: a seeded sample
// (QGEMM_SGMAT_SAMPLE, default 1, or 'all'; QGEMM_SGMAT_SEED, default 34), named in the log. The emulated
// builtins check other samples at 16x16x32 and 8x8x8 on SwiftShader (test/gpu/sgmat-family.test.ts).
describe('sampled sgmat tilings with the real builtins on lavapipe', () => {
  const u8: SgmatConfig = { componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 };
  const sample = process.env.QGEMM_SGMAT_SAMPLE ?? '1';
  const seed = Number(process.env.QGEMM_SGMAT_SEED ?? 34);
  const limits = gpu.device.limits as unknown as Parameters<typeof sgmatTilings>[1];
  const sampled = sample === 'all' ? sgmatTilings(u8, limits).slice(1) : sampleTilings(u8, Number(sample), seed + 100, limits);
  // And always one of 16 subgroups (4 x 4; 128 invocations at 8 each): subgroup_id from the hardware
  // picks the block, which the emulation cannot check.
  const sixteen: SgmatTiling = { tileM: 64, tileN: 128, sgRows: 4, sgCols: 4, kStep: 64, buffers: 2 };
  const tilings = sampled.some((t) => tilingId(t) === tilingId(sixteen)) ? sampled : [...sampled, sixteen];
  it.each(tilings.map((t) => [tilingId(t), t] as const))('%s: the exactness suite, 0 mismatches', async (id, tiling) => {
    const kernel = sgmatVariant(`${id}-lavapipe`, (c) => (c.subgroupMatrix.length ? u8 : null), sgmatSource, false, tiling);
    // The shallow suite: the 40000-deep problem's int32 wrap runs in the self-test gates above and below.
    const row = await verifyGpuKernel(gpu.device, kernel, shallowSuite(), { kernels: [kernel, ...GPU_KERNELS] });
    console.log(
      `[lavapipe] ${id} at ${configLabel(u8)}: ${row.problems} problems, ${row.mismatches} mismatches, ${(row.ms / 1000).toFixed(1)} s`,
    );
    expect(row.detail).toBe('');
    expect(row.problems).toBeGreaterThanOrEqual(15);
    expect(row.mismatches).toBe(0);
  });
});

// Split-K (src/kernels/sgmat/split-k.ts) with the real builtins at 8x8x8: 4 slices of 32-byte k steps over
// the exactness suite, and the registry's 'sgmat-64x64-sk' through the context's self-test gate (whose
// 40000-deep problem runs in 16 slices here and wraps int32 across the slices and the reduce pass).
describe('split-K sgmat with the real builtins on lavapipe', () => {
  const u8: SgmatConfig = { componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 };
  const tiling = { ...DEFAULT_TILING, kStep: 32, splitK: 4 };
  it(`${tilingId(tiling)}: the exactness suite, 0 mismatches`, async () => {
    const kernel = sgmatVariant(`${tilingId(tiling)}-lavapipe`, (c) => (c.subgroupMatrix.length ? u8 : null), sgmatSource, false, tiling);
    await expectExact(kernel, shallowSuite());
  });
  it(`${SGMAT_SPLITK_ID} passes the self-test gate and runs`, async () => {
    const warnings: string[] = [];
    const ctx = await GpuContext.create({ device: gpu.device, kernel: SGMAT_SPLITK_ID, warn: (w: string) => warnings.push(w) });
    const p = verifyProblems()[1];
    const { referenceGemm } = await import('../../src/reference/gemm.ts');
    const { diffResults } = await import('../support/compare.ts');
    expect(diffResults(await ctx.gemm(p), referenceGemm(p))).toBeNull();
    expect(ctx.lastRun.kernel).toBe(SGMAT_SPLITK_ID);
    expect(warnings).toEqual([]);
    ctx.destroy();
  });
  afterAll(() => expect(uncapturedErrors).toEqual([]));
});

async function verifyProblemsWithContext(ctx: GpuContext, problems: ReturnType<typeof verifyProblems>): Promise<string> {
  const { referenceGemm } = await import('../../src/reference/gemm.ts');
  const { diffResults, formatMismatch } = await import('../support/compare.ts');
  for (const p of problems) {
    const d = diffResults(await ctx.gemm(p), referenceGemm(p));
    if (d) return formatMismatch(d, `${p.lhs.rows}x${p.rhs.cols}x${p.lhs.cols}`);
    expect(ctx.lastRun.kernel).toBe('sgmat-64x64');
  }
  return '';
}

// The builtins' two forms (src/kernels/sgmat/load-form.ts): Dawn here takes the current one, in which the
// kernel's files are written, and compiles it without a warning; the legacy form, which a device whose
// compiler lacks the current one gets, still compiles here (with Dawn's deprecation warnings) and must
// be exact too: the staged loads and stores at i8 (the form whose stage holds i32), and the '-dd' form's
// loads from storage at u8.
describe('the subgroup-matrix builtins in both forms on lavapipe', () => {
  const u8: SgmatConfig = { componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 };
  const i8: SgmatConfig = { ...u8, componentType: 'i8' };
  const warnings = async (code: string): Promise<string[]> => {
    const info = await gpu.device.createShaderModule({ code }).getCompilationInfo();
    return info.messages.filter((m) => m.type !== 'info').map((m) => `${m.type} ${m.lineNum}: ${m.message}`);
  };
  it('the probe finds the current form, and the kernel compiles in it without a warning', async () => {
    expect(await loadForm(gpu.device, u8)).toBe('current');
    const dd = { ...DEFAULT_TILING, rhsDirect: true, lhsDirect: true };
    for (const source of [sgmatSource(u8), sgmatSource(i8, SPLITK_TILING), sgmatSource(u8, dd)]) {
      expect(await warnings(source)).toEqual([]);
      expect((await warnings(toLegacyForm(source))).join('\n')).toMatch(/deprecated/);
    }
  });
  const legacy = (id: string, c: SgmatConfig, t: SgmatTiling) =>
    sgmatVariant(
      id,
      (x) => (x.subgroupMatrix.length ? c : null),
      (x, y, g) => toLegacyForm(sgmatSource(x, y, g)),
      false,
      t,
    );
  it.each([
    ['sgmat-64x64 at i8', legacy('sgmat-64x64-i8-legacy', i8, DEFAULT_TILING)],
    ['sgmat-64x64-dd at u8', legacy('sgmat-64x64-dd-legacy', u8, { ...DEFAULT_TILING, rhsDirect: true, lhsDirect: true })],
  ] as const)('the legacy form, %s: the exactness suite, 0 mismatches', async (_, kernel) => {
    await expectExact(kernel, shallowSuite());
  });
});
