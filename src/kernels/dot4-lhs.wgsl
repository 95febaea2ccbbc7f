// dot4-lhs.wgsl: the lhs tile's staging of the dot4 k-tile loop (./dot4-tile.wgsl; the GEMM stage of pack
// -> GEMM -> output) from packed rows ('u8k4-r64': lhsPacked, ./tile.wgsl), the pack stage's row sums
// serving the epilogue. Composed before dot4-tile.wgsl; ./dot4-lhs-patches.wgsl is the other form, under
// the same names.

/** Stages the lhs words [kw0, kw0 + TILE_KW) of the tile's rows (lhsLoads: PackedLoads per packed row). */
fn stageLhs(rowBase: u32, lhsLoads: u32, kw0: u32, tid: u32) {
  let stepLoads = TILE_KW / VEC_WORDS;
  for (var i = tid; i < TILE_M * stepLoads; i += WORKGROUP_X * WORKGROUP_Y) {
    let row = i / stepLoads;
    let q = i % stepLoads;
    let words = lhsPacked[(rowBase + row) * lhsLoads + kw0 / VEC_WORDS + q];
    for (var j = 0u; j < VEC_WORDS; j++) {
      lhsTile[(q * VEC_WORDS + j) * (TILE_M / 4u) + row / 4u][row % 4u] = packedWord(words, j);
    }
  }
}

/** The lhs row sums come from the pack stage (`rowSums`): none in the kernel. */
const LHS_GATHERED: bool = false;

/** Nothing to share. */
fn shareLhsRowSums(tid: u32) {}

/** Never called (LHS_GATHERED is false): the kernels read the pack stage's row sums. */
fn tileRowSums(tileRow: u32) -> vec4<u32> {
  return vec4<u32>();
}
