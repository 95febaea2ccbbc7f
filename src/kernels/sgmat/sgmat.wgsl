// sgmat.wgsl: the subgroup-matrix GEMM kernel (pack -> GEMM -> output) on int8 tensor cores, through
// Dawn's chromium-experimental-subgroup-matrix, for every int8 fragment shape an adapter reports. It
// reads rows packed in the 'u8k4-r64' format (src/pack/formats.ts): the packed lhs is a row-major
// Mp x Kp byte matrix, the packed rhs an Np x Kp one, i.e. the right matrix stored column-major; every
// operand is in the uint8 domain already (int8 XOR 0x80), so the raw sums are those of the dot4 kernels
// and the shared epilogue (epilogue.wgsl) applies the same four-term expansion and output pipeline.
//
// The fragment shape and type come from constants generated from the adapter's configuration
// (./config.ts): FRAG_M x FRAG_N results, FRAG_K deep, the LeftFragment / RightFragment / ResultFragment
// aliases, SUBGROUP_SIZE, and SIGNED_FRAGMENTS for i8 -> i32 configurations (staged bytes XOR 0x80 back
// to int8 values x - 128, and the raw sum recovered below from the pack stage's row and column sums).
// A workgroup of 4 subgroups computes a 64 x 64 dst tile; subgroup s owns the 32 x 32 quarter
// (s / 2, s % 2) as FRAGS_M x FRAGS_N fragments. The k loop steps KSTEP = 64 bytes: both 64 x 64-byte
// operand tiles are staged in workgroup memory with rows padded to ROW_BYTES (fewer bank conflicts),
// double buffered so the next tile's global loads overlap this tile's multiply-accumulates, one barrier
// per step. The accumulators then go through workgroup memory (subgroupMatrixStore) to the invocations,
// which hand 4 x 4 blocks to storeBlock. The enable directives are in sgmat-enable.wgsl, composed first;
// the declarations in sgmat-bindings.wgsl.

const WORKGROUP_SIZE: u32 = 4u * SUBGROUP_SIZE;
const LOADS: u32 = 256u / WORKGROUP_SIZE; // 16-byte loads per operand and invocation per k step (64 rows x 4)
const FRAGS_M: u32 = 32u / FRAG_M;        // fragments of a subgroup's 32 x 32 quarter
const FRAGS_N: u32 = 32u / FRAG_N;

/** The 2 x LOADS vec4 loads (lhs, then rhs) of k step `kt` for invocation t, from global memory. */
fn loadStep(t: u32, rowBase: u32, colBase: u32, kt: u32) -> array<vec4<u32>, 2u * LOADS> {
  let rowVec4s = tile.depthWords / 4u;
  var v: array<vec4<u32>, 2u * LOADS>;
  for (var i = 0u; i < LOADS; i++) {
    let index = t + i * WORKGROUP_SIZE; // 0..255: 64 rows x 4 vec4 of 16 bytes
    let row = index / 4u;
    let q = index % 4u;
    v[i] = lhsPacked[(rowBase + row) * rowVec4s + kt * 4u + q];
    v[LOADS + i] = rhsPacked[(colBase + row) * rowVec4s + kt * 4u + q];
  }
  return v;
}

/** A packed word as the fragments read it: uint8 domain as is, or back to int8 (XOR 0x80 per byte). */
fn stageWord(w: u32) -> StageWord {
  return bitcast<StageWord>(select(w, w ^ 0x80808080u, SIGNED_FRAGMENTS));
}

