// What only the WebAssembly CPU kernels have (src/kernels/cpu-wasm/, pack -> gemm -> output all in
// WebAssembly), bit for bit against the normative referenceGemm, each kernel this runtime supports on one
// to three threads (the sweep over types, orders, zero points, stages and bit depths is the generic one of
// test/kernels/cpu-kernels.test.ts): int32 wrap with a row-major rhs and larger shapes, the direct
// variant's shapes and bounds, the SIMD output stage on the int32 edges, the relaxed kernel forced on data
// every lowering computes exactly, the thread pool's failure path, and the relaxed-SIMD gate. Kernels this
// runtime lacks (relaxed SIMD on Node 20/22) are reported as skipped.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CPU_WASM_KERNELS, wasmCpuCaps } from '../../src/kernels/cpu-wasm/kernel.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { normalizeProblem } from '../../src/problem/problem.ts';
import type { GemmProblem } from '../../src/types.ts';
import { arbProblem, arbProblemOfShape, describeProblem } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { relaxedFewShape } from '../support/cpu-drivers.ts';

const caps = await wasmCpuCaps();
const u8 = (rows: number, cols: number, fill: number, order: 'row-major' | 'col-major' = 'row-major') => ({
  data: new Uint8Array(rows * cols).fill(fill),
  rows,
  cols,
  order,
});

describe.each(CPU_WASM_KERNELS.map((k) => [k.id, k] as const))('%s', (id, kernel) => {
  const supported = kernel.supports(caps, normalizeProblem({ lhs: u8(1, 1, 0), rhs: u8(1, 1, 0) }));
  describe.skipIf(!supported).each([1, 2, 3])('threads %i', (threads) => {
    async function expectSame(p: GemmProblem, note = '') {
      const got = await kernel.run(normalizeProblem(p), { threads });
      const d = diffResults(got, referenceGemm(p));
      if (d) expect.fail(formatMismatch(d, `${id} threads=${threads} ${describeProblem(p)} ${note}`));
    }
    it('when int32 wraps with a row-major rhs, and over larger shapes', async () => {
      const K = 40000; // 40000 * 255 * 255 > 2^31
      await expectSame({ lhs: u8(3, K, 255), rhs: u8(K, 9, 0), lhsZeroPoint: -2147483648, rhsZeroPoint: 2147483647 });
      await fc.assert(
        fc.asyncProperty(arbProblem([100, 129, 200]), (p) => expectSame(p)),
        { numRuns: 6 },
      );
    });
    // Few lhs rows and a row-major rhs take the direct variant (gen-direct.ts: 1x32, 2x16 and 4x8
    // micro-kernels, lhs - zL in 16 bits); lhs zero points past its 16-bit bound take the packed path.
    it('the direct variant: each micro-kernel shape, both rhs types, zero points at the 16-bit bound', async () => {
      let seed = 7;
      const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 24;
      for (const M of [1, 2, 3, 4, 5, 8, 9])
        for (const [N, K] of [
          [1, 1],
          [33, 7],
          [70, 64],
          [31, 129],
        ])
          for (const signed of [false, true])
            for (const zL of [0, 127, -32512, 32512, 32513]) {
              const data = (n: number) => (signed ? Int8Array.from({ length: n }, next) : Uint8Array.from({ length: n }, next));
              await expectSame({
                lhs: { data: data(M * K), rows: M, cols: K, order: M % 2 ? 'row-major' : 'col-major' },
                rhs: { data: data(K * N), rows: K, cols: N, order: 'row-major' },
                lhsZeroPoint: M > 4 ? Int32Array.from({ length: M }, (_, m) => (m % 2 ? zL : -zL)) : zL,
                rhsZeroPoint: Int32Array.from({ length: N }, (_, n) => n - 9),
              });
            }
    });
    // The output stage runs four columns per SIMD vector, and a vector's lanes have their own exponents
    // (stages.ts exponentConstants): every edge value meets every exponent and the INT32_MIN multiplier
    // in every lane position, on an odd width (a tail of three), per column and per row.
    it('output stages on the int32 edges, exponents -31..31 mixed within vectors', async () => {
      const edges = [
        -2147483648, -2147483647, -1073741825, -1073741824, -65537, -2, -1, 0, 1, 2, 3, 65535, 1073741824, 2147483646, 2147483647,
      ];
      const N = 63 * 4 + 3;
      const bias = Int32Array.from({ length: N }, (_, n) => edges[n % edges.length]);
      const exponent = Int32Array.from({ length: N }, (_, n) => ((n * 11) % 63) - 31);
      const multiplier = Int32Array.from({ length: N }, (_, n) => [-2147483648, 2147483647, 1073741824, 1518500250, -3, 0, 1][n % 7]);
      const lhs = u8(3, 1, 0);
      const rhs = u8(1, N, 0);
      for (const rounding of ['double', 'single'] as const) {
        const e = rounding === 'single' ? exponent.map((v) => Math.min(v, 30)) : exponent;
        await expectSame({
          lhs,
          rhs,
          pipeline: [
            { type: 'bias', axis: 'col', values: bias },
            { type: 'scaleInt32ByFixedPointAndExponent', multiplier, exponent: e, offsetAfterShift: -7, rounding, axis: 'col' },
          ],
        });
        await expectSame({
          lhs: u8(N, 1, 0),
          rhs: u8(1, 5, 0),
          pipeline: [
            { type: 'bias', axis: 'row', values: bias },
            { type: 'scaleInt32ByFixedPointAndExponent', multiplier, exponent: e, offsetAfterShift: 3, rounding, axis: 'row' },
            { type: 'saturatingCast', to: 'int16' },
          ],
        });
      }
      for (const shift of [0, 1, 17, 31])
        await expectSame({
          lhs,
          rhs,
          pipeline: [
            { type: 'bias', axis: 'col', values: bias },
            { type: 'quantizeDownInt32ByFixedPoint', multiplier: -2147483648, shift, offsetAfterShift: 5 },
            { type: 'quantizeDownInt32ToUint8Scale', offset: bias, multiplier, shift, axis: 'col' },
            { type: 'saturatingCast', to: 'int8' },
          ],
        });
    });
  });
});

