// sgmat.wgsl: the subgroup-matrix GEMM kernel (pack -> GEMM -> output) on int8 tensor cores, through
// Dawn's chromium-experimental-subgroup-matrix, for every int8 fragment shape an adapter reports and
// every tiling of ./config.ts. It reads rows packed in the 'u8k4-r64', '-r128' or '-r256' format (as its
// tile's sides need; src/pack/formats.ts): the packed lhs is a row-major Mp x Kp byte matrix, the packed
// rhs an Np x Kp one, i.e. the right matrix stored column-major; every operand is in the uint8 domain
// already (int8 XOR 0x80), so the raw sums are those of the dot4 kernels and the shared epilogue
// (epilogue.wgsl) applies the same four-term expansion and output pipeline. Its fragment loads and stores
// are written in the builtins' current form (majorness a template argument; offset and stride counted in
// elements of the array read: u32 words, 4 bytes of an 8-bit fragment); ./load-form.ts rewrites them into
// the older form for a WGSL compiler that lacks it.
//
// The fragment shape and type come from constants generated from the adapter's configuration: FRAG_M x
// FRAG_N results, FRAG_K deep, the LeftFragment / RightFragment / ResultFragment aliases, SUBGROUP_SIZE,
// and SIGNED_FRAGMENTS for i8 -> i32 configurations (staged bytes XOR 0x80 back to int8 values x - 128,
// and the raw sum recovered below from the pack stage's row and column sums). The tiling comes from
// generated constants too: a workgroup of SG_ROWS x SG_COLS subgroups computes a TILE_M x TILE_N dst
// tile; subgroup s owns block (s / SG_COLS, s % SG_COLS) of SUB_M x SUB_N as FRAGS_M x FRAGS_N fragments
// (1, 2 or 4 a side), held in accumulators named one by one (acc00 .. acc33) and left fragments a0 ..
// a3, never in an array indexed at run time: each use is guarded by a condition on the constants FRAGS_M
// and FRAGS_N, so the unused ones fold away and control flow stays uniform. The k loop steps KSTEP
// bytes: both operand tiles are staged in workgroup memory with rows padded to ROW_BYTES, the next
// step's 16-byte global loads held in registers while this step's multiply-accumulates run, then stored
// into the other buffer (BUFFERS = 2: one barrier per step) or the same one (BUFFERS = 1: two). The last
// step may reach past the packed depth (K is padded to 64 bytes, KSTEP may be 128): those pieces are
// staged as zeros of the fragment's type, and the fragments stop at the depth. The accumulators then go
// through workgroup memory (subgroupMatrixStore), OUT_BANDS subgroup rows per pass, to the invocations,
// which hand 4 x 4 blocks to sgmatStore. Which tile and which k steps a workgroup computes (sgmatWork),
// and where its sums go (sgmatStore), come from one of two files composed beside this one:
// sgmat-one-pass.wgsl (the whole depth, the epilogue's storeBlock) or sgmat-split.wgsl (a K slice, raw
// sums to the split-K workspace). The rhs half of the staging (RHS_LOADS pieces per k step, rhsLoad,
// rhsStore) comes from sgmat-rhs.wgsl for 8-bit rows, or sgmat-rhs-u4.wgsl for rows of two values per
// byte ('-u4'), and the right fragments' loads from it (rightFragment) from sgmat-right.wgsl; the
// direct-rhs tilings compose sgmat-rhs-direct.wgsl in place of both (no rhs staging, right fragments
// loaded from the packed rhs). The lhs pieces (piece) and the left fragments' loads (leftFragment) come
// from sgmat-lhs.wgsl, or, for the '-dd' tilings, from sgmat-lhs-direct.wgsl (left fragments from the
// packed lhs; with nothing staged, STAGED is false and the k loop has no loadStep, storeStep or
// barrier), or, for a convolution gathered from its input, from sgmat-lhs-patches.wgsl, which also
// computes the lhs row sums (shareLhsRowSums after the k loop, useLhsRowSums per 4 x 4 block; both do
// nothing in the other two files). The enable directives are in sgmat-enable.wgsl, composed first; the declarations in
// sgmat-bindings.wgsl.

