// gemm.wgsl: the GEMM stage (pack -> GEMM -> output), workgroup-tiled and register-blocked. Each
// workgroup computes a TILE_M x TILE_N block of dst (TILE_M = WORKGROUP_Y * 4, TILE_N = WORKGROUP_X * 4);
// each invocation a 4x4 block, so it owns whole quads for the fused output stage (output.wgsl) whatever
// dst's storage order. The k loop walks TILE_KW packed words (4 k values each) at a time: both operand
// tiles are staged in workgroup memory, k-major, with vec4<u32> loads from the packed rows that
// pack.wgsl wrote (K padded to a multiple of 64, rows to a multiple of 64, so the hot loop has no bounds
// checks). The inner product is dot4 (dot4-native.wgsl or dot4-emulated.wgsl); raw sums wrap mod 2^32.

override WORKGROUP_X: u32 = 16u; // invocations along N
override WORKGROUP_Y: u32 = 16u; // invocations along M
override TILE_KW: u32 = 16u;     // packed words per k step; divides 16

@group(0) @binding(1) var<storage, read> lhsPacked: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> rhsPacked: array<vec4<u32>>;

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
  let tileM = WORKGROUP_Y * 4u;
  let tileN = WORKGROUP_X * 4u;
  let tilesN = params.bandCols / tileN;
  let tile = params.workgroupBase + wid.x + wid.y * nwg.x;
  if (tile >= tilesN * (params.bandRows / tileM)) {
    return; // whole workgroup: the barriers below stay uniform
  }
  let rowBase = (tile / tilesN) * tileM; // within the band
  let colBase = (tile % tilesN) * tileN;
  let threads = WORKGROUP_X * WORKGROUP_Y;
  let rowVec4s = params.depthWords / 4u;
  let stepVec4s = TILE_KW / 4u;

  var acc: array<vec4<u32>, 4>; // acc[r][c]: row 4*lid.y + r, column 4*lid.x + c of the tile
  for (var kw0 = 0u; kw0 < params.depthWords; kw0 += TILE_KW) {
    for (var i = tid; i < tileM * stepVec4s; i += threads) {
      let row = i / stepVec4s;
      let q = i % stepVec4s;
      let words = lhsPacked[(rowBase + row) * rowVec4s + kw0 / 4u + q];
      for (var j = 0u; j < 4u; j++) {
        lhsTile[(q * 4u + j) * WORKGROUP_Y + row / 4u][row % 4u] = words[j];
      }
    }
    for (var i = tid; i < tileN * stepVec4s; i += threads) {
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

  let m0 = params.bandM + rowBase + lid.y * 4u;
  let n0 = params.bandN + colBase + lid.x * 4u;
  if (params.dstColMajor != 0u) {
    for (var c = 0u; c < 4u; c++) {
      storeQuad(vec4<u32>(acc[0][c], acc[1][c], acc[2][c], acc[3][c]), m0, n0 + c);
    }
  } else {
    for (var r = 0u; r < 4u; r++) {
      storeQuad(acc[r], m0 + r, n0);
    }
  }
}
