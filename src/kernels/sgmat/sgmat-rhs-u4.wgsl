// sgmat-rhs-u4.wgsl: the rhs half of the subgroup-matrix kernel's staging (./sgmat.wgsl) for 4-bit
// weights stored two values per byte ('u4k8-r64', src/pack/formats.ts: word w of a packed row holds
// k = 8w..8w+7, byte j's low nibble k = 8w+j and its high nibble 8w+j+4). Per k step each of the TILE_N
// rows is KSTEP / 32 16-byte loads from global memory (half the bytes of an 8-bit row), each unpacked
// into the 8 words (32 bytes, 32 k) of the staged row the 8-bit staging writes: (w & 0x0f0f0f0f) and
// ((w >> 4) & 0x0f0f0f0f) are the uint8-domain words of k..k+3 and k+4..k+7. The fragments then load
// as for 8-bit rows, and the values, zero points and row/column sums are those of the pack stage, so
// the shared epilogue (and SIGNED_FRAGMENTS' XOR 0x80 domain, through stageWord) applies unchanged.
// Past the packed depth (a 128-byte k step over a depth padded to 64) the lhs pieces are zeros of the
// fragment's type, so the rhs values there multiply by zero: they are staged from zero nibbles.
// Composed in place of sgmat-rhs.wgsl (same three names) for the '-u4' kernels of ./kernel.ts.

const NIBBLE_LOADS: u32 = KSTEP / 32u;          // 16-byte loads of a nibble row per k step (32 k each)
const RHS_LOADS: u32 = TILE_N * NIBBLE_LOADS;   // 16-byte global loads of the rhs tile per k step

/** Load `index` of k step kt for the rhs tile at colBase: load index % NIBBLE_LOADS of row index / NIBBLE_LOADS. */
fn rhsLoad(colBase: u32, index: u32, kt: u32, rowVec4s: u32) -> vec4<u32> {
  let nibbleVec4s = rowVec4s / 2u; // a nibble row is half the bytes of an lhs row (depth padded to 64)
  let p = kt * NIBBLE_LOADS + index % NIBBLE_LOADS;
  if (p >= nibbleVec4s) {
    return vec4<u32>(0u);
  }
  return rhsPacked[(colBase + index / NIBBLE_LOADS) * nibbleVec4s + p];
}

/** Unpacks load `index` into 8 words of the staged rhs tile that starts at word `base`. */
fn rhsStore(base: u32, index: u32, v: vec4<u32>) {
  let word = base + (index / NIBBLE_LOADS) * ROW_WORDS + (index % NIBBLE_LOADS) * 8u;
  for (var j = 0u; j < 4u; j++) {
    stage[word + 2u * j] = stageWord(v[j] & 0x0f0f0f0fu);
    stage[word + 2u * j + 1u] = stageWord((v[j] >> 4u) & 0x0f0f0f0fu);
  }
}
