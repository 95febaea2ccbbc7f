// gemm.wgsl: the dot4-tiled GEMM kernel (pack -> GEMM -> output), workgroup-tiled and register-blocked:
// each workgroup computes a TILE_M x TILE_N block of dst with the k-tile loop of ../dot4-tile.wgsl over
// the full depth; each invocation a 4x4 block, so it owns whole quads for the shared epilogue
// (storeBlock, epilogue.wgsl) whatever dst's storage order. Operands 'u8k4-r64' (src/pack/formats.ts),
// bound through ../tile.wgsl. Host code: ./kernel.ts.

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
  let rowVec4s = tile.depthWords / 4u;
  let acc = dot4TileLoop(o.rowBase, o.colBase, rowVec4s, rowVec4s, 0u, tile.depthWords, lid, tid);

  let m0 = tile.bandM + o.rowBase + lid.y * 4u;
  let n0 = tile.bandN + o.colBase + lid.x * 4u;
  storeBlock(acc, m0, n0);
}
