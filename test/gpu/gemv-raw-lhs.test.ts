// GPU tier, the gemv kernels reading an unpacked lhs (src/kernels/gemv/gemv-lhs-raw.wgsl: the decode call
// without its lhs pack pass), bit for bit against the CPU reference: each gemv kernel forced, K at the
// edges of the 4-byte words and 16-byte chunks the kernel builds (1-10, 15-17, 31-33, 63-65), M = 1..4,
// int8 and uint8 lhs in both storage orders, scalar and per-channel zero points on both sides, 8-bit and
// 4-bit rhs (int32 dst: one pipeline per kernel; test/gpu/skinny.test.ts runs the stage kinds through
// the same path); then which calls take the raw path (no pack dispatch) and which keep the packed one, a
// strided GpuMatrix lhs, a planned decode call replayed, bands split by lowered limits, and a software
// adapter keeping the pack. Small shapes, one call per case. The contexts compile as on a hardware
// adapter (createGpuContextAsHardware): on a software one the scheduler keeps the lhs pack (gemm.ts).

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GEMV_ID } from '../../src/kernels/gemv/kernel.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { createGpuContextAsHardware, GpuContext } from '../../src/scheduler/context.ts';
import type { BitDepth, GemmProblem, Operand, Order } from '../../src/types.ts';
import { arbOperand } from '../support/arbitraries.ts';
import { diffResults } from '../support/compare.ts';
import { expectExact } from '../support/kernel-harness.ts';
import { Rng } from '../../tools/random.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

const EDGE_K = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 17, 31, 32, 33, 63, 64, 65];
const KERNELS = [GEMV_ID.subgroup[8], GEMV_ID.workgroup[8], GEMV_ID.emulated, GEMV_ID.subgroup[4], GEMV_ID.workgroup[4]];

/** A seeded operand of the given signedness and order. */
function operand(rows: number, cols: number, signed: boolean, order: Order, seed: number): Operand {
  const data = signed ? new Int8Array(rows * cols) : new Uint8Array(rows * cols);
  const rng = new Rng(seed);
  for (let i = 0; i < data.length; i++) data[i] = rng.next() >>> 24;
  return { data, rows, cols, order };
}

/** Case i: M, lhs signedness and order, and the zero-point forms, cycled so every combination occurs. */
function problem(i: number, K: number, N: number): GemmProblem {
  const M = 1 + (i % 4);
  const lhs = operand(M, K, (i & 1) === 1, (i >> 1) % 2 === 0 ? 'row-major' : 'col-major', 7 * i + K);
  const rhs = fc.sample(arbOperand(K, N), { numRuns: 1, seed: i })[0];
  const vector = (n: number, salt: number) => Int32Array.from({ length: n }, (_, j) => ((j * 53 + salt * 7) % 301) - 150);
  return {
    lhs,
    rhs,
    lhsZeroPoint: (i >> 2) % 2 === 0 ? (i * 37) % 256 : vector(M, i),
    rhsZeroPoint: (i >> 3) % 2 === 0 ? 128 - ((i * 11) % 256) : vector(N, i + 1),
    dstOrder: i % 3 === 0 ? 'col-major' : 'row-major',
  };
}

