// An independent oracle for gemmlowp's and TFLite's fixed-point arithmetic, written with BigInt so
// that every step is visibly exact. It follows the published sources line by line (gemmlowp
// fixedpoint/fixedpoint.h, internal/output.h; TFLite kernels/internal/common.h and
// quantization_util.cc) and deliberately shares no code with src/quant or src/reference: it is what
// the CPU reference, the WGSL kernels and the CLI are checked against. Where C++ leaves a case
// undefined (signed overflow in Add/Sub/Neg) we take the two's-complement wrap that compilers
// produce; where gemmlowp computes in `double` (OutputStageTanh's constructor, FromDouble) we do the
// same IEEE-754 double computations, since JS numbers are doubles.
//
// Public functions take and return JS numbers holding int32 values; the `*B` helpers work on
// bigint and are exported for the gemm oracle.

export const INT32_MIN_B = -(1n << 31n);
export const INT32_MAX_B = (1n << 31n) - 1n;
const TWO31 = 1n << 31n;

// ------------------------------------------------------------------ integer plumbing

/** Two's-complement wrap to int32 (what C++ `static_cast<int32_t>` and wrapping + and * produce). */
export function wrap32(x: bigint): bigint {
  return BigInt.asIntN(32, x);
}

/** Clamp to [INT32_MIN, INT32_MAX]. */
export function sat32(x: bigint): bigint {
  return x < INT32_MIN_B ? INT32_MIN_B : x > INT32_MAX_B ? INT32_MAX_B : x;
}

/** A JS number that must be an int32, as a bigint. */
export function big32(x: number, what = 'value'): bigint {
  if (!Number.isInteger(x) || x < -2147483648 || x > 2147483647) {
    throw new RangeError(`${what} must be an int32, got ${x}`);
  }
  return BigInt(x);
}

function num(x: bigint): number {
  if (x < INT32_MIN_B || x > INT32_MAX_B) throw new Error(`oracle bug: ${x} is not an int32`);
  return Number(x);
}

function checkRange(x: number, lo: number, hi: number, what: string): void {
  if (!Number.isInteger(x) || x < lo || x > hi) throw new RangeError(`${what} must be in ${lo}..${hi}, got ${x}`);
}

// C++ Add / Sub / Neg on int32 (undefined on overflow; compilers wrap).
const add = (a: bigint, b: bigint): bigint => wrap32(a + b);
const sub = (a: bigint, b: bigint): bigint => wrap32(a - b);
const neg = (a: bigint): bigint => wrap32(-a);

// ------------------------------------------------------------------ fixedpoint.h primitives

/**
 * gemmlowp SaturatingRoundingDoublingHighMul<int32> (ARM VQRDMULH):
 *   overflow = a == b == INT32_MIN; ab = int64(a)*b; nudge = ab >= 0 ? 2^30 : 1 - 2^30;
 *   result = overflow ? INT32_MAX : int32((ab + nudge) / 2^31)   (C++ division truncates toward 0)
 */
export function srdhmB(a: bigint, b: bigint): bigint {
  if (a === INT32_MIN_B && b === INT32_MIN_B) return INT32_MAX_B;
  const ab = a * b;
  const nudge = ab >= 0n ? 1n << 30n : 1n - (1n << 30n);
  return wrap32((ab + nudge) / TWO31); // BigInt `/` truncates toward zero, like C++
}

/**
 * gemmlowp RoundingDivideByPOT<int32>, literally:
 *   mask = 2^e - 1; remainder = x & mask; threshold = (mask >> 1) + (x < 0 ? 1 : 0);
 *   result = (x >> e) + (remainder > threshold ? 1 : 0)      (>> is arithmetic)
 * i.e. x / 2^e rounded to nearest, ties away from zero. e in 0..31.
 */
export function rdbpB(x: bigint, exponent: number): bigint {
  checkRange(exponent, 0, 31, 'RoundingDivideByPOT exponent');
  const e = BigInt(exponent);
  const mask = (1n << e) - 1n;
  const remainder = x & mask; // BigInt & uses two's complement, like int32 &
  const threshold = (mask >> 1n) + (x < 0n ? 1n : 0n);
  return (x >> e) + (remainder > threshold ? 1n : 0n);
}

