// GPU tier, skinny shapes: the gemv kernels (M <= 4; subgroupAdd and workgroup-memory
// reductions), the split-K kernels (small M) and 4-bit rhs stored two values per byte ('u4k8-r64'),
// each forced in turn and compared bit for bit with the CPU reference (src/reference/gemm.ts, the
// less-than-8-bit path of src/quant/lowbit.ts): M = 1..8, odd N and K, 8-bit and <= 4-bit rhs, every
// rounding, every zero-point form (arbProblemOfShape: scalar or per-channel), every stage kind; then
// prepacked nibble weights reused across calls and the registry's own choices, and split-K and nibble
// operands past lowered binding and workgroup-count limits. Runs on SwiftShader, which has subgroups.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GpuContext } from '../../src/scheduler/context.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import type { BitDepth, BitDepthRounding, GemmProblem } from '../../src/types.ts';
import { arbCast, arbOperand, arbProblemOfShape, arbStage } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { expectExact } from '../support/kernel-harness.ts';
import { getGpu, releaseGpu } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

const ROUNDINGS: BitDepthRounding[] = ['nearest', 'probabilistic-addmod', 'probabilistic-xorshift', 'default'];
const sample = <T>(arb: fc.Arbitrary<T>, seed: number) => fc.sample(arb, { numRuns: 1, seed })[0];
const SKINNY = GPU_KERNELS.filter((k) => /^(gemv|splitk)/.test(k.id));

async function expectMatches(ctx: GpuContext, p: GemmProblem, context: string) {
  expectExact(await ctx.gemm(p), p, context);
}

