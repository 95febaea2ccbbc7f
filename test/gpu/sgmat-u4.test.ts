// GPU tier for the subgroup-matrix kernel's '-u4' variants (src/kernels/sgmat/sgmat-rhs-u4.wgsl: a 4-bit
// rhs read two values per byte, 'u4k8-r64' / '-r128' / '-r256' as the tiling's larger side, unpacked into
// the 8-bit staging) on SwiftShader, through the emulated builtins (src/kernels/sgmat/emulation.ts rewrites
// the real kernel text): bit for bit against the CPU reference over test/support/nibble-problems.ts (tile
// edges with K odd, rhs of 1 to 4 bits under every rounding, zero points across their range, raw int32
// output, one problem of several tiles and k steps). Eight cases over the family: NVIDIA's 16x16x32 (u8 and
// i8, the XOR 0x80 domain), 16x8x32 and lavapipe's 8x8x8; 64-, 128- and 256-wide tiles, 4 and 8 subgroups,
// k steps of 32, 64 and 128 (one that reads past the packed depth), one and two buffers, and split-K (the
// registry's 'sgmat-64x64-sk-u4', and 4 fixed slices at a 128 side). Each is a pipeline compile of
// seconds plus tens of seconds of emulation on SwiftShader, so CI runs a seeded sample of one
// (QGEMM_SGMAT_SAMPLE, default 1, or 'all'; QGEMM_SGMAT_SEED, default 34), named in the log; a rhs
// prepacked in nibbles by a context forced to a 256-wide tiling is padded to 256 rows and feeds it. The
// real builtins run the variant at a 128-wide tiling (u8) and the default one (i8) on lavapipe
// (test/lavapipe/sgmat.test.ts).

import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  configLabel,
  DEFAULT_TILING,
  type SgmatConfig,
  type SgmatTiling,
  SPLITK_TILING,
  tilingId,
  tilingProblem,
} from '../../src/kernels/sgmat/config.ts';
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

const [u8, i8, u8n8, lava] = [
  { componentType: 'u8', M: 16, N: 16, K: 32, subgroupSize: 32 },
  { componentType: 'i8', M: 16, N: 16, K: 32, subgroupSize: 32 },
  { componentType: 'u8', M: 16, N: 8, K: 32, subgroupSize: 32 },
  { componentType: 'u8', M: 8, N: 8, K: 8, subgroupSize: 8 },
] satisfies SgmatConfig[];
const tiling = (tileM: number, tileN: number, sgRows: number, sgCols: number, kStep: number, buffers: 1 | 2, splitK?: number) => ({
  tileM,
  tileN,
  sgRows,
  sgCols,
  kStep,
  buffers,
  ...(splitK === undefined ? {} : { splitK }),
});
const CASES: [SgmatConfig, SgmatTiling][] = [
  [u8, DEFAULT_TILING],
  [i8, tiling(64, 64, 4, 2, 128, 1)],
  [lava, tiling(64, 64, 2, 4, 32, 2)],
  [u8, tiling(128, 128, 4, 2, 32, 1)],
  [i8, tiling(256, 128, 4, 2, 32, 1)],
  [lava, tiling(64, 128, 2, 4, 64, 2)],
  [u8n8, SPLITK_TILING],
  [i8, tiling(128, 64, 4, 2, 64, 2, 4)],
  [lava, tiling(128, 64, 4, 4, 64, 2)], // 16 subgroups
];
const sample = process.env.QGEMM_SGMAT_SAMPLE ?? '1';
const all = CASES.map(([c, t], i) => [`${tilingId(t)}-u4 at ${configLabel(c)}`, c, t, i] as const);
const cases = sample === 'all' ? all : Array.from({ length: Math.min(Number(sample), all.length) }, (_, j) => all[(seed + j) % all.length]);
const emulated = (c: SgmatConfig, t: SgmatTiling, i: number) =>
  sgmatEmulatedKernel(c, { tiling: t, rhsBits: 4, id: `${tilingId(t)}-u4-emulated-${i}` });

describe.skipIf(!gpu)(
  `sgmat -u4 (4-bit rhs, two per byte; seed ${seed}, ${sample} of ${CASES.length}), emulated builtins == CPU reference`,
  () => {
    it('every case fits this device', () => {
      const limits = gpu!.device.limits as unknown as Parameters<typeof tilingProblem>[2];
      for (const [name, c, t] of all) expect(tilingProblem(c, t, limits), name).toBe('');
    });
    it.each(cases)('%s: tile edges, odd K, 1-4 bit rhs, zero points across the range', async (name, config, t, i) => {
      const kernel = emulated(config, t, i);
      const side = Math.max(t.tileM, t.tileN);
      expect(kernel.rhsPackFormat).toBe(`u4k8-r${side}`);
      const problems = nibbleProblems(4, seed + 10 * i);
      const row = await verifyGpuKernel(gpu!.device, kernel, problems, { kernels: [kernel, ...GPU_KERNELS] });
      console.log(`[sgmat -u4] ${name}: ${row.problems} problems, ${row.mismatches} mismatches, ${(row.ms / 1000).toFixed(1)} s`);
      expect(row.detail).toBe('');
      expect(row.mismatches).toBe(0);
      expect(row.problems).toBe(problems.length);
    });
    it.skipIf(!gpu?.hasDot4)(
      'a context forced to a 256-wide tiling prepacks a nibble rhs at 256 rows (u4k8-r256), and the tiling reads it',
      async () => {
        const p = nibbleProblems(1, seed + 7)[1]; // the problem of several tiles and k steps
        for (const [i, format] of [[4, 'u4k8-r256']] as const) {
          const kernel = emulated(CASES[i][0], CASES[i][1], i);
          const ctx = await createGpuContextWith([kernel, ...GPU_KERNELS], { device: gpu!.device, kernel: kernel.id });
          const packed = await ctx.prepack('rhs', p.rhs, p.bitDepth);
          expect(packed.packFormat).toBe(format);
          const d = diffResults(await ctx.gemm({ ...p, rhs: packed }), referenceGemm(p));
          if (d) expect.fail(formatMismatch(d, `prepacked nibble rhs, ${kernel.id}`));
          expect(ctx.lastRun.kernel).toBe(kernel.id);
          packed.destroy();
          ctx.destroy();
        }
      },
    );
  },
);

afterAll(() => {
  expect(uncapturedErrors).toEqual([]);
});
