// fixedpoint.wgsl: the exact int32 fixed-point arithmetic of the output stage (pack -> gemm -> OUTPUT),
// gemmlowp's fixedpoint.h, TFLite's MultiplyByQuantizedMultiplier and gemmlowp's OutputStageTanh, in
// 32-bit WGSL arithmetic only (WGSL has no 64-bit integers). It is a library with no entry point: the
// scheduler concatenates it in front of the output/gemm shaders. Every function computes bit for bit
// what the function of the same name in src/quant/fixedpoint.ts or src/quant/tanh.ts computes (the CPU
// reference), over the whole int32 range; test/gpu/fixedpoint.test.ts checks that on edge values and
// random ones.
//
// WGSL rules this file relies on: + - * and unary - on concrete i32/u32 wrap (two's complement) at run
// time; >> on i32 is arithmetic; shift amounts are u32 and are kept below 32 here; constants are
// written so that no const-expression overflows (a compile error).
//
// A 64-bit value is a vec2<u32>(lo, hi): lo is the low word, hi the high word read as signed where it
// matters (the TS reference writes the same pair as [hi, lo]).

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

// ---- gemmlowp fixed-point tanh ----------------------------------------------------------------------
// Raw int32 values carry FixedPoint<int32, I> formats, written F<I> (I integer bits, 31 - I fractional
// bits). FixedPoint operator* is saturatingRoundingDoublingHighMul: F<a> * F<b> -> F<a+b>.

/** exp(a) for a in [-1/4, 0): F0 -> F0, Taylor expansion around -1/8 (exp_on_interval_between_negative_one_quarter_and_0_excl). */
fn expOnIntervalBetweenNegativeOneQuarterAnd0Excl(a: i32) -> i32 {
  let constantTerm = 1895147668; // exp(-1/8)
  let constant1Over3 = 715827883;
  let x = a + (1 << 28u);
  let x2 = saturatingRoundingDoublingHighMul(x, x);
  let x3 = saturatingRoundingDoublingHighMul(x2, x);
  let x4 = saturatingRoundingDoublingHighMul(x2, x2);
  let x4Over4 = roundingDivideByPOT(x4, 2u);
  let rest = roundingDivideByPOT(saturatingRoundingDoublingHighMul(x4Over4 + x3, constant1Over3) + x2, 1u);
  return constantTerm + saturatingRoundingDoublingHighMul(constantTerm, x + rest);
}

/** exp(a) for a <= 0 with a in F4, the only format tanh uses (exp_on_negative_values<int32, 4>): F4 -> F0. */
fn expOnNegativeValuesF4(a: i32) -> i32 {
  let oneQuarter = 1 << 25u; // 1/4 in F4 (27 fractional bits)
  let aModQuarterMinusOneQuarter = (a & (oneQuarter - 1)) - oneQuarter;
  var result = expOnIntervalBetweenNegativeOneQuarterAnd0Excl(saturatingLeftShift(aModQuarterMinusOneQuarter, 4u)); // Rescale<0>
  let remainder = aModQuarterMinusOneQuarter - a;
  // Barrel shifter: multiply by exp(-2^e) for each bit e of the remainder, e = -2..3 (bit 27 + e).
  if ((remainder & (1 << 25u)) != 0) { result = saturatingRoundingDoublingHighMul(result, 1672461947); } // exp(-1/4)
  if ((remainder & (1 << 26u)) != 0) { result = saturatingRoundingDoublingHighMul(result, 1302514674); } // exp(-1/2)
  if ((remainder & (1 << 27u)) != 0) { result = saturatingRoundingDoublingHighMul(result, 790015084); }  // exp(-1)
  if ((remainder & (1 << 28u)) != 0) { result = saturatingRoundingDoublingHighMul(result, 290630308); }  // exp(-2)
  if ((remainder & (1 << 29u)) != 0) { result = saturatingRoundingDoublingHighMul(result, 39332535); }   // exp(-4)
  if ((remainder & (1 << 30u)) != 0) { result = saturatingRoundingDoublingHighMul(result, 720401); }     // exp(-8)
  return select(result, FP_INT32_MAX, a == 0);
}

