// epilogue.wgsl: the OUTPUT stage (pack -> gemm -> OUTPUT), the one epilogue every GEMM kernel shares,
// fused into the kernel so int32 accumulators never round-trip through memory. A kernel computes raw
// sums of uint8-domain products and calls storeQuad(raw, m, n); for each dst element (m, n) this file
//   1. applies the four-term expansion of src/types.ts, from the raw sum and the row/column sums written
//      by the pack stage:  acc = raw - zR*rowSum[m] - zL*colSum[n] + K*zL*zR, each term rescaled by
//      RoundingMultiplyByConstantFraction (lowbit.wgsl) for less-than-8-bit operands;
//   2. runs the lowered output program, read as data from the `stages` buffer (one STAGE_WORDS record
//      per op, written by ./stages.ts), each op computed as its stage's module in src/problem/stages/
//      evaluates it, with the functions of fixedpoint.wgsl, float32.wgsl and tanh.wgsl;
//   3. stores: 8-bit results four per u32, 16-bit two per u32, int32 as is. Each call stores a quad of 4
//      consecutive elements along dst's contiguous dimension (lines are padded to `dstStride`).
// The epilogue owns its uniform struct and bindings (declared here, bound by name by ./epilogue.ts); a
// kernel reads none of them. Enum codes (DST_*, STAGE_*) come from src/gpu/codes.ts.

struct EpilogueParams {
  M: u32,
  N: u32,
  K: u32,
  dstStride: u32,        // elements between consecutive rows (row-major) or columns (col-major)
  dstBase: u32,          // element index, in the whole dst, of the first element of the bound dst range
  dstType: u32,          // a DST_* code
  dstColMajor: u32,
  lhsZeroPoint: i32,     // uint8-domain zero point (int8 operands: + 128), when scalar
  lhsZeroPointOffset: i32, // -1: scalar; else offset of the per-row vector in `stages`
  rhsZeroPoint: i32,
  rhsZeroPointOffset: i32,
  stageCount: u32,
  // RoundingMultiplyByConstantFraction constants of the three unpacking terms (src/quant/lowbit.ts);
  // identity for 8-bit operands, where step 1 is exactly the four-term expansion.
  xxIdentity: u32,
  xxIntQuotient: i32,
  xxScaledRemainingNumerator: i32,
  x1Identity: u32,
  x1IntQuotient: i32,
  x1ScaledRemainingNumerator: i32,
  onexIdentity: u32,
  onexIntQuotient: i32,
  onexScaledRemainingNumerator: i32,
}

@group(0) @binding(0) var<uniform> epilogue: EpilogueParams;
@group(0) @binding(1) var<storage, read> rowSums: array<i32>;
@group(0) @binding(2) var<storage, read> colSums: array<i32>;
@group(0) @binding(3) var<storage, read> stages: array<i32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;

// The op codes the output program may hold, one bit each (bit STAGE_*): a pipeline is compiled for the
// stage kinds of its calls (src/epilogue/stages.ts stageKinds), so the compiler drops the other cases.
// Every bit set, the default, compiles the whole interpreter.
override STAGE_KINDS: u32 = 0xffffffffu;

// A kernel that reads its lhs unpacked (the gemv, src/kernels/gemv/) or gathers a convolution's patches
// from its input (dot4-tiled, dot4-wide, sgmat: their *lhs-patches.wgsl; split-K's reduce pass adds
// its slices' sums up, src/kernels/splitk/reduce.wgsl) computes the lhs row sums
// itself: with LHS_SUMS_IN_KERNEL set, step 1 takes rowSum(m) from kernelRowSums (rows kernelRowBase..+3,
// set by the invocation before it stores those rows) instead of the pack stage's `rowSums`.
override LHS_SUMS_IN_KERNEL: bool = false;
var<private> kernelRowSums: vec4<i32>;
var<private> kernelRowBase: u32;