// The relaxed kernel's own code (4-byte k groups, the XOR 0x80 and its 128 folded into the sums, the
// 6x8 micro-kernel) on any runtime that validates relaxed SIMD, even where its dot product is not exact
// for full-range bytes (x64 without VNNI lowers it to the saturating pmaddubsw): with the 7-bit operand
// (the packed lhs) confined to 0..127 every lowering is exact, so each mode can be forced and checked.
describe('cpu-wasm relaxed kernel, mode forced, 7-bit packed lhs', async () => {
  const { wasmEngine } = await import('../../src/kernels/cpu-wasm/engine.ts');
  const { runOnEngine, makePlan, runPlan, wasmRunStats } = await import('../../src/kernels/cpu-wasm/run.ts');
  const { selfCheck, relaxedFewAgrees } = await import('../../src/kernels/cpu-wasm/self-check.ts');
  const { packRhsBlock } = await import('../../src/kernels/cpu-wasm/rhs-block.ts');
  const { freeBlock } = await import('../../src/kernels/cpu-wasm/engine.ts');
  const e = await wasmEngine(selfCheck);
  const hasRelaxed = !!e && 'pack_lhs_relaxed' in e.exports;
  describe.skipIf(!hasRelaxed).each(['usdot', 'sdot'] as const)('%s', (mode) => {
    /** lhs bytes whose packed form (usdot: unsigned; sdot: signed) lies in 0..127. */
    const confine = (p: GemmProblem): GemmProblem => {
      const d = p.lhs.data;
      const signed = d instanceof Int8Array;
      const data = signed
        ? Int8Array.from(d, (v) => (mode === 'usdot' ? v | -128 : v & 127))
        : Uint8Array.from(d, (v) => (mode === 'usdot' ? v & 127 : v | 128));
      return { ...p, lhs: { ...p.lhs, data } };
    };
    it.each([1, 2])('threads %i, over the sweep, every stage, less-than-8-bit excluded', async (threads) => {
      await fc.assert(
        fc.asyncProperty(arbProblem(), async (p0) => {
          const p = confine(p0);
          const got = await runOnEngine(e!, normalizeProblem(p), 'relaxed', threads, 1, mode);
          const d = diffResults(got, referenceGemm(p));
          if (d) expect.fail(formatMismatch(d, `relaxed ${mode} threads=${threads} ${describeProblem(p)}`));
        }),
        { numRuns: 120 },
      );
    });
    // The engine's self-check of the few-row kernels (self-check.ts selfCheck), here on the confined data; where
    // the engine refused the relaxed dot (its lowering saturates), full-range data must fail it.
    it('the self-check of the few-row kernels agrees on such data', async () => {
      let seed = 77;
      const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) >>> 24;
      const [N, K] = [40, 1000];
      for (const signed of [false, true]) {
        const rhs = { data: Int8Array.from({ length: K * N }, next), rows: K, cols: N, order: 'col-major' as const };
        const data = signed ? Int8Array.from({ length: 3 * K }, next) : Uint8Array.from({ length: 3 * K }, next);
        const input: GemmProblem = { lhs: { data, rows: 3, cols: K }, rhs, lhsZeroPoint: 9, rhsZeroPoint: -3 };
        const block = packRhsBlock(e!, normalizeProblem(input), 'relaxed');
        try {
          expect(await relaxedFewAgrees(e!, mode, confine(input), block)).toBe(true);
          if (!e!.relaxed) expect(await relaxedFewAgrees(e!, mode, input, block)).toBe(false);
        } finally {
          freeBlock(e!, block.packed);
        }
      }
    });
    // A prepacked rhs (rhs-block.ts packRhsBlock): 1 to 4 rows, and 7, 8, 13 to 16, take the few-row
    // kernels (gen-relaxed-few.ts: 1x4, 2x2 and 4x1 panels, in tiles of 4 rows from 3 rows on, partial
    // ones too), the rest the 6x8; N past a column group of 32 (the padding panels), k past a quad.
    it.each([1, 2, 3])('a prepacked rhs, 1 to 17 rows, the few-row kernels, threads %i', async (threads) => {
      const dims = fc.tuple(fc.integer({ min: 1, max: 17 }), fc.constantFrom(1, 7, 33, 64, 70), fc.constantFrom(1, 5, 64, 67, 129));
      await fc.assert(
        fc.asyncProperty(
          dims.chain(([M, N, K]) => arbProblemOfShape(M, N, K)),
          async (p0) => {
            const p = confine(p0);
            const q = normalizeProblem(p);
            const block = packRhsBlock(e!, q, 'relaxed');
            try {
              const got = await runPlan(e!, makePlan(e!, q, 'relaxed', threads, 1, mode, block), q, true);
              const shape = relaxedFewShape(q.M);
              expect(wasmRunStats.lastDriver).toBe(shape ? `gemm_relaxed_${shape}` : 'gemm_relaxed');
              const d = diffResults(got, referenceGemm(p));
              if (d) expect.fail(formatMismatch(d, `relaxed ${mode} prepacked threads=${threads} ${describeProblem(p)}`));
            } finally {
              freeBlock(e!, block.packed);
            }
          },
        ),
        { numRuns: 60 },
      );
    });
  });
});

