// sgmat-lhs.wgsl: the lhs half of the subgroup-matrix kernel's staging (./sgmat.wgsl; the GEMM stage of
// pack -> gemm -> output): the 16-byte pieces of packed lhs rows that loadStep stages, and the left
// fragments' loads from the staged tile; the lhs row sums are the pack stage's (`rowSums`), so the two
// hooks for sums computed in the kernel do nothing. Composed before sgmat.wgsl; the '-dd' tilings compose
// ./sgmat-lhs-direct.wgsl instead, which loads the left fragments from the packed lhs, and a convolution
// gathered from its input ./sgmat-lhs-patches.wgsl, under the same names.

/** Piece q of k step kt of packed lhs row `row` (load slot `slot`), or zeros past the packed depth. */
fn piece(slot: u32, row: u32, kt: u32, q: u32, rowVec4s: u32) -> vec4<u32> {
  let p = kt * PIECES + q;
  if (p >= rowVec4s) {
    return PAST_DEPTH;
  }
  return lhsPacked[row * rowVec4s + p];
}

/**
 * The left fragment of tile rows row .. row + FRAG_M - 1 (row: from the tile's first row), k = kBase + kk
 * .. + FRAG_K - 1 of the packed depth: kk bytes (kk / 4 words) into the staged rows at word lhsBase of `stage` (kBase and
 * rowBase locate the same bytes in the packed operand; the staging has them).
 */
fn leftFragment(lhsBase: u32, rowBase: u32, row: u32, kBase: u32, kk: u32) -> LeftFragment {
  return subgroupMatrixLoad<LeftFragment, row_major>(&stage, lhsBase + row * ROW_WORDS + kk / 4u, ROW_WORDS);
}

/** The lhs row sums come from the pack stage: nothing to share. */
fn shareLhsRowSums(t: u32) {}

/** Likewise: the epilogue and the i8 correction read the pack stage's `rowSums`. */
fn useLhsRowSums(tileRow: u32, m: u32) {}

/** No row sums in the kernel (a split-K slice writes none; the i8 correction is the first slice's). */
const LHS_GATHERED: bool = false;

/** Never called (LHS_GATHERED is false). */
fn tileRowSums(tileRow: u32) -> vec4<u32> {
  return vec4<u32>();
}
