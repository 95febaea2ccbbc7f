// sgmat-lhs-direct.wgsl: the left fragments of the '-dd' form of the subgroup-matrix kernel (./sgmat.wgsl;
// the GEMM stage of pack -> gemm -> output), loaded by subgroupMatrixLoad straight from the packed lhs in
// global memory. Together with ./sgmat-rhs-direct.wgsl nothing is staged in the k loop (LHS_ROWS_STAGED
// and RHS_ROWS_STAGED are 0, so sgmat.wgsl's STAGED is false: no loadStep, no storeStep, no barrier);
// workgroup memory serves the result pass only. Composed in place of ./sgmat-lhs.wgsl, for the tilings
// with `lhsDirect` (./config.ts; only with rhsDirect, u8 fragments).
//
// The packed lhs ('u8k4-r64/-r128/-r256', src/pack/formats.ts) is an Mp x Kp row-major byte matrix with
// Kp a multiple of 64 and Mp padded to the tile's side: a left fragment is FRAG_M rows of FRAG_K whole
// bytes, Kp bytes apart, and every load is in bounds by construction (sgmat.wgsl stops each k step at the
// packed depth). As for the rhs, offset and stride count words, so the operand is bound a second time as
// words (binding 6 is `lhsPacked` of ../tile.wgsl, which this form never uses), in the uint8 domain as u8
// fragments read it.

@group(0) @binding(6) var<storage, read> lhsWords: array<u32>;

/** Never called: no lhs piece is staged (PIECES_A is 0). */
fn piece(slot: u32, row: u32, kt: u32, q: u32, rowVec4s: u32) -> vec4<u32> {
  return vec4<u32>(0u);
}

/** The left fragment of tile rows row .. row + FRAG_M - 1, k = kBase + kk ..: packed row rowBase + row, row-major, Kp bytes apart. */
fn leftFragment(lhsBase: u32, rowBase: u32, row: u32, kBase: u32, kk: u32) -> LeftFragment {
  return subgroupMatrixLoad<LeftFragment, row_major>(&lhsWords, (rowBase + row) * tile.depthWords + (kBase + kk) / 4u, tile.depthWords);
}

/** The lhs row sums come from the pack stage: nothing to share. */
fn shareLhsRowSums(t: u32) {}

/** Likewise: the epilogue reads the pack stage's `rowSums`. */
fn useLhsRowSums(tileRow: u32, m: u32) {}

/** No row sums in the kernel (a split-K slice writes none; the i8 correction is the first slice's). */
const LHS_GATHERED: bool = false;

/** Never called (LHS_GATHERED is false). */
fn tileRowSums(tileRow: u32) -> vec4<u32> {
  return vec4<u32>();
}
