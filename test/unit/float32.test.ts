// Unit tier: the TFLite-path requantizations of src/quant against the BigInt/rational oracle of
// test/oracle/bigint-float32.ts, on every edge case of test/support/float32-cases.ts: the float32 stage
// (requantizeFloat32, Math.fround), the 'double-up' rounding (ruy's), roundTiesToEven.

import { describe, expect, test } from 'vitest';
import { float32Bits, requantizeFloat32, roundTiesToEven } from '../../src/quant/float32.ts';
import { multiplyByQuantizedMultiplier } from '../../src/quant/fixedpoint.ts';
import { mbqmDoubleUpBig, requantizeFloat32Big } from '../oracle/bigint-float32.ts';
import { float32Cases, multiplierCases } from '../support/float32-cases.ts';

function expectAllEqual(name: string, n: number, got: (i: number) => number, want: (i: number) => number, args: (i: number) => string) {
  let count = 0;
  const examples: string[] = [];
  for (let i = 0; i < n; i++) {
    const g = got(i);
    const w = want(i);
    if (g !== w) {
      count++;
      if (examples.length < 8) examples.push(`${name}(${args(i)}): ${g}, oracle ${w}`);
    }
  }
  if (count) expect.fail(`${name}: ${count} of ${n} differ\n${examples.join('\n')}`);
}

const bitsToFloat = (b: number) => new Float32Array(Int32Array.of(b).buffer)[0];

describe('TFLite-path requantization, bit for bit with the BigInt oracle', () => {
  test('roundTiesToEven', () => {
    const cases: [number, number][] = [
      [0.5, 0],
      [1.5, 2],
      [2.5, 2],
      [-0.5, 0],
      [-1.5, -2],
      [-2.5, -2],
      [0.49999997, 0],
      [2 ** 24, 2 ** 24],
      [-3.5, -4],
      [1e10 + 0.5, 1e10],
    ];
    for (const [v, want] of cases) expect(roundTiesToEven(v) + 0, `rint(${v})`).toBe(want);
  });

  test('requantizeFloat32: edge accumulators x scales (subnormal to huge, negative) and random', () => {
    const c = float32Cases(20000, 7);
    expect(c.x.length).toBeGreaterThan(50000);
    expectAllEqual(
      'requantizeFloat32',
      c.x.length,
      (i) => requantizeFloat32(c.x[i], bitsToFloat(c.scaleBits[i]), c.zeroPoint[i]),
      (i) => requantizeFloat32Big(c.x[i], c.scaleBits[i], c.zeroPoint[i]),
      (i) => `${c.x[i]}, 0x${(c.scaleBits[i] >>> 0).toString(16)}, ${c.zeroPoint[i]}`,
    );
  });

  test('requantizeFloat32: every step rounds ties to even (crafted cases)', () => {
    // 2^24 + 1 -> f32 2^24 (tie to even); 2^24 + 3 -> 2^24 + 4
    expect(requantizeFloat32(2 ** 24 + 1, 1, 0)).toBe(2 ** 24);
    expect(requantizeFloat32(2 ** 24 + 3, 1, 0)).toBe(2 ** 24 + 4);
    // rint ties: 5 * 0.5 = 2.5 -> 2; 7 * 0.5 = 3.5 -> 4; -5 * 0.5 -> -2
    expect(requantizeFloat32(5, 0.5, 0)).toBe(2);
    expect(requantizeFloat32(7, 0.5, 0)).toBe(4);
    expect(requantizeFloat32(-5, 0.5, 10)).toBe(8);
    // the float32 product rounds before rint: (2^23 + 1) * (1 + 2^-23) = 2^23 + 2 + 2^-23 -> f32 2^23 + 2
    expect(requantizeFloat32(2 ** 23 + 1, 1 + 2 ** -23, 0)).toBe(2 ** 23 + 2);
    // saturation
    expect(requantizeFloat32(2 ** 30, 4, 0)).toBe(2147483647);
    expect(requantizeFloat32(-(2 ** 30), 4, 0)).toBe(-2147483648);
    expect(float32Bits(1)).toBe(0x3f800000);
  });

  test("'double-up' rounding is ruy's x86 kernel: SRDHM, then a right shift with ties up", () => {
    const c = multiplierCases(20000, 11);
    expectAllEqual(
      'mbqm double-up',
      c.x.length,
      (i) => multiplyByQuantizedMultiplier(c.x[i], c.m[i], c.shift[i], 'double-up'),
      (i) => mbqmDoubleUpBig(c.x[i], c.m[i], c.shift[i]),
      (i) => `${c.x[i]}, ${c.m[i]}, ${c.shift[i]}`,
    );
    // the second rounding's ties: SRDHM(-3, 2^30) = -1.5 -> -1 (VQRDMULH rounds half up in both);
    // then -1 / 2 = -0.5: 'double-up' gives 0, 'double' (ties away from zero) gives -1
    expect(multiplyByQuantizedMultiplier(-3, 2 ** 30, -1, 'double-up')).toBe(0);
    expect(multiplyByQuantizedMultiplier(-3, 2 ** 30, -1, 'double')).toBe(-1);
    expect(multiplyByQuantizedMultiplier(1, 2 ** 30, -1, 'double-up')).toBe(1);
    expect(multiplyByQuantizedMultiplier(1, 2 ** 30, -1, 'double')).toBe(1);
  });
});
