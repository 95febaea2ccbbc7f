// dot4-emulated.wgsl: the GEMM's inner product (pack -> GEMM -> output) for adapters without
// packed_4x8_integer_dot_product: the same sum of four uint8 products as dot4U8Packed, unpacked by hand.

fn dot4(a: u32, b: u32) -> u32 {
  let x = vec4<u32>(a, a >> 8u, a >> 16u, a >> 24u) & vec4<u32>(0xffu);
  let y = vec4<u32>(b, b >> 8u, b >> 16u, b >> 24u) & vec4<u32>(0xffu);
  let p = x * y;
  return p.x + p.y + p.z + p.w;
}
