// sgmat-one-pass.wgsl: the one-pass form of the subgroup-matrix kernel (./sgmat.wgsl; GEMM -> output of
// pack -> gemm -> output): each workgroup computes one dst tile over the whole packed depth and hands its
// raw sums to the shared epilogue (storeBlock, epilogue.wgsl). Composed beside sgmat.wgsl in place of
// sgmat-split.wgsl, the split-K form.

/** The tile of workgroup wid (../tile.wgsl tileOrigin), every k step of the packed depth. */
fn sgmatWork(wid: vec3<u32>, nwg: vec3<u32>) -> SgmatWork {
  let o = tileOrigin(wid, nwg, TILE_M, TILE_N);
  let steps = (tile.depthWords * 4u + KSTEP - 1u) / KSTEP;
  return SgmatWork(o.rowBase, o.colBase, o.live, 0u, steps, 0u, true);
}

/** A 4 x 4 block of raw sums at (row, col) of the band: through the epilogue to dst. */
fn sgmatStore(o: SgmatWork, raw: array<vec4<u32>, 4>, row: u32, col: u32) {
  storeBlock(raw, tile.bandM + row, tile.bandN + col);
}

/** The epilogue reads a gathered lhs's row sums in the kernel: nothing to keep. */
fn sgmatShareRowSums(o: SgmatWork, t: u32) {}
