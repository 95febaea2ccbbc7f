// dot4-tile.wgsl: the k-tile loop of the dot4 GEMM kernels (pack -> GEMM -> output), written once: the
// tiled kernel (../dot4-tiled/gemm.wgsl) runs it over the full depth, split-K (../splitk/splitk.wgsl)
// over one slice. A workgroup computes a TILE_M x TILE_N tile, each invocation THREAD_M x THREAD_N of
// it (4 or 8 each, in 4x4 quads strided by the workgroup's width; split-K: 4x4). Per step of TILE_KW
// packed words (4 k each) both operand tiles are staged in workgroup memory, k-major, with global loads
// of VEC_WORDS packed words (PackedLoad: u32, vec2<u32> or vec4<u32>) from rows packed with K padded to
// 64 (src/pack/formats.ts: no bounds checks), then multiplied with dot4 (dot4-native.wgsl or
// dot4-emulated.wgsl); raw sums wrap mod 2^32. THREAD_M, THREAD_N, VEC_WORDS, PackedLoad and packedWord
// are generated constants (../banded.ts dot4ThreadConstants, dot4LoadConstants). The one variation
// point is the rhs word load (stageRhs): 8-bit lanes ('u8k4-r64'), or, with RHS_NIBBLES, two 4-bit
// values per byte ('u4k8-r64') unpacked with two masks. The including kernel declares lhsPacked and
// rhsPacked as arrays of PackedLoad; the row lengths it passes count PackedLoads.

override TILE_M: u32 = 64u;      // dst rows per workgroup, a multiple of 4
override TILE_N: u32 = 64u;      // dst columns per workgroup, likewise
override TILE_KW: u32 = 16u;     // packed (lhs) words per k step; a multiple of 4 dividing 16
override RHS_NIBBLES: bool = false;
override WORKGROUP_X: u32 = TILE_N / THREAD_N; // invocations along N
override WORKGROUP_Y: u32 = TILE_M / THREAD_M; // invocations along M
const QUADS_M: u32 = THREAD_M / 4u;             // 4x4 quads per invocation along M
const QUADS_N: u32 = THREAD_N / 4u;
const ACC_VEC4S: u32 = 4u * QUADS_M * QUADS_N;  // accumulators: 4 vec4 per quad

// Tiles, k-major: element [kw][row / 4][row % 4] is word kw of packed row `row` of the tile.
var<workgroup> lhsTile: array<vec4<u32>, TILE_KW * (TILE_M / 4u)>;
var<workgroup> rhsTile: array<vec4<u32>, TILE_KW * (TILE_N / 4u)>;

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
 * The raw sums over packed lhs words [kwBegin, kwEnd) of invocation lid's quads in the tile at (rowBase,
 * colBase) of the band: acc[(qm * QUADS_N + qn) * 4 + r][c] is row 4 (qm WORKGROUP_Y + lid.y) + r,
 * column 4 (qn WORKGROUP_X + lid.x) + c of the tile (at 4x4: acc[r][c], row 4 lid.y + r, column 4 lid.x + c).
 * Called by the whole workgroup in uniform control flow (it holds barriers).
 */
fn dot4TileLoop(rowBase: u32, colBase: u32, lhsLoads: u32, rhsLoads: u32, kwBegin: u32, kwEnd: u32, lid: vec3<u32>, tid: u32) -> array<vec4<u32>, ACC_VEC4S> {
  var acc: array<vec4<u32>, ACC_VEC4S>;
  for (var kw0 = kwBegin; kw0 < kwEnd; kw0 += TILE_KW) {
    stageLhs(rowBase, lhsLoads, kw0, tid);
    stageRhs(colBase, rhsLoads, kw0, tid);
    workgroupBarrier();
    for (var kw = 0u; kw < TILE_KW; kw++) {
      for (var qm = 0u; qm < QUADS_M; qm++) {
        let a = lhsTile[kw * (TILE_M / 4u) + qm * WORKGROUP_Y + lid.y];
        for (var qn = 0u; qn < QUADS_N; qn++) {
          let b = rhsTile[kw * (TILE_N / 4u) + qn * WORKGROUP_X + lid.x];
          let o = (qm * QUADS_N + qn) * 4u;
          for (var r = 0u; r < 4u; r++) {
            acc[o + r] += vec4<u32>(dot4(a[r], b.x), dot4(a[r], b.y), dot4(a[r], b.z), dot4(a[r], b.w));
          }
        }
      }
    }
    workgroupBarrier();
  }
  return acc;
}
