// GPU tier for the tilings of the subgroup-matrix kernel (src/kernels/sgmat/config.ts SgmatTiling: the
// family the tuner sweeps, src/kernels/tuning.ts): a seeded sample of tilings, each through its emulated
// variant (the real kernel text with plain-WGSL builtins, src/kernels/sgmat/emulation.ts) on SwiftShader
// over the fixed exactness suite of src/verify.ts (its 40000-deep problem aside: the default tiling runs
// it in test/gpu/sgmat.test.ts), bit for bit against the CPU reference, at NVIDIA's 16x16x32 and at
// lavapipe's 8x8x8. The sample is small so CI stays in its budget: QGEMM_SGMAT_SAMPLE (default 1 per
// configuration; 'all' for the whole family) and QGEMM_SGMAT_SEED (default 34) choose it, and the log
// names every tiling that ran. The real builtins run a sample on lavapipe (test/lavapipe/sgmat.test.ts).

import { afterAll, describe, expect, it, vi } from 'vitest';
import { configLabel, type SgmatConfig, sampleTilings, sgmatTilings, tilingId } from '../../src/kernels/sgmat/config.ts';
import { sgmatEmulatedKernel } from '../../src/kernels/sgmat/emulation.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { verifyGpuKernel, verifyProblems } from '../../src/verify.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

vi.setConfig({ testTimeout: 900_000, hookTimeout: 600_000 });

const gpu = await getGpu();
afterAll(releaseGpu);

const CONFIGS: SgmatConfig[] = [
  { componentType: 'u8', M: 16, N: 16, K: 32, subgroupSize: 32 },
  { componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 },
];
const sample = process.env.QGEMM_SGMAT_SAMPLE ?? '1';
const seed = Number(process.env.QGEMM_SGMAT_SEED ?? 34);
// Tilings this device can run (SwiftShader: 32 KiB of workgroup memory, 256 invocations).
const limits = gpu?.device.limits as unknown as Parameters<typeof sgmatTilings>[1];
const chosen = (c: SgmatConfig) =>
  sample === 'all' ? sgmatTilings(c, limits).slice(1) : sampleTilings(c, Number(sample), seed + c.M, limits);
const cases = CONFIGS.flatMap((c) => chosen(c).map((t) => [`${tilingId(t)} at ${configLabel(c)}`, c, t] as const));
const problems = verifyProblems().filter((p) => p.lhs.cols <= 10000);

describe.skipIf(!gpu)(`sampled sgmat tilings (seed ${seed}, ${sample} per configuration), emulated builtins == CPU reference`, () => {
  it.each(cases)('%s: the fixed suite, 0 mismatches', async (name, config, tiling) => {
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
