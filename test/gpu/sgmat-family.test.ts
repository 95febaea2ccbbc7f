// GPU tier for the tilings of the subgroup-matrix kernel (src/kernels/sgmat/config.ts SgmatTiling: the
// family the tuner sweeps, src/kernels/tuning.ts): a seeded sample of tilings, each through its emulated
// variant (the real kernel text with plain-WGSL builtins, src/kernels/sgmat/emulation.ts) on SwiftShader
// over the fixed exactness suite of src/verify.ts (its 40000-deep problem aside: the default tiling runs
// it in test/gpu/sgmat.test.ts), bit for bit against the CPU reference, at NVIDIA's 16x16x32 and at
// lavapipe's 8x8x8, with right fragments staged (16x16x32) or loaded straight from the packed rhs (the
// direct-rhs tilings, `-dr`, at 8x8x8; u8 only), and two tilings of 16 subgroups (4 x 4) at 8x8x8
// whatever the sample. The sample is small so CI stays in its budget:
// QGEMM_SGMAT_SAMPLE (default 1 per configuration and pool; 'all' for the whole family, staged and direct,
// at both configurations, and every '-dd' tiling at both) and QGEMM_SGMAT_SEED (default 34) choose it, and the log names every tiling that ran.
// The real builtins run a sample on lavapipe (test/lavapipe/sgmat.test.ts).

import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  configLabel,
  bothDirectTilings,
  directTilings,
  type SgmatConfig,
  type SgmatTiling,
  sampleTilings,
  sgmatTilings,
  tilingId,
} from '../../src/kernels/sgmat/config.ts';
import { sgmatEmulatedKernel } from '../../src/kernels/sgmat/emulation.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { verifyGpuKernel, verifyProblems } from '../../src/verify.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

vi.setConfig({ testTimeout: 900_000, hookTimeout: 600_000 });

const gpu = await getGpu();
afterAll(releaseGpu);

// Each configuration with the pool its sample is drawn from: staged at 16x16x32, direct rhs at 8x8x8.
// '-dd' (both operands' fragments loaded from the packed operands): at 16x16x32 and at 8x8x8.
type Pool = 'staged' | 'direct' | 'both';
const CONFIGS: [SgmatConfig, Pool][] = [
  [{ componentType: 'u8', M: 16, N: 16, K: 32, subgroupSize: 32 }, 'staged'],
  [{ componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 }, 'direct'],
  [{ componentType: 'u8', M: 16, N: 16, K: 32, subgroupSize: 32 }, 'both'],
  [{ componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 }, 'both'],
];
const sample = process.env.QGEMM_SGMAT_SAMPLE ?? '1';
const seed = Number(process.env.QGEMM_SGMAT_SEED ?? 34);
// Tilings this device can run (SwiftShader: 32 KiB of workgroup memory, 256 invocations).
const limits = gpu?.device.limits as unknown as Parameters<typeof sgmatTilings>[1];
const POOLS = { staged: (c: SgmatConfig) => sgmatTilings(c, limits).slice(1), direct: directTilings, both: bothDirectTilings };
const chosen = (c: SgmatConfig, pool: Pool): SgmatTiling[] =>
  sample === 'all'
    ? pool === 'both'
      ? bothDirectTilings(c, limits)
      : [...POOLS.staged(c), ...directTilings(c, limits)]
    : sampleTilings(c, Number(sample), seed + c.M, limits, POOLS[pool](c, limits));
const problems = verifyProblems().filter((p) => p.lhs.cols <= 10000);
// The '-dd' sample's problems (the whole suite under 'all'): tile edges past 64 and 128 rows and columns,
// a depth past the 64-byte padding (65 x 130 x 130, 33 x 129 x 257), so CI time stays nearly flat.
const edges = (p: (typeof problems)[number]) => !p.bitDepth && [65, 33].includes(p.lhs.rows) && [130, 257].includes(p.lhs.cols);
const poolProblems = (pool: Pool) => (pool === 'both' && sample !== 'all' ? problems.filter(edges) : problems);
// 16 subgroups (4 x 4) always, at 8x8x8 (16 x 8 = 128 invocations: SwiftShader takes 256 at most, so
// NVIDIA's 16 x 32 run on a GPU only, behind the self-test): staged, with right fragments direct, and
// split-K (4 slices).
const SIXTEEN: SgmatConfig = { componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 };
const sixteen: SgmatTiling[] = [
  { tileM: 64, tileN: 128, sgRows: 4, sgCols: 4, kStep: 64, buffers: 2 },
  { tileM: 128, tileN: 128, sgRows: 4, sgCols: 4, kStep: 32, buffers: 1, rhsDirect: true },
  { tileM: 64, tileN: 64, sgRows: 4, sgCols: 4, kStep: 32, buffers: 2, splitK: 4 },
];
const cases = [
  ...CONFIGS.flatMap(([c, pool]) => chosen(c, pool).map((t) => [`${tilingId(t)} at ${configLabel(c)}`, c, t, poolProblems(pool)] as const)),
  ...sixteen.map((t) => [`${tilingId(t)} at ${configLabel(SIXTEEN)}`, SIXTEEN, t, problems] as const),
];

describe.skipIf(!gpu)(`sampled sgmat tilings (seed ${seed}, ${sample} per configuration), emulated builtins == CPU reference`, () => {
  it.each(cases)('%s: the fixed suite, 0 mismatches', async (name, config, tiling, problems) => {
    const kernel = sgmatEmulatedKernel(config, { tiling, id: `${tilingId(tiling)}-emulated-${config.M}x${config.N}x${config.K}` });
    const row = await verifyGpuKernel(gpu!.device, kernel, problems, { kernels: [kernel, ...GPU_KERNELS] });
    console.log(`[sgmat family] ${name}: ${row.problems} problems, ${row.mismatches} mismatches, ${(row.ms / 1000).toFixed(1)} s`);
    expect(row.detail).toBe('');
    expect(row.mismatches).toBe(0);
    expect(row.problems).toBe(problems.length);
  });
});

afterAll(() => {
  expect(uncapturedErrors).toEqual([]);
});
