// gemm.wgsl: the dot4-tiled GEMM kernel (pack -> GEMM -> output), workgroup-tiled and register-blocked:
// each workgroup computes a TILE_M x TILE_N block of dst with the k-tile loop of ../dot4-tile.wgsl over
// the full depth; each invocation THREAD_M x THREAD_N (4x4, 4x8, 8x4 or 8x8) in 4x4 quads, so it owns
// whole quads for the shared epilogue (storeBlock, epilogue.wgsl) whatever dst's storage order.
// Operands 'u8k4-r64' (src/pack/formats.ts), bound through ../tile.wgsl as arrays of PackedLoad
// (VEC_WORDS words per global load). THREAD_M, THREAD_N and VEC_WORDS are generated constants
// (../banded.ts dot4ThreadConstants, dot4LoadConstants). Host code: ./kernel.ts.

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
  let quads = dot4TileLoop(o.rowBase, o.colBase, rowLoads, rowLoads, 0u, tile.depthWords, lid, tid);

  for (var qm = 0u; qm < QUADS_M; qm++) {
    for (var qn = 0u; qn < QUADS_N; qn++) {
      let m0 = tile.bandM + o.rowBase + (qm * WORKGROUP_Y + lid.y) * 4u;
      let n0 = tile.bandN + o.colBase + (qn * WORKGROUP_X + lid.x) * 4u;
      storeBlock(quads[2u * qm + qn], m0, n0);
    }
  }
}
