// Weights of at most 4 bits on the CPU (prepackCpu with a bitDepth, src/kernels/cpu-wasm/kernel.ts, and
// the 4-bit kernel of gen-nibble.ts): the rhs requantized once and stored two values per byte, the lhs
// requantized per call. Bit for bit against the normative referenceGemm (src/quant/lowbit.ts's scheme)
// for every rounding, rhs bits 1..4 with lhs bits 8 and fewer, both operand types and orders, per-channel
// zero points and stages, on 1, 2 and 3 threads, over the sweep's odd shapes; a repeated call (its
// plan); and each mismatch of bitDepth between the prepack and the GEMM as an InputError. Where the
// runtime's relaxed dot is exact on 7-bit operands (Node 22+), the relaxed-SIMD kernels (dot7) run, and
// the 16-bit ones are checked too with relaxed SIMD turned off; elsewhere only the 16-bit ones exist.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gemm } from '../../src/api.ts';
import { InputError } from '../../src/errors.ts';
import { CPU_WASM_SIMD, configureWasm, cpuRunStats, prepackCpu, wasmCpuCaps } from '../../src/kernels/cpu-wasm/kernel.ts';
import { requantized } from '../../src/kernels/cpu-wasm/requantize.ts';
import { requantize, resolveRounding, roundingOffset } from '../../src/quant/lowbit.ts';
import { normalizeProblem } from '../../src/problem/problem.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import type { BitDepth, BitDepthRounding, GemmProblem } from '../../src/types.ts';
import { arbProblem, describeProblem } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';

const caps = await wasmCpuCaps();
/** The engine runs 4-bit weights on relaxed SIMD (engine.ts dot7). */
const dot7 = caps.relaxedNote.includes('7-bit dot exact');
const ROUNDINGS: BitDepthRounding[] = ['nearest', 'probabilistic-addmod', 'probabilistic-xorshift', 'default'];

