// GPU tier for split-K on the subgroup-matrix kernel (src/kernels/sgmat/split-k.ts): its emulated variant
// (the real kernel text with plain-WGSL builtins, src/kernels/sgmat/emulation.ts) on SwiftShader, bit for
// bit against the CPU reference, at NVIDIA's 16x16x32, lavapipe's 8x8x8 and i8 -> i32 (whose first slice
// adds the fragments' correction). Shapes at the tile edges (M, N, K drawn from 1-10, 15-17, 31-33, 63-65),
// K cut into several slices and not a multiple of the slice (32-byte k steps, 4 slices), the slices that
// fill the GPU ('-sk'), a 256-wide tiling, the '-dd' form (fragments from the packed operands), and lowered
// limits that split bands and cap the slices by the workspace binding (split-K, and '-dd' one-pass and split); then bugs planted in the split-K form, each of which must fail. Seeded and small (about
// 80 s on a 2-core machine). The real builtins run one split-K tiling on lavapipe (test/lavapipe/sgmat.test.ts).

import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { configLabel, DEFAULT_TILING, type SgmatConfig, type SgmatTiling, tilingId } from '../../src/kernels/sgmat/config.ts';
import { EMULATED_CONFIGS, sgmatEmulatedKernel } from '../../src/kernels/sgmat/emulation.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { createGpuContextWith } from '../../src/scheduler/context.ts';
import type { GemmProblem } from '../../src/types.ts';
import { verifyGpuKernel, verifyProblems } from '../../src/verify.ts';
import { sgmatSource } from '../../src/kernels/sgmat/kernel.ts';
import { arbProblemOfShape, describeProblem } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const gpu = await getGpu();
afterAll(releaseGpu);

const EDGES = [1, 2, 5, 10, 15, 16, 17, 31, 32, 33, 63, 64, 65];
const DEEP = [97, 300, 333, 650]; // 4, 10, 11 and 21 k steps of 32 bytes (padded to 64): 4 slices, most uneven
/** n seeded shapes: M and N at the tile edges, K at an edge or deep. */
function edgeShapes(n: number, seed: number): [number, number, number][] {
  const pick = fc.constantFrom(...EDGES);
  return fc.sample(fc.tuple(pick, pick, fc.constantFrom(...EDGES, ...DEEP, ...DEEP)), { numRuns: n, seed });
}

const FOUR: SgmatTiling = { ...DEFAULT_TILING, kStep: 32, splitK: 4 };
const cases: [SgmatConfig, SgmatTiling, number][] = [
  [EMULATED_CONFIGS[0], FOUR, 4],
  [EMULATED_CONFIGS[2], FOUR, 2],
  // '-dd' (fragments from the packed operands) in 4 slices: the slices' k offsets reach the direct loads.
  [EMULATED_CONFIGS[2], { ...FOUR, rhsDirect: true, lhsDirect: true }, 2],
  [EMULATED_CONFIGS[3], FOUR, 3],
  [EMULATED_CONFIGS[0], { ...DEFAULT_TILING, splitK: 0 }, 2],
  // 256 x 128, 8 subgroups of 4 x 4 fragments: the 256-wide tiling that fits SwiftShader's 32 KiB.
  [EMULATED_CONFIGS[0], { tileM: 256, tileN: 128, sgRows: 4, sgCols: 2, kStep: 32, buffers: 1, splitK: 2 }, 2],
];

