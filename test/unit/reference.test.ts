// Property and golden tiers for the CPU GEMM: the naive normative triple loop (referenceGemm) against
// the production offset-trick path (cpuGemm) over the shape sweep, every operand type, storage order,
// zero-point form and stage kind; plus gemmlowp's published small-data expectations and hand-checked
// cases of each stage, and the validation errors that name their field.

import fc from 'fast-check';

const sample = <T>(arb: fc.Arbitrary<T>, seed: number) => fc.sample(arb, { numRuns: 1, seed })[0];
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { gemm } from '../../src/api.ts';
import { cpuGemm } from '../../src/kernels/cpu-js/kernel.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import type { GemmProblem, OutputStage } from '../../src/types.ts';
import { arbCast, arbProblem, arbProblemOfShape, arbStage, describeProblem } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';

function expectSame(p: GemmProblem) {
  const d = diffResults(cpuGemm(p), referenceGemm(p));
  if (d) expect.fail(formatMismatch(d, describeProblem(p)));
}

const u8 = (rows: number, cols: number, values: number[], order: 'row-major' | 'col-major' = 'row-major') => ({
  data: Uint8Array.from(values),
  rows,
  cols,
  order,
});

describe('gemmlowp golden data', () => {
  // gemmlowp test/test.cc TestWithSmallData: m=4, n=2, k=3; its hand calculation 76 = 1*7 + 3*8 + 5*9
  // reads A = 7..18 and B = 1..6 row-major, and C comes out row-major.
  const problem: GemmProblem = {
    lhs: u8(4, 3, [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]),
    rhs: u8(3, 2, [1, 2, 3, 4, 5, 6]),
  };
  it('TestWithSmallData gives {76, 100, 103, 136, 130, 172, 157, 208}', () => {
    for (const impl of [referenceGemm, cpuGemm]) {
      expect(Array.from(impl(problem).data)).toEqual([76, 100, 103, 136, 130, 172, 157, 208]);
      // The same matrices stored the other way round give the same product.
      const colMajor: GemmProblem = {
        lhs: u8(4, 3, [7, 10, 13, 16, 8, 11, 14, 17, 9, 12, 15, 18], 'col-major'),
        rhs: u8(3, 2, [1, 3, 5, 2, 4, 6], 'col-major'),
      };
      expect(Array.from(impl(colMajor).data)).toEqual([76, 100, 103, 136, 130, 172, 157, 208]);
    }
  });
});

describe('storage order', () => {
  it('defaults to row-major when an operand does not say', () => {
    const p = sample(arbProblemOfShape(5, 6, 7), 9);
    const rowMajor = { ...p, lhs: { ...p.lhs, order: 'row-major' as const }, rhs: { ...p.rhs, order: 'row-major' as const } };
    const unsaid = { ...p, lhs: { data: p.lhs.data, rows: 5, cols: 7 }, rhs: { data: p.rhs.data, rows: 7, cols: 6 } };
    expect(diffResults(referenceGemm(unsaid), referenceGemm(rowMajor))).toBeNull();
    expect(diffResults(cpuGemm(unsaid), referenceGemm(rowMajor))).toBeNull();
  });
});

