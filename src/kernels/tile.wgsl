// tile.wgsl: the uniform and the operand bindings of the GEMM kernels that read packed operands band by
// band (pack -> GEMM -> output: dot4-tiled, dot4-wide, gemv, sgmat), beside the epilogue's bindings 0-4
// (src/epilogue/epilogue.wgsl). One declaration for all of them, bound by name by ./banded.ts, which
// fills TileParams with each kernel's tile values.

struct TileParams {
  depthWords: u32,       // padded K / 4: u32 words per packed lhs row
  bandM: u32,            // first dst row of this dispatch (lhsPacked is bound from that row)
  bandN: u32,            // first dst column of this dispatch (rhsPacked is bound from that column)
  bandRows: u32,         // dst rows of this dispatch's tiles (rounded up to the kernel's tile rows; gemv: M - bandM)
  bandCols: u32,         // columns holding dst elements, rounded up to the kernel's tile columns
  workgroupBase: u32,    // first tile of this dispatch's flattened workgroup grid
}

/** Where a workgroup's tile starts within the band, and whether the workgroup has one. */
struct TileOrigin {
  rowBase: u32,
  colBase: u32,
  live: bool, // false past the band's last tile: the whole workgroup returns, so barriers stay uniform
}

/**
 * The tile of workgroup wid in a grid of nwg: the band's tiles of tileM x tileN, row-major, counted from
 * tile.workgroupBase (src/gpu/plan.ts splits a grid larger than the workgroup-count limit).
 */
fn tileOrigin(wid: vec3<u32>, nwg: vec3<u32>, tileM: u32, tileN: u32) -> TileOrigin {
  let tilesN = tile.bandCols / tileN;
  let index = tile.workgroupBase + wid.x + wid.y * nwg.x;
  return TileOrigin((index / tilesN) * tileM, (index % tilesN) * tileN, index < tilesN * (tile.bandRows / tileM));
}

@group(0) @binding(5) var<uniform> tile: TileParams;
@group(0) @binding(6) var<storage, read> lhsPacked: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read> rhsPacked: array<vec4<u32>>;
