// dot4-native.wgsl: the GEMM's inner product (pack -> GEMM -> output) on adapters with the WGSL language
// feature packed_4x8_integer_dot_product: four uint8 products summed, in one builtin (DP4A where the
// hardware has it). The scheduler picks this file or dot4-emulated.wgsl at run time.

fn dot4(a: u32, b: u32) -> u32 {
  return dot4U8Packed(a, b);
}
