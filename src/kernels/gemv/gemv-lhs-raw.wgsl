// gemv-lhs-raw.wgsl: where the gemv kernel (pack -> GEMM -> output, ./gemv.wgsl) reads an 8-bit lhs that
// nobody packed: the caller's bytes as uploaded (or a GpuMatrix), in either order and signedness. Each
// chunk is built here in the 'u8k4-r64' word layout (byte j = k + j, zeros past K) and mapped into the
// uint8 domain (int8: byte ^ 0x80) as src/pack/pack.wgsl does, so the products are those of the packed
// path; the kernel sums the same bytes for the row sums (LHS_RAW) and hands them to the epilogue
// (LHS_SUMS_IN_KERNEL in src/epilogue/epilogue.wgsl). This saves the pack dispatch of a decode call.

const LHS_RAW: bool = true; // the kernel computes the lhs row sums

struct LhsSource {
  depth: u32,        // K
  outerStride: u32,  // bytes between consecutive lhs rows (m)
  depthStride: u32,  // bytes between consecutive k (1: row-major, or a single column-major row; LHS_CONTIGUOUS)
  signFlip: u32,     // 0x80 for int8, 0 for uint8
}

@group(0) @binding(8) var<uniform> lhsSource: LhsSource;
@group(0) @binding(9) var<storage, read> lhsRaw: array<u32>;

override LHS_CONTIGUOUS: bool = true; // depthStride == 1: whole words; else byte by byte

/** Nothing to prepare for the workgroup's rows. */
fn lhsBegin(rowBase: u32) {}

fn lhsByte(at: u32) -> u32 {
  return (lhsRaw[at >> 2u] >> ((at & 3u) * 8u)) & 0xffu;
}

/** lhs (m, 4w..4w+3) read byte by byte (k strided): byte j holds k = 4w + j, zero past K. */
fn lhsWordStrided(m: u32, w: u32) -> u32 {
  var word = 0u;
  for (var j = 0u; j < 4u; j++) {
    let k = 4u * w + j;
    if (k < lhsSource.depth) {
      word |= (lhsByte(m * lhsSource.outerStride + k * lhsSource.depthStride) ^ lhsSource.signFlip) << (8u * j);
    }
  }
  return word;
}

/**
 * The lhs words 4c..4c+3 (k = 16c..16c+15) of band row `row`, as lhsPacked would hold them (uint8
 * domain, zeros past K). Contiguous k: the 16 bytes from `at`, which need not be word-aligned, funnel-
 * shifted out of 5 words without a branch (SwiftShader runs both sides of a branch); loads past the
 * binding are clamped to it, their bytes masked off as past K.
 */
fn lhsChunk(row: u32, c: u32) -> vec4<u32> {
  let m = tile.bandM + row;
  if (!LHS_CONTIGUOUS) {
    return vec4<u32>(lhsWordStrided(m, 4u * c), lhsWordStrided(m, 4u * c + 1u), lhsWordStrided(m, 4u * c + 2u), lhsWordStrided(m, 4u * c + 3u));
  }
  let at = m * lhsSource.outerStride + 16u * c;
  let i = at >> 2u;
  let last = arrayLength(&lhsRaw) - 1u;
  let w4 = lhsRaw[min(i + 4u, last)];
  let lo = vec4<u32>(lhsRaw[min(i, last)], lhsRaw[min(i + 1u, last)], lhsRaw[min(i + 2u, last)], lhsRaw[min(i + 3u, last)]);
  let hi = vec4<u32>(lo.y, lo.z, lo.w, w4);
  let shift = vec4<u32>((at & 3u) * 8u);
  let words = select((lo >> shift) | (hi << (vec4<u32>(32u) - shift)), lo, shift == vec4<u32>(0u));
  let k = vec4<u32>(16u * c) + vec4<u32>(0u, 4u, 8u, 12u);
  let live = min(max(vec4<u32>(lhsSource.depth), k) - k, vec4<u32>(4u)); // bytes of each word inside K
  let mask = select((vec4<u32>(1u) << (8u * live)) - vec4<u32>(1u), vec4<u32>(0xffffffffu), live == vec4<u32>(4u));
  return (words ^ vec4<u32>(lhsSource.signFlip * 0x01010101u)) & mask;
}