/**
 * Saturating left shift: x * 2^s clamped to int32, s in 0..31. This is gemmlowp's ShiftLeft
 * (`int64(a) * (1 << offset)`, then clamp) for s <= 30. For s = 31, gemmlowp's `1 << 31` is
 * INT32_MIN as an int, which flips the sign; the spec (src/types.ts) and this oracle take the
 * mathematical x * 2^31 instead.
 */
export function saturatingShiftLeftB(x: bigint, shift: number): bigint {
  checkRange(shift, 0, 31, 'left shift');
  return sat32(x * (1n << BigInt(shift)));
}

/**
 * gemmlowp SaturatingRoundingMultiplyByPOT<Exponent> on int32: exponent > 0 saturates
 * (threshold = 2^(31-exponent) - 1, x > threshold -> MAX, x < -threshold -> MIN, else x << exponent);
 * exponent < 0 is RoundingDivideByPOT(x, -exponent); exponent 0 is the identity.
 */
export function saturatingRoundingMultiplyByPOTB(x: bigint, exponent: number): bigint {
  if (exponent === 0) return x;
  if (exponent < 0) return rdbpB(x, -exponent);
  const threshold = (1n << BigInt(31 - exponent)) - 1n;
  if (x > threshold) return INT32_MAX_B;
  if (x < -threshold) return INT32_MIN_B;
  return sat32(x * (1n << BigInt(exponent)));
}

/** gemmlowp RoundingHalfSum<int32>: sum = int64 a + b; (sum + (sum >= 0 ? 1 : -1)) / 2, truncating. */
export function roundingHalfSumB(a: bigint, b: bigint): bigint {
  const sum = a + b;
  const sign = sum >= 0n ? 1n : -1n;
  return wrap32((sum + sign) / 2n);
}

/**
 * MultiplyByQuantizedMultiplier, rounding 'double' (gemmlowp OutputStageScaleInt32ByFixedPointAndExponent,
 * TFLite's default build): RDBP(SRDHM(saturatingShiftLeft(x, max(s,0)), m), max(-s,0)), s in -31..31.
 */
export function mbqmDoubleB(x: bigint, multiplier: bigint, shift: number): bigint {
  checkRange(shift, -31, 31, 'exponent (double rounding)');
  const left = Math.max(shift, 0);
  const right = Math.max(-shift, 0);
  return rdbpB(srdhmB(saturatingShiftLeftB(x, left), multiplier), right);
}

/**
 * MultiplyByQuantizedMultiplier, rounding 'single' (TFLite TFLITE_SINGLE_ROUNDING, ruy):
 *   total = 31 - s; result = (int64(x) * m + 2^(total-1)) >> total   (arithmetic shift),
 * saturated to int32; s in -31..30. (The int64 expression cannot overflow for int32 x and m.)
 */
export function mbqmSingleB(x: bigint, multiplier: bigint, shift: number): bigint {
  checkRange(shift, -31, 30, 'exponent (single rounding)');
  const total = BigInt(31 - shift);
  const round = 1n << (total - 1n);
  return sat32((x * multiplier + round) >> total);
}

// ------------------------------------------------------------------ FixedPoint<int32, N> tanh

// A FixedPoint<int32, IntegerBits> is just its raw int32 here; we track IntegerBits by hand.
// operator* is SRDHM (integer bits add up), + - are wrapping Add/Sub.
const fmul = srdhmB;

/** gemmlowp Rescale<dst>(FixedPoint<int32, src>) = SaturatingRoundingMultiplyByPOT<src - dst>. */
function rescale(x: bigint, srcIntegerBits: number, dstIntegerBits: number): bigint {
  return saturatingRoundingMultiplyByPOTB(x, srcIntegerBits - dstIntegerBits);
}

/** gemmlowp ShiftLeft<int32>(a, offset): int64(a) * (1 << offset), saturated; offset 0..30 here. */
function gemmlowpShiftLeft(a: bigint, offset: number): bigint {
  checkRange(offset, 0, 30, 'ShiftLeft offset');
  return sat32(a * (1n << BigInt(offset)));
}