const WORKGROUP_SIZE: u32 = SG_ROWS * SG_COLS * SUBGROUP_SIZE;
const SUB_M: u32 = TILE_M / SG_ROWS;      // a subgroup's block of the tile
const SUB_N: u32 = TILE_N / SG_COLS;
const FRAGS_M: u32 = SUB_M / FRAG_M;      // fragments of a subgroup's block
const FRAGS_N: u32 = SUB_N / FRAG_N;
const PIECES: u32 = KSTEP / 16u;          // 16-byte pieces of a staged row per k step
const PIECES_A: u32 = LHS_ROWS_STAGED * PIECES; // pieces of the lhs tile per k step (0: left fragments direct)
const LOADS_A: u32 = (PIECES_A + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE; // per invocation and step
const LOADS_B: u32 = (RHS_LOADS + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;
const STEP_LOADS: u32 = max(1u, LOADS_A + LOADS_B); // WGSL has no zero-length array; '-dd' stages none
const STAGED: bool = BUFFER_WORDS > 0u;   // false for '-dd': a k loop with no staging and no barrier
const OUT_ROWS: u32 = OUT_BANDS * SUB_M;  // result rows per pass through `stage`
const OUT_BLOCKS: u32 = OUT_ROWS * TILE_N / 16u; // 4 x 4 blocks per pass
const OUT_LOADS: u32 = (OUT_BLOCKS + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;

/** Zeros of the fragment's type, in the uint8 domain: what is staged past the packed depth. */
const PAST_DEPTH: vec4<u32> = vec4<u32>(select(0u, 0x80808080u, SIGNED_FRAGMENTS));

/** The LOADS_A + LOADS_B vec4 loads (lhs, then rhs) of k step `kt` for invocation t, from global memory. */
fn loadStep(t: u32, rowBase: u32, colBase: u32, kt: u32) -> array<vec4<u32>, STEP_LOADS> {
  let rowVec4s = tile.depthWords / 4u;
  var v: array<vec4<u32>, STEP_LOADS>;
  for (var i = 0u; i < LOADS_A; i++) {
    let index = t + i * WORKGROUP_SIZE; // TILE_M rows x PIECES
    if (index < PIECES_A) {
      v[i] = piece(i, rowBase + index / PIECES, kt, index % PIECES, rowVec4s);
    }
  }
  for (var i = 0u; i < LOADS_B; i++) {
    let index = t + i * WORKGROUP_SIZE; // RHS_LOADS: TILE_N rows x their 16-byte loads
    if (index < RHS_LOADS) {
      v[LOADS_A + i] = rhsLoad(colBase, index, kt, rowVec4s);
    }
  }
  return v;
}

/** A packed word as the fragments read it: uint8 domain as is, or back to int8 (XOR 0x80 per byte). */
fn stageWord(w: u32) -> StageWord {
  return bitcast<StageWord>(select(w, w ^ 0x80808080u, SIGNED_FRAGMENTS));
}

fn storeStep(t: u32, buffer: u32, v: array<vec4<u32>, STEP_LOADS>) {
  for (var i = 0u; i < LOADS_A; i++) {
    let index = t + i * WORKGROUP_SIZE;
    if (index < PIECES_A) {
      let word = buffer * BUFFER_WORDS + (index / PIECES) * ROW_WORDS + (index % PIECES) * 4u;
      for (var j = 0u; j < 4u; j++) {
        stage[word + j] = stageWord(v[i][j]);
      }
    }
  }
  for (var i = 0u; i < LOADS_B; i++) {
    let index = t + i * WORKGROUP_SIZE;
    if (index < RHS_LOADS) {
      rhsStore(buffer * BUFFER_WORDS + LHS_WORDS, index, v[LOADS_A + i]);
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
  let o = sgmatWork(wid, nwg);
  if (!o.live) {
    return;
  }
  let rowBase = o.rowBase;
  let colBase = o.colBase;
  let band = sg / SG_COLS;
  let fm = band * SUB_M; // this subgroup's block of the tile
  let fn_ = (sg % SG_COLS) * SUB_N;
  let depthBytes = tile.depthWords * 4u;
  let steps = o.steps; // k steps o.firstStep, o.firstStep + 1, ...

  // FRAGS_M x FRAGS_N accumulators, named one by one (accIJ: fragment row I, column J) so that no fragment
  // is ever indexed at run time; every use past acc00 is guarded by a condition on the constants FRAGS_M
  // and FRAGS_N (1, 2 or 4), which the compiler folds, so control flow stays uniform.
  var acc00 = ResultFragment(); var acc01 = ResultFragment(); var acc02 = ResultFragment(); var acc03 = ResultFragment();
  var acc10 = ResultFragment(); var acc11 = ResultFragment(); var acc12 = ResultFragment(); var acc13 = ResultFragment();
  var acc20 = ResultFragment(); var acc21 = ResultFragment(); var acc22 = ResultFragment(); var acc23 = ResultFragment();
  var acc30 = ResultFragment(); var acc31 = ResultFragment(); var acc32 = ResultFragment(); var acc33 = ResultFragment();

  if (STAGED) {
    storeStep(t, 0u, loadStep(t, rowBase, colBase, o.firstStep));
    workgroupBarrier();
  }
  for (var kt = 0u; kt < steps; kt++) {
    let current = kt % BUFFERS;
    let more = kt + 1u < steps;
    var next: array<vec4<u32>, STEP_LOADS>;
    if (STAGED && more) {
      next = loadStep(t, rowBase, colBase, o.firstStep + kt + 1u);
    }
    let lhsBase = current * BUFFER_WORDS; // word offsets into `stage`
    let rhsBase = lhsBase + LHS_WORDS;
    let kBase = (o.firstStep + kt) * KSTEP; // byte of the packed depth at this step's k = 0
    let kEnd = min(KSTEP, depthBytes - kBase); // past the packed depth every lhs byte is zero: skipped
    for (var kk = 0u; kk < kEnd; kk += FRAG_K) {
      // Fragment row i: one left fragment (./sgmat-lhs.wgsl or ./sgmat-lhs-direct.wgsl).
      let a0 = leftFragment(lhsBase, rowBase, fm, kBase, kk);
      var a1 = LeftFragment();
      var a2 = LeftFragment();
      var a3 = LeftFragment();
      if (FRAGS_M > 1u) {
        a1 = leftFragment(lhsBase, rowBase, fm + FRAG_M, kBase, kk);
      }
      if (FRAGS_M > 2u) {
        a2 = leftFragment(lhsBase, rowBase, fm + 2u * FRAG_M, kBase, kk);
      }
      if (FRAGS_M > 3u) {
        a3 = leftFragment(lhsBase, rowBase, fm + 3u * FRAG_M, kBase, kk);
      }
      // Fragment column j: one right fragment (./sgmat-right.wgsl or ./sgmat-rhs-direct.wgsl), FRAGS_M products.
      var b = rightFragment(rhsBase, colBase, fn_, kBase, kk);
      acc00 = subgroupMatrixMultiplyAccumulate(a0, b, acc00);
      if (FRAGS_M > 1u) { acc10 = subgroupMatrixMultiplyAccumulate(a1, b, acc10); }
      if (FRAGS_M > 2u) { acc20 = subgroupMatrixMultiplyAccumulate(a2, b, acc20); }
      if (FRAGS_M > 3u) { acc30 = subgroupMatrixMultiplyAccumulate(a3, b, acc30); }
      if (FRAGS_N > 1u) { // column 1
        b = rightFragment(rhsBase, colBase, fn_ + FRAG_N, kBase, kk);
        acc01 = subgroupMatrixMultiplyAccumulate(a0, b, acc01);
        if (FRAGS_M > 1u) { acc11 = subgroupMatrixMultiplyAccumulate(a1, b, acc11); }
        if (FRAGS_M > 2u) { acc21 = subgroupMatrixMultiplyAccumulate(a2, b, acc21); }
        if (FRAGS_M > 3u) { acc31 = subgroupMatrixMultiplyAccumulate(a3, b, acc31); }
      }
      if (FRAGS_N > 2u) { // column 2
        b = rightFragment(rhsBase, colBase, fn_ + 2u * FRAG_N, kBase, kk);
        acc02 = subgroupMatrixMultiplyAccumulate(a0, b, acc02);
        if (FRAGS_M > 1u) { acc12 = subgroupMatrixMultiplyAccumulate(a1, b, acc12); }
        if (FRAGS_M > 2u) { acc22 = subgroupMatrixMultiplyAccumulate(a2, b, acc22); }
        if (FRAGS_M > 3u) { acc32 = subgroupMatrixMultiplyAccumulate(a3, b, acc32); }
      }
      if (FRAGS_N > 3u) { // column 3
        b = rightFragment(rhsBase, colBase, fn_ + 3u * FRAG_N, kBase, kk);
        acc03 = subgroupMatrixMultiplyAccumulate(a0, b, acc03);
        if (FRAGS_M > 1u) { acc13 = subgroupMatrixMultiplyAccumulate(a1, b, acc13); }
        if (FRAGS_M > 2u) { acc23 = subgroupMatrixMultiplyAccumulate(a2, b, acc23); }
        if (FRAGS_M > 3u) { acc33 = subgroupMatrixMultiplyAccumulate(a3, b, acc33); }
      }
    }
    if (STAGED) {
      if (BUFFERS == 1u) {
        workgroupBarrier(); // one buffer: every subgroup is done reading it before it is refilled
      }
      if (more) {
        storeStep(t, (kt + 1u) % BUFFERS, next);
      }
      workgroupBarrier();
    }
  }

  shareLhsRowSums(t); // lhs row sums computed in the kernel (a gathered lhs) to workgroup memory
  sgmatShareRowSums(o, t); // and a split-K slice's to the workspace

  // The sums through workgroup memory, OUT_ROWS rows per pass, then 4 x 4 blocks to the epilogue.
  for (var outPass = 0u; outPass < SG_ROWS / OUT_BANDS; outPass++) {
    if (outPass > 0u) {
      workgroupBarrier(); // the previous pass's blocks are read
    }
    if (band / OUT_BANDS == outPass) {
      let out = (fm - outPass * OUT_ROWS) * OUT_STRIDE + fn_; // accIJ goes to out + I * FRAG_M * OUT_STRIDE + J * FRAG_N
      const R = FRAG_M * OUT_STRIDE;
      subgroupMatrixStore<row_major>(&stage, out, acc00, OUT_STRIDE);
      if (FRAGS_N > 1u) { subgroupMatrixStore<row_major>(&stage, out + FRAG_N, acc01, OUT_STRIDE); }
      if (FRAGS_N > 2u) { subgroupMatrixStore<row_major>(&stage, out + 2u * FRAG_N, acc02, OUT_STRIDE); }
      if (FRAGS_N > 3u) { subgroupMatrixStore<row_major>(&stage, out + 3u * FRAG_N, acc03, OUT_STRIDE); }
      if (FRAGS_M > 1u) { subgroupMatrixStore<row_major>(&stage, out + R, acc10, OUT_STRIDE); }
      if (FRAGS_M > 1u && FRAGS_N > 1u) { subgroupMatrixStore<row_major>(&stage, out + R + FRAG_N, acc11, OUT_STRIDE); }
      if (FRAGS_M > 1u && FRAGS_N > 2u) { subgroupMatrixStore<row_major>(&stage, out + R + 2u * FRAG_N, acc12, OUT_STRIDE); }
      if (FRAGS_M > 1u && FRAGS_N > 3u) { subgroupMatrixStore<row_major>(&stage, out + R + 3u * FRAG_N, acc13, OUT_STRIDE); }
      if (FRAGS_M > 2u) { subgroupMatrixStore<row_major>(&stage, out + 2u * R, acc20, OUT_STRIDE); }
      if (FRAGS_M > 2u && FRAGS_N > 1u) { subgroupMatrixStore<row_major>(&stage, out + 2u * R + FRAG_N, acc21, OUT_STRIDE); }
      if (FRAGS_M > 2u && FRAGS_N > 2u) { subgroupMatrixStore<row_major>(&stage, out + 2u * R + 2u * FRAG_N, acc22, OUT_STRIDE); }
      if (FRAGS_M > 2u && FRAGS_N > 3u) { subgroupMatrixStore<row_major>(&stage, out + 2u * R + 3u * FRAG_N, acc23, OUT_STRIDE); }
      if (FRAGS_M > 3u) { subgroupMatrixStore<row_major>(&stage, out + 3u * R, acc30, OUT_STRIDE); }
      if (FRAGS_M > 3u && FRAGS_N > 1u) { subgroupMatrixStore<row_major>(&stage, out + 3u * R + FRAG_N, acc31, OUT_STRIDE); }
      if (FRAGS_M > 3u && FRAGS_N > 2u) { subgroupMatrixStore<row_major>(&stage, out + 3u * R + 2u * FRAG_N, acc32, OUT_STRIDE); }
      if (FRAGS_M > 3u && FRAGS_N > 3u) { subgroupMatrixStore<row_major>(&stage, out + 3u * R + 3u * FRAG_N, acc33, OUT_STRIDE); }
    }
    workgroupBarrier();
    for (var i = 0u; i < OUT_LOADS; i++) {
      let block = t + i * WORKGROUP_SIZE; // (OUT_ROWS / 4) x (TILE_N / 4) blocks of 4 x 4
      if (block < OUT_BLOCKS) {
        let r0 = (block / (TILE_N / 4u)) * 4u;
        let n0 = (block % (TILE_N / 4u)) * 4u;
        let row = rowBase + outPass * OUT_ROWS + r0; // in the band
        let col = colBase + n0;
        let m = tile.bandM + row;
        let n = tile.bandN + col;
        useLhsRowSums(outPass * OUT_ROWS + r0, m);
        var raw: array<vec4<u32>, 4>;
        for (var r = 0u; r < 4u; r++) {
          let w = (r0 + r) * OUT_STRIDE + n0;
          raw[r] = bitcast<vec4<u32>>(vec4<StageWord>(stage[w], stage[w + 1u], stage[w + 2u], stage[w + 3u]));
          if (SIGNED_FRAGMENTS && (o.firstSlice || LHS_GATHERED)) {
            // sum (a - 128)(b - 128) over the padded depth = raw - 128 rowSum - 128 colSum + 16384 depth (mod 2^32);
            // split-K: the first slice adds the whole correction, the reduce pass's sum of the slices is then
            // raw; a gathered lhs's row sums are the slice's own, so each slice adds its part of that term.
            raw[r] += 128u * bitcast<u32>(rowSum(m + r));
            if (o.firstSlice) {
              let colSum = bitcast<vec4<u32>>(vec4<i32>(colSums[n], colSums[n + 1u], colSums[n + 2u], colSums[n + 3u]));
              raw[r] += 128u * colSum - 16384u * depthBytes;
            }
          }
        }
        sgmatStore(o, raw, row, col);
      }
    }
  }
}
