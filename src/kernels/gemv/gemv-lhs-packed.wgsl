// gemv-lhs-packed.wgsl: where the gemv kernel (pack -> GEMM -> output, ./gemv.wgsl) reads an lhs that the
// pack stage (src/pack/pack.wgsl) or a prepack wrote in 'u8k4-r64', with its row sums (bound to the
// epilogue's `rowSums`). The other source of lhs chunks is ./gemv-lhs-raw.wgsl.

const LHS_RAW: bool = false; // the epilogue reads the pack stage's row sums

/** Nothing to prepare for the workgroup's rows. */
fn lhsBegin(rowBase: u32) {}

/** The packed lhs words 4c..4c+3 (k = 16c..16c+15) of band row `row`. */
fn lhsChunk(row: u32, c: u32) -> vec4<u32> {
  return lhsPacked[row * (tile.depthWords / 4u) + c];
}
