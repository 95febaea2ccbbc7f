// gemv.wgsl: the gemv kernel (pack -> GEMM -> output) for M <= 4, e.g. matrix-vector products in LLM
// decoding (M = 1), bound by the read of the packed rhs. Each workgroup computes up to 4 dst rows x 4
// columns; its THREADS invocations split K: invocation t reads the 16-byte chunks t, t + THREADS, ... of
// each of the 4 packed rhs columns (vec4<u32> loads; consecutive invocations read consecutive chunks of
// one column, so every load of the workgroup is coalesced, and the 4 columns are 4 independent loads in
// flight per invocation). The lhs row group (at most 4 rows, a few KiB) stays in cache. Only live rows
// are computed (M = 1 does one dot4 per rhs word, not four). The K slices are then summed by
// reduceRows() (gemv-reduce-subgroup.wgsl: subgroupAdd; gemv-reduce-workgroup.wgsl: a tree in
// workgroup memory) and 4 invocations run the shared epilogue (storeQuad, epilogue.wgsl).
// rhs is packed in 'u8k4-r64', or in 'u4k8-r64' (RHS_NIBBLES: two 4-bit values per byte, unpacked here
// with two masks before dot4); lhs chunks come from lhsChunk(), in 'u8k4-r64' words, after lhsBegin()
// for the workgroup's rows: the packed lhs (./gemv-lhs-packed.wgsl), the caller's unpacked bytes
// (./gemv-lhs-raw.wgsl) or a convolution's patches gathered from its input (./gemv-lhs-patches.wgsl);
// where LHS_RAW (the last two) the row sums are computed here too, from the same words, and reduced like
// the products. Host code: ./kernel.ts.

override THREADS: u32 = 64u;         // invocations per workgroup, all sharing K; a power of two
override RHS_NIBBLES: bool = false;  // rhs in 'u4k8-r64' (true) or 'u8k4-r64' (false)


/** The two u8k4 words (k..k+3, k+4..k+7) of one u4k8 word. */
fn unpackNibbles(w: u32) -> vec2<u32> {
  return vec2<u32>(w & 0x0f0f0f0fu, (w >> 4u) & 0x0f0f0f0fu);
}

/** Sum over one rhs vec4 chunk b of the lhs chunk a (8-bit rhs: 16 k) or chunks a, a1 (4-bit rhs: 32 k). */
fn chunkDot(a: vec4<u32>, a1: vec4<u32>, b: vec4<u32>) -> u32 {
  if (RHS_NIBBLES) {
    let x = unpackNibbles(b.x);
    let y = unpackNibbles(b.y);
    let z = unpackNibbles(b.z);
    let w = unpackNibbles(b.w);
    return dot4(a.x, x.x) + dot4(a.y, x.y) + dot4(a.z, y.x) + dot4(a.w, y.y)
      + dot4(a1.x, z.x) + dot4(a1.y, z.y) + dot4(a1.z, w.x) + dot4(a1.w, w.y);
  }
  return dot4(a.x, b.x) + dot4(a.y, b.y) + dot4(a.z, b.z) + dot4(a.w, b.w);
}

/** The sum of the 16 bytes of an lhs chunk (a row sum's share): in 16-bit lanes (at most 8 * 255), then folded. */
fn chunkSum(a: vec4<u32>) -> u32 {
  let pairs = (a & vec4<u32>(0x00ff00ffu)) + ((a >> vec4<u32>(8u)) & vec4<u32>(0x00ff00ffu));
  let lanes = pairs.x + pairs.y + pairs.z + pairs.w;
  return (lanes & 0xffffu) + (lanes >> 16u);
}

@compute @workgroup_size(THREADS)
fn gemv(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let groupsN = tile.bandCols / 4u;
  let group = tile.workgroupBase + wid.x + wid.y * nwg.x;
  let rowGroups = (tile.bandRows + 3u) / 4u;
  if (group >= groupsN * rowGroups) {
    return; // whole workgroup: the reduction below stays uniform
  }
  let rowBase = (group / groupsN) * 4u; // within the band
  let colBase = (group % groupsN) * 4u;
  let rows = min(4u, tile.bandRows - rowBase);
  let rhsVec4s = select(tile.depthWords / 4u, tile.depthWords / 8u, RHS_NIBBLES);

  lhsBegin(rowBase);
  var acc: array<vec4<u32>, 4>; // acc[r][c]: row rowBase + r, column colBase + c
  var sums = vec4<u32>(0u); // LHS_RAW: sums[r], the bytes of row rowBase + r this invocation read
  for (var q = tid; q < rhsVec4s; q += THREADS) {
    let b0 = rhsPacked[colBase * rhsVec4s + q];
    let b1 = rhsPacked[(colBase + 1u) * rhsVec4s + q];
    let b2 = rhsPacked[(colBase + 2u) * rhsVec4s + q];
    let b3 = rhsPacked[(colBase + 3u) * rhsVec4s + q];
    for (var r = 0u; r < rows; r++) {
      let row = rowBase + r;
      // One rhs chunk holds 16 k (8-bit) or 32 k (4-bit: two lhs chunks).
      let a = lhsChunk(row, select(q, 2u * q, RHS_NIBBLES));
      var a1 = vec4<u32>(0u);
      if (RHS_NIBBLES) {
        a1 = lhsChunk(row, 2u * q + 1u);
      }
      acc[r] += vec4<u32>(chunkDot(a, a1, b0), chunkDot(a, a1, b1), chunkDot(a, a1, b2), chunkDot(a, a1, b3));
      if (LHS_RAW) {
        sums[r] += chunkSum(a) + chunkSum(a1);
      }
    }
  }
  // LHS_RAW: the row sums are reduced as one more row of 4 (its lanes are rows): in the products'
  // reduction where a row is free (M = 1: two rows, no barrier more), else in a reduction of their own.
  var rowSumsHere = vec4<u32>(0u);
  if (LHS_RAW && rows == 4u) {
    var s: array<vec4<u32>, 4>;
    s[0] = sums;
    reduceRows(s, 1u, tid);
    rowSumsHere = reducedRow(0u);
    workgroupBarrier(); // every read of the totals before reduceRows below writes them again
  }
  let sumsRow = select(rows, 4u, !LHS_RAW || rows == 4u); // acc's row of the sums; 4: none
  if (sumsRow < 4u) {
    acc[sumsRow] = sums;
  }
  reduceRows(acc, select(rows, rows + 1u, sumsRow < 4u), tid);
  if (sumsRow < 4u) {
    rowSumsHere = reducedRow(sumsRow);
  }
  if (tid >= 4u) {
    return;
  }
  let m0 = tile.bandM + rowBase;
  let n0 = tile.bandN + colBase;
  kernelRowSums = bitcast<vec4<i32>>(rowSumsHere); // read by the epilogue where LHS_SUMS_IN_KERNEL
  kernelRowBase = m0;
  let colMajor = dstColMajor(); // one storeQuad call site: each inlined copy of the epilogue costs compile time
  // Rows past `rows` (dst's padding) as zeros, not the row sums reduced there.
  let live = vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(rows);
  let column = select(vec4<u32>(0u), vec4<u32>(reducedRow(0u)[tid], reducedRow(1u)[tid], reducedRow(2u)[tid], reducedRow(3u)[tid]), live);
  storeQuad(select(reducedRow(tid), column, colMajor), select(m0 + tid, m0, colMajor), select(n0, n0 + tid, colMajor));
}
