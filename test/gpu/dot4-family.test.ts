// GPU tier for the configurations of the dot4 kernels beyond the registry's (src/kernels/kernel-configs.ts:
// dot4-tiled and dot4-wide with vecWords 1 or 2, u32 or vec2<u32> global loads, dot4-tiled with 4x8, 8x4
// or 8x8 per invocation and dot4-wide with 4x4, 4x8 or 8x4; the registry's vec4 loads at 4x4 and 8x8 run
// in ./gemm.test.ts): a seeded sample, one configuration of each kind (load width 1, 2, or a thread
// tile), each on SwiftShader in its emulated dot4 form and, where the
// adapter has dot4U8Packed, its native one, bit for bit against the CPU reference over seeded shapes at
// the tile edges (M, N, K drawn from 1-10, 15-17, 31-33, 63-65; one shape of several k steps and past a
// 128-row tile). QGEMM_DOT4_SAMPLE (default 3, one per kind; 'all' for every configuration) and
// QGEMM_DOT4_SEED (default 34) choose the sample, and the log names every configuration that ran.

import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { dot4TiledKernel } from '../../src/kernels/dot4-tiled/kernel.ts';
import { dot4WideKernel, dot4WideProblem } from '../../src/kernels/dot4-wide/kernel.ts';
import type { Dot4TiledKernelConfig, Dot4WideKernelConfig } from '../../src/kernels/kernel-configs.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { verifyGpuKernel } from '../../src/verify.ts';
import { arbProblemOfShape } from '../support/arbitraries.ts';
import { Rng } from '../../tools/random.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

vi.setConfig({ testTimeout: 900_000, hookTimeout: 600_000 });

const gpu = await getGpu();
afterAll(releaseGpu);

type Config = Omit<Dot4TiledKernelConfig, 'dot4'> | Omit<Dot4WideKernelConfig, 'dot4'>;
// Every configuration beyond the registry's (SwiftShader: 32 KiB, 256 invocations), by kind.
const THREADS = [
  [4, 4],
  [4, 8],
  [8, 4],
  [8, 8],
] as const;
const pool: Config[] = [];
for (const vecWords of [1, 2, 4] as const) {
  for (const [threadM, threadN] of THREADS)
    for (const tileM of [32, 64] as const)
      for (const tileN of [32, 64] as const)
        for (const tileKW of [4, 8, 16] as const)
          if (vecWords !== 4 || threadM !== 4 || threadN !== 4)
            pool.push({ family: 'dot4-tiled', tileM, tileN, tileKW, vecWords, threadM, threadN });
  for (const [threadM, threadN] of THREADS)
    for (const threadsX of [8, 16] as const)
      for (const threadsY of [8, 16] as const)
        for (const tileKW of [4, 8, 16] as const) {
          const c = { family: 'dot4-wide', threadsX, threadsY, tileKW, vecWords, threadM, threadN } as const;
          if ((vecWords !== 4 || threadM !== 8 || threadN !== 8) && !dot4WideProblem(c)) pool.push(c);
        }
}
const kinds: ((c: Config) => boolean)[] = [
  (c) => c.vecWords === 1,
  (c) => c.vecWords === 2,
  (c) => c.vecWords === 4, // a thread tile: dot4-tiled's 4x8, 8x4, 8x8, or dot4-wide's 4x4, 4x8, 8x4
];

const sample = process.env.QGEMM_DOT4_SAMPLE ?? '3';
const seed = Number(process.env.QGEMM_DOT4_SEED ?? 34);
// One configuration of each kind first, then a second of each, and so on.
const chosen =
  sample === 'all'
    ? pool
    : kinds.flatMap((kind, i) => new Rng(seed + i).sample(pool.filter(kind), Math.ceil((Number(sample) - i) / kinds.length)));
const variants = gpu?.hasDot4 ? (['emulated', 'native'] as const) : (['emulated'] as const);
const cases = chosen.flatMap((c) =>
  variants.map((dot4) => {
    const k = c.family === 'dot4-tiled' ? dot4TiledKernel(64, dot4, c) : dot4WideKernel(dot4, c);
    return [k.id, k] as const;
  }),
);

const EDGES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 17, 31, 32, 33, 63, 64, 65];
// Three seeded permutations of the edges, zipped: every shape at an edge in M, N and K.
const [Ms, Ns, Ks] = [1, 2, 3].map((d) => new Rng(seed * 7 + d).sample(EDGES, 6));
const shapes = [...Ms.map((M, i) => [M, Ns[i], Ks[i]]), [129, 65, 200]];
const problems = shapes.map(([M, N, K], i) => fc.sample(arbProblemOfShape(M, N, K), { numRuns: 1, seed: seed + i })[0]);

describe.skipIf(!gpu)(
  `sampled dot4 configurations (seed ${seed}, ${sample}), shapes ${shapes.map((s) => s.join('x')).join(' ')} == CPU reference`,
  () => {
    it.each(cases)('%s: 0 mismatches', async (id, kernel) => {
      const row = await verifyGpuKernel(gpu!.device, kernel, problems, { kernels: [kernel, ...GPU_KERNELS] });
      console.log(`[dot4 family] ${id}: ${row.problems} problems, ${row.mismatches} mismatches, ${(row.ms / 1000).toFixed(1)} s`);
      expect(row.detail).toBe('');
      expect(row.mismatches).toBe(0);
      expect(row.problems).toBe(problems.length);
    });
  },
);

afterAll(() => {
  expect(uncapturedErrors).toEqual([]);
});
