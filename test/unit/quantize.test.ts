// Unit and golden tiers for src/quant/quantize.ts: TFLite's QuantizeMultiplier (published expectations
// from quantization_util_test, the oracle on random reals), its checked variants, gemmlowp's
// ChooseQuantizationParams, and quantize/dequantize round trips.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import {
  chooseQuantizationParams,
  dequantize,
  frexp,
  quantize,
  quantizeMultiplier,
  quantizeMultiplierGreaterThanOne,
  quantizeMultiplierSmallerThanOneExp,
} from '../../src/quant/quantize.ts';
import { activationRange } from '../../src/layers/derive.ts';
import { quantizeMultiplierBig } from '../oracle/bigint-fixedpoint.ts';

describe('quantizeMultiplier', () => {
  it('gives TFLite quantization_util_test expectations', () => {
    const q = (x: number) => {
      const r = quantizeMultiplier(x);
      return [r.multiplier, r.shift];
    };
    expect(q(0.25)).toEqual([1073741824, -1]);
    expect(q(2)).toEqual([1073741824, 2]);
    expect(q(2 ** -32)).toEqual([1073741824, -31]);
    expect(q(2 ** -33)).toEqual([0, 0]);
    expect(q(0)).toEqual([0, 0]);
    expect(q(-0.25)).toEqual([-1073741824, -1]);
    expect(q(-4)).toEqual([-1073741824, 3]);
  });
  it('rounds q * 2^31 half away from zero and renormalizes q_fixed == 2^31', () => {
    expect(quantizeMultiplier(1 - 2 ** -40)).toEqual({ multiplier: 1073741824, shift: 1 }); // rounds up to 2^31
    expect(quantizeMultiplier(0.5 + 2 ** -32)).toEqual({ multiplier: 1073741825, shift: 0 }); // 2^30 + 0.5: away
    expect(quantizeMultiplier(-0.5 - 2 ** -32)).toEqual({ multiplier: -1073741825, shift: 0 });
  });
  it('saturates shifts above 30 for single rounding', () => {
    expect(quantizeMultiplier(2 ** 40, 'single')).toEqual({ multiplier: 2147483647, shift: 30 });
    expect(quantizeMultiplier(2 ** 30, 'single')).toEqual({ multiplier: 2147483647, shift: 30 }); // shift 31
    expect(quantizeMultiplier(2 ** 29, 'single')).toEqual({ multiplier: 1073741824, shift: 30 }); // shift 30: kept
    expect(quantizeMultiplier(1e9, 'single')).toEqual({ multiplier: 2000000000, shift: 30 });
    expect(quantizeMultiplier(2 ** 40, 'double')).toEqual({ multiplier: 1073741824, shift: 41 });
  });
  it('matches the BigInt oracle on random reals', () => {
    fc.assert(
      fc.property(fc.double({ min: -1e6, max: 1e6, noNaN: true }), (x) => {
        expect(quantizeMultiplier(x)).toEqual(quantizeMultiplierBig(x));
      }),
      { numRuns: 5000 },
    );
  });
  it('frexp matches the definition', () => {
    fc.assert(
      fc.property(
        fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => x !== 0),
        (x) => {
          const [f, e] = frexp(x);
          return Math.abs(f) >= 0.5 && Math.abs(f) < 1 && f * 2 * 2 ** (e - 1) === x; // split: 2^1024 overflows
        },
      ),
      { numRuns: 5000 },
    );
  });
  it('checked variants reject reals out of their range', () => {
    expect(quantizeMultiplierSmallerThanOneExp(0.3).shift).toBeLessThanOrEqual(0);
    expect(() => quantizeMultiplierSmallerThanOneExp(1.5)).toThrow(InputError);
    expect(() => quantizeMultiplierSmallerThanOneExp(0)).toThrow(InputError);
    expect(quantizeMultiplierGreaterThanOne(3).shift).toBe(2);
    expect(() => quantizeMultiplierGreaterThanOne(0.5)).toThrow(InputError);
    expect(() => quantizeMultiplier(Number.NaN)).toThrow(InputError);
  });
});

