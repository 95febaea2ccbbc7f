// fixedpoint.wgsl: the exact int32 fixed-point arithmetic of the output stage (pack -> gemm -> OUTPUT):
// gemmlowp's fixedpoint.h and TFLite's MultiplyByQuantizedMultiplier, in 32-bit WGSL arithmetic only
// (WGSL has no 64-bit integers). A library with no entry point, composed in front of the epilogue
// (tanh.wgsl and lowbit.wgsl build on it). Every function computes bit for bit what the function of the
// same name in src/quant/fixedpoint.ts computes (the CPU reference), over the whole int32 range;
// test/gpu/fixedpoint.test.ts checks that on edge values and random ones.
//
// WGSL rules this file relies on: + - * and unary - on concrete i32/u32 wrap (two's complement) at run
// time; >> on i32 is arithmetic; shift amounts are u32 and are kept below 32 here; constants are
// written so that no const-expression overflows (a compile error).
//
// A 64-bit value is a vec2<u32>(lo, hi): lo is the low word, hi the high word read as signed where it
// matters. The TS reference uses the same order, [lo, hi].

const FP_INT32_MIN: i32 = i32(-2147483647 - 1);
const FP_INT32_MAX: i32 = 2147483647;

// ---- 64-bit helpers -------------------------------------------------------------------------------

/** Exact signed 32x32 -> 64 product (lo, hi) from four 16x16 -> 32 partial products. */
fn mulWide(a: i32, b: i32) -> vec2<u32> {
  let au = bitcast<u32>(a);
  let bu = bitcast<u32>(b);
  let a0 = au & 0xffffu;
  let a1 = au >> 16u;
  let b0 = bu & 0xffffu;
  let b1 = bu >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu); // < 3 * 2^16
  let lo = (mid << 16u) | (p00 & 0xffffu);
  // The unsigned product's high word, then the two's-complement correction to the signed product.
  var hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
  hi = hi - (select(0u, bu, a < 0) + select(0u, au, b < 0));
  return vec2<u32>(lo, hi);
}

/** 64-bit + 64-bit, wrapping. */
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  let carry = select(0u, 1u, lo < a.x);
  return vec2<u32>(lo, a.y + b.y + carry);
}

/** Sign-extends an int32 to 64 bits. */
fn int64From32(x: i32) -> vec2<u32> {
  return vec2<u32>(bitcast<u32>(x), select(0u, 0xffffffffu, x < 0));
}

/** Arithmetic (flooring) right shift of a 64-bit value, s in 0..63. */
fn shiftRight64(v: vec2<u32>, s: u32) -> vec2<u32> {
  let hi = bitcast<i32>(v.y);
  if (s == 0u) {
    return v;
  }
  if (s < 32u) {
    return vec2<u32>((v.x >> s) | (v.y << (32u - s)), bitcast<u32>(hi >> s));
  }
  return vec2<u32>(bitcast<u32>(hi >> (s - 32u)), bitcast<u32>(hi >> 31u));
}

/** The int32 nearest to a 64-bit value: itself when it fits, else INT32_MIN or INT32_MAX. */
fn saturateToInt32(v: vec2<u32>) -> i32 {
  let hi = bitcast<i32>(v.y);
  let lo = bitcast<i32>(v.x);
  if (hi == (lo >> 31u)) {
    return lo;
  }
  return select(FP_INT32_MAX, FP_INT32_MIN, hi < 0);
}

// ---- gemmlowp fixedpoint.h primitives --------------------------------------------------------------

/**
 * gemmlowp SaturatingRoundingDoublingHighMul (ARM VQRDMULH): (a*b + nudge) / 2^31 with C's truncating
 * division, nudge = 2^30 if a*b >= 0 else 1 - 2^30. INT32_MIN * INT32_MIN gives INT32_MAX.
 */
fn saturatingRoundingDoublingHighMul(a: i32, b: i32) -> i32 {
  if (a == FP_INT32_MIN && b == FP_INT32_MIN) {
    return FP_INT32_MAX;
  }
  var ab = mulWide(a, b);
  let nudge = select(1073741824, -1073741823, bitcast<i32>(ab.y) < 0); // 2^30 or 1 - 2^30
  ab = add64(ab, int64From32(nudge));
  if (bitcast<i32>(ab.y) < 0) {
    ab = add64(ab, vec2<u32>(0x7fffffffu, 0u)); // truncation toward zero: floor((v + 2^31 - 1) / 2^31)
  }
  // v / 2^31 fits in int32 here: bits 31..62 of v.
  return bitcast<i32>((ab.y << 1u) | (ab.x >> 31u));
}

