// sgmat.wgsl: the subgroup-matrix GEMM kernel (pack -> GEMM -> output) on int8 tensor cores, through
// Dawn's chromium-experimental-subgroup-matrix (u8 x u8 -> u32, M16 N16 K32 fragments). It reads rows
// packed in the 'u8k4-r64' format (src/pack/formats.ts): the packed lhs is a row-major Mp x Kp byte
// matrix, the packed rhs an Np x Kp one, i.e. the right matrix stored column-major; every operand is in
// the uint8 domain already (int8 XOR 0x80), so the raw sums are those of the dot4 kernels and the shared
// epilogue (epilogue.wgsl) applies the same four-term expansion and output pipeline.
//
// A workgroup of 4 subgroups of 32 computes a 64 x 64 dst tile; subgroup s owns the 32 x 32 quarter
// (s / 2, s % 2) as 2 x 2 fragments. The k loop steps KSTEP = 64 bytes: both 64 x 64-byte operand
// tiles are staged in workgroup memory with rows padded to ROW_BYTES (fewer bank conflicts), double
// buffered so the next tile's global loads overlap this tile's multiply-accumulates, one barrier per
// step. The accumulators then go through workgroup memory (subgroupMatrixStore) to the invocations, which
// hand 4 x 4 blocks to storeBlock. The enable directives are in sgmat-enable.wgsl, composed first;
// the declarations in sgmat-bindings.wgsl.

/** The 2 x 4 vec4 loads (2 per operand) of k step `kt` for invocation t, from global memory. */
fn loadStep(t: u32, rowBase: u32, colBase: u32, kt: u32) -> array<vec4<u32>, 4> {
  let rowVec4s = tile.depthWords / 4u;
  var v: array<vec4<u32>, 4>;
  for (var i = 0u; i < 2u; i++) {
    let index = t + i * 128u;      // 0..255: 64 rows x 4 vec4 of 16 bytes
    let row = index / 4u;
    let q = index % 4u;
    v[i] = lhsPacked[(rowBase + row) * rowVec4s + kt * 4u + q];
    v[2u + i] = rhsPacked[(colBase + row) * rowVec4s + kt * 4u + q];
  }
  return v;
}

fn storeStep(t: u32, buffer: u32, v: array<vec4<u32>, 4>) {
  for (var i = 0u; i < 2u; i++) {
    let index = t + i * 128u;
    let word = (index / 4u) * ROW_WORDS + (index % 4u) * 4u;
    for (var j = 0u; j < 4u; j++) {
      stage[buffer * BUFFER_WORDS + word + j] = v[i][j];
      stage[buffer * BUFFER_WORDS + TILE_WORDS + word + j] = v[2u + i][j];
    }
  }
}

@compute @workgroup_size(128)
fn sgmat(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) t: u32,
  @builtin(subgroup_id) sg: u32,
) {
  let tilesN = tile.bandCols / 64u;
  let index = tile.workgroupBase + wid.x + wid.y * nwg.x;
  if (index >= tilesN * (tile.bandRows / 64u)) {
    return; // whole workgroup: the barriers below stay uniform
  }
  let rowBase = (index / tilesN) * 64u; // within the band
  let colBase = (index % tilesN) * 64u;
  let fm = (sg / 2u) * 32u; // this subgroup's quarter of the tile
  let fn_ = (sg % 2u) * 32u;
  let steps = tile.depthWords * 4u / KSTEP;

  var c00 = subgroup_matrix_result<u32, 16, 16>();
  var c01 = subgroup_matrix_result<u32, 16, 16>();
  var c10 = subgroup_matrix_result<u32, 16, 16>();
  var c11 = subgroup_matrix_result<u32, 16, 16>();

  storeStep(t, 0u, loadStep(t, rowBase, colBase, 0u));
  workgroupBarrier();
  for (var kt = 0u; kt < steps; kt++) {
    let current = kt % 2u;
    let more = kt + 1u < steps;
    var next: array<vec4<u32>, 4>;
    if (more) {
      next = loadStep(t, rowBase, colBase, kt + 1u);
    }
    let lhsBase = current * BUFFER_WORDS * 4u; // byte offsets into `stage`
    let rhsBase = lhsBase + TILE_WORDS * 4u;
    for (var kk = 0u; kk < KSTEP; kk += 32u) {
      let a0 = subgroupMatrixLoad<subgroup_matrix_left<u8, 32, 16>>(&stage, lhsBase + fm * ROW_BYTES + kk, false, ROW_BYTES);
      let a1 = subgroupMatrixLoad<subgroup_matrix_left<u8, 32, 16>>(&stage, lhsBase + (fm + 16u) * ROW_BYTES + kk, false, ROW_BYTES);
      let b0 = subgroupMatrixLoad<subgroup_matrix_right<u8, 16, 32>>(&stage, rhsBase + fn_ * ROW_BYTES + kk, true, ROW_BYTES);
      let b1 = subgroupMatrixLoad<subgroup_matrix_right<u8, 16, 32>>(&stage, rhsBase + (fn_ + 16u) * ROW_BYTES + kk, true, ROW_BYTES);
      c00 = subgroupMatrixMultiplyAccumulate(a0, b0, c00);
      c01 = subgroupMatrixMultiplyAccumulate(a0, b1, c01);
      c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10);
      c11 = subgroupMatrixMultiplyAccumulate(a1, b1, c11);
    }
    if (more) {
      storeStep(t, 1u - current, next);
    }
    workgroupBarrier();
  }

  // The 64 x 64 raw sums through workgroup memory, then 2 blocks of 4 x 4 per invocation.
  subgroupMatrixStore(&stage, fm * OUT_STRIDE + fn_, c00, false, OUT_STRIDE);
  subgroupMatrixStore(&stage, fm * OUT_STRIDE + fn_ + 16u, c01, false, OUT_STRIDE);
  subgroupMatrixStore(&stage, (fm + 16u) * OUT_STRIDE + fn_, c10, false, OUT_STRIDE);
  subgroupMatrixStore(&stage, (fm + 16u) * OUT_STRIDE + fn_ + 16u, c11, false, OUT_STRIDE);
  workgroupBarrier();
  for (var i = 0u; i < 2u; i++) {
    let block = t + i * 128u; // 16 x 16 blocks of 4 x 4
    let r0 = (block / 16u) * 4u;
    let n0 = (block % 16u) * 4u;
    var acc: array<vec4<u32>, 4>;
    for (var r = 0u; r < 4u; r++) {
      let w = (r0 + r) * OUT_STRIDE + n0;
      acc[r] = vec4<u32>(stage[w], stage[w + 1u], stage[w + 2u], stage[w + 3u]);
    }
    storeBlock(acc, tile.bandM + rowBase + r0, tile.bandN + colBase + n0);
  }
}
