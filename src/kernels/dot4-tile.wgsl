// dot4-tile.wgsl: the k-tile loop of the dot4 GEMM kernels (pack -> GEMM -> output), written once: the
// tiled kernel (./dot4-tiled/gemm.wgsl) runs it over the full depth, split-K (./splitk/splitk.wgsl)
// over one slice. A workgroup computes a TILE_M x TILE_N tile, each invocation THREAD_M x THREAD_N of
// it (4 or 8 each, in 4x4 quads strided by the workgroup's width; split-K: 4x4). Per step of TILE_KW
// packed words (4 k each) both operand tiles are staged in workgroup memory, k-major, with global loads
// of VEC_WORDS packed words (PackedLoad: u32, vec2<u32> or vec4<u32>) from rows packed with K padded to
// 64 (src/pack/formats.ts: no bounds checks), then multiplied with dot4 (dot4-native.wgsl or
// dot4-emulated.wgsl); raw sums wrap mod 2^32. THREAD_M, THREAD_N, VEC_WORDS, PackedLoad and packedWord
// are generated constants (./banded.ts dot4ThreadBlock, dot4LoadConstants). Two variation points: the
// lhs tile's staging (stageLhs), from packed rows (./dot4-lhs.wgsl) or gathered from a convolution's
// input (./dot4-lhs-patches.wgsl), one of them composed before this file; and the rhs word load
// (stageRhs): 8-bit lanes ('u8k4-r64'), or, with RHS_NIBBLES, two 4-bit values per byte ('u4k8-r64')
// unpacked with two masks. The including kernel declares lhsPacked and rhsPacked as arrays of
// PackedLoad; the row lengths it passes count PackedLoads.

override TILE_M: u32 = 64u;      // dst rows per workgroup, a multiple of 4
override TILE_N: u32 = 64u;      // dst columns per workgroup, likewise
override TILE_KW: u32 = 16u;     // packed (lhs) words per k step; a multiple of 4 dividing 16
override RHS_NIBBLES: bool = false;
override WORKGROUP_X: u32 = TILE_N / THREAD_N; // invocations along N
override WORKGROUP_Y: u32 = TILE_M / THREAD_M; // invocations along M

// Tiles, k-major: element [kw][row / 4][row % 4] is word kw of packed row `row` of the tile.
var<workgroup> lhsTile: array<vec4<u32>, TILE_KW * (TILE_M / 4u)>;
var<workgroup> rhsTile: array<vec4<u32>, TILE_KW * (TILE_N / 4u)>;

/** Stages the rhs words of the same k range as 8-bit lanes: the variation point (RHS_NIBBLES). */
fn stageRhs(colBase: u32, rhsLoads: u32, kw0: u32, tid: u32) {
  let threads = WORKGROUP_X * WORKGROUP_Y;
  let stepLoads = TILE_KW / VEC_WORDS;
  if (RHS_NIBBLES) {
    // Each rhs PackedLoad holds 8 * VEC_WORDS k: 2 * VEC_WORDS words of the 8-bit tile.
    let half = stepLoads / 2u;
    for (var i = tid; i < TILE_N * half; i += threads) {
      let col = i / half;
      let q = i % half;
      let words = rhsPacked[(colBase + col) * rhsLoads + kw0 / (2u * VEC_WORDS) + q];
      for (var j = 0u; j < VEC_WORDS; j++) {
        let w = packedWord(words, j);
        rhsTile[(q * 2u * VEC_WORDS + 2u * j) * (TILE_N / 4u) + col / 4u][col % 4u] = w & 0x0f0f0f0fu;
        rhsTile[(q * 2u * VEC_WORDS + 2u * j + 1u) * (TILE_N / 4u) + col / 4u][col % 4u] = (w >> 4u) & 0x0f0f0f0fu;
      }
    }
  } else {
    for (var i = tid; i < TILE_N * stepLoads; i += threads) {
      let col = i / stepLoads;
      let q = i % stepLoads;
      let words = rhsPacked[(colBase + col) * rhsLoads + kw0 / VEC_WORDS + q];
      for (var j = 0u; j < VEC_WORDS; j++) {
        rhsTile[(q * VEC_WORDS + j) * (TILE_N / 4u) + col / 4u][col % 4u] = packedWord(words, j);
      }
    }
  }
}

/**
 * The raw sums over packed lhs words [kwBegin, kwEnd) of invocation lid's register block (./dot4-block.wgsl)
 * in the tile at (rowBase, colBase) of the band: quad q{qm}{qn} holds rows 4 (qm WORKGROUP_Y + lid.y) ..
 * + 3 and columns 4 (qn WORKGROUP_X + lid.x) .. + 3 of the tile (at 4x4: q00 alone, rows 4 lid.y ..,
 * columns 4 lid.x ..). Called by the whole workgroup in uniform control flow (it holds barriers).
 */
fn dot4TileLoop(rowBase: u32, colBase: u32, lhsLoads: u32, rhsLoads: u32, kwBegin: u32, kwEnd: u32, lid: vec3<u32>, tid: u32) -> Block {
  var q00: Quad;
  var q01: Quad;
  var q10: Quad;
  var q11: Quad;
  for (var kw0 = kwBegin; kw0 < kwEnd; kw0 += TILE_KW) {
    stageLhs(rowBase, lhsLoads, kw0, tid);
    stageRhs(colBase, rhsLoads, kw0, tid);
    workgroupBarrier();
    for (var kw = 0u; kw < TILE_KW; kw++) {
      let a = kw * (TILE_M / 4u) + lid.y;
      let b = kw * (TILE_N / 4u) + lid.x;
      let lhs0 = lhsTile[a];
      let rhs0 = rhsTile[b];
      var lhs1 = vec4<u32>();
      var rhs1 = vec4<u32>();
      if (QUADS_M > 1u) {
        lhs1 = lhsTile[a + WORKGROUP_Y];
      }
      if (QUADS_N > 1u) {
        rhs1 = rhsTile[b + WORKGROUP_X];
      }
      q00 = dot4Quad(q00, lhs0, rhs0);
      if (QUADS_N > 1u) {
        q01 = dot4Quad(q01, lhs0, rhs1);
      }
      if (QUADS_M > 1u) {
        q10 = dot4Quad(q10, lhs1, rhs0);
      }
      if (QUADS_M > 1u && QUADS_N > 1u) {
        q11 = dot4Quad(q11, lhs1, rhs1);
      }
    }
    workgroupBarrier();
  }
  return Block(q00, q01, q10, q11);
}
