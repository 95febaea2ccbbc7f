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

@group(0) @binding(5) var<uniform> tile: TileParams;
@group(0) @binding(6) var<storage, read> lhsPacked: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read> rhsPacked: array<vec4<u32>>;
