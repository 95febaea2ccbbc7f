// lowbit.wgsl: the unpacking side of less-than-8-bit operands (pack -> gemm -> OUTPUT): gemmlowp's
// RoundingMultiplyByConstantFraction on top of fixedpoint.wgsl. The WGSL twin of src/quant/lowbit.ts
// (same name, bit for bit; test/gpu/fixedpoint.test.ts). A library with no entry point.

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
