// Exact int32 fixed-point arithmetic of the output stage (pack -> gemm -> OUTPUT): gemmlowp's
// fixedpoint.h and TFLite's MultiplyByQuantizedMultiplier. Every function is exact over the whole
// int32 range. JS numbers cannot hold a 62-bit product, and WGSL has no 64-bit integers, so 32x32->64
// products are built from 16-bit halves here exactly as in src/wgsl/fixedpoint.wgsl (same names).
// A 64-bit value is a pair [lo, hi] (the order of WGSL's vec2<u32>(lo, hi)): lo is the unsigned low
// word, hi the signed high word.

import { INT32_MAX, INT32_MIN, type Rounding } from '../types.ts';

type Int64 = [lo: number, hi: number];

/** Exact signed 32x32 -> 64 product from four 16x16 -> 32 partial products. */
export function mulWide(a: number, b: number): Int64 {
  const au = a >>> 0;
  const bu = b >>> 0;
  const a0 = au & 0xffff;
  const a1 = au >>> 16;
  const b0 = bu & 0xffff;
  const b1 = bu >>> 16;
  const p00 = Math.imul(a0, b0) >>> 0;
  const p01 = Math.imul(a0, b1) >>> 0;
  const p10 = Math.imul(a1, b0) >>> 0;
  const p11 = Math.imul(a1, b1) >>> 0;
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff); // < 3 * 2^16
  const lo = ((mid << 16) | (p00 & 0xffff)) >>> 0;
  let hi = (p11 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16)) >>> 0; // unsigned product's high word
  // Two's-complement correction from the unsigned to the signed product.
  if (a < 0) hi = (hi - bu) >>> 0;
  if (b < 0) hi = (hi - au) >>> 0;
  return [lo, hi | 0];
}

/** 64-bit + 64-bit, wrapping. */
export function add64([alo, ahi]: Int64, [blo, bhi]: Int64): Int64 {
  const lo = (alo + blo) >>> 0;
  const carry = lo < alo ? 1 : 0;
  return [lo, (ahi + bhi + carry) | 0];
}

/** Sign-extends an int32 to 64 bits. */
export function int64From32(x: number): Int64 {
  return [x >>> 0, x < 0 ? -1 : 0];
}

/** Arithmetic (flooring) right shift of a 64-bit value, s in 0..63. */
function shiftRight64([lo, hi]: Int64, s: number): Int64 {
  if (s === 0) return [lo, hi];
  if (s < 32) return [((lo >>> s) | (hi << (32 - s))) >>> 0, hi >> s];
  return [(hi >> (s - 32)) >>> 0, hi >> 31];
}

/** The int32 nearest to a 64-bit value: itself when it fits, else INT32_MIN or INT32_MAX. */
export function saturateToInt32([lo, hi]: Int64): number {
  if (hi === (lo | 0) >> 31) return lo | 0;
  return hi < 0 ? INT32_MIN : INT32_MAX;
}

/**
 * gemmlowp SaturatingRoundingDoublingHighMul (ARM VQRDMULH): a*b / 2^31 rounded half up, computed as
 * (a*b + nudge) / 2^31 with C's truncating division, nudge = 2^30 if a*b >= 0 else 1 - 2^30.
 * The one overflow, INT32_MIN * INT32_MIN, gives INT32_MAX.
 */
export function saturatingRoundingDoublingHighMul(a: number, b: number): number {
  if (a === INT32_MIN && b === INT32_MIN) return INT32_MAX;
  let ab = mulWide(a, b);
  ab = add64(ab, int64From32(ab[1] >= 0 ? 1 << 30 : 1 - (1 << 30)));
  if (ab[1] < 0) ab = add64(ab, [0x7fffffff, 0]); // truncate toward zero: floor((x + 2^31 - 1) / 2^31)
  return (ab[1] << 1) | (ab[0] >>> 31);
}

/**
 * gemmlowp RoundingDivideByPOT: x / 2^exponent rounded to nearest, ties away from zero.
 * exponent in 0..31.
 */