/** exp(x) for x in [-1/4, 0): FixedPoint<int32,0> in and out. fixedpoint.h. */
export function expOnIntervalBetweenNegativeOneQuarterAnd0ExclB(a: bigint): bigint {
  const constantTerm = 1895147668n; // exp(-1/8) in Q0.31
  const constant1Over3 = 715827883n; // 1/3
  const x = add(a, 1n << 28n); // a + ConstantPOT<-3> (1/8)
  const x2 = fmul(x, x);
  const x3 = fmul(x2, x);
  const x4 = fmul(x2, x2);
  const x4Over4 = saturatingRoundingMultiplyByPOTB(x4, -2);
  const x4Over24PlusX3Over6PlusX2Over2 = saturatingRoundingMultiplyByPOTB(add(fmul(add(x4Over4, x3), constant1Over3), x2), -1);
  // AddSaturatingIf16Bit is a plain Add for int32.
  return add(constantTerm, fmul(constantTerm, add(x, x4Over24PlusX3Over6PlusX2Over2)));
}

/** exp(a) for a <= 0, a = FixedPoint<int32, integerBits>; result FixedPoint<int32, 0>. fixedpoint.h. */
export function expOnNegativeValuesB(a: bigint, integerBits: number): bigint {
  const fractionalBits = 31 - integerBits;
  const oneQuarter = 1n << BigInt(fractionalBits - 2); // ConstantPOT<-2>
  const mask = oneQuarter - 1n;
  const aModQuarterMinusOneQuarter = sub(a & mask, oneQuarter);
  let result = expOnIntervalBetweenNegativeOneQuarterAnd0ExclB(rescale(aModQuarterMinusOneQuarter, integerBits, 0));
  const remainder = sub(aModQuarterMinusOneQuarter, a);
  const barrel: Array<[number, bigint]> = [
    [-2, 1672461947n], // exp(-1/4)
    [-1, 1302514674n], // exp(-1/2)
    [0, 790015084n], // exp(-1)
    [1, 290630308n], // exp(-2)
    [2, 39332535n], // exp(-4)
    [3, 720401n], // exp(-8)
    [4, 242n], // exp(-16)
  ];
  for (const [exponent, multiplier] of barrel) {
    if (integerBits > exponent) {
      const shiftAmount = BigInt(fractionalBits + exponent);
      if ((remainder & (1n << shiftAmount)) !== 0n) result = fmul(result, multiplier);
    }
  }
  if (integerBits > 5) {
    const clamp = -(1n << BigInt(36 - integerBits)); // -32.0 in this format
    if (a < clamp) result = 0n;
  }
  if (a === 0n) result = INT32_MAX_B; // FixedPoint<int32,0>::One()
  return result;
}

/** (1 - a) / (1 + a) for a in (0, 1), FixedPoint<int32,0>; Newton-Raphson in FixedPoint<int32,2>. */
export function oneMinusXOverOnePlusXForXIn01B(a: bigint): bigint {
  const halfDenominator = roundingHalfSumB(a, INT32_MAX_B); // F0::One() = INT32_MAX
  const constant48Over17 = 1515870810n; // F2
  const constantNeg32Over17 = -1010580540n; // F2
  const f2One = 1n << 29n;
  let x = add(constant48Over17, fmul(halfDenominator, constantNeg32Over17)); // F0 * F2 -> F2
  for (let i = 0; i < 3; i++) {
    const halfDenominatorTimesX = fmul(halfDenominator, x); // F2
    const oneMinusHalfDenominatorTimesX = sub(f2One, halfDenominatorTimesX); // F2
    x = add(x, rescale(fmul(x, oneMinusHalfDenominatorTimesX), 4, 2)); // F2 * F2 = F4 -> F2
  }
  return rescale(sub(x, f2One), 2, 0);
}

/** -tanh(a) for a <= 0: one_minus_x_over_one_plus_x(exp_on_negative_values(ExactMulByPot<1>(a))). */
function negTanhOnNegativeValues(a: bigint, integerBits: number): bigint {
  return oneMinusXOverOnePlusXForXIn01B(expOnNegativeValuesB(a, integerBits + 1));
}

/** gemmlowp tanh(FixedPoint<int32, integerBits>) -> FixedPoint<int32, 0>, raw values. */
export function fixedPointTanhB(a: bigint, integerBits: number): bigint {
  const isNegative = a < 0n;
  const n = isNegative ? a : neg(a);
  const t = negTanhOnNegativeValues(n, integerBits);
  if (a === 0n) return 0n;
  return isNegative ? neg(t) : t;
}

/** FixedPoint<int32,3> tanh on a raw int32 (Q3.28 in, Q0.31 out). */
export function fixedPointTanhQ3(raw: number): number {
  return num(fixedPointTanhB(big32(raw, 'raw'), 3));
}