describe('naive reference == offset-trick path', () => {
  it('over the shape sweep and odd rectangles, every type/order/zero point/stage', () => {
    fc.assert(
      fc.property(arbProblem(), (p) => expectSame(p)),
      { numRuns: 300 },
    );
  });
  it('for every stage kind on its own, with and without a final cast', () => {
    const shapes: [number, number, number][] = [
      [1, 1, 1],
      [5, 7, 3],
      [17, 16, 33],
      [64, 1, 65],
    ];
    for (const [M, N, K] of shapes) {
      fc.assert(
        fc.property(arbProblemOfShape(M, N, K), arbStage(M, N), fc.option(arbCast), (p, stage, cast) =>
          expectSame({ ...p, pipeline: cast ? [stage, cast] : [stage] }),
        ),
        { numRuns: 60 },
      );
    }
  });
  it('when int32 wraps: K large, extreme zero points', () => {
    const K = 40000; // 40000 * 255 * 255 > 2^31
    const lhs = u8(2, K, new Array(2 * K).fill(255));
    const rhs = u8(K, 3, new Array(3 * K).fill(255), 'col-major');
    for (const [zL, zR] of [
      [0, 0],
      [-2147483648, 5],
      [2147483647, -2147483648],
    ]) {
      expectSame({ lhs, rhs, lhsZeroPoint: zL, rhsZeroPoint: zR });
    }
    expect(referenceGemm({ lhs, rhs }).data[0]).toBe((K * 255 * 255) | 0);
  });
});

describe('a result beyond what this engine can allocate', () => {
  it('is a LimitExceededError naming memory, on every CPU path, not a RangeError', async () => {
    const n = 1 << 17; // a 2^34-element int32 dst: beyond any typed array
    const p = { lhs: { data: new Uint8Array(n), rows: n, cols: 1 }, rhs: { data: new Uint8Array(n), rows: 1, cols: n } };
    const limit = expect.objectContaining({ name: 'LimitExceededError', limit: 'memory' });
    expect(() => referenceGemm(p)).toThrow(limit);
    expect(() => cpuGemm(p)).toThrow(limit);
    await expect(gemm(p, { backend: 'cpu' })).rejects.toThrow(limit);
  });
});

describe('output stages by hand', () => {
  const one = (stages: OutputStage[], acc: number) =>
    referenceGemm({ lhs: u8(1, 1, [1]), rhs: u8(1, 1, [1]), lhsZeroPoint: 1 - acc, pipeline: stages }).data[0];
  it('legacy quantizeDownInt32ToUint8Scale: RDBP((x + offset) * multiplier, shift)', () => {
    expect(one([{ type: 'quantizeDownInt32ToUint8Scale', offset: 3, multiplier: 5, shift: 2 }], 10)).toBe(16); // 65/4 = 16.25
    expect(one([{ type: 'quantizeDownInt32ToUint8Scale', offset: 0, multiplier: 1, shift: 1 }], -5)).toBe(-3);
  });
  it('quantizeDownInt32ByFixedPoint and scaleInt32ByFixedPointAndExponent', () => {
    expect(one([{ type: 'quantizeDownInt32ByFixedPoint', multiplier: 1 << 30, shift: 1, offsetAfterShift: 7 }], 100)).toBe(32); // 100/4 + 7
    const s = (rounding: 'double' | 'single', exponent: number): OutputStage => ({
      type: 'scaleInt32ByFixedPointAndExponent',
      multiplier: 1 << 30,
      exponent,
      offsetAfterShift: -1,
      rounding,
    });
    expect(one([s('double', 2)], 100)).toBe(199);
    expect(one([s('single', -3)], 100)).toBe(5); // 100 / 16 = 6.25 -> 6, - 1
  });
  it('clamp, casts and tanh', () => {
    expect(one([{ type: 'clamp', min: -5, max: 5 }], 100)).toBe(5);
    expect(one([{ type: 'saturatingCast', to: 'int8' }], -300)).toBe(-128);
    expect(one([{ type: 'saturatingCast', to: 'int16' }], 40000)).toBe(32767);
    expect(one([{ type: 'truncatingCast', to: 'uint8' }], 257)).toBe(1);
    const tanh = (x: number) => one([{ type: 'tanh', realZeroAsInt32: 128, realAmplitudeAsInt32: 127 }], x);
    expect(tanh(128)).toBe(128);
    expect(tanh(128 + 2000)).toBe(255);
    expect(Math.abs(tanh(128 + 127) - (128 + 127 * Math.tanh(1)))).toBeLessThanOrEqual(1);
  });
  it('casts choose the dst type; an empty pipeline gives int32', () => {
    const p = { lhs: u8(2, 2, [1, 2, 3, 4]), rhs: u8(2, 2, [5, 6, 7, 8]) };
    expect(referenceGemm(p).data).toBeInstanceOf(Int32Array);
    expect(referenceGemm({ ...p, pipeline: [{ type: 'saturatingCast', to: 'int16' }] }).data).toBeInstanceOf(Int16Array);
    expect(referenceGemm({ ...p, pipeline: [{ type: 'saturatingCast', to: 'uint8' }] }).dtype).toBe('uint8');
  });
});