export function roundingDivideByPOT(x: number, exponent: number): number {
  const mask = ((1 << exponent) - 1) | 0;
  const remainder = x & mask;
  const threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return ((x >> exponent) + (remainder > threshold ? 1 : 0)) | 0;
}

/**
 * ruy's rounding right shift (TFLite's optimized kernels): x / 2^r rounded to nearest, ties up, i.e.
 * floor((x + 2^(r-1)) / 2^r) computed exactly (ruy returns 2^(31-r) where x + 2^(r-1) overflows, the
 * same value). r in 0..31.
 */
function roundingRightShiftUp(x: number, r: number): number {
  if (r === 0) return x;
  return Math.floor((x + 2 ** (r - 1)) / 2 ** r);
}

/** x * 2^s clamped to the int32 range, s in 0..31 (gemmlowp SaturatingRoundingMultiplyByPOT, s >= 0). */
export function saturatingLeftShift(x: number, s: number): number {
  if (s === 0) return x;
  const threshold = (1 << (31 - s)) - 1;
  if (x > threshold) return INT32_MAX;
  if (x < -threshold) return INT32_MIN;
  return x << s;
}

/**
 * TFLite MultiplyByQuantizedMultiplier: x * multiplier * 2^(shift - 31), rounded.
 *  'double' (gemmlowp; TFLite's reference kernels), shift in -31..31:
 *      roundingDivideByPOT(saturatingRoundingDoublingHighMul(saturatingLeftShift(x, max(shift,0)), multiplier), max(-shift,0))
 *      The left shift saturates, as gemmlowp's scalar ShiftLeft does; at shift 31 gemmlowp's `1 << 31`
 *      overflows and flips the sign, which this does not reproduce.
 *  'double-up' (TFLite's optimized kernels, ruy's x86 kernels), shift in -31..31:
 *      roundingRightShiftUp(saturatingRoundingDoublingHighMul(x << max(shift,0), multiplier), max(-shift,0)),
 *      the left shift wrapping as ruy's does (it only matters for scales >= 1, where x * 2^shift overflows).
 *  'single' (TFLITE_SINGLE_ROUNDING; ruy), shift in -31..30:
 *      (x * multiplier + 2^(30 - shift)) >> (31 - shift), arithmetic, saturated to int32 (TFLite and
 *      ruy only assert in debug builds that it fits).
 */
export function multiplyByQuantizedMultiplier(x: number, multiplier: number, shift: number, rounding: Rounding = 'double'): number {
  if (rounding === 'double-up') {
    // ruy's kernels: x << max(shift, 0) wrapping (_mm256_sllv_epi32), SRDHM (ruy: (x*m + 2^30) >> 31,
    // the same value for every multiplier QuantizeMultiplier makes), then ties up.
    const shifted = shift > 0 ? x << shift : x;
    return roundingRightShiftUp(saturatingRoundingDoublingHighMul(shifted, multiplier), shift > 0 ? 0 : -shift);
  }
  if (rounding === 'double') {
    const shifted = saturatingLeftShift(x, Math.max(shift, 0));
    return roundingDivideByPOT(saturatingRoundingDoublingHighMul(shifted, multiplier), shift > 0 ? 0 : -shift);
  }
  const totalShift = 31 - shift; // 1..62
  const round: Int64 = totalShift - 1 < 32 ? [(1 << (totalShift - 1)) >>> 0, 0] : [0, 1 << (totalShift - 33)];
  return saturateToInt32(shiftRight64(add64(mulWide(x, multiplier), round), totalShift));
}

/** gemmlowp RoundingHalfSum: (a + b) / 2 rounded to nearest, ties away from zero (VRHADD). */
export function roundingHalfSum(a: number, b: number): number {
  const sum = add64(int64From32(a), int64From32(b));
  const rounded = add64(sum, int64From32(sum[1] < 0 ? -1 : 1));
  // Truncating division by 2 of a 34-bit value: floor for >= 0, ceil for < 0.
  const half = shiftRight64(rounded[1] < 0 ? add64(rounded, [1, 0]) : rounded, 1);
  return half[0] | 0;
}