describe.skipIf(!gpu)('gemv with an unpacked lhs == CPU reference', () => {
  describe.each(KERNELS)('kernel %s', (id) => {
    let ctx: GpuContext;
    beforeAll(async () => {
      ctx = await createGpuContextAsHardware({ device: gpu!.device, kernel: id });
    });
    afterAll(() => ctx?.destroy());
    const bitDepth: BitDepth | undefined = id.includes('u4') ? { lhs: 8, rhs: 4, rounding: 'nearest' } : undefined;

    it('K at the word and chunk edges, M = 1..4, both lhs types and orders, every zero-point form', async () => {
      // Every edge on every kernel: the calls are cheap beside the kernel's one compile.
      for (const [i, K] of EDGE_K.entries()) {
        const p = { ...problem(i + 5 * KERNELS.indexOf(id), K, 9), bitDepth };
        expectExact(await ctx.gemm(p), p, `${id} K=${K}`);
        expect(ctx.lastRun.kernel).toBe(id);
        expect(ctx.lastRun.packDispatches).toBe(1); // the rhs pack only
      }
    });
  });

  describe('with the registry choosing', () => {
    let ctx: GpuContext;
    beforeAll(async () => {
      ctx = await createGpuContextAsHardware({ device: gpu!.device });
    });
    afterAll(() => ctx?.destroy());

    it('a decode call with prepacked rhs runs no pack, planned and replayed', async () => {
      const [K, N] = [33, 20];
      const first = problem(5, K, N);
      const rhs = await ctx.prepack('rhs', first.rhs);
      const plans: string[] = [];
      for (const seed of [0, 1, 2]) {
        const p = { ...first, lhs: operand(first.lhs.rows, K, first.lhs.data instanceof Int8Array, first.lhs.order ?? 'row-major', seed) };
        const got = await ctx.gemm({ ...p, rhs }, undefined, { onTrace: (t) => plans.push(t.plan) });
        expect(diffResults(got, referenceGemm(p)), `call ${seed}`).toBeNull();
        expect(ctx.lastRun.kernel).toMatch(/^gemv/);
        expect(ctx.lastRun.packDispatches).toBe(0);
      }
      expect(plans).toEqual(['new', 'hit', 'hit']);
      rhs.destroy();
    });

    it('a prepacked or requantized lhs keeps the pack', async () => {
      const p = problem(6, 17, 12);
      const lhs = await ctx.prepack('lhs', p.lhs);
      expect(diffResults(await ctx.gemm({ ...p, lhs }), referenceGemm(p))).toBeNull();
      expect(ctx.lastRun.packDispatches).toBe(1); // the rhs
      lhs.destroy();
      const q = { ...p, bitDepth: { lhs: 7, rhs: 8, rounding: 'nearest' } as BitDepth };
      expectExact(await ctx.gemm(q), q, 'requantized lhs');
      expect(ctx.lastRun.packDispatches).toBe(2);
    });

    it('bands and grids split by lowered limits', async () => {
      const lowered = await createGpuContextAsHardware({
        device: gpu!.device,
        kernel: GEMV_ID.subgroup[8],
        limits: { maxStorageBufferBindingSize: 32768, maxComputeWorkgroupsPerDimension: 3 },
      });
      // problem(i): M = 1 + i % 4; 300 and 150 columns of packed rhs rows past 32 KiB, grids past 3 workgroups.
      for (const [i, N, K] of [
        [2, 300, 65],
        [3, 150, 200],
      ]) {
        const p: GemmProblem = { ...problem(i, K, N), dstOrder: 'col-major' }; // 64 dst lines within 32 KiB
        expectExact(await lowered.gemm(p), p, `lowered M=${p.lhs.rows}`);
        expect(lowered.lastRun.gemmDispatches).toBeGreaterThan(1);
      }
      lowered.destroy();
    });

    it('a software adapter keeps the lhs pack (AdapterCaps.slowCompiler)', async () => {
      const soft = await GpuContext.create({ device: gpu!.device, kernel: GEMV_ID.subgroup[8] });
      if (!soft.caps.slowCompiler) return soft.destroy(); // a hardware adapter: the cases above
      const p = problem(1, 17, 9);
      expectExact(await soft.gemm(p), p, 'software');
      expect(soft.lastRun.packDispatches).toBe(2);
      soft.destroy();
    });

    it('a GpuMatrix lhs with padded rows (stride > K), read where it is', async () => {
      const layer1: GemmProblem = {
        lhs: operand(3, 10, false, 'row-major', 1),
        rhs: operand(10, 7, true, 'col-major', 2),
        lhsZeroPoint: 3,
        rhsZeroPoint: -5,
        pipeline: [{ type: 'saturatingCast', to: 'uint8' }],
      };
      const hidden = await ctx.gemmOnGpu(layer1);
      expect(hidden.stride).toBe(8);
      const rhs = operand(7, 11, false, 'row-major', 4);
      const got = await ctx.gemm({ lhs: hidden, rhs, lhsZeroPoint: 128, rhsZeroPoint: 1 });
      expect(ctx.lastRun.packDispatches).toBe(1); // the rhs
      const cpuHidden = referenceGemm(layer1);
      const want = referenceGemm({
        lhs: { data: cpuHidden.data as Uint8Array, rows: 3, cols: 7, order: 'row-major' },
        rhs,
        lhsZeroPoint: 128,
        rhsZeroPoint: 1,
      });
      expect(diffResults(got, want)).toBeNull();
      ctx.releaseMatrix(hidden);
    });
  });
});