fn rowSum(m: u32) -> i32 {
  if (LHS_SUMS_IN_KERNEL) {
    return kernelRowSums[m - kernelRowBase];
  }
  return rowSums[m];
}

fn stageIn(op: i32) -> bool {
  return ((STAGE_KINDS >> u32(op)) & 1u) != 0u;
}

/** A scalar parameter, or element `index` of a vector stored in `stages` (isVector != 0: value is its offset). */
fn channelValue(isVector: i32, value: i32, index: u32) -> i32 {
  if (isVector != 0) {
    return stages[u32(value) + index];
  }
  return value;
}

fn zeroPoint(value: i32, offset: i32, index: u32) -> i32 {
  if (offset >= 0) {
    return stages[u32(offset) + index];
  }
  return value;
}

/** Steps 1 and 2 for dst element (m, n) (global indices, in range). */
fn outputValue(raw: u32, m: u32, n: u32) -> i32 {
  let zL = zeroPoint(epilogue.lhsZeroPoint, epilogue.lhsZeroPointOffset, m);
  let zR = zeroPoint(epilogue.rhsZeroPoint, epilogue.rhsZeroPointOffset, n);
  var x = roundingMultiplyByConstantFraction(bitcast<i32>(raw), epilogue.xxIdentity, epilogue.xxIntQuotient, epilogue.xxScaledRemainingNumerator)
    + roundingMultiplyByConstantFraction(rowSum(m) * -zR, epilogue.x1Identity, epilogue.x1IntQuotient, epilogue.x1ScaledRemainingNumerator)
    + roundingMultiplyByConstantFraction(colSums[n] * -zL, epilogue.onexIdentity, epilogue.onexIntQuotient, epilogue.onexScaledRemainingNumerator)
    + i32(epilogue.K) * zL * zR;
  for (var s = 0u; s < epilogue.stageCount; s++) {
    let r = s * STAGE_WORDS;
    let c = select(m, n, stages[r + 1u] != 0); // the channel index along the stage's axis
    switch stages[r] {
      case STAGE_BIAS: {
        if (stageIn(STAGE_BIAS)) {
          x = x + channelValue(stages[r + 2u], stages[r + 3u], c);
        }
      }
      case STAGE_SCALE_TO_UINT8: {
        if (stageIn(STAGE_SCALE_TO_UINT8)) {
          let offset = channelValue(stages[r + 2u], stages[r + 3u], c);
          let multiplier = channelValue(stages[r + 4u], stages[r + 5u], c);
          x = roundingDivideByPOT((x + offset) * multiplier, u32(stages[r + 6u]));
        }
      }
      case STAGE_FIXED_POINT: {
        if (stageIn(STAGE_FIXED_POINT)) {
          x = roundingDivideByPOT(saturatingRoundingDoublingHighMul(x, stages[r + 2u]), u32(stages[r + 3u])) + stages[r + 4u];
        }
      }
      case STAGE_EXPONENT_DOUBLE: {
        if (stageIn(STAGE_EXPONENT_DOUBLE)) {
          let multiplier = channelValue(stages[r + 2u], stages[r + 3u], c);
          let exponent = channelValue(stages[r + 4u], stages[r + 5u], c);
          x = multiplyByQuantizedMultiplierDouble(x, multiplier, exponent) + stages[r + 6u];
        }
      }
      case STAGE_EXPONENT_SINGLE: {
        if (stageIn(STAGE_EXPONENT_SINGLE)) {
          let multiplier = channelValue(stages[r + 2u], stages[r + 3u], c);
          let exponent = channelValue(stages[r + 4u], stages[r + 5u], c);
          x = multiplyByQuantizedMultiplierSingle(x, multiplier, exponent) + stages[r + 6u];
        }
      }
      case STAGE_EXPONENT_DOUBLE_UP: {
        if (stageIn(STAGE_EXPONENT_DOUBLE_UP)) {
          let multiplier = channelValue(stages[r + 2u], stages[r + 3u], c);
          let exponent = channelValue(stages[r + 4u], stages[r + 5u], c);
          x = multiplyByQuantizedMultiplierDoubleUp(x, multiplier, exponent) + stages[r + 6u];
        }
      }
      case STAGE_REQUANTIZE_FLOAT32: {
        if (stageIn(STAGE_REQUANTIZE_FLOAT32)) {
          x = requantizeFloat32(x, channelValue(stages[r + 2u], stages[r + 3u], c), stages[r + 4u]);
        }
      }
      case STAGE_CLAMP: {
        if (stageIn(STAGE_CLAMP)) {
          x = clamp(x, stages[r + 2u], stages[r + 3u]);
        }
      }
      case STAGE_TANH: {
        if (stageIn(STAGE_TANH)) {
          let p = TanhParams(stages[r + 2u], stages[r + 3u], stages[r + 4u], stages[r + 5u], stages[r + 6u],
                             stages[r + 7u], stages[r + 8u], stages[r + 9u], stages[r + 10u]);
          x = tanhStage(x, p);
        }
      }
      case STAGE_TRUNCATE: {
        if (stageIn(STAGE_TRUNCATE)) {
          x = x & 0xff;
        }
      }
      default: {}
    }
  }
  return x;
}