/** C's round(): to nearest, ties away from zero, computed exactly on a double. Returns a bigint. */
export function roundHalfAwayToBigInt(v: number): bigint {
  if (!Number.isFinite(v)) throw new RangeError(`cannot round ${v}`);
  const t = Math.trunc(v);
  const frac = v - t; // exact: |frac| < 1 and v, t share the same exponent range
  let r = BigInt(t);
  if (frac >= 0.5) r += 1n;
  else if (frac <= -0.5) r -= 1n;
  return r;
}

/** FixedPoint<int32, 0>::FromDouble: clamp(round(x * 2^31), INT32_MIN, INT32_MAX). */
function fixedPointQ0FromDouble(x: number): bigint {
  return sat32(roundHalfAwayToBigInt(x * 2 ** 31));
}

/** The state gemmlowp's OutputStageTanh constructor computes (internal/output.h). */
export interface TanhStageParams {
  realZero: bigint;
  inputCutoffMin: bigint;
  inputCutoffMax: bigint;
  outputMin: bigint;
  outputMax: bigint;
  inverseAmplitudeNormalized: bigint;
  inverseAmplitudeNegExponent: number;
  amplitudeNormalized: bigint;
  amplitudeExponent: number;
}

export function makeTanhStage(realZeroAsInt32: number, realAmplitudeAsInt32: number): TanhStageParams {
  const z = big32(realZeroAsInt32, 'realZeroAsInt32');
  const a = big32(realAmplitudeAsInt32, 'realAmplitudeAsInt32');
  // 28 - inverse_amplitude_neg_exponent must stay >= 0, which needs amplitude <= 2^29.
  checkRange(realAmplitudeAsInt32, 1, 2 ** 29, 'realAmplitudeAsInt32');
  if (Math.abs(realZeroAsInt32) + 8 * realAmplitudeAsInt32 > 2147483647) {
    throw new RangeError('|realZeroAsInt32| + 8 * realAmplitudeAsInt32 must be <= INT32_MAX');
  }
  let inverseAmplitudeNormalizedDouble = 1.0 / realAmplitudeAsInt32;
  let inverseAmplitudeNegExponent = 0;
  while (inverseAmplitudeNormalizedDouble < 0.5) {
    inverseAmplitudeNormalizedDouble *= 2;
    inverseAmplitudeNegExponent++;
  }
  let amplitudeNormalizedDouble = realAmplitudeAsInt32;
  let amplitudeExponent = 0;
  while (amplitudeNormalizedDouble >= 1.0) {
    amplitudeNormalizedDouble *= 0.5;
    amplitudeExponent++;
  }
  return {
    realZero: z,
    inputCutoffMin: wrap32(z - 8n * a),
    inputCutoffMax: wrap32(z + 8n * a),
    outputMin: wrap32(z - a),
    outputMax: wrap32(z + a),
    inverseAmplitudeNormalized: fixedPointQ0FromDouble(inverseAmplitudeNormalizedDouble),
    inverseAmplitudeNegExponent,
    amplitudeNormalized: fixedPointQ0FromDouble(amplitudeNormalizedDouble),
    amplitudeExponent,
  };
}

/** OutputStageEvalBufferImpl<OutputStageTanh>::Eval on one int32 (internal/output.h). */
export function evalTanhStageB(p: TanhStageParams, input: bigint): bigint {
  const inputCentered = sub(input, p.realZero);
  let fixedpointInput = fmul(inputCentered, p.inverseAmplitudeNormalized); // F3 * F0 -> F3
  fixedpointInput = gemmlowpShiftLeft(fixedpointInput, 28 - p.inverseAmplitudeNegExponent);
  const fixedpointOutput = fmul(fixedPointTanhB(fixedpointInput, 3), p.amplitudeNormalized); // F0
  const int32Output = add(p.realZero, fixedpointOutput >> BigInt(31 - p.amplitudeExponent));
  if (input <= p.inputCutoffMin) return p.outputMin;
  if (input >= p.inputCutoffMax) return p.outputMax;
  return int32Output;
}

export function tanhStageBig(x: number, realZeroAsInt32: number, realAmplitudeAsInt32: number): number {
  return num(evalTanhStageB(makeTanhStage(realZeroAsInt32, realAmplitudeAsInt32), big32(x, 'x')));
}

// ------------------------------------------------------------------ number-facing wrappers

export function srdhmBig(a: number, b: number): number {
  return num(srdhmB(big32(a, 'a'), big32(b, 'b')));
}