/** gemmlowp RoundingDivideByPOT: x / 2^exponent, rounded to nearest, ties away from zero. exponent in 0..31. */
fn roundingDivideByPOT(x: i32, exponent: u32) -> i32 {
  let mask = bitcast<i32>((1u << exponent) - 1u);
  let remainder = x & mask;
  let threshold = (mask >> 1u) + select(0, 1, x < 0);
  return (x >> exponent) + select(0, 1, remainder > threshold);
}

/** x * 2^s clamped to the int32 range, s in 0..31 (gemmlowp ShiftLeft / SaturatingRoundingMultiplyByPOT, s >= 0). */
fn saturatingLeftShift(x: i32, s: u32) -> i32 {
  if (s == 0u) {
    return x;
  }
  let threshold = bitcast<i32>((1u << (31u - s)) - 1u);
  if (x > threshold) {
    return FP_INT32_MAX;
  }
  if (x < -threshold) {
    return FP_INT32_MIN;
  }
  return x << s;
}

/**
 * TFLite MultiplyByQuantizedMultiplier, 'double' rounding (gemmlowp, TFLite default), shift in -31..31:
 * roundingDivideByPOT(saturatingRoundingDoublingHighMul(saturatingLeftShift(x, max(shift,0)), m), max(-shift,0)).
 */
fn multiplyByQuantizedMultiplierDouble(x: i32, m: i32, shift: i32) -> i32 {
  let shifted = saturatingLeftShift(x, u32(max(shift, 0)));
  return roundingDivideByPOT(saturatingRoundingDoublingHighMul(shifted, m), u32(max(-shift, 0)));
}

/** ruy's rounding right shift (TFLite's optimized kernels): floor((x + 2^(r-1)) / 2^r), exact; r in 0..31. */
fn roundingRightShiftUp(x: i32, r: u32) -> i32 {
  if (r == 0u) {
    return x;
  }
  let nudge = 1 << (r - 1u);
  if (x > FP_INT32_MAX - nudge) {
    return 1 << (31u - r); // x + nudge overflows: the quotient is exactly 2^(31-r)
  }
  return (x + nudge) >> r;
}

/**
 * TFLite MultiplyByQuantizedMultiplier, 'double-up' rounding (TFLite's optimized kernels, ruy), shift in
 * -31..31: roundingRightShiftUp(saturatingRoundingDoublingHighMul(x << max(shift,0), m), max(-shift,0)),
 * the left shift wrapping.
 */
fn multiplyByQuantizedMultiplierDoubleUp(x: i32, m: i32, shift: i32) -> i32 {
  let shifted = bitcast<i32>(bitcast<u32>(x) << u32(max(shift, 0)));
  return roundingRightShiftUp(saturatingRoundingDoublingHighMul(shifted, m), u32(max(-shift, 0)));
}

/**
 * TFLite MultiplyByQuantizedMultiplier, 'single' rounding (TFLITE_SINGLE_ROUNDING, ruy), shift in -31..30:
 * (x*m + 2^(30-shift)) >> (31-shift), the shift arithmetic on 64 bits, the result saturated to int32.
 */
fn multiplyByQuantizedMultiplierSingle(x: i32, m: i32, shift: i32) -> i32 {
  let totalShift = u32(31 - shift); // 1..62
  var nudge: vec2<u32>; // 2^(totalShift - 1)
  if (totalShift <= 32u) {
    nudge = vec2<u32>(1u << (totalShift - 1u), 0u);
  } else {
    nudge = vec2<u32>(0u, 1u << (totalShift - 33u));
  }
  return saturateToInt32(shiftRight64(add64(mulWide(x, m), nudge), totalShift));
}

/** gemmlowp RoundingHalfSum: (a + b) / 2 rounded to nearest, ties away from zero (VRHADD). */
fn roundingHalfSum(a: i32, b: i32) -> i32 {
  let sum = add64(int64From32(a), int64From32(b));
  var rounded = add64(sum, int64From32(select(1, -1, bitcast<i32>(sum.y) < 0)));
  // Truncating division by 2 of a 34-bit value: floor for >= 0, ceil for < 0.
  if (bitcast<i32>(rounded.y) < 0) {
    rounded = add64(rounded, vec2<u32>(1u, 0u));
  }
  return bitcast<i32>(shiftRight64(rounded, 1u).x);
}

