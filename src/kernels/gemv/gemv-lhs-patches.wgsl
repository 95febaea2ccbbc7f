// gemv-lhs-patches.wgsl: where the gemv kernel (pack -> GEMM -> output, ./gemv.wgsl) reads a convolution's
// lhs that nobody packed: each chunk gathered straight from the NHWC input by src/pack/patch-gather.wgsl
// (composed before this file), in the 'u8k4-r64' word layout and the uint8 domain, as the patch pack
// (src/pack/patches.wgsl) would have written it. The kernel sums the same words for the row sums (LHS_RAW)
// and hands them to the epilogue (LHS_SUMS_IN_KERNEL), so a conv layer at M <= 4 (a detector's last
// feature maps: 3x3 on 2x2 or 1x1 pixels) is one dispatch with no patch pack. Host code: ./kernel.ts.

const LHS_RAW: bool = true; // the kernel computes the lhs row sums

// The workgroup's rows rowBase .. rowBase + 3, one PatchRow field per vector (a vector's lane picked by a
// row index is a few selects; an array of structs indexed so may live in memory).
var<private> rowLive: vec4<bool>;
var<private> rowPixel0: vec4<u32>;
var<private> rowIh0: vec4<i32>;
var<private> rowIw0: vec4<i32>;

/** Where the workgroup's 4 patch rows start (their image, the top-left tap), once for the whole k loop. */
fn lhsBegin(rowBase: u32) {
  for (var r = 0u; r < 4u; r++) {
    let p = patchRow(tile.bandM + rowBase + r);
    rowLive[r] = p.live;
    rowPixel0[r] = p.pixel0;
    rowIh0[r] = p.ih0;
    rowIw0[r] = p.iw0;
  }
}

/**
 * The patch words 4c..4c+3 (k = 16c..16c+15) of band row `row` (one of the workgroup's: rowBase is a
 * multiple of 4): zeros past K and for a row past M.
 */
fn lhsChunk(row: u32, c: u32) -> vec4<u32> {
  let i = row % 4u;
  return patchPiece(PatchRow(rowLive[i], rowPixel0[i], rowIh0[i], rowIw0[i]), 4u * c);
}