fn storeStep(t: u32, buffer: u32, v: array<vec4<u32>, 2u * LOADS>) {
  for (var i = 0u; i < LOADS; i++) {
    let index = t + i * WORKGROUP_SIZE;
    let word = (index / 4u) * ROW_WORDS + (index % 4u) * 4u;
    for (var j = 0u; j < 4u; j++) {
      stage[buffer * BUFFER_WORDS + word + j] = stageWord(v[i][j]);
      stage[buffer * BUFFER_WORDS + TILE_WORDS + word + j] = stageWord(v[LOADS + i][j]);
    }
  }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sgmat(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) t: u32,
  @builtin(subgroup_id) sg: u32,
) {
  let o = tileOrigin(wid, nwg, 64u, 64u);
  if (!o.live) {
    return;
  }
  let rowBase = o.rowBase;
  let colBase = o.colBase;
  let fm = (sg / 2u) * 32u; // this subgroup's quarter of the tile
  let fn_ = (sg % 2u) * 32u;
  let steps = tile.depthWords * 4u / KSTEP;

  var acc: array<ResultFragment, FRAGS_M * FRAGS_N>;
  for (var f = 0u; f < FRAGS_M * FRAGS_N; f++) {
    acc[f] = ResultFragment();
  }

  storeStep(t, 0u, loadStep(t, rowBase, colBase, 0u));
  workgroupBarrier();
  for (var kt = 0u; kt < steps; kt++) {
    let current = kt % 2u;
    let more = kt + 1u < steps;
    var next: array<vec4<u32>, 2u * LOADS>;
    if (more) {
      next = loadStep(t, rowBase, colBase, kt + 1u);
    }
    let lhsBase = current * BUFFER_WORDS * 4u; // byte offsets into `stage`
    let rhsBase = lhsBase + TILE_WORDS * 4u;
    for (var kk = 0u; kk < KSTEP; kk += FRAG_K) {
      var a: array<LeftFragment, FRAGS_M>;
      for (var i = 0u; i < FRAGS_M; i++) {
        a[i] = subgroupMatrixLoad<LeftFragment>(&stage, lhsBase + (fm + i * FRAG_M) * ROW_BYTES + kk, false, ROW_BYTES);
      }
      for (var j = 0u; j < FRAGS_N; j++) {
        let b = subgroupMatrixLoad<RightFragment>(&stage, rhsBase + (fn_ + j * FRAG_N) * ROW_BYTES + kk, true, ROW_BYTES);
        for (var i = 0u; i < FRAGS_M; i++) {
          acc[i * FRAGS_N + j] = subgroupMatrixMultiplyAccumulate(a[i], b, acc[i * FRAGS_N + j]);
        }
      }
    }
    if (more) {
      storeStep(t, 1u - current, next);
    }
    workgroupBarrier();
  }

  // The 64 x 64 sums through workgroup memory, then 4 x 4 blocks to the epilogue.
  for (var i = 0u; i < FRAGS_M; i++) {
    for (var j = 0u; j < FRAGS_N; j++) {
      subgroupMatrixStore(&stage, (fm + i * FRAG_M) * OUT_STRIDE + fn_ + j * FRAG_N, acc[i * FRAGS_N + j], false, OUT_STRIDE);
    }
  }
  workgroupBarrier();
  let depthBytes = tile.depthWords * 4u;
  for (var i = 0u; i < LOADS; i++) {
    let block = t + i * WORKGROUP_SIZE; // 16 x 16 blocks of 4 x 4
    let r0 = (block / 16u) * 4u;
    let n0 = (block % 16u) * 4u;
    let m = tile.bandM + rowBase + r0;
    let n = tile.bandN + colBase + n0;
    var raw: array<vec4<u32>, 4>;
    for (var r = 0u; r < 4u; r++) {
      let w = (r0 + r) * OUT_STRIDE + n0;
      raw[r] = bitcast<vec4<u32>>(vec4<StageWord>(stage[w], stage[w + 1u], stage[w + 2u], stage[w + 3u]));
      if (SIGNED_FRAGMENTS) {
        // sum (a - 128)(b - 128) over the padded depth = raw - 128 rowSum - 128 colSum + 16384 depth (mod 2^32).
        let colSum = bitcast<vec4<u32>>(vec4<i32>(colSums[n], colSums[n + 1u], colSums[n + 2u], colSums[n + 3u]));
        raw[r] += 128u * (bitcast<u32>(rowSums[m + r]) + colSum) - 16384u * depthBytes;
      }
    }
    storeBlock(raw, m, n);
  }
}
