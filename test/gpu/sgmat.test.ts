// GPU tier for the subgroup-matrix kernel on adapters without subgroup matrices (SwiftShader in CI): its
// emulated variant (src/kernels/sgmat/emulation.ts), the REAL kernel source rewritten at pipeline time to
// plain-WGSL builtins, bit for bit against the CPU reference at each fragment configuration (NVIDIA's
// 16x16x32 and 16x8x32, lavapipe's 8x8x8, and i8 -> i32): the fixed suite of src/verify.ts (the self-test
// problems; every operand type, storage order, zero-point form and stage kind; shapes of several 64-tiles
// and at least two 64-byte k steps; less-than-8-bit operands), seeded random problems, and lowered limits
// that split operands, bands and grids. Then the mutation test: bugs planted in the kernel text (fragment
// offset, k step, operand order, a named fragment's guard, staging buffer index, prefetch condition, a
// barrier, the direct-rhs load's k offset), each of which must make the suite fail. The real builtins run
// on lavapipe (test/lavapipe/).

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createGpuContextWith, type GpuContext } from '../../src/scheduler/context.ts';
import { configLabel, DEFAULT_TILING, type SgmatConfig, type SgmatTiling } from '../../src/kernels/sgmat/config.ts';
import { EMULATED_CONFIGS, sgmatEmulatedKernel } from '../../src/kernels/sgmat/emulation.ts';
import { sgmatSource } from '../../src/kernels/sgmat/kernel.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { verifyGpuKernel, verifyProblems } from '../../src/verify.ts';
import { selfTestProblems } from '../../src/scheduler/self-test.ts';
import { arbProblem, arbProblemOfShape, describeProblem } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

// Pipelines compile slowly on software adapters (seconds each, more on a loaded machine).
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const gpu = await getGpu();
afterAll(releaseGpu);

describe.skipIf(!gpu).each(EMULATED_CONFIGS.map((c) => [configLabel(c), c] as const))(
  'sgmat-64x64-emulated at %s == CPU reference',
  (_, config) => {
    const kernel = sgmatEmulatedKernel(config);
    let ctx: GpuContext;
    beforeAll(async () => {
      ctx = await createGpuContextWith([kernel, ...GPU_KERNELS], { device: gpu!.device, kernel: kernel.id });
    });
    afterAll(() => ctx?.destroy());

    const check = async (p: Parameters<GpuContext['gemm']>[0] & { lhs: { rows: number } }, what: string) => {
      const d = diffResults(await ctx.gemm(p), referenceGemm(p as Parameters<typeof referenceGemm>[0]));
      if (d) expect.fail(formatMismatch(d, `${configLabel(config)} ${what} ${describeProblem(p as Parameters<typeof referenceGemm>[0])}`));
      expect(ctx.lastRun.kernel).toBe(kernel.id);
    };

    // The self-test's 64 x 64 x 40000 int32-wrap problem (tens of seconds emulated on SwiftShader) runs at
    // the configuration of real hardware only; the real builtins run it at 8x8x8 on lavapipe.
    const problems = verifyProblems().filter((p) => config === EMULATED_CONFIGS[0] || p.lhs.cols <= 10000);
    it('the fixed suite: self-test problems, every type, order, zero-point form and stage kind, several tiles and k steps', async () => {
      const row = await verifyGpuKernel(gpu!.device, kernel, problems, { kernels: [kernel, ...GPU_KERNELS] });
      console.log(
        `[sgmat emulated ${configLabel(config)}] ${row.problems} problems, ${row.mismatches} mismatches, ${(row.ms / 1000).toFixed(1)} s`,
      );
      expect(row.detail).toBe('');
      expect(row.mismatches).toBe(0);
      expect(row.problems).toBe(problems.length);
    });

    it('seeded random problems: the shape sweep, and shapes of several tiles and k steps', async () => {
      const seed = 17 + config.M * 3 + config.N + config.K;
      // Two (CI's budget): the split-K sweep (./sgmat-splitk.test.ts) draws more over the same kernel text.
      for (const p of fc.sample(arbProblem(), { numRuns: 2, seed })) await check(p, 'sweep');
      for (const p of fc.sample(arbProblemOfShape(129, 70, 200), { numRuns: 2, seed })) await check(p, 'tiles');
    });

    it('lowered limits: operands, bands and grids split', async () => {
      const small = await createGpuContextWith([kernel, ...GPU_KERNELS], {
        device: gpu!.device,
        kernel: kernel.id,
        limits: { maxStorageBufferBindingSize: 32768, maxComputeWorkgroupsPerDimension: 3 },
      });
      const p = fc.sample(arbProblemOfShape(128, 100, 300), { numRuns: 1, seed: config.K })[0];
      for (const dstOrder of ['row-major', 'col-major'] as const) {
        const q = { ...p, dstOrder, pipeline: [] };
        const d = diffResults(await small.gemm(q), referenceGemm(q));
        if (d) expect.fail(formatMismatch(d, `${configLabel(config)} lowered limits ${describeProblem(q)}`));
        expect(small.lastRun.kernel).toBe(kernel.id);
        expect(small.lastRun.gemmDispatches).toBeGreaterThan(1);
      }
      small.destroy();
    });
  },
);

