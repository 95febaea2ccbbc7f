// gemm.wgsl: the dot4-tiled GEMM kernel (pack -> GEMM -> output), workgroup-tiled and register-blocked:
// each workgroup computes a TILE_M x TILE_N block of dst with the k-tile loop of ../dot4-tile.wgsl over
// the full depth; each invocation THREAD_M x THREAD_N (4x4, 4x8, 8x4 or 8x8) in 4x4 quads, so it owns
// whole quads for the shared epilogue (storeBlock, epilogue.wgsl) whatever dst's storage order.
// Operands 'u8k4-r64' (src/pack/formats.ts), bound through ../tile.wgsl as arrays of PackedLoad
// (VEC_WORDS words per global load); or, for a convolution, the lhs gathered from its input by the
// staging of ../dot4-lhs-patches.wgsl, which also sums its rows (shareLhsRowSums, tileRowSums), handed
// here to the epilogue (useLhsRowSums; with the packed lhs of ../dot4-lhs.wgsl the epilogue reads the pack
// stage's). THREAD_M, THREAD_N and VEC_WORDS are
// generated constants (../banded.ts dot4ThreadBlock, dot4LoadConstants). Host code: ./kernel.ts.

/** The first dst row of the band: where a gathered lhs's rows start (../dot4-lhs-patches.wgsl). */
fn bandFirstRow() -> u32 {
  return tile.bandM;
}

/** A gathered lhs: the row sums of tile rows tileRow .. + 3 to the epilogue (kernelRowSums), which are dst rows m .. m + 3. */
fn useLhsRowSums(tileRow: u32, m: u32) {
  if (LHS_GATHERED) {
    kernelRowSums = bitcast<vec4<i32>>(tileRowSums(tileRow));
    kernelRowBase = m;
  }
}

@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y)
fn gemm(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let o = tileOrigin(wid, nwg, TILE_M, TILE_N);
  if (!o.live) {
    return;
  }
  let rowLoads = tile.depthWords / VEC_WORDS;
  let sums = dot4TileLoop(o.rowBase, o.colBase, rowLoads, rowLoads, 0u, tile.depthWords, lid, tid);

  shareLhsRowSums(tid); // the row sums of a gathered lhs (../dot4-lhs-patches.wgsl); packed: nothing

  // Quad q{qm}{qn} at rows 4 (qm WORKGROUP_Y + lid.y) .., columns 4 (qn WORKGROUP_X + lid.x) ..
  let m0 = tile.bandM + o.rowBase + lid.y * 4u;
  let n0 = tile.bandN + o.colBase + lid.x * 4u;
  useLhsRowSums(lid.y * 4u, m0);
  storeBlock(sums.q00, m0, n0);
  if (QUADS_N > 1u) {
    storeBlock(sums.q01, m0, n0 + WORKGROUP_X * 4u);
  }
  if (QUADS_M > 1u) {
    useLhsRowSums((WORKGROUP_Y + lid.y) * 4u, m0 + WORKGROUP_Y * 4u);
    storeBlock(sums.q10, m0 + WORKGROUP_Y * 4u, n0);
    if (QUADS_N > 1u) {
      storeBlock(sums.q11, m0 + WORKGROUP_Y * 4u, n0 + WORKGROUP_X * 4u);
    }
  }
}
