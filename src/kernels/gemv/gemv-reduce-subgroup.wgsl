// gemv-reduce-subgroup.wgsl: the K-slice reduction of the gemv kernel (pack -> GEMM -> output, ./gemv.wgsl)
// where the adapter has 'subgroups': each subgroup sums its invocations' partial sums with subgroupAdd,
// and one invocation per subgroup (subgroupElect) adds the subgroup's total into workgroup atomics
// (u32 adds wrap mod 2^32, as the raw sums do). Works for any subgroup size and any mapping of
// invocations to subgroups. The source of the gemv kernel starts with `enable subgroups;` (./kernel.ts).

var<workgroup> gemvTotals: array<array<atomic<u32>, 4>, 4>; // [row][column], zeroed by reduceRows

/** Sums acc (rows 0..rows-1) over the workgroup into gemvTotals; every invocation must call it. */
fn reduceRows(acc: array<vec4<u32>, 4>, rows: u32, tid: u32) {
  // Zeroed here, not by Dawn: devices may run with disable_workgroup_init (docs/gpu.md, "Dawn toggles").
  for (var i = tid; i < 16u; i += THREADS) {
    atomicStore(&gemvTotals[i / 4u][i % 4u], 0u);
  }
  workgroupBarrier();
  for (var r = 0u; r < rows; r++) {
    let s = subgroupAdd(acc[r]);
    if (subgroupElect()) {
      for (var c = 0u; c < 4u; c++) {
        atomicAdd(&gemvTotals[r][c], s[c]);
      }
    }
  }
  workgroupBarrier();
}

/** Row r's 4 column sums after reduceRows (zeros for rows it did not reduce). */
fn reducedRow(r: u32) -> vec4<u32> {
  return vec4<u32>(atomicLoad(&gemvTotals[r][0]), atomicLoad(&gemvTotals[r][1]), atomicLoad(&gemvTotals[r][2]), atomicLoad(&gemvTotals[r][3]));
}