/**
 * Computes and stores the quad of dst elements starting at (m, n), running along n for a row-major dst
 * and along m for a column-major one; raw holds their raw sums in that order. Elements past M or N are
 * computed from clamped indices and land in the row padding; a quad starting outside dst is skipped.
 */
fn storeQuad(raw: vec4<u32>, m: u32, n: u32) {
  if (m >= epilogue.M || n >= epilogue.N) {
    return;
  }
  // One call site of outputValue (and of storeQuad in storeBlock): the compiler inlines each call, and
  // every copy of the output program costs compile time.
  let colMajor = epilogue.dstColMajor != 0u;
  var v: vec4<i32>;
  for (var i = 0u; i < 4u; i++) {
    let mi = select(m, min(m + i, epilogue.M - 1u), colMajor);
    let ni = select(min(n + i, epilogue.N - 1u), n, colMajor);
    v[i] = outputValue(raw[i], mi, ni);
  }
  var first = m * epilogue.dstStride + n;
  if (epilogue.dstColMajor != 0u) {
    first = n * epilogue.dstStride + m;
  }
  let e = first - epilogue.dstBase; // a multiple of 4
  switch epilogue.dstType {
    case DST_INT32: {
      for (var i = 0u; i < 4u; i++) {
        dst[e + i] = bitcast<u32>(v[i]);
      }
    }
    case DST_INT16: {
      let h = bitcast<vec4<u32>>(v) & vec4<u32>(0xffffu);
      dst[e / 2u] = h.x | (h.y << 16u);
      dst[e / 2u + 1u] = h.z | (h.w << 16u);
    }
    default: { // DST_UINT8, DST_INT8
      let b = bitcast<vec4<u32>>(v) & vec4<u32>(0xffu);
      dst[e / 4u] = b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
    }
  }
}

/** Whether dst is column-major, for kernels that gather quads themselves (gemv). */
fn dstColMajor() -> bool {
  return epilogue.dstColMajor != 0u;
}

/** Stores a 4x4 block of raw sums, acc[r][c] for dst element (m0 + r, n0 + c), as quads. */
fn storeBlock(acc: array<vec4<u32>, 4>, m0: u32, n0: u32) {
  let colMajor = dstColMajor();
  for (var q = 0u; q < 4u; q++) {
    // row-major: row q of the block; column-major: column q
    let raw = select(acc[q], vec4<u32>(acc[0][q], acc[1][q], acc[2][q], acc[3][q]), colMajor);
    storeQuad(raw, select(m0 + q, m0, colMajor), select(n0, n0 + q, colMajor));
  }
}
