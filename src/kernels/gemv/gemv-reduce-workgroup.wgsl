// gemv-reduce-workgroup.wgsl: the K-slice reduction of the gemv kernel (pack -> GEMM -> output,
// ./gemv.wgsl) for adapters without 'subgroups': per live row, a tree over THREADS partial sums in
// workgroup memory (log2(THREADS) barriers per row).

var<workgroup> gemvPartial: array<vec4<u32>, THREADS>;
var<workgroup> gemvTotals: array<vec4<u32>, 4>; // [row], every row written by reduceRows

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
  // Rows past `rows` as zeros, written here, not by Dawn: devices may run with disable_workgroup_init
  // (docs/gpu.md, "Dawn toggles"). The barrier publishes them to the invocations that read them.
  if (tid == 0u) {
    for (var r = rows; r < 4u; r++) {
      gemvTotals[r] = vec4<u32>(0u);
    }
  }
  workgroupBarrier();
}

/** Row r's 4 column sums after reduceRows (zeros for rows it did not reduce). */
fn reducedRow(r: u32) -> vec4<u32> {
  return gemvTotals[r];
}
