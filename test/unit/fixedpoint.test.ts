// Unit tier: the exact int32 fixed-point primitives of the output stage (src/quant/fixedpoint.ts,
// src/quant/tanh.ts) against the BigInt oracle (test/oracle/bigint-fixedpoint.ts), on every edge value
// crossed with every other and on random values across the whole int32 range.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  mulWide,
  multiplyByQuantizedMultiplier,
  roundingDivideByPOT,
  roundingHalfSum,
  saturatingLeftShift,
  saturatingRoundingDoublingHighMul,
} from '../../src/quant/fixedpoint.ts';
import { fixedPointTanhF3, tanhParams, tanhStage } from '../../src/quant/tanh.ts';
import { INT32_MAX, INT32_MIN } from '../../src/types.ts';
import { EDGES } from '../support/edges.ts';
import {
  fixedPointTanhQ3,
  mbqmBig,
  rdbpBig,
  roundingHalfSumBig,
  saturatingShiftLeftBig,
  srdhmBig,
  tanhStageBig,
} from '../oracle/bigint-fixedpoint.ts';

const int32 = fc.integer({ min: INT32_MIN, max: INT32_MAX });

/** Collects every mismatch, then fails with statistics rather than the first bad case. */
function expectAllEqual(name: string, cases: Iterable<unknown[]>, got: (...a: number[]) => number, want: (...a: number[]) => number) {
  let count = 0;
  let bad = 0;
  const examples: string[] = [];
  for (const args of cases) {
    count++;
    const g = got(...(args as number[]));
    const w = want(...(args as number[]));
    if (g !== w) {
      bad++;
      if (examples.length < 5) examples.push(`${name}(${args.join(', ')}) = ${g}, want ${w}`);
    }
  }
  expect(bad, `${bad} of ${count} mismatches:\n${examples.join('\n')}`).toBe(0);
  expect(count).toBeGreaterThan(0);
}

function* pairs(xs: number[], ys: number[]) {
  for (const x of xs) for (const y of ys) yield [x, y];
}

const bigProduct = (a: number, b: number) => BigInt(a) * BigInt(b);

describe('mulWide', () => {
  it('is the exact 64-bit product on edges and random values', () => {
    const check = (a: number, b: number) => {
      const [lo, hi] = mulWide(a, b);
      return (BigInt(hi) << 32n) + BigInt(lo) === bigProduct(a, b);
    };
    for (const [a, b] of pairs(EDGES, EDGES)) expect(check(a, b), `${a}*${b}`).toBe(true);
    fc.assert(fc.property(int32, int32, check), { numRuns: 20000 });
  });
});

describe('saturatingRoundingDoublingHighMul', () => {
  it('matches the oracle on edges x edges and random pairs', () => {
    expectAllEqual('SRDHM', pairs(EDGES, EDGES), saturatingRoundingDoublingHighMul, srdhmBig);
    fc.assert(
      fc.property(int32, int32, (a, b) => saturatingRoundingDoublingHighMul(a, b) === srdhmBig(a, b)),
      { numRuns: 20000 },
    );
  });
  it('saturates INT32_MIN * INT32_MIN and rounds half up', () => {
    expect(saturatingRoundingDoublingHighMul(INT32_MIN, INT32_MIN)).toBe(INT32_MAX);
    expect(saturatingRoundingDoublingHighMul(1 << 30, 1)).toBe(1); // 0.5 -> 1
    expect(saturatingRoundingDoublingHighMul(-(1 << 30), 1)).toBe(0); // -0.5 -> 0
  });
});

describe('roundingDivideByPOT', () => {
  it('matches the oracle for every exponent 0..31', () => {
    const exps = Array.from({ length: 32 }, (_, i) => i);
    expectAllEqual('RDBP', pairs(EDGES, exps), roundingDivideByPOT, rdbpBig);
    fc.assert(
      fc.property(int32, fc.integer({ min: 0, max: 31 }), (x, e) => roundingDivideByPOT(x, e) === rdbpBig(x, e)),
      { numRuns: 20000 },
    );
  });
  it('rounds half away from zero', () => {
    expect([roundingDivideByPOT(5, 1), roundingDivideByPOT(-5, 1), roundingDivideByPOT(-6, 2), roundingDivideByPOT(6, 2)]).toEqual([
      3, -3, -2, 2,
    ]);
    expect(roundingDivideByPOT(INT32_MIN, 31)).toBe(-1);
    expect(roundingDivideByPOT(INT32_MAX, 31)).toBe(1);
  });
});