// Bugs planted in the real kernel text (each replacement must match exactly once): every one must make
// the suite fail on the emulated kernel. Run at NVIDIA's 16x16x32, the configuration real hardware uses.
const MUTATIONS: [string, string, string, SgmatTiling?][] = [
  ['fragment offset', 'rowBase, fm + FRAG_M, kBase', 'rowBase, fm + FRAG_M / 2u, kBase'],
  ['k step', 'kk += FRAG_K)', 'kk += 2u * FRAG_K)'],
  ['operand order', 'subgroupMatrixMultiplyAccumulate(a1, b, acc11)', 'subgroupMatrixMultiplyAccumulate(b, a1, acc11)'],
  ['fragment guard', 'if (FRAGS_N > 1u) { // column 1', 'if (FRAGS_N > 2u) { // column 1'],
  ['staging buffer index', 'storeStep(t, (kt + 1u) % BUFFERS, next);', 'storeStep(t, current, next);'],
  ['prefetch condition', 'let more = kt + 1u < steps;', 'let more = kt + 2u < steps;'],
  [
    'k-loop barrier',
    'storeStep(t, (kt + 1u) % BUFFERS, next);\n      }\n      workgroupBarrier();',
    'storeStep(t, (kt + 1u) % BUFFERS, next);\n      }',
  ],
  // The direct-rhs form (sgmat-rhs-direct.wgsl): a right fragment loaded from the wrong k of its packed row.
  [
    'direct rhs k offset',
    '(colBase + col) * tile.depthWords + (kBase + kk) / 4u',
    '(colBase + col) * tile.depthWords + kk / 4u',
    { ...DEFAULT_TILING, rhsDirect: true },
  ],
  // The '-dd' form (sgmat-lhs-direct.wgsl): a left fragment loaded from the wrong k of its packed row.
  [
    'direct lhs k offset',
    '(rowBase + row) * tile.depthWords + (kBase + kk) / 4u',
    '(rowBase + row) * tile.depthWords + kk / 4u',
    { ...DEFAULT_TILING, rhsDirect: true, lhsDirect: true },
  ],
];

describe.skipIf(!gpu)('mutation test: every bug planted in the kernel text makes the suite fail', () => {
  const config: SgmatConfig = EMULATED_CONFIGS[0];
  // The sweep first (small and deep problems), then the self-test problems.
  const all = verifyProblems();
  const self = selfTestProblems().length;
  const problems = [...all.slice(self), ...all.slice(0, self)].filter((p) => p.lhs.cols <= 10000);
  it.each(MUTATIONS)('%s', async (name, from, to, tiling = DEFAULT_TILING) => {
    const real = sgmatSource(config, tiling);
    expect(real.split(from).length - 1, `"${from}" must occur once in the kernel`).toBe(1);
    const kernel = sgmatEmulatedKernel(config, {
      source: (c, t) => sgmatSource(c, t).replace(from, to),
      id: `sgmat-mutant-${name.replace(/\W+/g, '-')}`,
      tiling,
    });
    const row = await verifyGpuKernel(gpu!.device, kernel, problems, { kernels: [kernel, ...GPU_KERNELS], stopAtFirst: true });
    console.log(`[sgmat mutation] ${name}: ${row.mismatches ? `caught (${row.detail})` : 'NOT CAUGHT'}`);
    expect(row.mismatches).toBeGreaterThan(0);
  });
});

afterAll(() => {
  // A mutant that does not compile is reported through its pipeline's error, never as an uncaptured error.
  expect(uncapturedErrors).toEqual([]);
});