describe('chooseQuantizationParams', () => {
  it('widens the range to include 0 and makes 0.0 exactly representable', () => {
    fc.assert(
      fc.property(fc.double({ min: -100, max: 100, noNaN: true }), fc.double({ min: -100, max: 100, noNaN: true }), (a, b) => {
        const [min, max] = [Math.min(a, b), Math.max(a, b)];
        const { scale, zeroPoint } = chooseQuantizationParams(min, max, 0, 255);
        if (Math.min(min, 0) === Math.max(max, 0)) return scale === 0 && zeroPoint === 0;
        expect(Number.isInteger(zeroPoint) && zeroPoint >= 0 && zeroPoint <= 255).toBe(true);
        expect(scale).toBeCloseTo((Math.max(max, 0) - Math.min(min, 0)) / 255, 12);
        // 0.0 quantizes to the zero point and dequantizes back to exactly 0.
        expect(dequantize(quantize(Float32Array.of(0), { scale, zeroPoint }), { scale, zeroPoint })[0]).toBe(0);
        return true;
      }),
      { numRuns: 2000 },
    );
  });
  it('gives the textbook parameters', () => {
    expect(chooseQuantizationParams(-1, 1, 0, 255)).toEqual({ scale: 2 / 255, zeroPoint: 128 }); // 127.5 rounds away
    expect(chooseQuantizationParams(0, 2.55, 0, 255)).toEqual({ scale: 2.55 / 255, zeroPoint: 0 });
    expect(chooseQuantizationParams(-2.55, 0, -128, 127)).toEqual({ scale: 2.55 / 255, zeroPoint: 127 });
    expect(chooseQuantizationParams(3, 5, 0, 255).zeroPoint).toBe(0);
    // int8: a zero point on a negative tie (-0.5) rounds away from zero; an empty range takes the zero
    // point nearest 0 within [qmin, qmax].
    expect(chooseQuantizationParams(-1, 1, -128, 127)).toEqual({ scale: 2 / 255, zeroPoint: -1 });
    expect(Array.from(quantize(Float32Array.of(0), chooseQuantizationParams(-1, 1, -128, 127), 'int8'))).toEqual([-1]);
    expect(chooseQuantizationParams(0, 0, -128, 127)).toEqual({ scale: 0, zeroPoint: 0 });
    expect(chooseQuantizationParams(0, 0, 10, 20)).toEqual({ scale: 0, zeroPoint: 10 });
    // A symmetric range whose zero point comes out a hair below 0: +0, not -0 (Object.is, toEqual).
    expect(Object.is(chooseQuantizationParams(-2.6352566750581996, 2.6352566750581996, -127, 127).zeroPoint, 0)).toBe(true);
  });
  it('rejects bad ranges', () => {
    expect(() => chooseQuantizationParams(2, 1)).toThrow(InputError);
    expect(() => chooseQuantizationParams(0, 1, 5, 5)).toThrow(InputError);
  });
});

describe('quantize / dequantize', () => {
  it('round trip within half a step, with saturation at the ends', () => {
    const params = chooseQuantizationParams(-1, 3, -128, 127);
    const x = Float32Array.from({ length: 101 }, (_, i) => -1 + (4 * i) / 100);
    const back = dequantize(quantize(x, params, 'int8'), params);
    x.forEach((v, i) => {
      expect(Math.abs(back[i] - v)).toBeLessThanOrEqual(params.scale / 2 + 1e-6);
    });
    expect(Array.from(quantize(Float32Array.of(-100, 100), params, 'int8'))).toEqual([-128, 127]);
  });
});

describe('the exported helpers refuse arguments outside their contract, naming them', () => {
  const field = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(InputError);
      return (e as InputError).field;
    }
    return 'returned';
  };
  it('quantizeMultiplier, quantize and activationRange', () => {
    expect(field(() => quantizeMultiplier(0.5, 'triple' as never))).toBe('rounding'); // was taken as 'double'
    expect(field(() => quantize(Float32Array.of(1000, -1000), { scale: 1, zeroPoint: 0 }, 'int16' as never))).toBe('dtype'); // was wrapped in int8
    expect(field(() => quantize(Float32Array.of(1, 2), { scale: Number.NaN, zeroPoint: 0 }))).toBe('params.scale'); // was zeros
    expect(field(() => quantize(Float32Array.of(1), { scale: 1, zeroPoint: 300 }))).toBe('params.zeroPoint');
    expect(field(() => activationRange('RELU6', { scale: 0, zeroPoint: 0 }, 'int8'))).toBe('output.scale'); // was [NaN, 127]
    expect(field(() => activationRange('RELU', { scale: 1, zeroPoint: 0 }, 'bogus' as never))).toBe('dtype');
    expect(field(() => activationRange('RELU6', { scale: 0.1, zeroPoint: 0 }, 'int8', 'fast' as never))).toBe('kernelPath');
    expect(field(() => activationRange('RELU6', { scale: 0.1, zeroPoint: 200 }, 'int8'))).toBe('output.zeroPoint');
    expect(activationRange('RELU6', { scale: 0.1, zeroPoint: 0 }, 'int8')).toEqual([0, 60]);
  });
});