describe('validation names the field', () => {
  it('no problem at all is an InputError naming problem (reference and CPU path alike)', () => {
    for (const run of [referenceGemm, cpuGemm]) {
      for (const bad of [null, undefined, 7])
        expect(() => run(bad as never)).toThrow(expect.objectContaining({ name: 'InputError', field: 'problem' }));
    }
  });
  const base: GemmProblem = { lhs: u8(2, 3, [1, 2, 3, 4, 5, 6]), rhs: u8(3, 2, [1, 2, 3, 4, 5, 6]) };
  const fieldOf = (p: GemmProblem) => {
    try {
      referenceGemm(p);
    } catch (e) {
      expect(e).toBeInstanceOf(InputError);
      return (e as InputError).field;
    }
    return 'no error';
  };
  it.each([
    ['rhs', { rhs: u8(2, 2, [1, 2, 3, 4]) }],
    ['lhs', { lhs: { ...u8(2, 3, [1, 2, 3, 4, 5, 6]), data: new Uint16Array(6) as unknown as Uint8Array } }],
    ['lhsZeroPoint', { lhsZeroPoint: new Int32Array(3) }],
    ['lhsZeroPoint', { lhsZeroPoint: null as unknown as number }], // null is not absent
    ['rhsZeroPoint', { rhsZeroPoint: null as unknown as number }],
    ['rhsZeroPoint', { rhsZeroPoint: 2 ** 31 }],
    ['pipeline[0].values', { pipeline: [{ type: 'bias', axis: 'col', values: new Int32Array(3) }] }],
    ['pipeline[0].shift', { pipeline: [{ type: 'quantizeDownInt32ByFixedPoint', multiplier: 1, shift: 32, offsetAfterShift: 0 }] }],
    [
      'pipeline[0].exponent',
      { pipeline: [{ type: 'scaleInt32ByFixedPointAndExponent', multiplier: 1, exponent: 31, offsetAfterShift: 0, rounding: 'single' }] },
    ],
    [
      'pipeline[0].exponent[1]',
      {
        pipeline: [
          {
            type: 'scaleInt32ByFixedPointAndExponent',
            multiplier: 1,
            exponent: Int32Array.of(0, -32),
            offsetAfterShift: 0,
            rounding: 'double',
            axis: 'row',
          },
        ],
      },
    ],
    ['pipeline[0].axis', { pipeline: [{ type: 'quantizeDownInt32ToUint8Scale', offset: Int32Array.of(1, 2), multiplier: 1, shift: 0 }] }],
    [
      'pipeline[1]',
      {
        pipeline: [
          { type: 'saturatingCast', to: 'uint8' },
          { type: 'clamp', min: 0, max: 1 },
        ],
      },
    ],
    ['pipeline[0].type', { pipeline: [{ type: 'relu' }] }],
    ['pipeline[0].min', { pipeline: [{ type: 'clamp', min: 2, max: 1 }] }],
    ['pipeline[0].realAmplitudeAsInt32', { pipeline: [{ type: 'tanh', realZeroAsInt32: 0, realAmplitudeAsInt32: 0 }] }],
  ] as [string, Partial<GemmProblem>][])('%s', (field, change) => {
    expect(fieldOf({ ...base, ...change } as GemmProblem)).toBe(field);
  });
});
