// splitk.wgsl: the partial pass of the split-K kernels (pack -> GEMM -> output) for small-M GEMMs: the
// k-tile loop of ../dot4-tile.wgsl (TILE_M x TILE_N workgroup tiles of 4x4 register blocks, operand
// tiles staged k-major in workgroup memory) over one K slice of stepsPerSplit steps of TILE_KW words.
// Workgroup index = split * tiles + tile. It stores its raw sums (u32, wrapping) to the workspace, [split][row][col] over the band's live rows and columns; ./reduce.wgsl sums the slices and
// runs the epilogue (raw sums add mod 2^32, so reduce-then-epilogue is exact). No epilogue here.
// lhs is packed in 'u8k4-r64', or, for a convolution, gathered from its input by ../dot4-lhs-patches.wgsl
// (composed in place of ../dot4-lhs.wgsl), which sums the rows of each slice: the slice's row sums follow
// the raw sums in the workspace, [split][row] from word rowSumsAt, written by the workgroups of the
// band's first tile column, and the reduce pass adds them up for the epilogue. rhs is packed in
// 'u8k4-r64', or in 'u4k8-r64' (RHS_NIBBLES: the loop's rhs load unpacks it with two masks,
// src/pack/formats.ts). Host code: ./kernel.ts.

struct SplitParams {
  depthWords: u32,       // padded K / 4: u32 words per packed lhs row (a multiple of TILE_KW)
  bandRows: u32,         // live rows of the band, rounded up to TILE_M
  bandCols: u32,         // live columns, rounded up to TILE_N
  workgroupBase: u32,    // first workgroup of this dispatch's flattened grid
  splits: u32,
  stepsPerSplit: u32,
  bandM: u32,            // first dst row of the band
  rowSumsAt: u32,        // workspace word of slice 0's row sums (a gathered lhs), after the raw sums
}

@group(0) @binding(0) var<uniform> split: SplitParams;
@group(0) @binding(1) var<storage, read> lhsPacked: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> rhsPacked: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> workspace: array<vec4<u32>>;

/** The first dst row of the band: where a gathered lhs's rows start (../dot4-lhs-patches.wgsl). */
fn bandFirstRow() -> u32 {
  return split.bandM;
}

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
  let lhsVec4s = split.depthWords / 4u;
  let rhsVec4s = select(lhsVec4s, lhsVec4s / 2u, RHS_NIBBLES);
  let kwBegin = slice * split.stepsPerSplit * TILE_KW;
  let kwEnd = min(split.depthWords, kwBegin + split.stepsPerSplit * TILE_KW);

  let acc = dot4TileLoop(rowBase, colBase, lhsVec4s, rhsVec4s, kwBegin, kwEnd, lid, tid).q00; // 4x4: one quad

  shareLhsRowSums(tid); // a gathered lhs: this slice's row sums (../dot4-lhs-patches.wgsl); packed: nothing
  if (LHS_GATHERED && colBase == 0u && tid < TILE_M / 4u) {
    workspace[(split.rowSumsAt + slice * split.bandRows + rowBase) / 4u + tid] = tileRowSums(tid * 4u);
  }

  let row0 = rowBase + lid.y * 4u;
  let col0 = colBase + lid.x * 4u;
  for (var r = 0u; r < 4u; r++) {
    workspace[((slice * split.bandRows + row0 + r) * split.bandCols + col0) / 4u] = acc[r];
  }
}
