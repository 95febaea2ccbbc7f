// row-sum.wgsl: the PACK stage's workgroup sum (PACK -> gemm -> output), shared by pack.wgsl and
// patches.wgsl, where one workgroup packs one row: the row sum of the four-term expansion (src/types.ts)
// from the partial sums of the workgroup's WORKGROUP_SIZE invocations (a power of two, declared by the
// including file), by halving in workgroup memory.

var<workgroup> partial: array<u32, WORKGROUP_SIZE>;

/** The sum of every invocation's `sum`, returned to all. Called by the whole workgroup in uniform control flow. */
fn workgroupSum(lid: u32, sum: u32) -> u32 {
  partial[lid] = sum;
  workgroupBarrier();
  for (var half = WORKGROUP_SIZE / 2u; half > 0u; half /= 2u) {
    if (lid < half) {
      partial[lid] += partial[lid + half];
    }
    workgroupBarrier();
  }
  return partial[0];
}
