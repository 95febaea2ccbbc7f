// dot4-tile.wgsl: the k-tile loop of the dot4 GEMM kernels (pack -> GEMM -> output), written once: the
// tiled kernel (../dot4-tiled/gemm.wgsl) runs it over the full depth, split-K (../splitk/splitk.wgsl)
// over one slice. A workgroup computes a TILE_M x TILE_N tile, each invocation a 4x4 block; per step of
// TILE_KW packed words (4 k each) both operand tiles are staged in workgroup memory, k-major, with
// vec4<u32> loads from rows packed with K padded to 64 (src/pack/formats.ts: no bounds checks), then
// multiplied with dot4 (dot4-native.wgsl or dot4-emulated.wgsl); raw sums wrap mod 2^32. The one
// variation point is the rhs word load (stageRhs): 8-bit lanes ('u8k4-r64'), or, with RHS_NIBBLES, two
// 4-bit values per byte ('u4k8-r64') unpacked with two masks. The including kernel declares
// lhsPacked and rhsPacked.

override TILE_M: u32 = 64u;      // dst rows per workgroup, a multiple of 4
override TILE_N: u32 = 64u;      // dst columns per workgroup, likewise
override TILE_KW: u32 = 16u;     // packed (lhs) words per k step; a multiple of 4 dividing 16
override RHS_NIBBLES: bool = false;
override WORKGROUP_X: u32 = TILE_N / 4u; // invocations along N
override WORKGROUP_Y: u32 = TILE_M / 4u; // invocations along M

// Tiles, k-major: element [kw][row / 4][row % 4] is word kw of packed row `row` of the tile.
var<workgroup> lhsTile: array<vec4<u32>, TILE_KW * WORKGROUP_Y>;
var<workgroup> rhsTile: array<vec4<u32>, TILE_KW * WORKGROUP_X>;

/** Stages the lhs words [kw0, kw0 + TILE_KW) of the tile's rows. */
fn stageLhs(rowBase: u32, lhsVec4s: u32, kw0: u32, tid: u32) {
  let stepVec4s = TILE_KW / 4u;
  for (var i = tid; i < TILE_M * stepVec4s; i += WORKGROUP_X * WORKGROUP_Y) {
    let row = i / stepVec4s;
    let q = i % stepVec4s;
    let words = lhsPacked[(rowBase + row) * lhsVec4s + kw0 / 4u + q];
    for (var j = 0u; j < 4u; j++) {
      lhsTile[(q * 4u + j) * WORKGROUP_Y + row / 4u][row % 4u] = words[j];
    }
  }
}

/** Stages the rhs words of the same k range as 8-bit lanes: the variation point (RHS_NIBBLES). */
fn stageRhs(colBase: u32, rhsVec4s: u32, kw0: u32, tid: u32) {
  let threads = WORKGROUP_X * WORKGROUP_Y;
  let stepVec4s = TILE_KW / 4u;
  if (RHS_NIBBLES) {
    // Each rhs vec4 holds 32 k: 8 words of the 8-bit tile.
    let half = stepVec4s / 2u;
    for (var i = tid; i < TILE_N * half; i += threads) {
      let col = i / half;
      let q = i % half;
      let words = rhsPacked[(colBase + col) * rhsVec4s + kw0 / 8u + q];
      for (var j = 0u; j < 4u; j++) {
        rhsTile[(q * 8u + 2u * j) * WORKGROUP_X + col / 4u][col % 4u] = words[j] & 0x0f0f0f0fu;
        rhsTile[(q * 8u + 2u * j + 1u) * WORKGROUP_X + col / 4u][col % 4u] = (words[j] >> 4u) & 0x0f0f0f0fu;
      }
    }
  } else {
    for (var i = tid; i < TILE_N * stepVec4s; i += threads) {
      let col = i / stepVec4s;
      let q = i % stepVec4s;
      let words = rhsPacked[(colBase + col) * rhsVec4s + kw0 / 4u + q];
      for (var j = 0u; j < 4u; j++) {
        rhsTile[(q * 4u + j) * WORKGROUP_X + col / 4u][col % 4u] = words[j];
      }
    }
  }
}

/**
 * The raw sums over packed lhs words [kwBegin, kwEnd) of the 4x4 block of invocation lid in the tile
 * at (rowBase, colBase) of the band: acc[r][c] is row 4*lid.y + r, column 4*lid.x + c of the tile.
 * Called by the whole workgroup in uniform control flow (it holds barriers).
 */
fn dot4TileLoop(rowBase: u32, colBase: u32, lhsVec4s: u32, rhsVec4s: u32, kwBegin: u32, kwEnd: u32, lid: vec3<u32>, tid: u32) -> array<vec4<u32>, 4> {
  var acc: array<vec4<u32>, 4>;
  for (var kw0 = kwBegin; kw0 < kwEnd; kw0 += TILE_KW) {
    stageLhs(rowBase, lhsVec4s, kw0, tid);
    stageRhs(colBase, rhsVec4s, kw0, tid);
    workgroupBarrier();
    for (var kw = 0u; kw < TILE_KW; kw++) {
      let a = lhsTile[kw * WORKGROUP_Y + lid.y];
      let b = rhsTile[kw * WORKGROUP_X + lid.x];
      for (var r = 0u; r < 4u; r++) {
        acc[r] += vec4<u32>(dot4(a[r], b.x), dot4(a[r], b.y), dot4(a[r], b.z), dot4(a[r], b.w));
      }
    }
    workgroupBarrier();
  }
  return acc;
}
