// From real numbers to the integers of the quantization paradigm: real = scale * (q - zeroPoint).
// QuantizeMultiplier turns a real multiplier into the (multiplier, shift) pair consumed by
// multiplyByQuantizedMultiplier in the output stage (pack -> gemm -> OUTPUT); chooseQuantizationParams
// picks (scale, zeroPoint) for a real range. This is the only place where doubles meet the integer path,
// and only when parameters are prepared, never per element of a GEMM.

import { InputError } from '../errors.ts';
import { INT32_MAX, TYPE_RANGE } from '../types.ts';

export interface QuantizedMultiplier {
  /** Q31 mantissa in [2^30, 2^31) for positive reals, [-2^31, -2^30] for negative ones; 0 for 0. */
  multiplier: number;
  /**
   * real = multiplier * 2^(shift - 31). TFLite's name; the scaleInt32ByFixedPointAndExponent stage calls
   * the same value its `exponent` (pass `exponent: shift`).
   */
  shift: number;
}

/** C's frexp: x = fraction * 2^exponent with |fraction| in [0.5, 1); 0 and non-finite x come back as (x, 0). */
export function frexp(x: number): [fraction: number, exponent: number] {
  if (x === 0 || !Number.isFinite(x)) return [x, 0];
  // Clamped so that 2^exponent stays a finite, non-zero double; the loops finish the normalization.
  let exponent = Math.min(1023, Math.max(-1073, Math.floor(Math.log2(Math.abs(x))) + 1));
  let fraction = x / 2 ** exponent;
  while (Math.abs(fraction) >= 1) {
    fraction /= 2;
    exponent++;
  }
  while (Math.abs(fraction) < 0.5) {
    fraction *= 2;
    exponent--;
  }
  return [fraction, exponent];
}

/** C's round: half away from zero; a result of zero is +0 (a small negative x gives -0 otherwise). */
export function roundHalfAwayFromZero(x: number): number {
  return Math.sign(x) * Math.round(Math.abs(x)) + 0;
}

/**
 * TFLite QuantizeMultiplier (quantization_util.cc): frexp, then q_fixed = round(q * 2^31) with ties
 * away from zero; q_fixed == 2^31 becomes 2^30 with shift + 1; shift < -31 flushes to (0, 0).
 * With rounding 'single' (TFLITE_SINGLE_ROUNDING), a shift above 30 saturates to (2^31 - 1, 30).
 */
export function quantizeMultiplier(real: number, rounding: 'double' | 'single' = 'double'): QuantizedMultiplier {
  if (typeof real !== 'number' || !Number.isFinite(real)) throw new InputError('multiplier', `real multiplier must be finite, got ${real}`);
  if (rounding !== 'double' && rounding !== 'single')
    throw new InputError('rounding', `expected "double" or "single", got ${String(rounding)}`);
  if (real === 0) return { multiplier: 0, shift: 0 };
  const [q, exponent] = frexp(real);
  let qFixed = roundHalfAwayFromZero(q * 2 ** 31);
  let shift = exponent;
  if (qFixed === 2 ** 31) {
    qFixed /= 2;
    shift++;
  }
  if (shift < -31) return { multiplier: 0, shift: 0 };
  if (rounding === 'single' && shift > 30) return { multiplier: INT32_MAX, shift: 30 };
  return { multiplier: qFixed, shift };
}

/** TFLite QuantizeMultiplierSmallerThanOneExp: real in (0, 1), shift <= 0. */
export function quantizeMultiplierSmallerThanOneExp(real: number): QuantizedMultiplier {
  if (!(real > 0 && real < 1)) throw new InputError('multiplier', `expected a real multiplier in (0, 1), got ${real}`);
  const result = quantizeMultiplier(real);
  if (result.shift > 0) throw new InputError('multiplier', `shift ${result.shift} > 0 for ${real}`);
  return result;
}

/** TFLite QuantizeMultiplierGreaterThanOne: real > 1, shift >= 0. */
export function quantizeMultiplierGreaterThanOne(real: number): QuantizedMultiplier {
  if (!(real > 1) || !Number.isFinite(real)) throw new InputError('multiplier', `expected a real multiplier > 1, got ${real}`);
  const result = quantizeMultiplier(real);
  if (result.shift < 0) throw new InputError('multiplier', `shift ${result.shift} < 0 for ${real}`);
  return result;
}

