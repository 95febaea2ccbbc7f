// sgmat-right.wgsl: where the subgroup-matrix kernel (./sgmat.wgsl; the GEMM stage of
// pack -> gemm -> output) loads its right fragments from when the rhs is staged in workgroup memory
// (./sgmat-rhs.wgsl, or the nibble rows of ./sgmat-rhs-u4.wgsl): the staged rhs tile, one padded row of
// ROW_BYTES per dst column, read column-major. Composed after the rhs staging and before sgmat.wgsl; the
// direct-rhs tilings compose ./sgmat-rhs-direct.wgsl instead, which loads the fragments from the packed
// operand in global memory under the same name.

/**
 * The right fragment of dst columns col .. col + FRAG_N - 1 of the tile (col: from the tile's first
 * column), k = kBase + kk .. + FRAG_K - 1 of the packed depth: kk bytes (kk / 4 words) into the staged rows at
 * word rhsBase of `stage` (kBase and colBase locate the same bytes in the packed operand; the staging has them).
 */
fn rightFragment(rhsBase: u32, colBase: u32, col: u32, kBase: u32, kk: u32) -> RightFragment {
  return subgroupMatrixLoad<RightFragment, col_major>(&stage, rhsBase + col * ROW_WORDS + kk / 4u, ROW_WORDS);
}
