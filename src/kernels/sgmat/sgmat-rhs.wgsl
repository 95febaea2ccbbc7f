// sgmat-rhs.wgsl: the rhs half of the subgroup-matrix kernel's staging (./sgmat.wgsl), for rhs rows of
// 8-bit values ('u8k4-r64' / 'u8k4-r128', src/pack/formats.ts): per k step each of the TILE_N rows is
// PIECES 16-byte loads from global memory, each stored as 4 words of the staged row (uint8 domain, or
// int8 for signed fragments). Composed between sgmat-bindings.wgsl and sgmat.wgsl; the nibble rows of
// the '-u4' variant are read by sgmat-rhs-u4.wgsl instead, with the same three names.

const RHS_LOADS: u32 = TILE_N * PIECES; // 16-byte global loads of the rhs tile per k step

/** Load `index` of k step kt for the rhs tile at colBase: piece index % PIECES of row index / PIECES. */
fn rhsLoad(colBase: u32, index: u32, kt: u32, rowVec4s: u32) -> vec4<u32> {
  let p = kt * PIECES + index % PIECES;
  if (p >= rowVec4s) {
    return PAST_DEPTH;
  }
  return rhsPacked[(colBase + index / PIECES) * rowVec4s + p];
}

/** Stores load `index` into the staged rhs tile that starts at word `base`. */
fn rhsStore(base: u32, index: u32, v: vec4<u32>) {
  let word = base + (index / PIECES) * ROW_WORDS + (index % PIECES) * 4u;
  for (var j = 0u; j < 4u; j++) {
    stage[word + j] = stageWord(v[j]);
  }
}
