// tanh.wgsl: gemmlowp's fixed-point tanh and OutputStageTanh (pack -> gemm -> OUTPUT), in 32-bit WGSL
// arithmetic on top of fixedpoint.wgsl. The WGSL twin of src/quant/tanh.ts, function for function and
// bit for bit (test/gpu/fixedpoint.test.ts). A library with no entry point.
//
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

