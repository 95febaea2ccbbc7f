// gemv.wgsl: the gemv kernel (pack -> GEMM -> output) for small M, e.g. matrix-vector products in LLM
// decoding (M = 1), where a 64x64 tile would leave the machine idle. Each workgroup computes 4 dst rows
// x COLUMNS columns; its COLUMNS x SLICES invocations split K: invocation (column, slice) sums the
// words slice, slice + SLICES, ... of one rhs column with vec4<u32> loads (consecutive invocations read
// consecutive 16-byte chunks of the same packed column, so loads coalesce), then the slices are reduced
// in workgroup memory and COLUMNS invocations run the shared epilogue (epilogue.wgsl) on quads.
// Operands are packed in the 'u8k4-r64' format (src/pack/formats.ts). Host code: ./kernel.ts.

override COLUMNS: u32 = 16u; // dst columns per workgroup, a multiple of 4
override SLICES: u32 = 16u;  // invocations sharing one column's K, a power of two

struct TileParams {
  depthWords: u32,       // padded K / 4: u32 words per packed row
  bandM: u32,            // first dst row of this dispatch (lhsPacked is bound from that row)
  bandN: u32,            // first dst column of this dispatch (rhsPacked is bound from that column)
  bandRows: u32,         // rows of this dispatch's row groups (rows holding dst elements, rounded up to 4)
  bandCols: u32,         // columns, rounded up to COLUMNS
  workgroupBase: u32,    // first row group of this dispatch's flattened workgroup grid
}

@group(0) @binding(5) var<uniform> tile: TileParams;
@group(0) @binding(6) var<storage, read> lhsPacked: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read> rhsPacked: array<vec4<u32>>;

var<workgroup> partial: array<vec4<u32>, COLUMNS * SLICES>; // [column][slice]: 4 rows' partial sums

@compute @workgroup_size(SLICES, COLUMNS)
fn gemv(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
) {
  let groupsN = tile.bandCols / COLUMNS;
  let group = tile.workgroupBase + wid.x + wid.y * nwg.x;
  if (group >= groupsN * (tile.bandRows / 4u)) {
    return;
  }
  let rowBase = (group / groupsN) * 4u; // within the band
  let colBase = (group % groupsN) * COLUMNS;
  let slice = lid.x;
  let column = lid.y;
  let rowVec4s = tile.depthWords / 4u;

  var sum = vec4<u32>(0u);
  let rhsRow = (colBase + column) * rowVec4s;
  for (var q = slice; q < rowVec4s; q += SLICES) {
    let b = rhsPacked[rhsRow + q];
    for (var r = 0u; r < 4u; r++) {
      let a = lhsPacked[(rowBase + r) * rowVec4s + q];
      sum[r] += dot4(a.x, b.x) + dot4(a.y, b.y) + dot4(a.z, b.z) + dot4(a.w, b.w);
    }
  }
  partial[column * SLICES + slice] = sum;
  workgroupBarrier();
  for (var half = SLICES / 2u; half > 0u; half /= 2u) {
    if (slice < half) {
      partial[column * SLICES + slice] += partial[column * SLICES + slice + half];
    }
    workgroupBarrier();
  }
  // Invocations with slice == 0 hold one column's 4 row sums; store them as quads.
  if (slice != 0u) {
    return;
  }
  let m0 = tile.bandM + rowBase;
  let n = tile.bandN + colBase + column;
  if (dstColMajor()) {
    storeQuad(partial[column * SLICES], m0, n);
  } else if (column % 4u == 0u) {
    for (var r = 0u; r < 4u; r++) {
      let raw = vec4<u32>(partial[column * SLICES][r], partial[(column + 1u) * SLICES][r],
                          partial[(column + 2u) * SLICES][r], partial[(column + 3u) * SLICES][r]);
      storeQuad(raw, m0 + r, n);
    }
  }
}
