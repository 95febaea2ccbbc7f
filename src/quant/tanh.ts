// gemmlowp's fixed-point tanh (fixedpoint.h) and its output stage OutputStageTanh (internal/output.h),
// the one non-linear stage of the output pipeline (pack -> gemm -> OUTPUT). Integer-only at run time:
// the stage's constructor turns the amplitude into normalized fixed-point constants once (in double,
// as gemmlowp does), and `tanhParams` is shared by the CPU reference and the GPU stage descriptor.
// Names follow gemmlowp; raw int32 values carry FixedPoint<int32, I> formats noted as F<I>
// (I integer bits, 31 - I fractional bits). + and - wrap, as gemmlowp's scalar code does in practice.

import { INT32_MAX, INT32_MIN } from '../types.ts';
import { roundingDivideByPOT, roundingHalfSum, saturatingLeftShift, saturatingRoundingDoublingHighMul } from './fixedpoint.ts';

const mul = saturatingRoundingDoublingHighMul; // FixedPoint operator*: F<a> * F<b> -> F<a+b>

/** exp(a) for a in [-1/4, 0): F0 -> F0, Taylor expansion around -1/8. */
function expOnIntervalBetweenNegativeOneQuarterAnd0Excl(a: number): number {
  const constantTerm = 1895147668; // exp(-1/8)
  const constant1Over3 = 715827883;
  const x = (a + (1 << 28)) | 0;
  const x2 = mul(x, x);
  const x3 = mul(x2, x);
  const x4 = mul(x2, x2);
  const x4Over4 = roundingDivideByPOT(x4, 2);
  const rest = roundingDivideByPOT((mul((x4Over4 + x3) | 0, constant1Over3) + x2) | 0, 1);
  return (constantTerm + mul(constantTerm, (x + rest) | 0)) | 0;
}

/** exp(a) for a < 0 with a in F4 (the only format tanh uses): F4 -> F0. */
function expOnNegativeValuesF4(a: number): number {
  const fractionalBits = 27;
  const oneQuarter = 1 << 25;
  const aModQuarterMinusOneQuarter = ((a & (oneQuarter - 1)) - oneQuarter) | 0;
  let result = expOnIntervalBetweenNegativeOneQuarterAnd0Excl(saturatingLeftShift(aModQuarterMinusOneQuarter, 4));
  const remainder = (aModQuarterMinusOneQuarter - a) | 0;
  // Barrel shifter: multiply by exp(-2^e) for each bit e of the remainder (e < 4 integer bits).
  const multipliers: [number, number][] = [
    [-2, 1672461947],
    [-1, 1302514674],
    [0, 790015084],
    [1, 290630308],
    [2, 39332535],
    [3, 720401],
  ];
  for (const [exponent, multiplier] of multipliers) {
    if (remainder & (1 << (fractionalBits + exponent))) result = mul(result, multiplier);
  }
  return a === 0 ? INT32_MAX : result;
}

/** (1 - x) / (1 + x) for x in (0, 1): F0 -> F0, Newton-Raphson division in F2. */
function oneMinusXOverOnePlusXForXIn01(a: number): number {
  const halfDenominator = roundingHalfSum(a, INT32_MAX);
  const constant48Over17 = 1515870810;
  const constantNeg32Over17 = -1010580540;
  const oneF2 = 1 << 29;
  let x = (constant48Over17 + mul(halfDenominator, constantNeg32Over17)) | 0;
  for (let i = 0; i < 3; i++) {
    const oneMinusHalfDenominatorTimesX = (oneF2 - mul(halfDenominator, x)) | 0;
    x = (x + saturatingLeftShift(mul(x, oneMinusHalfDenominatorTimesX), 2)) | 0;
  }
  return saturatingLeftShift((x - oneF2) | 0, 2);
}

/** gemmlowp tanh(FixedPoint<int32, 3>) -> FixedPoint<int32, 0>. */
export function fixedPointTanhF3(a: number): number {
  const negative = a < 0;
  const n = negative ? a : -a | 0;
  const t = oneMinusXOverOnePlusXForXIn01(expOnNegativeValuesF4(n)); // -tanh(n), n in F3 read as 2n in F4
  if (a === 0) return 0;
  return negative ? -t | 0 : t;
}

/** OutputStageTanh's constants, computed once per stage (gemmlowp does this in its constructor). */
export interface TanhParams {
  realZero: number;
  inputCutoffMin: number;
  inputCutoffMax: number;
  outputMin: number;
  outputMax: number;
  inverseAmplitudeNormalized: number;
  inverseAmplitudeNegExponent: number;
  amplitudeNormalized: number;
  amplitudeExponent: number;
}

/** gemmlowp FixedPoint<int32, 0>::FromDouble: round half away from zero, saturated. */
function fixedPointF0FromDouble(x: number): number {
  const r = Math.sign(x) * Math.round(Math.abs(x * 2 ** 31));
  return Math.min(Math.max(r, INT32_MIN), INT32_MAX);
}

/** Valid for amplitude in 1..2^29 and |realZero| + 8*amplitude <= INT32_MAX (checked by the stage validator). */
export function tanhParams(realZeroAsInt32: number, realAmplitudeAsInt32: number): TanhParams {
  let inverseAmplitude = 1 / realAmplitudeAsInt32;
  let inverseAmplitudeNegExponent = 0;
  while (inverseAmplitude < 0.5) {
    inverseAmplitude *= 2;
    inverseAmplitudeNegExponent++;
  }
  let amplitude = realAmplitudeAsInt32;
  let amplitudeExponent = 0;
  while (amplitude >= 1) {
    amplitude *= 0.5;
    amplitudeExponent++;
  }
  return {
    realZero: realZeroAsInt32,
    inputCutoffMin: realZeroAsInt32 - 8 * realAmplitudeAsInt32,
    inputCutoffMax: realZeroAsInt32 + 8 * realAmplitudeAsInt32,
    outputMin: realZeroAsInt32 - realAmplitudeAsInt32,
    outputMax: realZeroAsInt32 + realAmplitudeAsInt32,
    inverseAmplitudeNormalized: fixedPointF0FromDouble(inverseAmplitude),
    inverseAmplitudeNegExponent,
    amplitudeNormalized: fixedPointF0FromDouble(amplitude),
    amplitudeExponent,
  };
}

/**
 * OutputStageTanh::Eval for one int32 value. The left shift into F3 saturates, as gemmlowp's scalar
 * ShiftLeft does (its SIMD paths wrap): rounding can lift an input just inside the +8 cutoff to 8.0.
 */
export function tanhStage(x: number, p: TanhParams): number {
  if (x <= p.inputCutoffMin) return p.outputMin;
  if (x >= p.inputCutoffMax) return p.outputMax;
  const centered = (x - p.realZero) | 0;
  const inputF3 = saturatingLeftShift(mul(centered, p.inverseAmplitudeNormalized), 28 - p.inverseAmplitudeNegExponent);
  const outputF0 = mul(fixedPointTanhF3(inputF3), p.amplitudeNormalized);
  return (p.realZero + (outputF0 >> (31 - p.amplitudeExponent))) | 0;
}
