// GPU tier for the subgroup-matrix kernel's '-u4' variants (src/kernels/sgmat/sgmat-rhs-u4.wgsl: a 4-bit
// rhs read two values per byte, 'u4k8-r64', unpacked into the 8-bit staging) on SwiftShader, through the
// emulated builtins (src/kernels/sgmat/emulation.ts rewrites the real kernel text): bit for bit against
// the CPU reference over test/support/nibble-problems.ts (tile edges with K odd, rhs of 1 to 4 bits under
// every rounding, zero points across their range, raw int32 output). Three cases: NVIDIA's 16x16x32 with
// u8 fragments at the default tiling, with i8 fragments (the XOR 0x80 domain) at a 128-byte k step that
// reads past the packed depth, and lavapipe's 8x8x8 at a 32-byte k step. Each is a pipeline compile of
// seconds plus tens of seconds of emulation on SwiftShader, so CI runs a seeded sample of one
// (QGEMM_SGMAT_SAMPLE, default 1, or 'all'; QGEMM_SGMAT_SEED, default 34), named in the log. The real
// builtins run the variant at u8 and i8 on lavapipe (test/lavapipe/sgmat.test.ts).

import { afterAll, describe, expect, it, vi } from 'vitest';
import { configLabel, DEFAULT_TILING, type SgmatConfig, type SgmatTiling, tilingId } from '../../src/kernels/sgmat/config.ts';
import { sgmatEmulatedKernel } from '../../src/kernels/sgmat/emulation.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { createGpuContextWith } from '../../src/scheduler/context.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { verifyGpuKernel } from '../../src/verify.ts';
import { nibbleProblems } from '../support/nibble-problems.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const gpu = await getGpu();
afterAll(releaseGpu);

const seed = Number(process.env.QGEMM_SGMAT_SEED ?? 34);

const CONFIGS: SgmatConfig[] = [
  { componentType: 'u8', M: 16, N: 16, K: 32, subgroupSize: 32 },
  { componentType: 'i8', M: 16, N: 16, K: 32, subgroupSize: 32 },
  { componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 },
];
const TILINGS: SgmatTiling[] = [
  DEFAULT_TILING,
  { tileM: 64, tileN: 64, sgRows: 4, sgCols: 2, kStep: 128, buffers: 1 },
  { tileM: 64, tileN: 64, sgRows: 2, sgCols: 4, kStep: 32, buffers: 2 },
];
const sample = process.env.QGEMM_SGMAT_SAMPLE ?? '1';
const all = CONFIGS.map((c, i) => [`${tilingId(TILINGS[i])}-u4 at ${configLabel(c)}`, c, TILINGS[i], i] as const);
const cases = sample === 'all' ? all : Array.from({ length: Math.min(Number(sample), all.length) }, (_, j) => all[(seed + j) % all.length]);

describe.skipIf(!gpu)(`sgmat -u4 (4-bit rhs, two per byte; seed ${seed}, ${sample} of 3), emulated builtins == CPU reference`, () => {
  it.each(cases)('%s: tile edges, odd K, 1-4 bit rhs, zero points across the range', async (name, config, tiling, i) => {
    const kernel = sgmatEmulatedKernel(config, { tiling, rhsBits: 4, id: `${tilingId(tiling)}-u4-emulated-${i}` });
    expect(kernel.rhsPackFormat).toBe('u4k8-r64');
    const problems = nibbleProblems(4, seed + 10 * i);
    const row = await verifyGpuKernel(gpu!.device, kernel, problems, { kernels: [kernel, ...GPU_KERNELS] });
    console.log(`[sgmat -u4] ${name}: ${row.problems} problems, ${row.mismatches} mismatches, ${(row.ms / 1000).toFixed(1)} s`);
    expect(row.detail).toBe('');
    expect(row.mismatches).toBe(0);
    expect(row.problems).toBe(problems.length);
  });
  it.skipIf(!gpu?.hasDot4)('a rhs prepacked in nibbles (u4k8-r64) feeds the kernel as it is', async () => {
    const [, config, tiling, i] = cases[0];
    const kernel = sgmatEmulatedKernel(config, { tiling, rhsBits: 4, id: `${tilingId(tiling)}-u4-emulated-${i}` });
    const ctx = await createGpuContextWith([kernel, ...GPU_KERNELS], { device: gpu!.device, kernel: kernel.id });
    const p = nibbleProblems(1, seed + 7)[1]; // the problem of several tiles and k steps
    const packed = await ctx.prepack('rhs', p.rhs, p.bitDepth);
    expect(packed.packFormat).toBe('u4k8-r64');
    const d = diffResults(await ctx.gemm({ ...p, rhs: packed }), referenceGemm(p));
    if (d) expect.fail(formatMismatch(d, 'prepacked nibble rhs'));
    expect(ctx.lastRun.kernel).toBe(kernel.id);
    packed.destroy();
    ctx.destroy();
  });
});

afterAll(() => {
  expect(uncapturedErrors).toEqual([]);
});
