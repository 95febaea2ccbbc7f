// sgmat-bindings.wgsl: the declarations of the subgroup-matrix kernel (./sgmat.wgsl): the sizes it derives
// from the generated tiling constants (./config.ts: TILE_M, TILE_N, SG_ROWS, SG_COLS, KSTEP, BUFFERS,
// ROW_BYTES, OUT_BANDS, STAGING_WORDS, LHS_ROWS_STAGED and RHS_ROWS_STAGED: TILE_M and TILE_N, or 0 where
// that operand's fragments are loaded from the packed operand) and its staging buffer (TileParams and the operand bindings:
// ../tile.wgsl). They are a file of their own because they are what the host code reflects
// (src/gpu/reflect.ts), and the reflection parser does not read subgroup-matrix syntax; the kernel's
// source is enable + generated constants (./config.ts) + libraries + ../tile.wgsl + this file + sgmat.wgsl.
// StageWord (u32 for u8 fragments, i32 for i8) comes from the generated constants; the reflected
// declarations get it, and the default tiling's constants, from config.ts's reflection constants.

const ROW_WORDS: u32 = ROW_BYTES / 4u;     // a staged row: KSTEP bytes and 16 of padding (fewer bank conflicts)
const LHS_WORDS: u32 = LHS_ROWS_STAGED * ROW_WORDS; // one staged lhs tile (none: direct lhs)
const BUFFER_WORDS: u32 = (LHS_ROWS_STAGED + RHS_ROWS_STAGED) * ROW_WORDS; // lhs tile, then rhs tile (none: direct)
const OUT_STRIDE: u32 = TILE_N;            // elements per row of a staged result pass

// BUFFERS staging buffers during the k loop; the raw sums after it, OUT_BANDS subgroup rows per pass.
var<workgroup> stage: array<StageWord, STAGING_WORDS>;

/** What one workgroup computes (sgmatWork of sgmat-one-pass.wgsl or sgmat-split.wgsl). */
struct SgmatWork {
  rowBase: u32,     // the tile's first row and column in the band
  colBase: u32,
  live: bool,       // false past the last tile: the whole workgroup returns, so barriers stay uniform
  firstStep: u32,   // its k steps: firstStep .. firstStep + steps - 1, of KSTEP bytes
  steps: u32,
  slice: u32,       // its K slice (0 without split-K)
  firstSlice: bool, // slice 0: it adds the i8 fragments' correction to the raw sums
}
