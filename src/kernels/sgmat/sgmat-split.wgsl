// sgmat-split.wgsl: the split-K form of the subgroup-matrix kernel (./sgmat.wgsl; the GEMM stage of
// pack -> gemm -> output): workgroup index = slice * tiles + tile, as in ../splitk/splitk.wgsl; each
// workgroup computes one dst tile over one K slice of slicing.stepsPerSplit k steps (the last slice may
// have fewer) and stores its raw sums (u32, wrapping) to the workspace, [slice][row][col] over the band's
// live rows and columns. ../splitk/reduce.wgsl then sums the slices and runs the shared epilogue (raw sums
// add mod 2^32, so reduce-then-epilogue is exact). A gathered lhs (./sgmat-lhs-patches.wgsl) sums the
// slice's rows too: the workgroups of the band's first tile column write them behind the raw sums,
// [slice][row] from word rowSumsAt, and the reduce pass adds them up for the epilogue. Composed beside
// sgmat.wgsl in place of sgmat-one-pass.wgsl; host code: ./split-k.ts, slices planned by
// ../splitk/partition.ts.

struct SliceParams {
  splits: u32,
  stepsPerSplit: u32,    // k steps of KSTEP bytes per slice
  rowSumsAt: u32,        // workspace word of slice 0's row sums (a gathered lhs), after the raw sums
}

@group(0) @binding(10) var<uniform> slicing: SliceParams;
@group(0) @binding(11) var<storage, read_write> workspace: array<vec4<u32>>;

/** The tile and the K slice of workgroup wid. */
fn sgmatWork(wid: vec3<u32>, nwg: vec3<u32>) -> SgmatWork {
  let tilesN = tile.bandCols / TILE_N;
  let tiles = tilesN * (tile.bandRows / TILE_M);
  let index = tile.workgroupBase + wid.x + wid.y * nwg.x;
  let slice = index / tiles;
  let live = slice < slicing.splits;
  let allSteps = (tile.depthWords * 4u + KSTEP - 1u) / KSTEP;
  let firstStep = min(slice * slicing.stepsPerSplit, allSteps);
  let steps = min(allSteps - firstStep, slicing.stepsPerSplit);
  let inGrid = index % tiles;
  return SgmatWork((inGrid / tilesN) * TILE_M, (inGrid % tilesN) * TILE_N, live, firstStep, steps, slice, slice == 0u);
}

/** A 4 x 4 block of raw sums at (row, col) of the band: to the workspace rows of its slice. */
fn sgmatStore(o: SgmatWork, raw: array<vec4<u32>, 4>, row: u32, col: u32) {
  for (var r = 0u; r < 4u; r++) {
    workspace[((o.slice * tile.bandRows + row + r) * tile.bandCols + col) / 4u] = raw[r];
  }
}

/** A gathered lhs: the slice's row sums of the tile (tileRowSums) to the workspace, once per tile row (uniform control flow). */
fn sgmatShareRowSums(o: SgmatWork, t: u32) {
  if (LHS_GATHERED && o.colBase == 0u) {
    for (var i = t; i < TILE_M / 4u; i += WORKGROUP_SIZE) {
      workspace[(slicing.rowSumsAt + o.slice * tile.bandRows + o.rowBase) / 4u + i] = tileRowSums(4u * i);
    }
  }
}
