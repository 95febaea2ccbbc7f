// GPU tier for the subgroup-matrix kernel's '-u4' variants (src/kernels/sgmat/sgmat-rhs-u4.wgsl: a 4-bit
// rhs read two values per byte, 'u4k8-r64', unpacked into the 8-bit staging) on SwiftShader, through the
// emulated builtins (src/kernels/sgmat/emulation.ts rewrites the real kernel text): bit for bit against
// the CPU reference at tile edges (M, N, K sampled from 1-10, 15-17, 31-33, 63-65, K odd so the last
// packed byte holds one value), rhs bit depths 1 to 4 under every rounding, scalar and per-channel zero
// points across their range, at NVIDIA's 16x16x32 (u8 and i8 fragments, the XOR 0x80 domain) and
// lavapipe's 8x8x8, each at one of the default tiling and two other 64 x 64 tilings (32- and 128-byte
// k steps: the latter reads past the packed depth), raw int32 output. The sample is seeded (QGEMM_SGMAT_SEED, default 34) and small,
// so CI stays in its budget. The real builtins run the variant on lavapipe (test/lavapipe/sgmat.test.ts).

import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { configLabel, DEFAULT_TILING, type SgmatConfig, type SgmatTiling, tilingId } from '../../src/kernels/sgmat/config.ts';
import { sgmatEmulatedKernel } from '../../src/kernels/sgmat/emulation.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import type { BitDepthRounding, GemmProblem } from '../../src/types.ts';
import { verifyGpuKernel } from '../../src/verify.ts';
import { arbProblemOfShape } from '../support/arbitraries.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const gpu = await getGpu();
afterAll(releaseGpu);

const EDGES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 17, 31, 32, 33, 63, 64, 65];
const ROUNDINGS: BitDepthRounding[] = ['nearest', 'probabilistic-addmod', 'probabilistic-xorshift'];
const seed = Number(process.env.QGEMM_SGMAT_SEED ?? 34);

/** Zero points across their range: the int32 ends, the uint8/int8 ends, a per-channel ramp over them. */
function zeroPoint(n: number, i: number): number | Int32Array {
  const scalars = [0, 255, -128, 127, 2147483647, -2147483648];
  if (i % 2 === 0) return scalars[(i / 2) % scalars.length];
  return Int32Array.from({ length: n }, (_, j) => [-128, 255, 0, 7, -2147483648, 2147483647, 131][(j + i) % 7]);
}

/** `count` problems at tile edges (K odd), rhs of 1 to 4 bits, then one of several tiles and k steps. */
function nibbleProblems(count: number, s: number): GemmProblem[] {
  let x = s >>> 0;
  const pick = (list: number[]) => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return list[x % list.length];
  };
  const shapes: [number, number, number][] = [];
  for (let i = 0; i < count; i++) shapes.push([pick(EDGES), pick(EDGES), pick(EDGES.filter((k) => k % 2 === 1))]);
  shapes.push([130, 129, 257]);
  return shapes.map(([M, N, K], i) => {
    const p = fc.sample(arbProblemOfShape(M, N, K), { numRuns: 1, seed: s + i })[0];
    return {
      ...p,
      lhsZeroPoint: zeroPoint(M, i + 1),
      rhsZeroPoint: zeroPoint(N, i),
      pipeline: [], // raw int32 sums: the strictest check, and one epilogue pipeline per kernel
      bitDepth: { lhs: 8, rhs: 1 + ((i + s) % 4), rounding: ROUNDINGS[i % ROUNDINGS.length] },
    };
  });
}

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
// One tiling per configuration (each kernel is a pipeline compile of seconds on SwiftShader).
const cases = CONFIGS.map((c, i) => [`${tilingId(TILINGS[i])}-u4 at ${configLabel(c)}`, c, TILINGS[i], i] as const);

describe.skipIf(!gpu)(`sgmat -u4 (4-bit rhs, two per byte), emulated builtins == CPU reference (seed ${seed})`, () => {
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
});

afterAll(() => {
  expect(uncapturedErrors).toEqual([]);
});
