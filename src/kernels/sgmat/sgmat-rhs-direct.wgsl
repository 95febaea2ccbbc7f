// sgmat-rhs-direct.wgsl: the direct-rhs form of the subgroup-matrix kernel (./sgmat.wgsl; the GEMM stage
// of pack -> gemm -> output): the right fragments are loaded by subgroupMatrixLoad straight from the
// packed rhs in global memory, so no rhs byte is staged in workgroup memory (RHS_ROWS_STAGED is 0: the
// staging holds the lhs tile only, and loadStep / storeStep make no rhs loads, RHS_LOADS being 0).
// Composed in place of ./sgmat-rhs.wgsl and ./sgmat-right.wgsl, for the tilings with `rhsDirect`
// (./config.ts).
//
// The packed rhs ('u8k4-r64/-r128/-r256', src/pack/formats.ts) is an Np x Kp row-major byte matrix, i.e.
// the right matrix column-major with a stride of Kp bytes, and Kp is a multiple of 64: every fragment
// column is FRAG_K whole bytes of one packed row, and every row starts on a 64-byte boundary. The loads read
// an array of u32 and count offset and stride in its words (the builtins' current form, ./load-form.ts:
// a fragment column is FRAG_K / 4 words, a packed row tile.depthWords), so the operand is bound here a
// second time as words (binding 7 is `rhsPacked` of ../tile.wgsl, which this form never uses). Its bytes
// are in the uint8 domain, as u8 fragments read them; i8 fragments would need each byte XORed with 0x80,
// which a direct load cannot do, so these tilings run u8 configurations only (./config.ts tilingProblem).
// Every load is in bounds by construction: Np is padded to the tile's side, and sgmat.wgsl stops each
// k step at the packed depth (a 128-byte step over a depth padded to 64 never reads past a row). That
// matters for exactness, not only safety: under Dawn's robustness (Tint's subgroup-matrix clamp) a load
// whose last column would end past the binding is not dropped but redirected to offset 0 with the
// minimum stride, so it would read the wrong bytes without any error.

@group(0) @binding(7) var<storage, read> rhsWords: array<u32>;

const RHS_LOADS: u32 = 0u; // no rhs pieces staged: loadStep and storeStep never call the two below

fn rhsLoad(colBase: u32, index: u32, kt: u32, rowVec4s: u32) -> vec4<u32> {
  return vec4<u32>(0u);
}

fn rhsStore(base: u32, index: u32, v: vec4<u32>) {}

/**
 * The right fragment of dst columns col .. col + FRAG_N - 1 of the tile that starts at band column
 * colBase, k = kBase + kk .. + FRAG_K - 1: packed row colBase + col, column-major, Kp bytes apart.
 */
fn rightFragment(rhsBase: u32, colBase: u32, col: u32, kBase: u32, kk: u32) -> RightFragment {
  return subgroupMatrixLoad<RightFragment, col_major>(&rhsWords, (colBase + col) * tile.depthWords + (kBase + kk) / 4u, tile.depthWords);
}
