// pack.wgsl: the PACK stage (PACK -> gemm -> output). Reads one 8-bit operand (lhs [M,K] or rhs [K,N]) in
// any storage order and either signedness, and writes the 'u8k4-r64' format (src/pack/formats.ts) the
// gemm kernels read: one packed row per "outer" index (an lhs row, or an rhs column), holding 4
// consecutive k values per u32 (byte j = k + j), K zero-padded to depthWords * 4, the outer count
// padded to the format's row alignment. With `nibbles` set it writes the 'u4k8-r64' format instead
// (operands requantized to at most 4 bits): 8 consecutive k per u32, byte j holding k + j in its low
// nibble and k + j + 4 in its high nibble, K padded to depthWords * 8.
// In the same pass it computes the row sums (lhs) or column sums (rhs) of the four-term expansion
// (src/types.ts). int8 operands are mapped into the uint8 domain by flipping the top bit (v + 128 =
// byte ^ 0x80) and the stage encoding adds 128 to their zero point, so that one dot4U8Packed kernel serves
// every type combination and the sums stay non-negative (docs/math.md).
//
// Less-than-8-bit operands are requantized here (src/quant/lowbit.ts): v' = (v * maxval + offset(i)) / 255,
// with the rounding offset of the element's row-major linear index i in its logical matrix.
//
// One workgroup packs one outer row; its threads stride over the row's words and reduce the sum in
// workgroup memory. Element (outer, k) of the source lives at byte outer*outerStride + k*depthStride of
// the logical operand; the bound `src` range starts at byte srcBase and may hold only the k range
// [depthBegin, depthEnd) (src/pack/plan.ts planPack splits operands larger than a storage binding into bands).

override WORKGROUP_SIZE: u32 = 64u;

struct PackParams {
  outerCount: u32,      // M or N: rows beyond it (padding) are written as zeros
  depth: u32,           // K
  outerStride: u32,     // bytes between consecutive outer indices in the source
  depthStride: u32,     // bytes between consecutive k in the source
  srcBase: u32,         // logical byte index of the first byte of the bound src range
  depthBegin: u32,      // k range held by this src band
  depthEnd: u32,
  depthWords: u32,      // u32 words per packed row: padded K / 4 (padded K / 8 with nibbles)
  outerBase: u32,       // first outer index of this dispatch (the packed binding starts there)
  outerRows: u32,       // rows of this dispatch
  signFlip: u32,        // 0x80 for int8 operands, 0 for uint8
  accumulate: u32,      // 1: add to the sums of an earlier k band instead of overwriting them
  workgroupBase: u32,   // first row of this dispatch's flattened workgroup grid
  maxval: u32,          // 2^bits - 1; 255 leaves 8-bit values as they are
  rounding: u32,        // a ROUNDING_* code
  linearOuterStride: u32, // i = outer * linearOuterStride + k * linearDepthStride (lhs: K, 1; rhs: 1, N)
  linearDepthStride: u32,
  nibbles: u32,         // 1: 'u4k8-r64' (two values per byte; maxval <= 15), 0: 'u8k4-r64'
}

@group(0) @binding(0) var<uniform> params: PackParams;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> packed: array<u32>;
@group(0) @binding(3) var<storage, read_write> sums: array<i32>;
@group(0) @binding(4) var<storage, read> xorshiftOffsets: array<u32>; // XORSHIFT_OFFSETS, 255 values

/** The requantized value of v (uint8 domain) at (outer, k): src/quant/lowbit.ts requantize(). */
fn requantize(v: u32, outer: u32, k: u32) -> u32 {
  // i mod 255 without forming i, which can pass 2^32 for large operands.
  let i255 = ((outer % 255u) * (params.linearOuterStride % 255u) + (k % 255u) * (params.linearDepthStride % 255u)) % 255u;
  var offset = 127u;
  if (params.rounding == ROUNDING_PROBABILISTIC_ADDMOD) {
    offset = (1u + 97u * ((i255 + 1u) % 255u)) % 255u;
  } else if (params.rounding == ROUNDING_PROBABILISTIC_XORSHIFT) {
    offset = xorshiftOffsets[i255];
  }
  return (v * params.maxval + offset) / 255u;
}