describe('cpu-wasm thread pool', () => {
  it("a worker's trap comes back as an Error with its message, and the pool runs the next job", async () => {
    const { wasmEngine } = await import('../../src/kernels/cpu-wasm/engine.ts');
    const { selfCheck } = await import('../../src/kernels/cpu-wasm/self-check.ts');
    const { WorkerPool } = await import('../../src/kernels/cpu-wasm/pool.ts');
    const e = await wasmEngine(selfCheck);
    if (!e?.shared) return; // no shared memory: no workers
    const pool = new WorkerPool(e.module, e.memory, e.exports);
    try {
      // In a worker, after a barrier that both threads reach: lhs tiles far past the last problem's
      // (its context is still in memory) walk past the end of the memory.
      await expect(pool.run([[['barrier']], [['barrier'], ['gemm_i16', 0, 1 << 30, 0, 1]]])).rejects.toThrow(
        /qgemm wasm: .*(out of bounds|unreachable|is not a function)/i,
      );
      await pool.run([[['barrier']], [['barrier']]]);
      expect(pool.isLost).toBe(false);
    } finally {
      pool.close();
    }
  });
});

describe('relaxed SIMD gate', () => {
  it('the self-check accepts at most one mode, and only the one the engine chose', async () => {
    const { wasmEngine } = await import('../../src/kernels/cpu-wasm/engine.ts');
    const { selfCheck } = await import('../../src/kernels/cpu-wasm/self-check.ts');
    const e = await wasmEngine(selfCheck);
    if (!e || !('pack_lhs_relaxed' in e.exports)) return; // this runtime does not validate relaxed SIMD
    const usdot = await selfCheck(e, 'usdot');
    const sdot = await selfCheck(e, 'sdot');
    expect(usdot && sdot).toBe(false); // full-range data tells the two apart
    if (e.relaxed) expect(e.relaxed === 'usdot' ? usdot : sdot).toBe(true);
    else expect(caps.relaxedSimd).toBe(false);
  });
});

describe('configureCpu while a GEMM waits', () => {
  it('a relaxed GEMM queued before the engine is replaced without relaxed SIMD runs the 16-bit kernel, exact', async () => {
    const { configureWasm } = await import('../../src/kernels/cpu-wasm/engine.ts');
    const relaxed = CPU_WASM_KERNELS.find((k) => k.id === 'cpu-wasm-relaxed')!;
    const p: GemmProblem = { lhs: u8(5, 40, 7), rhs: { ...u8(40, 9, 250), order: 'col-major' }, lhsZeroPoint: 3, rhsZeroPoint: 128 };
    if (!relaxed.supports(caps, normalizeProblem(p))) return; // this runtime has no relaxed kernel (Node 20/22)
    const ran: string[] = [];
    const ranAs = (id: string) => ran.push(id);
    const calls = [relaxed.run(normalizeProblem(p), { ranAs }), relaxed.run(normalizeProblem(p), { ranAs })];
    configureWasm({ relaxedSimd: false });
    try {
      for (const got of await Promise.all(calls)) expect(diffResults(got, referenceGemm(p))).toBeNull();
      expect(ran).toEqual(['cpu-wasm-simd', 'cpu-wasm-simd']); // what onKernel is told
    } finally {
      configureWasm({ relaxedSimd: true });
    }
  });
});
