// gemm.wgsl: the dot4-tiled GEMM kernel (pack -> GEMM -> output), workgroup-tiled and register-blocked.
// Each workgroup computes a TILE_M x TILE_N block of dst; each invocation a 4x4 block, so it owns whole
// quads for the shared epilogue (storeQuad, epilogue.wgsl) whatever dst's storage order. The k loop walks
// TILE_KW packed words (4 k values each) at a time: both operand tiles are staged in workgroup memory,
// k-major, with vec4<u32> loads from rows packed in the 'u8k4-r64' format (src/pack/formats.ts: K
// padded to 64, rows to 64, so the hot loop has no bounds checks). The inner product is dot4
// (dot4-native.wgsl or dot4-emulated.wgsl); raw sums wrap mod 2^32. Host code: ./kernel.ts.

override TILE_M: u32 = 64u;      // dst rows per workgroup, a multiple of 4 dividing 64
override TILE_N: u32 = 64u;      // dst columns per workgroup, likewise
override TILE_KW: u32 = 16u;     // packed words per k step; a multiple of 4 dividing 16
override WORKGROUP_X: u32 = TILE_N / 4u; // invocations along N
override WORKGROUP_Y: u32 = TILE_M / 4u; // invocations along M

struct TileParams {
  depthWords: u32,       // padded K / 4: u32 words per packed row
  bandM: u32,            // first dst row of this dispatch (lhsPacked is bound from that row)
  bandN: u32,            // first dst column of this dispatch (rhsPacked is bound from that column)
  bandRows: u32,         // rows of this dispatch's tiles (rows holding dst elements, rounded up to TILE_M)
  bandCols: u32,         // columns, likewise
  workgroupBase: u32,    // first tile of this dispatch's flattened workgroup grid
}

@group(0) @binding(5) var<uniform> tile: TileParams;
@group(0) @binding(6) var<storage, read> lhsPacked: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read> rhsPacked: array<vec4<u32>>;
// Tiles, k-major: element [kw][row / 4][row % 4] is word kw of packed row `row` of the tile.
var<workgroup> lhsTile: array<vec4<u32>, TILE_KW * WORKGROUP_Y>;
var<workgroup> rhsTile: array<vec4<u32>, TILE_KW * WORKGROUP_X>;

@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y)
fn gemm(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let tilesN = tile.bandCols / TILE_N;
  let index = tile.workgroupBase + wid.x + wid.y * nwg.x;
  if (index >= tilesN * (tile.bandRows / TILE_M)) {
    return; // whole workgroup: the barriers below stay uniform
  }
  let rowBase = (index / tilesN) * TILE_M; // within the band
  let colBase = (index % tilesN) * TILE_N;
  let threads = WORKGROUP_X * WORKGROUP_Y;
  let rowVec4s = tile.depthWords / 4u;
  let stepVec4s = TILE_KW / 4u;

  var acc: array<vec4<u32>, 4>; // acc[r][c]: row 4*lid.y + r, column 4*lid.x + c of the tile
  for (var kw0 = 0u; kw0 < tile.depthWords; kw0 += TILE_KW) {
    for (var i = tid; i < TILE_M * stepVec4s; i += threads) {
      let row = i / stepVec4s;
      let q = i % stepVec4s;
      let words = lhsPacked[(rowBase + row) * rowVec4s + kw0 / 4u + q];
      for (var j = 0u; j < 4u; j++) {
        lhsTile[(q * 4u + j) * WORKGROUP_Y + row / 4u][row % 4u] = words[j];
      }
    }
    for (var i = tid; i < TILE_N * stepVec4s; i += threads) {
      let col = i / stepVec4s;
      let q = i % stepVec4s;
      let words = rhsPacked[(colBase + col) * rowVec4s + kw0 / 4u + q];
      for (var j = 0u; j < 4u; j++) {
        rhsTile[(q * 4u + j) * WORKGROUP_X + col / 4u][col % 4u] = words[j];
      }
    }
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

  let m0 = tile.bandM + rowBase + lid.y * 4u;
  let n0 = tile.bandN + colBase + lid.x * 4u;
  storeBlock(acc, m0, n0);
}
