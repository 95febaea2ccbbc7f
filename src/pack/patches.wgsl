// patches.wgsl: the PACK stage (PACK -> gemm -> output) of a convolution's lhs, read straight from the
// NHWC input: implicit im2col, with no patch matrix in memory. Each packed row is gathered word by word by
// ./patch-gather.wgsl (composed before this file: the geometry, the input binding and the patch layout
// are specified there) and written in the 'u8k4-*' formats of pack.wgsl (src/pack/formats.ts), with the
// row sums of the four-term expansion (src/types.ts) computed in the same pass (./row-sum.wgsl). One
// workgroup per packed row.

override WORKGROUP_SIZE: u32 = 64u;

struct PatchParams {
  outerRows: u32,       // rows of this dispatch
  outerBase: u32,       // first row of this dispatch (the packed binding starts there)
  workgroupBase: u32,   // first row of this dispatch's flattened workgroup grid
  depthWords: u32,      // u32 words per packed row: padded K / 4
}

@group(0) @binding(0) var<uniform> params: PatchParams;
@group(0) @binding(2) var<storage, read_write> packed: array<u32>;
@group(0) @binding(3) var<storage, read_write> sums: array<i32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn packPatches(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let row = params.workgroupBase + wid.x + wid.y * nwg.x;
  if (row >= params.outerRows) {
    return; // uniform across the workgroup, so the barriers below stay uniform
  }
  let m = params.outerBase + row;
  let r = patchRow(m);
  var sum = 0u;
  for (var w = lid; w < params.depthWords; w += WORKGROUP_SIZE) {
    let word = patchWord(r, w); // past the depth: the zero padding of the format
    packed[row * params.depthWords + w] = word;
    sum += (word & 0xffu) + ((word >> 8u) & 0xffu) + ((word >> 16u) & 0xffu) + (word >> 24u);
  }
  let total = workgroupSum(lid, sum);
  if (lid == 0u) {
    sums[m] = bitcast<i32>(total);
  }
}