describe.skipIf(!gpu)('split-K sgmat, emulated builtins == CPU reference', () => {
  it.each(cases.map(([c, t, n]) => [`${tilingId(t)} at ${configLabel(c)}`, c, t, n] as const))(
    '%s: seeded edge shapes, K in several slices',
    async (name, config, tiling, n) => {
      const kernel = sgmatEmulatedKernel(config, {
        tiling,
        id: `${tilingId(tiling)}-emulated-${config.componentType}${config.M}x${config.N}`,
      });
      const ctx = await createGpuContextWith([kernel, ...GPU_KERNELS], { device: gpu!.device, kernel: kernel.id });
      const shapes = edgeShapes(n, 34 + config.M + config.K + tiling.kStep);
      if (tiling.tileM > 64) shapes.push([260, 130, 97]); // two tiles by two
      for (const [i, [M, N, K]] of shapes.entries()) {
        const p = fc.sample(arbProblemOfShape(M, N, K), { numRuns: 1, seed: i + M * 7 + N * 3 + K })[0] as GemmProblem;
        const d = diffResults(await ctx.gemm(p), referenceGemm(p));
        if (d) expect.fail(formatMismatch(d, `${name} ${describeProblem(p)}`));
        expect(ctx.lastRun.kernel).toBe(kernel.id);
      }
      console.log(`[sgmat split-K] ${name}: ${shapes.map((s) => s.join('x')).join(' ')} exact`);
      ctx.destroy();
    },
  );

  // The '-dd' forms too: their fragment loads read the packed operands through each band's binding window.
  const BOTH_DIRECT = { rhsDirect: true, lhsDirect: true } as const;
  it.each([FOUR, { ...FOUR, ...BOTH_DIRECT }, { ...DEFAULT_TILING, ...BOTH_DIRECT }].map((t) => [tilingId(t), t] as const))(
    'lowered limits, %s: bands split, slices capped by the workspace binding',
    async (name, tiling) => {
      const kernel = sgmatEmulatedKernel(EMULATED_CONFIGS[0], { tiling, id: `${name}-lowered` });
      const small = await createGpuContextWith([kernel, ...GPU_KERNELS], {
        device: gpu!.device,
        kernel: kernel.id,
        limits: { maxStorageBufferBindingSize: 32768, maxComputeWorkgroupsPerDimension: 3 },
      });
      const p = fc.sample(arbProblemOfShape(128, 100, 300), { numRuns: 1, seed: 7 })[0];
      for (const dstOrder of ['row-major', 'col-major'] as const) {
        const q = { ...p, dstOrder, pipeline: [] };
        const d = diffResults(await small.gemm(q), referenceGemm(q));
        if (d) expect.fail(formatMismatch(d, `${name} lowered limits ${describeProblem(q)}`));
        expect(small.lastRun.kernel).toBe(kernel.id);
        expect(small.lastRun.gemmDispatches).toBeGreaterThan(2);
      }
      small.destroy();
    },
  );
});

// Bugs planted in the split-K form (each replacement must match exactly once): each must make the
// sweep fail. The i8 correction is checked at i8 -> i32, where a slice adding it twice shows.
const MUTATIONS: [string, SgmatConfig, string, string][] = [
  [
    'first k step of a slice',
    EMULATED_CONFIGS[0],
    'min(slice * slicing.stepsPerSplit, allSteps)',
    'min(slice * slicing.stepsPerSplit / 2u, allSteps)',
  ],
  ['i8 correction in every slice', EMULATED_CONFIGS[3], 'slice, slice == 0u);', 'slice, true);'],
];

describe.skipIf(!gpu)('mutation test: every bug planted in the split-K form makes the sweep fail', () => {
  const problems = verifyProblems().filter((p) => p.lhs.cols >= 128 && p.lhs.cols <= 10000);
  it.each(MUTATIONS)('%s', async (name, config, from, to) => {
    expect(sgmatSource(config, FOUR).split(from).length - 1, `"${from}" must occur once`).toBe(1);
    const kernel = sgmatEmulatedKernel(config, {
      tiling: FOUR,
      source: (c, t) => sgmatSource(c, t).replace(from, to),
      id: `sgmat-split-mutant-${name.replace(/\W+/g, '-')}`,
    });
    const row = await verifyGpuKernel(gpu!.device, kernel, problems, { kernels: [kernel, ...GPU_KERNELS], stopAtFirst: true });
    console.log(`[sgmat split-K mutation] ${name}: ${row.mismatches ? `caught (${row.detail})` : 'NOT CAUGHT'}`);
    expect(row.mismatches).toBeGreaterThan(0);
  });
});

afterAll(() => {
  expect(uncapturedErrors).toEqual([]);
});
