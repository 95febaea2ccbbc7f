// lhs.wgsl: the lhs half of the wide dot4 kernel's staging (./gemm.wgsl; the GEMM stage of pack -> GEMM ->
// output) from packed rows ('u8k4-r128': lhsPacked, ../tile.wgsl read as PackedLoad), the pack stage's
// row sums serving the epilogue, so the two hooks for sums computed in the kernel do nothing. Composed
// before gemm.wgsl; ./lhs-patches.wgsl is the other form, under the same names.

/** Piece p (PackedLoad of VEC_WORDS words) of packed lhs row `row` of the band (load slot `slot`). */
fn lhsPiece(slot: u32, row: u32, rowLoads: u32, p: u32) -> PackedLoad {
  return lhsPacked[row * rowLoads + p];
}

/** The lhs row sums come from the pack stage: nothing to share. */
fn shareLhsRowSums(t: u32) {}

/** Likewise: the epilogue reads the pack stage's `rowSums`. */
fn useLhsRowSums(tileRow: u32, m: u32) {}
