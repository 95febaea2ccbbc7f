// sgmat-lhs-patches.wgsl: the lhs half of the subgroup-matrix kernel's staging (./sgmat.wgsl) gathered
// straight from a convolution's NHWC input by src/pack/patch-gather.wgsl (composed beside this file):
// pack -> GEMM -> output with the lhs pack folded into the GEMM, so a conv layer is one dispatch with no
// packed lhs in memory. The staged pieces and the left fragments' loads from them are those of
// ./sgmat-lhs.wgsl; only where a piece comes from differs. The kernel computes the lhs row sums of the
// four-term expansion itself and hands them to the epilogue (LHS_SUMS_IN_KERNEL, src/epilogue/epilogue.wgsl)
// and to the i8 fragments' correction: each invocation sums the words of its load slots (a slot's row is
// the same at every k step), the slots' sums meet in `stage` once the k loop is done, and each tile row's
// total goes to `lhsRowSumTile`. A split-K slice's sums cover its k range: its i8 correction adds them,
// and ./sgmat-split.wgsl writes them to the workspace for the reduce pass. Composed in place of
// ./sgmat-lhs.wgsl, for the tilings that stage their lhs (./kernel.ts offers this form only there, and
// only where the workgroup memory holds `lhsRowSumTile` too).

const LHS_GATHERED: bool = true;

var<private> lhsRowSum: array<u32, LOADS_A>;  // this invocation's words of each load slot's row, summed over every k step
var<workgroup> lhsRowSumTile: array<u32, TILE_M>;

/** Piece q of k step kt of patch row `row` of the band (load slot `slot`), or zeros past the packed depth. */
fn piece(slot: u32, row: u32, kt: u32, q: u32, rowVec4s: u32) -> vec4<u32> {
  let p = kt * PIECES + q;
  if (p >= rowVec4s) {
    return PAST_DEPTH;
  }
  let v = patchPiece(patchRow(tile.bandM + row), p * 4u);
  lhsRowSum[slot] += byteSum(v.x) + byteSum(v.y) + byteSum(v.z) + byteSum(v.w);
  return v;
}

/** As ./sgmat-lhs.wgsl: the left fragment from the staged rows. */
fn leftFragment(lhsBase: u32, rowBase: u32, row: u32, kBase: u32, kk: u32) -> LeftFragment {
  return subgroupMatrixLoad<LeftFragment, row_major>(&stage, lhsBase + row * ROW_WORDS + kk / 4u, ROW_WORDS);
}

/**
 * Every tile row's sum to lhsRowSumTile, once the k loop is done (its last barrier passed: `stage` is
 * free; uniform control flow). A slot's piece index is (row, q) as in sgmat.wgsl loadStep, so the
 * TILE_M x PIECES slot sums fill `stage` once, and a row's PIECES of them are added.
 */
fn shareLhsRowSums(t: u32) {
  for (var i = 0u; i < LOADS_A; i++) {
    let index = t + i * WORKGROUP_SIZE;
    if (index < PIECES_A) {
      stage[index] = bitcast<StageWord>(lhsRowSum[i]);
    }
  }
  workgroupBarrier();
  for (var row = t; row < TILE_M; row += WORKGROUP_SIZE) {
    var s = 0u;
    for (var q = 0u; q < PIECES; q++) {
      s += bitcast<u32>(stage[row * PIECES + q]);
    }
    lhsRowSumTile[row] = s;
  }
  workgroupBarrier(); // before the result passes store into `stage`
}

/** The row sums of tile rows tileRow .. + 3 over the workgroup's k steps (after shareLhsRowSums). */
fn tileRowSums(tileRow: u32) -> vec4<u32> {
  return vec4<u32>(lhsRowSumTile[tileRow], lhsRowSumTile[tileRow + 1u], lhsRowSumTile[tileRow + 2u], lhsRowSumTile[tileRow + 3u]);
}

/** The epilogue's row sums (kernelRowSums) of tile rows tileRow .. + 3, which are dst rows m .. m + 3. */
fn useLhsRowSums(tileRow: u32, m: u32) {
  kernelRowSums = bitcast<vec4<i32>>(tileRowSums(tileRow));
  kernelRowBase = m;
}