describe.skipIf(!gpu)('skinny kernels == CPU reference', () => {
  it('SwiftShader offers what these kernels need (so none of them is skipped there)', async () => {
    const ctx = await GpuContext.create({ device: gpu!.device });
    if (ctx.caps.isSoftware) {
      expect(ctx.caps.subgroups).toBe(true);
      expect(ctx.caps.dot4).toBe(true);
    }
    ctx.destroy();
  });

  describe.each(SKINNY.map((k) => [k.id, k] as const))('kernel %s', (id, kernel) => {
    let ctx: GpuContext;
    beforeAll(async () => {
      ctx = await GpuContext.create({ device: gpu!.device, kernel: id });
    });
    afterAll(() => ctx?.destroy());
    const nibbles = kernel.rhsPackFormat === 'u4k8-r64';
    const run = async (p: GemmProblem, context: string) => {
      const shape = {
        M: p.lhs.rows,
        N: p.rhs.cols,
        K: p.lhs.cols,
        dstType: 'int32' as const,
        dstOrder: p.dstOrder ?? 'row-major',
        bitDepth: p.bitDepth,
      };
      if (!kernel.supports(ctx.caps, shape)) {
        expect(ctx.caps.isSoftware).toBe(false); // every skinny kernel runs on SwiftShader
        return;
      }
      await expectMatches(ctx, p, `${id} ${context}`);
      expect(ctx.lastRun.kernel).toBe(id);
    };
    const bitDepth = (seed: number, rounding: BitDepthRounding): BitDepth | undefined => {
      if (nibbles) return { lhs: 1 + (seed % 8), rhs: 1 + (seed % 4), rounding };
      return seed % 3 === 0 ? undefined : { lhs: 1 + ((seed * 5) % 8), rhs: 5 + (seed % 4), rounding };
    };

    it('M = 1..8, odd N and K, every rounding and zero-point form', async () => {
      let seed = 1;
      for (let M = 1; M <= 8; M++) {
        const [N, K] = [
          [13, 37],
          [65, 71],
          [5, 129],
          [33, 64],
        ][M % 4];
        const rounding = ROUNDINGS[M % 4];
        await run({ ...sample(arbProblemOfShape(M, N, K), seed), bitDepth: bitDepth(seed, rounding) }, `M=${M}`);
        seed++;
      }
    });

    it('every stage kind, with and without a cast', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 8 }),
          fc.constantFrom(7, 31, 65),
          fc.constantFrom(33, 97),
          fc.nat(),
          async (M, N, K, seed) => {
            const p = sample(arbProblemOfShape(M, N, K), seed);
            const stage = sample(arbStage(M, N), seed + 1);
            const cast = sample(fc.option(arbCast), seed + 2);
            await run({ ...p, pipeline: cast ? [stage, cast] : [stage], bitDepth: bitDepth(seed, ROUNDINGS[seed % 4]) }, 'stage');
          },
        ),
        { numRuns: 8 },
      );
    });

    it('K large enough for several split-K slices, and int32 wrap', async () => {
      const K = 34000;
      const fill = (rows: number, cols: number) => ({
        data: new Uint8Array(rows * cols).fill(255),
        rows,
        cols,
        order: 'row-major' as const,
      });
      await run(
        {
          lhs: fill(3, K),
          rhs: fill(K, 5),
          lhsZeroPoint: -2147483648,
          rhsZeroPoint: 7,
          bitDepth: nibbles ? { lhs: 8, rhs: 4, rounding: 'nearest' } : undefined,
        },
        'wrap',
      );
      await run({ ...sample(arbProblemOfShape(6, 9, 2000), 3), bitDepth: bitDepth(4, 'probabilistic-xorshift') }, 'deep');
    });
  });

  describe('with the registry choosing', () => {
    let ctx: GpuContext;
    beforeAll(async () => {
      ctx = await GpuContext.create({ device: gpu!.device });
    });
    afterAll(() => ctx?.destroy());

    it('4-bit weights prepacked two per byte, reused across calls with other lhs, M, zero points and stages', async () => {
      const [K, N] = [75, 45];
      const rhs = sample(arbOperand(K, N), 11);
      for (const rounding of ROUNDINGS) {
        const bitDepth: BitDepth = { lhs: 8, rhs: 4, rounding };
        const packed = await ctx.prepack('rhs', rhs, bitDepth);
        expect(packed.packFormat).toBe('u4k8-r128');
        expect(packed.bytes).toBe(128 * (128 / 2) + 128 * 4); // 128 rows of 128 k at 4 bits, and the sums
        for (const M of [1, 3, 4, 5, 8, 40, 130]) {
          const p = { ...sample(arbProblemOfShape(M, N, K), 100 + M), rhs, bitDepth };
          const d = diffResults(await ctx.gemm({ ...p, rhs: packed }), referenceGemm(p));
          if (d) expect.fail(formatMismatch(d, `prepacked u4 M=${M} ${rounding}`));
          // sgmat-64x64-u4 where the adapter has tensor cores and the tiles pay (M, N > 32).
          expect(ctx.lastRun.kernel).toMatch(M <= 4 ? /^gemv-u4/ : M <= 32 ? /^splitk-u4/ : /^(splitk-u4|sgmat-64x64-u4)/);
        }
        // Asked for without its bits (an 8-bit GEMM), or at other bits: an InputError naming rhs, before any kernel is chosen.
        for (const other of [undefined, { ...bitDepth, rhs: 3 }] as const) {
          const e = await ctx.gemm({ ...sample(arbProblemOfShape(8, N, K), 99), rhs: packed, bitDepth: other }).catch((x) => x);
          expect(e, JSON.stringify(other)).toMatchObject({ name: 'InputError', field: 'rhs' });
        }
        packed.destroy();
      }
    });

    it('non-prepacked 4-bit rhs runs the nibble kernels up to M = 128, 8-bit lanes above', async () => {
      const bitDepth: BitDepth = { lhs: 7, rhs: 3, rounding: 'probabilistic-addmod' };
      for (const [M, want] of [
        [2, /^gemv-u4/],
        [9, /^splitk-u4/],
        [129, /^dot4-/],
      ] as const) {
        await expectMatches(ctx, { ...sample(arbProblemOfShape(M, 19, 70), M), bitDepth }, 'registry');
        expect(ctx.lastRun.kernel).toMatch(want);
      }
    });
  });

  describe('limits lowered so bands and grids split', () => {
    let small: GpuContext;
    beforeAll(async () => {
      small = await GpuContext.create({
        device: gpu!.device,
        limits: { maxStorageBufferBindingSize: 32768, maxComputeWorkgroupsPerDimension: 3 },
      });
    });
    afterAll(() => small?.destroy());
    it.each(SKINNY.map((k) => k.id))('%s, every operand storage order', async (id) => {
      const ctx = await GpuContext.create({ device: gpu!.device, kernel: id, limits: small.limits });
      let seed = 0;
      for (const [M, N, K] of [
        [3, 300, 64],
        [7, 150, 200],
      ]) {
        for (const rhsOrder of ['row-major', 'col-major'] as const) {
          const p = sample(arbProblemOfShape(M, N, K), 50 + seed++);
          const bitDepth: BitDepth | undefined = id.includes('u4') ? { lhs: 8, rhs: 4, rounding: 'nearest' } : undefined;
          await expectMatches(ctx, { ...p, rhs: { ...p.rhs, order: rhsOrder }, dstOrder: 'col-major', bitDepth }, `lowered ${id}`);
          expect(ctx.lastRun.gemmDispatches).toBeGreaterThan(1);
        }
      }
      ctx.destroy();
    });
  });
});
