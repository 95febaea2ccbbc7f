// lhs-patches.wgsl: the lhs half of the wide dot4 kernel's staging (./gemm.wgsl) gathered straight from a
// convolution's NHWC input by src/pack/patch-gather.wgsl (composed beside this file): pack -> GEMM ->
// output with the lhs pack folded into the GEMM, so a conv layer is one dispatch with no packed lhs in
// memory. Each piece holds the VEC_WORDS patch words the packed row would hold there, so the staging,
// the k-major tiles and the barriers are those of the packed form. The kernel computes the lhs row sums
// of the four-term expansion itself (LHS_SUMS_IN_KERNEL, src/epilogue/epilogue.wgsl): each invocation
// sums the words of its load slots (a slot's row is the same at every stage), and after the k loop the
// slot sums meet in `lhsTile`, which the loop no longer needs: TILE_M x PIECES parts, then each tile
// row's total behind them (TILE_M (PIECES + 1) words fit the 2 TILE_KW TILE_M of lhsTile, as PIECES <=
// TILE_KW). Composed in place of ./lhs.wgsl, under the same names.

var<private> lhsRowSum: array<u32, MAX_LOADS>; // this invocation's words of each load slot's row, summed over every stage

/** Piece p of patch row `row` of the band (load slot `slot`): words VEC_WORDS p .. + VEC_WORDS - 1. */
fn lhsPiece(slot: u32, row: u32, rowLoads: u32, p: u32) -> PackedLoad {
  let r = patchRow(tile.bandM + row);
  let w0 = p * VEC_WORDS;
  var v = vec4<u32>();
  if (VEC_WORDS == 4u) {
    v = patchPiece(r, w0);
  } else {
    for (var j = 0u; j < VEC_WORDS; j++) {
      v[j] = patchWord(r, w0 + j);
    }
  }
  lhsRowSum[slot] += byteSum(v.x) + byteSum(v.y) + byteSum(v.z) + byteSum(v.w);
  return packedLoadOf(v);
}

/** Word i of lhsTile, seen as an array of words. */
fn lhsWord(i: u32) -> u32 {
  return lhsTile[i / 4u][i % 4u];
}

/** Every tile row's sum behind the slots' parts in lhsTile, once the k loop's last barrier has passed (uniform control flow). */
fn shareLhsRowSums(t: u32) {
  for (var i = 0u; i < LOADS_A; i++) {
    let e = t + i * THREADS; // the slot's piece: row e / PIECES, piece e % PIECES, as in ./gemm.wgsl prefetch
    lhsTile[e / 4u][e % 4u] = lhsRowSum[i];
  }
  workgroupBarrier();
  for (var row = t; row < TILE_M; row += THREADS) {
    var s = 0u;
    for (var q = 0u; q < PIECES; q++) {
      s += lhsWord(row * PIECES + q);
    }
    let total = TILE_M * PIECES + row;
    lhsTile[total / 4u][total % 4u] = s;
  }
  workgroupBarrier();
}

/** The epilogue's row sums (kernelRowSums) of tile rows tileRow .. + 3 (tileRow a multiple of 4), which are dst rows m .. m + 3. */
fn useLhsRowSums(tileRow: u32, m: u32) {
  kernelRowSums = bitcast<vec4<i32>>(lhsTile[(TILE_M * PIECES + tileRow) / 4u]);
  kernelRowBase = m;
}