describe('saturatingLeftShift', () => {
  it('matches the oracle for every shift 0..31', () => {
    expectAllEqual(
      'shl',
      pairs(
        EDGES,
        Array.from({ length: 32 }, (_, i) => i),
      ),
      saturatingLeftShift,
      saturatingShiftLeftBig,
    );
  });
});

describe('multiplyByQuantizedMultiplier', () => {
  const multipliers = EDGES.filter((_, i) => i % 5 === 0).concat([1 << 30, INT32_MAX, INT32_MIN, 1518500250]);
  for (const rounding of ['double', 'single'] as const) {
    const shifts = Array.from({ length: rounding === 'double' ? 63 : 62 }, (_, i) => i - 31);
    it(`'${rounding}' matches the oracle on edges x multipliers x every shift`, () => {
      function* cases() {
        for (const x of EDGES) for (const m of multipliers) for (const s of shifts) yield [x, m, s];
      }
      expectAllEqual(
        `MBQM-${rounding}`,
        cases(),
        (x, m, s) => multiplyByQuantizedMultiplier(x, m, s, rounding),
        (x, m, s) => mbqmBig(x, m, s, rounding),
      );
    });
    it(`'${rounding}' matches the oracle on random values`, () => {
      fc.assert(
        fc.property(
          int32,
          int32,
          fc.integer({ min: -31, max: shifts[shifts.length - 1] }),
          (x, m, s) => multiplyByQuantizedMultiplier(x, m, s, rounding) === mbqmBig(x, m, s, rounding),
        ),
        { numRuns: 20000 },
      );
    });
  }
  it('the two roundings really differ (double rounding rounds twice)', () => {
    let differs = 0;
    for (let x = -1000; x <= 1000; x++) {
      if (multiplyByQuantizedMultiplier(x, 1518500250, -5, 'double') !== multiplyByQuantizedMultiplier(x, 1518500250, -5, 'single'))
        differs++;
    }
    expect(differs).toBeGreaterThan(0);
  });
});

describe('roundingHalfSum', () => {
  it('matches the oracle', () => {
    expectAllEqual('RHS', pairs(EDGES, EDGES), roundingHalfSum, roundingHalfSumBig);
    fc.assert(
      fc.property(int32, int32, (a, b) => roundingHalfSum(a, b) === roundingHalfSumBig(a, b)),
      { numRuns: 10000 },
    );
  });
});

describe('fixed-point tanh', () => {
  it('tanh(F3) matches the oracle on edges and random inputs', () => {
    expectAllEqual(
      'tanhF3',
      EDGES.map((x) => [x]),
      fixedPointTanhF3,
      fixedPointTanhQ3,
    );
    fc.assert(
      fc.property(int32, (x) => fixedPointTanhF3(x) === fixedPointTanhQ3(x)),
      { numRuns: 5000 },
    );
  });
  it('is close to Math.tanh', () => {
    for (let i = -100; i <= 100; i++) {
      const x = i / 12.5; // [-8, 8]
      const raw = Math.round(x * 2 ** 28);
      expect(Math.abs(fixedPointTanhF3(raw) / 2 ** 31 - Math.tanh(raw / 2 ** 28))).toBeLessThan(1e-6);
    }
  });
  it('the output stage matches the oracle across amplitudes', () => {
    const amplitudes = [1, 2, 3, 7, 100, 128, 1000, 12345, 1 << 16, (1 << 20) + 7, (1 << 28) - 1];
    for (const a of amplitudes) {
      const zero = a <= 1 << 20 ? 1234 : -5;
      const p = tanhParams(zero, a);
      const xs = [...EDGES, zero, zero + a, zero - a, zero + 8 * a, zero - 8 * a, zero + 8 * a - 1, zero - 8 * a + 1];
      for (let i = -50; i <= 50; i++) xs.push(zero + Math.round((i / 6) * a));
      const inRange = xs.filter((x) => x >= INT32_MIN && x <= INT32_MAX);
      expectAllEqual(
        `tanhStage(A=${a})`,
        inRange.map((x) => [x]),
        (x) => tanhStage(x, p),
        (x) => tanhStageBig(x, zero, a),
      );
    }
  });
});
