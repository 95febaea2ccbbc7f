// dot4-lhs-patches.wgsl: the lhs tile's staging of the dot4 k-tile loop (./dot4-tile.wgsl; pack -> GEMM ->
// output with the lhs pack folded into the GEMM) gathered straight from a convolution's NHWC input by
// src/pack/patch-gather.wgsl (composed beside this file): no patch pack dispatch and no packed lhs in
// memory. The kernel computes the lhs row sums of the four-term expansion itself from the words it
// stages (tileRowSums): the tiled kernel hands them to the epilogue (LHS_SUMS_IN_KERNEL,
// src/epilogue/epilogue.wgsl), split-K's partial pass writes each slice's to the workspace for the reduce
// pass. Each tile row is staged by LHS_ROW_THREADS invocations (the workgroup's size over TILE_M, a whole
// number: the host offers this form only then), each summing its own words over the loop's k range.
// Composed in place of ./dot4-lhs.wgsl, under the same names; the including kernel says where its band
// starts (bandFirstRow).

override LHS_ROW_THREADS: u32 = (WORKGROUP_X * WORKGROUP_Y) / TILE_M;

const LHS_GATHERED: bool = true;

var<private> lhsRowSum: u32; // this invocation's words of its tile row, summed over every k step
var<workgroup> lhsRowSumParts: array<u32, WORKGROUP_X * WORKGROUP_Y>;

/** Stages patch words [kw0, kw0 + TILE_KW) of the tile's rows; invocation tid stages row tid / LHS_ROW_THREADS. */
fn stageLhs(rowBase: u32, lhsLoads: u32, kw0: u32, tid: u32) {
  let row = tid / LHS_ROW_THREADS;
  let r = patchRow(bandFirstRow() + rowBase + row);
  for (var kw = tid % LHS_ROW_THREADS; kw < TILE_KW; kw += LHS_ROW_THREADS) {
    let word = patchWord(r, kw0 + kw);
    lhsTile[kw * (TILE_M / 4u) + row / 4u][row % 4u] = word;
    lhsRowSum += dot4(word, 0x01010101u); // its four bytes
  }
}

/** Every invocation's part of its row's sum to workgroup memory, once the k loop is done (uniform control flow). */
fn shareLhsRowSums(tid: u32) {
  lhsRowSumParts[tid] = lhsRowSum;
  workgroupBarrier();
}

/** The row sums of tile rows tileRow .. + 3 over the loop's k range (after shareLhsRowSums). */
fn tileRowSums(tileRow: u32) -> vec4<u32> {
  var s = vec4<u32>();
  for (var i = 0u; i < 4u; i++) {
    for (var p = 0u; p < LHS_ROW_THREADS; p++) {
      s[i] += lhsRowSumParts[(tileRow + i) * LHS_ROW_THREADS + p];
    }
  }
  return s;
}