export interface QuantizationParams {
  scale: number;
  zeroPoint: number;
}

/**
 * gemmlowp doc/quantization_example.cc ChooseQuantizationParams, for any [qmin, qmax]:
 * the range is widened to contain 0, scale = (max - min) / (qmax - qmin), and the zero point is
 * taken from whichever end loses less precision, then rounded (nudged) to an integer in
 * [qmin, qmax] so that real 0.0 is exactly representable. An empty range (min == max == 0, or one so
 * small that the scale underflows) gives scale 0 and the zero point nearest 0, as TFLite does.
 */
export function chooseQuantizationParams(min: number, max: number, qmin = 0, qmax = 255): QuantizationParams {
  if (!Number.isFinite(min) || !Number.isFinite(max) || min > max) {
    throw new InputError('min', `expected finite min <= max, got [${min}, ${max}]`);
  }
  if (!Number.isInteger(qmin) || !Number.isInteger(qmax) || qmin >= qmax) {
    throw new InputError('qmin', `expected integers qmin < qmax, got [${qmin}, ${qmax}]`);
  }
  min = Math.min(min, 0);
  max = Math.max(max, 0);
  const scale = (max - min) / (qmax - qmin);
  if (scale === 0) return { scale: 0, zeroPoint: Math.min(Math.max(0, qmin), qmax) };
  const zeroPointFromMin = qmin - min / scale;
  const zeroPointFromMax = qmax - max / scale;
  const errorFromMin = Math.abs(qmin) + Math.abs(min / scale);
  const errorFromMax = Math.abs(qmax) + Math.abs(max / scale);
  const initial = errorFromMin < errorFromMax ? zeroPointFromMin : zeroPointFromMax;
  const zeroPoint = initial < qmin ? qmin : initial > qmax ? qmax : roundHalfAwayFromZero(initial);
  return { scale, zeroPoint };
}

/** q = clamp(round(x / scale) + zeroPoint) with ties away from zero (TFLite AffineQuantize). */
export function quantize(x: Float32Array, params: QuantizationParams, dtype: 'uint8' | 'int8' = 'uint8'): Uint8Array | Int8Array {
  if (dtype !== 'uint8' && dtype !== 'int8') throw new InputError('dtype', `expected "uint8" or "int8", got ${String(dtype)}`);
  const [lo, hi] = TYPE_RANGE[dtype];
  checkQuantizationParams(params, lo, hi);
  const out = dtype === 'uint8' ? new Uint8Array(x.length) : new Int8Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const q = params.scale === 0 ? params.zeroPoint : roundHalfAwayFromZero(x[i] / params.scale) + params.zeroPoint;
    out[i] = Math.min(Math.max(q, lo), hi);
  }
  return out;
}

/** A scale (finite, >= 0: 0 is chooseQuantizationParams' empty range) and an integer zero point in lo..hi. */
function checkQuantizationParams(params: QuantizationParams, lo: number, hi: number): void {
  if (!params || typeof params !== 'object') throw new InputError('params', 'expected { scale, zeroPoint }');
  const { scale, zeroPoint } = params;
  if (typeof scale !== 'number' || !Number.isFinite(scale) || scale < 0) {
    throw new InputError('params.scale', `expected a finite scale >= 0, got ${String(scale)}`);
  }
  if (typeof zeroPoint !== 'number' || !Number.isInteger(zeroPoint) || zeroPoint < lo || zeroPoint > hi) {
    throw new InputError('params.zeroPoint', `expected an integer in ${lo}..${hi}, got ${String(zeroPoint)}`);
  }
}

/** real = scale * (q - zeroPoint). */
export function dequantize(q: ArrayLike<number>, params: QuantizationParams): Float32Array {
  const out = new Float32Array(q.length);
  for (let i = 0; i < q.length; i++) out[i] = params.scale * (q[i] - params.zeroPoint);
  return out;
}
