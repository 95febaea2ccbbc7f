// splitk.wgsl: the partial pass of the split-K kernels (pack -> GEMM -> output) for small-M GEMMs: the
// dot4-tiled loop of src/kernels/dot4-tiled/gemm.wgsl (TILE_M x TILE_N workgroup tiles of 4x4 register
// blocks, operand tiles staged k-major in workgroup memory) over one K slice of stepsPerSplit steps of
// TILE_KW words. Workgroup index = split * tiles + tile. It stores its raw sums (u32, wrapping) to the
// workspace, [split][row][col] over the band's live rows and columns; ./reduce.wgsl sums the slices and
// runs the epilogue (raw sums add mod 2^32, so reduce-then-epilogue is exact). No epilogue here.
// lhs is packed in 'u8k4-r64'; rhs in 'u8k4-r64', or in 'u4k8-r64' (RHS_NIBBLES), unpacked into the
// 8-bit staging tile with two masks (src/pack/formats.ts). Host code: ./kernel.ts.

override TILE_M: u32 = 32u;      // dst rows per workgroup, a multiple of 4
override TILE_N: u32 = 32u;      // dst columns per workgroup, likewise
override TILE_KW: u32 = 16u;     // packed lhs words per k step (64 k: src/kernels/splitk/partition.ts SPLITK_STEP)
override RHS_NIBBLES: bool = false;
override WORKGROUP_X: u32 = TILE_N / 4u;
override WORKGROUP_Y: u32 = TILE_M / 4u;

struct SplitParams {
  depthWords: u32,       // padded K / 4: u32 words per packed lhs row (a multiple of TILE_KW)
  bandRows: u32,         // live rows of the band, rounded up to TILE_M
  bandCols: u32,         // live columns, rounded up to TILE_N
  workgroupBase: u32,    // first workgroup of this dispatch's flattened grid
  splits: u32,
  stepsPerSplit: u32,
}

@group(0) @binding(0) var<uniform> split: SplitParams;
@group(0) @binding(1) var<storage, read> lhsPacked: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> rhsPacked: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> workspace: array<vec4<u32>>;
var<workgroup> lhsTile: array<vec4<u32>, TILE_KW * WORKGROUP_Y>;
var<workgroup> rhsTile: array<vec4<u32>, TILE_KW * WORKGROUP_X>;

@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y)
fn partial(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let tilesN = split.bandCols / TILE_N;
  let tiles = tilesN * (split.bandRows / TILE_M);
  let index = split.workgroupBase + wid.x + wid.y * nwg.x;
  if (index >= tiles * split.splits) {
    return; // whole workgroup: the barriers below stay uniform
  }
  let slice = index / tiles;
  let rowBase = ((index % tiles) / tilesN) * TILE_M;
  let colBase = ((index % tiles) % tilesN) * TILE_N;
  let threads = WORKGROUP_X * WORKGROUP_Y;
  let lhsVec4s = split.depthWords / 4u;
  let rhsVec4s = select(lhsVec4s, lhsVec4s / 2u, RHS_NIBBLES);
  let stepVec4s = TILE_KW / 4u;
  let kwBegin = slice * split.stepsPerSplit * TILE_KW;
  let kwEnd = min(split.depthWords, kwBegin + split.stepsPerSplit * TILE_KW);

  var acc: array<vec4<u32>, 4>; // acc[r][c]: row 4*lid.y + r, column 4*lid.x + c of the tile
  for (var kw0 = kwBegin; kw0 < kwEnd; kw0 += TILE_KW) {
    for (var i = tid; i < TILE_M * stepVec4s; i += threads) {
      let row = i / stepVec4s;
      let q = i % stepVec4s;
      let words = lhsPacked[(rowBase + row) * lhsVec4s + kw0 / 4u + q];
      for (var j = 0u; j < 4u; j++) {
        lhsTile[(q * 4u + j) * WORKGROUP_Y + row / 4u][row % 4u] = words[j];
      }
    }
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

  let row0 = rowBase + lid.y * 4u;
  let col0 = colBase + lid.x * 4u;
  for (var r = 0u; r < 4u; r++) {
    workspace[((slice * split.bandRows + row0 + r) * split.bandCols + col0) / 4u] = acc[r];
  }
}
