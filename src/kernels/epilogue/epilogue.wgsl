// output.wgsl: the OUTPUT stage (pack -> gemm -> OUTPUT), fused into the epilogue of the gemm kernels
// (gemm.wgsl, gemv.wgsl) so int32 accumulators never round-trip through memory. For dst element (m, n):
//   1. the four-term expansion of src/types.ts, from the raw sum of uint8-domain products and the
//      row/column sums written by pack.wgsl:  acc = raw - zR*rowSum[m] - zL*colSum[n] + K*zL*zR,
//      each term rescaled by RoundingMultiplyByConstantFraction for less-than-8-bit operands;
//   2. the output pipeline, read as data from the `stages` buffer (one 12-word record per stage, see
//      src/scheduler/stages.ts), each stage computed as in src/reference/pipeline.ts with the functions of
//      fixedpoint.wgsl;
//   3. the store: 8-bit results four per u32, 16-bit two per u32, int32 as is. Each call stores a quad
//      of 4 consecutive elements along dst's contiguous dimension (rows are padded to `dstStride`).
// Also declares the GemmParams uniform and the bindings that gemm.wgsl and gemv.wgsl share.

struct GemmParams {
  M: u32,
  N: u32,
  K: u32,
  depthWords: u32,       // padded K / 4: u32 words per packed row
  bandM: u32,            // first dst row of this dispatch (lhsPacked is bound from that row)
  bandN: u32,            // first dst column of this dispatch (rhsPacked is bound from that column)
  bandRows: u32,         // rows of this dispatch's tiles (rows holding dst elements, rounded up to the tile)
  bandCols: u32,         // columns of this dispatch's tiles, likewise
  dstStride: u32,        // elements between consecutive rows (row-major) or columns (col-major)
  dstBase: u32,          // element index, in the whole dst, of the first element of the bound dst range
  dstType: u32,          // 0 int32, 1 uint8, 2 int8, 3 int16
  dstColMajor: u32,
  lhsZeroPoint: i32,     // uint8-domain zero point (int8 operands: + 128), when scalar
  lhsZeroPointOffset: i32, // -1: scalar; else offset of the per-row vector in `stages`
  rhsZeroPoint: i32,
  rhsZeroPointOffset: i32,
  stageCount: u32,
  workgroupBase: u32,    // first tile of this dispatch's flattened workgroup grid
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

@group(0) @binding(0) var<uniform> params: GemmParams;
@group(0) @binding(3) var<storage, read> rowSums: array<i32>;
@group(0) @binding(4) var<storage, read> colSums: array<i32>;
@group(0) @binding(5) var<storage, read> stages: array<i32>;
@group(0) @binding(6) var<storage, read_write> dst: array<u32>;

const STAGE_WORDS: u32 = 12u;
const STAGE_BIAS: i32 = 0;
const STAGE_QUANTIZE_DOWN_INT32_TO_UINT8_SCALE: i32 = 1;
const STAGE_QUANTIZE_DOWN_INT32_BY_FIXED_POINT: i32 = 2;
const STAGE_SCALE_INT32_BY_FIXED_POINT_AND_EXPONENT: i32 = 3;
const STAGE_CLAMP: i32 = 4;
const STAGE_TANH: i32 = 5;
const STAGE_TRUNCATING_CAST_UINT8: i32 = 6;

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
  let zL = zeroPoint(params.lhsZeroPoint, params.lhsZeroPointOffset, m);
  let zR = zeroPoint(params.rhsZeroPoint, params.rhsZeroPointOffset, n);
  var x = roundingMultiplyByConstantFraction(bitcast<i32>(raw), params.xxIdentity, params.xxIntQuotient, params.xxScaledRemainingNumerator)
    + roundingMultiplyByConstantFraction(rowSums[m] * -zR, params.x1Identity, params.x1IntQuotient, params.x1ScaledRemainingNumerator)
    + roundingMultiplyByConstantFraction(colSums[n] * -zL, params.onexIdentity, params.onexIntQuotient, params.onexScaledRemainingNumerator)
    + i32(params.K) * zL * zR;
  for (var s = 0u; s < params.stageCount; s++) {
    let r = s * STAGE_WORDS;
    let c = select(m, n, stages[r + 1u] != 0); // the channel index along the stage's axis
    switch stages[r] {
      case STAGE_BIAS: {
        x = x + stages[u32(stages[r + 2u]) + c];
      }
      case STAGE_QUANTIZE_DOWN_INT32_TO_UINT8_SCALE: {
        let offset = channelValue(stages[r + 2u], stages[r + 3u], c);
        let multiplier = channelValue(stages[r + 4u], stages[r + 5u], c);
        x = roundingDivideByPOT((x + offset) * multiplier, u32(stages[r + 6u]));
      }
      case STAGE_QUANTIZE_DOWN_INT32_BY_FIXED_POINT: {
        x = roundingDivideByPOT(saturatingRoundingDoublingHighMul(x, stages[r + 2u]), u32(stages[r + 3u])) + stages[r + 4u];
      }
      case STAGE_SCALE_INT32_BY_FIXED_POINT_AND_EXPONENT: {
        let multiplier = channelValue(stages[r + 2u], stages[r + 3u], c);
        let exponent = channelValue(stages[r + 4u], stages[r + 5u], c);
        if (stages[r + 7u] == 0) {
          x = multiplyByQuantizedMultiplierDouble(x, multiplier, exponent);
        } else {
          x = multiplyByQuantizedMultiplierSingle(x, multiplier, exponent);
        }
        x = x + stages[r + 6u];
      }
      case STAGE_CLAMP: {
        x = clamp(x, stages[r + 2u], stages[r + 3u]);
      }
      case STAGE_TANH: {
        let p = TanhParams(stages[r + 2u], stages[r + 3u], stages[r + 4u], stages[r + 5u], stages[r + 6u],
                           stages[r + 7u], stages[r + 8u], stages[r + 9u], stages[r + 10u]);
        x = tanhStage(x, p);
      }
      case STAGE_TRUNCATING_CAST_UINT8: {
        x = x & 0xff;
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
  if (m >= params.M || n >= params.N) {
    return;
  }
  var v: vec4<i32>;
  for (var i = 0u; i < 4u; i++) {
    if (params.dstColMajor != 0u) {
      v[i] = outputValue(raw[i], min(m + i, params.M - 1u), n);
    } else {
      v[i] = outputValue(raw[i], m, min(n + i, params.N - 1u));
    }
  }
  var first = m * params.dstStride + n;
  if (params.dstColMajor != 0u) {
    first = n * params.dstStride + m;
  }
  let e = first - params.dstBase; // a multiple of 4
  switch params.dstType {
    case 0u: {
      for (var i = 0u; i < 4u; i++) {
        dst[e + i] = bitcast<u32>(v[i]);
      }
    }
    case 3u: {
      let h = bitcast<vec4<u32>>(v) & vec4<u32>(0xffffu);
      dst[e / 2u] = h.x | (h.y << 16u);
      dst[e / 2u + 1u] = h.z | (h.w << 16u);
    }
    default: {
      let b = bitcast<vec4<u32>>(v) & vec4<u32>(0xffu);
      dst[e / 4u] = b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
    }
  }
}
