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
  depthStride: u32,  // bytes between consecutive k (1: row-major, or a single column-major row)
  signFlip: u32,     // 0x80 for int8, 0 for uint8
}

@group(0) @binding(8) var<uniform> lhsSource: LhsSource;
@group(0) @binding(9) var<storage, read> lhsRaw: array<u32>;

fn lhsByte(at: u32) -> u32 {
  return (lhsRaw[at >> 2u] >> ((at & 3u) * 8u)) & 0xffu;
}

/** lhs (m, 4w..4w+3) as one uint8-domain word: byte j holds k = 4w + j, zero past K. */
fn lhsWord(m: u32, w: u32) -> u32 {
  let k = 4u * w;
  if (k >= lhsSource.depth) {
    return 0u;
  }
  let live = min(lhsSource.depth - k, 4u); // bytes of this word inside K
  var word = 0u;
  if (lhsSource.depthStride == 1u) {
    // Contiguous k: the 4 bytes at `at`, which may straddle two source words.
    let at = m * lhsSource.outerStride + k;
    let shift = (at & 3u) * 8u;
    word = lhsRaw[at >> 2u] >> shift;
    if (shift != 0u && shift / 8u + live > 4u) {
      word |= lhsRaw[(at >> 2u) + 1u] << (32u - shift);
    }
    word ^= lhsSource.signFlip * 0x01010101u;
    if (live < 4u) {
      word &= (1u << (8u * live)) - 1u;
    }
  } else {
    for (var j = 0u; j < live; j++) {
      word |= (lhsByte(m * lhsSource.outerStride + (k + j) * lhsSource.depthStride) ^ lhsSource.signFlip) << (8u * j);
    }
  }
  return word;
}

/** The lhs words 4c..4c+3 (k = 16c..16c+15) of band row `row`, as lhsPacked would hold them. */
fn lhsChunk(row: u32, c: u32) -> vec4<u32> {
  let m = tile.bandM + row;
  let at = m * lhsSource.outerStride + 16u * c;
  if (lhsSource.depthStride == 1u && (at & 3u) == 0u && 16u * c + 16u <= lhsSource.depth) {
    // Whole aligned words (a row-major lhs with K % 4 == 0, or its first row): 4 loads.
    let i = at >> 2u;
    return vec4<u32>(lhsRaw[i], lhsRaw[i + 1u], lhsRaw[i + 2u], lhsRaw[i + 3u]) ^ vec4<u32>(lhsSource.signFlip * 0x01010101u);
  }
  return vec4<u32>(lhsWord(m, 4u * c), lhsWord(m, 4u * c + 1u), lhsWord(m, 4u * c + 2u), lhsWord(m, 4u * c + 3u));
}