/** (1 - x) / (1 + x) for x in (0, 1): F0 -> F0, Newton-Raphson division in F2 (one_minus_x_over_one_plus_x_for_x_in_0_1). */
fn oneMinusXOverOnePlusXForXIn01(a: i32) -> i32 {
  let halfDenominator = roundingHalfSum(a, FP_INT32_MAX);
  let constant48Over17 = 1515870810;
  let constantNeg32Over17 = -1010580540;
  let oneF2 = 1 << 29u;
  var x = constant48Over17 + saturatingRoundingDoublingHighMul(halfDenominator, constantNeg32Over17);
  for (var i = 0; i < 3; i++) {
    let oneMinusHalfDenominatorTimesX = oneF2 - saturatingRoundingDoublingHighMul(halfDenominator, x);
    x = x + saturatingLeftShift(saturatingRoundingDoublingHighMul(x, oneMinusHalfDenominatorTimesX), 2u); // Rescale<2> of F4
  }
  return saturatingLeftShift(x - oneF2, 2u); // Rescale<0> of F2
}

/** gemmlowp tanh(FixedPoint<int32, 3>) -> FixedPoint<int32, 0>. */
fn fixedPointTanhF3(a: i32) -> i32 {
  let negative = a < 0;
  let n = select(-a, a, negative);
  // -tanh(n) for n <= 0: n in F3 read as 2n in F4 (ExactMulByPot<1>).
  let t = oneMinusXOverOnePlusXForXIn01(expOnNegativeValuesF4(n));
  if (a == 0) {
    return 0;
  }
  return select(t, -t, negative);
}

/** OutputStageTanh's constants, computed once per stage on the CPU by tanhParams() in src/quant/tanh.ts. */
struct TanhParams {
  realZero: i32,
  inputCutoffMin: i32,
  inputCutoffMax: i32,
  outputMin: i32,
  outputMax: i32,
  inverseAmplitudeNormalized: i32,
  inverseAmplitudeNegExponent: i32, // 0..28
  amplitudeNormalized: i32,
  amplitudeExponent: i32, // 1..30
}

/** gemmlowp OutputStageTanh::Eval for one int32 value. */
fn tanhStage(x: i32, p: TanhParams) -> i32 {
  if (x <= p.inputCutoffMin) {
    return p.outputMin;
  }
  if (x >= p.inputCutoffMax) {
    return p.outputMax;
  }
  let centered = x - p.realZero;
  // gemmlowp's ShiftLeft here saturates: (8*amplitude - 1) can round up to exactly 8.0 in F3.
  let inputF3 = saturatingLeftShift(
    saturatingRoundingDoublingHighMul(centered, p.inverseAmplitudeNormalized),
    u32(28 - p.inverseAmplitudeNegExponent)
  );
  let outputF0 = saturatingRoundingDoublingHighMul(fixedPointTanhF3(inputF3), p.amplitudeNormalized);
  return p.realZero + (outputF0 >> u32(31 - p.amplitudeExponent));
}

// ---- less-than-8-bit unpacking ----------------------------------------------------------------------

/**
 * gemmlowp RoundingMultiplyByConstantFraction (src/quant/lowbit.ts): x * num / den as
 * x * intQuotient + (x * scaledRemainingNumerator + (p > 0 ? 2^30 : -2^30)) / 2^31, truncating, int32
 * wrap; x itself for the identity fraction (8-bit operands). The constants come from constantFraction().
 */
fn roundingMultiplyByConstantFraction(x: i32, identity: u32, intQuotient: i32, scaledRemainingNumerator: i32) -> i32 {
  if (identity != 0u) {
    return x;
  }
  var p = mulWide(x, scaledRemainingNumerator);
  let hi = bitcast<i32>(p.y);
  let positive = hi > 0 || (hi == 0 && p.x > 0u);
  p = add64(p, int64From32(select(-(1 << 30), 1 << 30, positive)));
  if (bitcast<i32>(p.y) < 0) {
    p = add64(p, vec2<u32>(0x7fffffffu, 0u)); // truncate toward zero
  }
  let remainingProduct = bitcast<i32>((p.y << 1u) | (p.x >> 31u));
  return x * intQuotient + remainingProduct;
}
