// gemv-reduce-workgroup.wgsl: the K-slice reduction of the gemv kernel (pack -> GEMM -> output,
// ./gemv.wgsl) for adapters without 'subgroups': per live row, a tree over THREADS partial sums in
// workgroup memory (log2(THREADS) barriers per row).

var<workgroup> gemvPartial: array<vec4<u32>, THREADS>;
var<workgroup> gemvTotals: array<vec4<u32>, 4>; // [row], zero-initialized

/** Sums acc (rows 0..rows-1) over the workgroup into gemvTotals; every invocation must call it. */
fn reduceRows(acc: array<vec4<u32>, 4>, rows: u32, tid: u32) {
  for (var r = 0u; r < rows; r++) {
    gemvPartial[tid] = acc[r];
    workgroupBarrier();
    for (var half = THREADS / 2u; half > 0u; half /= 2u) {
      if (tid < half) {
        gemvPartial[tid] += gemvPartial[tid + half];
      }
      workgroupBarrier();
    }
    if (tid == 0u) {
      gemvTotals[r] = gemvPartial[0];
    }
    workgroupBarrier();
  }
}

/** Row r's 4 column sums after reduceRows (zeros for rows it did not reduce). */
fn reducedRow(r: u32) -> vec4<u32> {
  return gemvTotals[r];
}
