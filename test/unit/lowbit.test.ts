// Unit and property tiers for less-than-8-bit operands (src/quant/lowbit.ts): the rounding offset
// generators against gemmlowp's published sequences, RoundingMultiplyByConstantFraction against the
// BigInt oracle, and the naive bit-depth reference against the fast CPU path over the shape sweep.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  constantFraction,
  requantize,
  roundingMultiplyByConstantFraction,
  roundingOffset,
  XORSHIFT_OFFSETS,
} from '../../src/quant/lowbit.ts';
import { cpuGemm } from '../../src/kernels/cpu-js/kernel.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { type BitDepth, type BitDepthRounding, INT32_MAX, INT32_MIN } from '../../src/types.ts';
import { lcgBytes } from '../../src/verify-problems.ts';
import { type GemmSpecJson, oracleGemm } from '../oracle/gemm-oracle.ts';
import { rmbcfBig } from '../oracle/bigint-fixedpoint.ts';
import { arbProblem, describeProblem } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { EDGES } from '../support/edges.ts';

describe('rounding offsets', () => {
  it("xorshift is gemmlowp's 8-bit generator: 127, 163, 168, 103, 50, 5, 53, 142, ... with period 255", () => {
    expect(XORSHIFT_OFFSETS.slice(0, 8)).toEqual([127, 163, 168, 103, 50, 5, 53, 142]);
    expect(new Set(XORSHIFT_OFFSETS).size).toBe(255);
    expect(roundingOffset('probabilistic-xorshift', 255 + 2)).toBe(168);
  });
  it('add-mod-97 gives 98, 195, 37, 134, ... and covers 0..254', () => {
    expect([0, 1, 2, 3].map((i) => roundingOffset('probabilistic-addmod', i))).toEqual([98, 195, 37, 134]);
    expect(new Set(Array.from({ length: 255 }, (_, i) => roundingOffset('probabilistic-addmod', i))).size).toBe(255);
    expect(roundingOffset('probabilistic-addmod', 2 ** 40)).toBe((1 + 97 * ((2 ** 40 + 1) % 255)) % 255);
  });
  it('requantize maps 0..255 onto 0..maxval, nearest rounding to nearest', () => {
    for (let bits = 1; bits <= 8; bits++) {
      const max = 2 ** bits - 1;
      expect(requantize(0, bits, 127)).toBe(0);
      expect(requantize(255, bits, 127)).toBe(max);
      for (let v = 0; v <= 255; v++) expect(Math.abs(v * max - 255 * requantize(v, bits, 127))).toBeLessThanOrEqual(127);
    }
  });
});

describe('roundingMultiplyByConstantFraction', () => {
  const fractions: [number, number][] = [
    [255 * 255, 127 * 31],
    [255, 1],
    [255, 3],
    [255, 7],
    [255, 127],
    [255 * 255, 1],
    [255 * 255, 15 * 15],
    [255, 255],
  ];
  it('matches the oracle on edges and random values for every fraction used', () => {
    for (const [num, den] of fractions) {
      const f = constantFraction(num, den);
      for (const x of EDGES) expect(roundingMultiplyByConstantFraction(x, f), `${x}*${num}/${den}`).toBe(rmbcfBig(x, num, den));
      fc.assert(
        fc.property(
          fc.integer({ min: INT32_MIN, max: INT32_MAX }),
          (x) => roundingMultiplyByConstantFraction(x, f) === rmbcfBig(x, num, den),
        ),
        { numRuns: 3000 },
      );
    }
  });
});

describe('bit-depth GEMM: naive reference == fast CPU path', () => {
  const arbBitDepth = fc.record({
    lhs: fc.integer({ min: 1, max: 8 }),
    rhs: fc.integer({ min: 1, max: 8 }),
    rounding: fc.constantFrom<BitDepthRounding>('nearest', 'probabilistic-addmod', 'probabilistic-xorshift', 'default'),
  });
  it('over the shape sweep, every type/order/zero point/stage and rounding', () => {
    fc.assert(
      fc.property(arbProblem(), arbBitDepth, (p, bitDepth) => {
        const q = { ...p, bitDepth };
        const d = diffResults(cpuGemm(q), referenceGemm(q));
        if (d) expect.fail(formatMismatch(d, `${describeProblem(q)} bitDepth=${JSON.stringify(bitDepth)}`));
      }),
      { numRuns: 150 },
    );
  });
  it('8 bits with any rounding is the plain 8-bit GEMM', () => {
    fc.assert(
      fc.property(arbProblem([1, 5, 17, 33]), fc.constantFrom<BitDepthRounding>('nearest', 'probabilistic-xorshift'), (p, rounding) => {
        expect(diffResults(referenceGemm({ ...p, bitDepth: { lhs: 8, rhs: 8, rounding } }), referenceGemm(p))).toBeNull();
      }),
      { numRuns: 40 },
    );
  });
});

// The naive reference against the BigInt oracle (test/oracle/gemm-oracle.ts), an independent reading of
// the bit-depth spec: the fast CPU path above shares src/quant/lowbit.ts with the reference, so it cannot
// see a mistake there (the rounding offsets, 'default's switch at K = 384, the unpack fractions).
describe('bit-depth GEMM: naive reference == the BigInt oracle', () => {
  const npy = (rows: number, cols: number, data: Uint8Array) => ({
    dtype: 'uint8' as const,
    shape: [rows, cols],
    fortranOrder: false,
    data,
  });
  function check(M: number, N: number, K: number, zL: number, zR: number, bitDepth: BitDepth, fill?: number) {
    const a = fill === undefined ? lcgBytes(M * K, K + bitDepth.lhs) : new Uint8Array(M * K).fill(fill);
    const b = fill === undefined ? lcgBytes(K * N, K + 16 * bitDepth.rhs) : new Uint8Array(K * N).fill(fill);
    const spec: GemmSpecJson = { op: 'gemm', lhs: 'a', rhs: 'b', out: 'c', lhsZeroPoint: zL, rhsZeroPoint: zR, bitDepth };
    const want = Array.from(oracleGemm(spec, { lhs: npy(M, K, a), rhs: npy(K, N, b) }).data);
    const got = referenceGemm({
      lhs: { data: a, rows: M, cols: K },
      rhs: { data: b, rows: K, cols: N },
      lhsZeroPoint: zL,
      rhsZeroPoint: zR,
      bitDepth,
    });
    expect(Array.from(got.data), `${M}x${N}x${K} ${JSON.stringify(bitDepth)} zero points ${zL}, ${zR}`).toEqual(want);
  }
  it("at 'default's switch from nearest to probabilistic rounding (K 383 to 385), each rounding, mixed bit depths", () => {
    const roundings: BitDepthRounding[] = ['default', 'nearest', 'probabilistic-addmod', 'probabilistic-xorshift'];
    for (const K of [383, 384, 385])
      for (const rounding of roundings)
        for (const [lhs, rhs] of [
          [7, 5],
          [5, 7],
          [4, 8],
          [8, 3],
        ])
          check(3, 2, K, 5, 200, { lhs, rhs, rounding });
  });
  it('a sum of products past 2^31 wraps as int32 (K = 70000 of 255 x 255, 8 x 7 bits)', () => {
    check(1, 1, 70000, 0, 0, { lhs: 8, rhs: 7, rounding: 'nearest' }, 255);
  });
});
