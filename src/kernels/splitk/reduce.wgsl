// reduce.wgsl: the second pass of the split-K kernels (pack -> gemm -> OUTPUT): sums the K slices' raw
// sums from the workspace ([split][row][col] u32, written by ./splitk.wgsl; adds wrap mod 2^32 as the
// single-pass sum would) and runs the shared epilogue (storeQuad, epilogue.wgsl) on each dst quad:
// one invocation per quad, quads along n for a row-major dst and along m for a column-major one. Where the
// partial pass gathered a convolution's lhs (LHS_SUMS_IN_KERNEL), the lhs row sums are the sums of the
// slices' row sums, which follow the raw sums in the workspace ([split][row] from word rowSumsAt).

override THREADS: u32 = 64u;

struct ReduceParams {
  bandM: u32,            // first dst row of the band
  bandN: u32,            // first dst column of the band
  bandRows: u32,         // live rows of the band (a multiple of 4), as in the partial pass
  bandCols: u32,         // live columns (a multiple of 4)
  workgroupBase: u32,    // first workgroup of this dispatch's flattened grid
  splits: u32,
  rowSumsAt: u32,        // workspace word of slice 0's row sums (LHS_SUMS_IN_KERNEL)
}

@group(0) @binding(5) var<uniform> reduction: ReduceParams;
@group(0) @binding(6) var<storage, read> workspace: array<u32>;

@compute @workgroup_size(THREADS)
fn reduceSplits(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let quad = (reduction.workgroupBase + wid.x + wid.y * nwg.x) * THREADS + tid;
  if (quad >= reduction.bandRows * reduction.bandCols / 4u) {
    return;
  }
  var row: u32;
  var col: u32;
  var step: u32; // workspace distance between the quad's elements
  if (dstColMajor()) {
    row = (quad % (reduction.bandRows / 4u)) * 4u;
    col = quad / (reduction.bandRows / 4u);
    step = reduction.bandCols;
  } else {
    row = quad / (reduction.bandCols / 4u);
    col = (quad % (reduction.bandCols / 4u)) * 4u;
    step = 1u;
  }
  var raw = vec4<u32>(0u);
  let sliceWords = reduction.bandRows * reduction.bandCols;
  for (var s = 0u; s < reduction.splits; s++) {
    let first = s * sliceWords + row * reduction.bandCols + col;
    raw += vec4<u32>(workspace[first], workspace[first + step], workspace[first + 2u * step], workspace[first + 3u * step]);
  }
  if (LHS_SUMS_IN_KERNEL) {
    var sums = vec4<u32>(); // the quad's rows: one (row-major dst) or four (column-major)
    for (var s = 0u; s < reduction.splits; s++) {
      let first = reduction.rowSumsAt + s * reduction.bandRows + row;
      if (dstColMajor()) {
        sums += vec4<u32>(workspace[first], workspace[first + 1u], workspace[first + 2u], workspace[first + 3u]);
      } else {
        sums.x += workspace[first];
      }
    }
    kernelRowSums = bitcast<vec4<i32>>(sums);
    kernelRowBase = reduction.bandM + row;
  }
  storeQuad(raw, reduction.bandM + row, reduction.bandN + col);
}