export function rdbpBig(x: number, exponent: number): number {
  return num(rdbpB(big32(x, 'x'), exponent));
}

export function saturatingShiftLeftBig(x: number, shift: number): number {
  return num(saturatingShiftLeftB(big32(x, 'x'), shift));
}

export function roundingHalfSumBig(a: number, b: number): number {
  return num(roundingHalfSumB(big32(a, 'a'), big32(b, 'b')));
}

export function mbqmBig(x: number, multiplier: number, shift: number, rounding: 'double' | 'single'): number {
  const xb = big32(x, 'x');
  const mb = big32(multiplier, 'multiplier');
  return num(rounding === 'double' ? mbqmDoubleB(xb, mb, shift) : mbqmSingleB(xb, mb, shift));
}

// ------------------------------------------------------------------ TFLite QuantizeMultiplier

/** C frexp: x = q * 2^e with |q| in [0.5, 1), read from the IEEE-754 bits. frexp(0) = (0, 0). */
export function frexpExact(x: number): [number, number] {
  if (x === 0 || !Number.isFinite(x)) return [x, 0];
  const view = new DataView(new ArrayBuffer(8));
  let extra = 0;
  view.setFloat64(0, x);
  if (((view.getUint32(0) >>> 20) & 0x7ff) === 0) {
    // subnormal: scale into the normal range first (exact)
    view.setFloat64(0, x * 2 ** 64);
    extra = -64;
  }
  const hi = view.getUint32(0);
  const biased = (hi >>> 20) & 0x7ff;
  view.setUint32(0, (hi & 0x800fffff) | (1022 << 20));
  return [view.getFloat64(0), biased - 1022 + extra];
}

/**
 * TFLite QuantizeMultiplier(double) -> (quantized_multiplier, shift):
 *   0 -> (0, 0); q, shift = frexp(real); q_fixed = round(q * 2^31) (half away from zero);
 *   q_fixed == 2^31 -> q_fixed /= 2, shift += 1; shift < -31 -> (0, 0).
 * Negative reals give negative multipliers.
 */
export function quantizeMultiplierBig(real: number): { multiplier: number; shift: number } {
  if (!Number.isFinite(real)) throw new RangeError(`multiplier ${real} is not finite`);
  if (real === 0) return { multiplier: 0, shift: 0 };
  const [q, e] = frexpExact(real);
  let shift = e;
  let qFixed = roundHalfAwayToBigInt(q * 2 ** 31); // q * 2^31 is exact in double
  if (qFixed > TWO31) throw new Error('oracle bug: q_fixed > 2^31');
  if (qFixed === TWO31) {
    qFixed /= 2n;
    shift += 1;
  }
  if (shift < -31) return { multiplier: 0, shift: 0 };
  return { multiplier: num(qFixed), shift };
}

// ------------------------------------------------------------------ less-than-8-bit unpacking

/**
 * gemmlowp RoundingMultiplyByConstantFraction<numerator, denominator>(x), internal/unpack.h before
 * commit 4746387: x * numerator / denominator, as
 *   int_quotient = (num + den/2) / den;  remaining = num - int_quotient*den;
 *   scaled_remaining = int32((int64(remaining) * 2^31) / den)          (truncating)
 *   p = int64(x) * scaled_remaining;  nudge = (p > 0 ? 1 : -1) * 2^30;
 *   result = x * int_quotient + int32((p + nudge) / 2^31)              (truncating; int32 wrap)
 * and x itself when numerator == denominator.
 */
export function rmbcfB(x: bigint, numerator: number, denominator: number): bigint {
  if (numerator === denominator) return x;
  const num = BigInt(numerator);
  const den = BigInt(denominator);
  const intQuotient = (num + den / 2n) / den;
  const remainingNumerator = num - intQuotient * den; // may be negative (C++: uint32 wrap, then int32)
  const scaledRemainingNumerator = wrap32((remainingNumerator * TWO31) / den);
  const scaledRemainingProduct = x * scaledRemainingNumerator;
  const nudge = scaledRemainingProduct > 0n ? 1n << 30n : -(1n << 30n);
  const remainingProduct = wrap32((scaledRemainingProduct + nudge) / TWO31);
  return wrap32(x * intQuotient + remainingProduct);
}

export function rmbcfBig(x: number, numerator: number, denominator: number): number {
  return num(rmbcfB(big32(x, 'x'), numerator, denominator));
}