describe.skipIf(!caps.wasmSimd)('4-bit weights on the CPU', () => {
  async function expectSame(problem: GemmProblem, bitDepth: BitDepth, what: string, threads?: number) {
    const weights = await prepackCpu(problem.rhs, bitDepth);
    try {
      const full = { ...problem, bitDepth };
      const want = referenceGemm(full);
      for (let call = 0; call < 3; call++) {
        // Call 0 on exactly `threads` threads (the kernel itself; gemm() uses one below 2^20
        // multiply-adds per thread), then through gemm(): its plan, then the plan again.
        const got =
          call === 0 && threads
            ? await CPU_WASM_SIMD.run(normalizeProblem(full), { threads, rhsPacked: weights })
            : await gemm({ ...full, rhs: weights }, { backend: 'cpu' });
        const d = diffResults(got, want);
        if (d) expect.fail(formatMismatch(d, `${what}, call ${call}, ${JSON.stringify(bitDepth)} ${describeProblem(full)}`));
      }
    } finally {
      weights.destroy();
    }
  }

  it.each([1, 2, 3])('== reference over the sweep, every rounding and bit width, threads %i', async (threads) => {
    configureWasm({ threads });
    const arbBitDepth = fc.record({
      lhs: fc.oneof(fc.constant(8), fc.integer({ min: 1, max: 8 })),
      rhs: fc.integer({ min: 1, max: 4 }),
      rounding: fc.constantFrom(...ROUNDINGS),
    });
    await fc.assert(
      fc.asyncProperty(arbProblem(), arbBitDepth, (p, b) => expectSame({ ...p, bitDepth: undefined }, b, `threads ${threads}`, threads)),
      { numRuns: 60 },
    );
  });

  // The CPU path's requantization (run.ts requantized: a table lookup, the offset's period as a counter)
  // against the normative requantize and roundingOffset of src/quant/lowbit.ts, element by element.
  it('requantized operands equal the normative requantization: 1-8 bits, every rounding, both types and orders', () => {
    let seed = 5;
    const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) >>> 24;
    for (const [rows, cols] of [
      [1, 1],
      [3, 255],
      [17, 31],
      [256, 2],
      [64, 65],
    ])
      for (const type of ['uint8', 'int8'] as const)
        for (const order of ['row-major', 'col-major'] as const) {
          const data =
            type === 'int8' ? Int8Array.from({ length: rows * cols }, () => next() - 128) : Uint8Array.from({ length: rows * cols }, next);
          for (let bits = 1; bits <= 8; bits++)
            for (const rounding of ROUNDINGS) {
              const p = normalizeProblem({
                lhs: { data: new Uint8Array(rows), rows: 1, cols: rows },
                rhs: { data, rows, cols, order },
                bitDepth: { lhs: 8, rhs: bits, rounding },
              });
              const got = requantized(p, 'rhs');
              const concrete = resolveRounding(rounding, rows);
              const shift = type === 'int8' ? 128 : 0;
              for (let r = 0; r < rows; r++)
                for (let c = 0; c < cols; c++) {
                  const s = order === 'row-major' ? r * cols + c : c * rows + r;
                  const want = requantize(data[s] + shift, bits, roundingOffset(concrete, r * cols + c));
                  if (got[s] !== want)
                    expect.fail(`${rows}x${cols} ${type} ${order} ${bits} bits ${rounding}: (${r}, ${c}) ${got[s]} != ${want}`);
                }
            }
        }
  });

  it('every rounding at 4 bits on a few-row shape with K past the default rounding switch (384)', async () => {
    configureWasm({ threads: 2 });
    let seed = 99;
    const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0);
    for (const [M, N, K] of [
      [1, 100, 500],
      [16, 64, 391],
      [5, 33, 1030],
    ]) {
      const problem: GemmProblem = {
        lhs: { data: Uint8Array.from({ length: M * K }, () => next() >>> 24), rows: M, cols: K },
        rhs: { data: Int8Array.from({ length: K * N }, () => (next() >>> 24) - 128), rows: K, cols: N, order: 'col-major' },
        lhsZeroPoint: 131,
        rhsZeroPoint: -5,
        pipeline: [
          { type: 'quantizeDownInt32ByFixedPoint', multiplier: 1 << 28, shift: 6, offsetAfterShift: 100 },
          { type: 'saturatingCast', to: 'int8' },
        ],
      };
      for (const threads of [1, 2, 3])
        for (const rounding of ROUNDINGS) await expectSame(problem, { lhs: 8, rhs: 4, rounding }, `${M}x${N}x${K}`, threads);
    }
  });

  // The dot7 kernels keep pair sums in i16 for 8 quads: l' - 128 at -128 and 127 against r' = 15 meet
  // that bound (8 * 2 * 128 * 15 = 30720); K spans many blocks and a partial one. The driver that ran is
  // asserted, and with relaxed SIMD off the 16-bit kernels take the same problems.
  it.each([true, false])("l' and r' at their extremes, every quad shape, 1-3 threads, relaxed SIMD %s", async (relaxedSimd) => {
    configureWasm({ relaxedSimd });
    try {
      for (const [M, fill] of [
        [1, 0],
        [2, 255],
        [3, 0],
        [5, 255],
        [9, -1],
      ]) {
        const [N, K] = [45, 1027];
        let seed = M;
        const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) >>> 24;
        const problem: GemmProblem = {
          lhs: { data: Uint8Array.from({ length: M * K }, () => (fill < 0 ? (next() & 1) * 255 : fill)), rows: M, cols: K },
          rhs: { data: Uint8Array.from({ length: K * N }, (_, i) => (i % 7 ? 255 : next())), rows: K, cols: N },
          lhsZeroPoint: 3,
          rhsZeroPoint: 250,
        };
        for (const threads of [1, 2, 3]) {
          await expectSame(problem, { lhs: 8, rhs: 4, rounding: 'nearest' }, `${M}x${N}x${K} lhs ${fill}`, threads);
          expect(cpuRunStats().lastDriver).toMatch(dot7 && relaxedSimd ? /^gemm_nibble7_/ : /^gemm_nibble_/);
        }
      }
    } finally {
      configureWasm({ relaxedSimd: true });
    }
  });

  // The dot7 micro-kernels run whole blocks of 8 quads unrolled, then the last quads one at a time: every
  // depth from 1 to 70 (1-18 quads: no block, one, two, with every remainder) on every quad shape, the
  // operands at their extremes.
  it('every depth around the 8-quad blocks, every quad shape', async () => {
    configureWasm({ threads: 1 });
    for (const M of [1, 2, 4, 5])
      for (let K = 1; K <= 70; K++) {
        const N = 40;
        const problem: GemmProblem = {
          lhs: { data: Uint8Array.from({ length: M * K }, (_, i) => (i % 5 ? 0 : 255)), rows: M, cols: K },
          rhs: { data: Uint8Array.from({ length: K * N }, (_, i) => (i % 3 ? 255 : i & 255)), rows: K, cols: N },
          lhsZeroPoint: 7,
          rhsZeroPoint: 240,
        };
        await expectSame(problem, { lhs: 8, rhs: 4, rounding: 'nearest' }, `${M}x${N}x${K}`);
      }
  });

  it('refuses a bitDepth that differs from the prepacked one, and more than 4 bits: the GEMM names rhs, prepackCpu bitDepth', async () => {
    const rhs = { data: new Uint8Array(12).fill(7), rows: 3, cols: 4 };
    const lhs = { data: new Uint8Array(6).fill(9), rows: 2, cols: 3 };
    const fails = async (run: () => Promise<unknown>, field: RegExp) => {
      const e = await run().then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(InputError);
      expect((e as InputError).field).toMatch(field);
    };
    const four = await prepackCpu(rhs, { lhs: 8, rhs: 4, rounding: 'nearest' });
    const eight = await prepackCpu(rhs);
    await fails(() => gemm({ lhs, rhs: four }, { backend: 'cpu' }), /^rhs$/);
    await fails(() => gemm({ lhs, rhs: four, bitDepth: { lhs: 8, rhs: 3, rounding: 'nearest' } }, { backend: 'cpu' }), /^rhs$/);
    await fails(
      () => gemm({ lhs, rhs: four, bitDepth: { lhs: 8, rhs: 4, rounding: 'probabilistic-addmod' } }, { backend: 'cpu' }),
      /^rhs$/,
    );
    await fails(() => gemm({ lhs, rhs: eight, bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' } }, { backend: 'cpu' }), /^rhs$/);
    await fails(() => prepackCpu(rhs, { lhs: 8, rhs: 5, rounding: 'nearest' }), /^bitDepth/);
    await fails(() => prepackCpu(rhs, { lhs: 8, rhs: 0, rounding: 'nearest' }), /^bitDepth/);
    // 'default' resolves to 'nearest' below K = 384: the same requantization.
    const got = await gemm({ lhs, rhs: four, bitDepth: { lhs: 8, rhs: 4, rounding: 'default' } }, { backend: 'cpu' });
    expect(Array.from(got.data)).toEqual(Array.from(referenceGemm({ lhs, rhs, bitDepth: { lhs: 8, rhs: 4, rounding: 'nearest' } }).data));
    four.destroy();
    eight.destroy();
  });
});