fn loadByte(byteIndex: u32) -> u32 {
  let local = byteIndex - params.srcBase;
  return (src[local >> 2u] >> ((local & 3u) * 8u)) & 0xffu;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn pack(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let row = params.workgroupBase + wid.x + wid.y * nwg.x;
  if (row >= params.outerRows) {
    return; // uniform across the workgroup, so the barriers below stay uniform
  }
  let outer = params.outerBase + row;
  let live = outer < params.outerCount;
  let perWord = 4u << params.nibbles; // k values per packed word
  let wordBegin = params.depthBegin / perWord;
  let wordEnd = (params.depthEnd + perWord - 1u) / perWord;
  var sum = 0u;
  for (var w = wordBegin + lid; w < params.depthWords; w += WORKGROUP_SIZE) {
    if (w >= wordEnd && params.depthBegin != 0u) {
      break; // a later k band owns these words
    }
    // Fast path: four consecutive k of an 8-bit operand in one aligned u32 of the source.
    let first = outer * params.outerStride + w * 4u * params.depthStride;
    if (live && params.depthStride == 1u && params.maxval == 255u && params.nibbles == 0u && ((first - params.srcBase) & 3u) == 0u &&
        w * 4u >= params.depthBegin && w * 4u + 4u <= min(params.depthEnd, params.depth)) {
      let word = src[(first - params.srcBase) >> 2u] ^ (params.signFlip * 0x01010101u);
      packed[row * params.depthWords + w] = word;
      sum += (word & 0xffu) + ((word >> 8u) & 0xffu) + ((word >> 16u) & 0xffu) + (word >> 24u);
      continue;
    }
    var word = 0u;
    for (var j = 0u; j < perWord; j++) {
      let k = w * perWord + j;
      // u8k4: byte j. u4k8: low nibble of byte j % 4 for j < 4, its high nibble for j >= 4.
      let shift = select(8u * j, 8u * (j % 4u) + 4u * (j / 4u), params.nibbles != 0u);
      if (live && k >= params.depthBegin && k < params.depthEnd && k < params.depth) {
        var v = loadByte(outer * params.outerStride + k * params.depthStride) ^ params.signFlip;
        if (params.maxval != 255u) {
          v = requantize(v, outer, k);
        }
        word |= v << shift;
        sum += v;
      }
    }
    packed[row * params.depthWords + w] = word;
  }
  let total = bitcast<i32>(workgroupSum(lid, sum));
  if (lid == 0u) {
    sums[outer] = select(total, sums[outer] + total, params.accumulate != 0u);
  }
}

// ---- packTranspose: operands whose k is strided (a row-major rhs, a column-major lhs) -------------------
// `pack` above reads such an operand one byte per invocation with a stride of a whole source row, and
// writes each packed row from one workgroup. Here a workgroup packs TRANSPOSE_ROWS packed rows at once,
// TRANSPOSE_WORDS packed words (4 k each) per step: invocation (row, word) reads the 4 bytes of its word,
// so consecutive invocations read consecutive bytes of one source row (coalesced); the words go through
// workgroup memory and are written packed row by packed row (coalesced too). Same requantization, sums
// and k bands as `pack`.

override TRANSPOSE_ROWS: u32 = 64u;     // packed rows per workgroup (the pack plan's rows per workgroup: pack.ts)
override TRANSPOSE_WORDS: u32 = 16u;    // packed words per step
override TRANSPOSE_THREADS: u32 = 256u; // invocations, a multiple of TRANSPOSE_ROWS

var<workgroup> transposed: array<u32, TRANSPOSE_ROWS * TRANSPOSE_WORDS>; // [row][word]
var<workgroup> rowPartial: array<u32, TRANSPOSE_THREADS>;

@compute @workgroup_size(TRANSPOSE_THREADS)
fn packTranspose(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let firstRow = (params.workgroupBase + wid.x + wid.y * nwg.x) * TRANSPOSE_ROWS;
  if (firstRow >= params.outerRows) {
    return; // uniform across the workgroup
  }
  let row = lid % TRANSPOSE_ROWS;
  let outer = params.outerBase + firstRow + row;
  let live = firstRow + row < params.outerRows && outer < params.outerCount;
  // The words this band owns: its k range, and for the first band the zero padding up to depthWords.
  let wordBegin = params.depthBegin / 4u;
  let wordEnd = select((params.depthEnd + 3u) / 4u, params.depthWords, params.depthBegin == 0u);
  var sum = 0u;
  for (var w0 = wordBegin; w0 < wordEnd; w0 += TRANSPOSE_WORDS) {
    for (var i = lid / TRANSPOSE_ROWS; i < TRANSPOSE_WORDS; i += TRANSPOSE_THREADS / TRANSPOSE_ROWS) {
      var word = 0u;
      for (var j = 0u; j < 4u; j++) {
        let k = (w0 + i) * 4u + j;
        if (live && k >= params.depthBegin && k < params.depthEnd && k < params.depth) {
          var v = loadByte(outer * params.outerStride + k * params.depthStride) ^ params.signFlip;
          if (params.maxval != 255u) {
            v = requantize(v, outer, k);
          }
          word |= v << (8u * j);
          sum += v;
        }
      }
      transposed[row * TRANSPOSE_WORDS + i] = word;
    }
    workgroupBarrier();
    for (var i = lid; i < TRANSPOSE_ROWS * TRANSPOSE_WORDS; i += TRANSPOSE_THREADS) {
      let r = i / TRANSPOSE_WORDS;
      let w = w0 + i % TRANSPOSE_WORDS;
      if (firstRow + r < params.outerRows && w < wordEnd) {
        packed[(firstRow + r) * params.depthWords + w] = transposed[i];
      }
    }
    workgroupBarrier();
  }
  rowPartial[lid] = sum;
  workgroupBarrier();
  if (lid < TRANSPOSE_ROWS && live) {
    var total = 0u;
    for (var i = lid; i < TRANSPOSE_THREADS; i += TRANSPOSE_ROWS) {
      total += rowPartial[i];
    }
    let t = bitcast<i32>(total);
    sums[outer] = select(t, sums[outer] + t, params.accumulate != 0u);
  }
}
