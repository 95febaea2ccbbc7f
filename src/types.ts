// The quantized GEMM problem, specified once. Every stage of pack -> gemm -> output (the CPU
// reference, the WGSL shaders, the scheduler, the CLI) computes exactly what is written here, and
// cites these names.
//
// Quantization (gemmlowp, TFLite): real = scale * (q - zeroPoint).
//
// GEMM. lhs is [M,K], rhs is [K,N]; each is uint8 or int8 and row- or column-major on its own.
//   acc[m][n] = sum_k (lhs[m][k] - lhsZeroPoint[m]) * (rhs[k][n] - rhsZeroPoint[n])
// computed in int32 with two's-complement wrap (every + and * is mod 2^32). Zero points are
// subtracted, so gemmlowp's `offset` is -zeroPoint. A zero point is a scalar or a vector
// (lhs: one per row, length M; rhs: one per column, length N) of any int32 value.
//
// The four-term expansion (gemmlowp's "offset trick", doc/low-precision.md), exact mod 2^32:
//   acc = sum_k lhs*rhs  -  zR[n] * rowSum[m]  -  zL[m] * colSum[n]  +  K * zL[m] * zR[n]
// where rowSum[m] = sum_k lhs[m][k] and colSum[n] = sum_k rhs[k][n] are computed while packing.
//
// Output pipeline: `pipeline` is an ordered list of OutputStage, applied to each acc[m][n]
// (gemmlowp public/output_stages.h). The stages are specified on their types below. An empty
// pipeline gives the int32 accumulators. A cast stage may only come last; it fixes the dst dtype.

export type OperandType = 'uint8' | 'int8';
export type DstType = 'int32' | 'uint8' | 'int8' | 'int16';
/** Storage order: element (r, c) of a rows x cols matrix lives at r*cols + c ('row-major') or c*rows + r ('col-major'). */
export type Order = 'row-major' | 'col-major';
/** Which index a per-channel vector follows: 'row' = one value per dst row (length M), 'col' = per dst column (length N). */
export type Axis = 'row' | 'col';
/**
 * Rounding of multiplyByQuantizedMultiplier, see src/quant/fixedpoint.ts: 'double' (gemmlowp; TFLite's
 * reference kernels), 'double-up' (TFLite's optimized kernels through ruy: the second rounding's ties
 * go up), 'single' (TFLITE_SINGLE_ROUNDING builds).
 */
export type Rounding = 'double' | 'double-up' | 'single';

export type OperandData = Uint8Array | Int8Array;
export type DstData = Int32Array | Uint8Array | Int8Array | Int16Array;

/** An 8-bit operand. The dtype is the array's type: Uint8Array = uint8, Int8Array = int8. */
export interface Operand {
  data: OperandData;
  rows: number;
  cols: number;
  /** Default 'row-major'. */
  order?: Order | undefined;
}

/** A scalar (applies everywhere) or a per-channel vector along `axis`. */
export type PerChannel = number | Int32Array;

export type OutputStage =
  /** gemmlowp OutputStageBiasAddition: x + values[axis index]. int32 wrap. */
  | { type: 'bias'; axis: Axis; values: Int32Array }
  /**
   * gemmlowp OutputStageQuantizeDownInt32ToUint8Scale(PC), the legacy stage:
   *   roundingDivideByPOT((x + offset) * multiplier, shift)   with int32 wrap on + and *, shift in 0..31.
   * Per channel: offset and multiplier are vectors along `axis`; shift stays scalar.
   */
  | { type: 'quantizeDownInt32ToUint8Scale'; offset: PerChannel; multiplier: PerChannel; shift: number; axis?: Axis | undefined }
  /**
   * gemmlowp OutputStageQuantizeDownInt32ByFixedPoint:
   *   roundingDivideByPOT(saturatingRoundingDoublingHighMul(x, multiplier), shift) + offsetAfterShift
   * shift is a right shift in 0..31; the final + wraps.
   */
  | { type: 'quantizeDownInt32ByFixedPoint'; multiplier: number; shift: number; offsetAfterShift: number }
  /**
   * gemmlowp OutputStageScaleInt32ByFixedPointAndExponent(PC):
   *   multiplyByQuantizedMultiplier(x, multiplier, exponent, rounding) + offsetAfterShift
   * 'double' (gemmlowp; TFLite's reference kernels): exponent in -31..31; saturating left shift by
   *   max(e,0), SRDHM, then roundingDivideByPOT by max(-e,0) (ties away from zero).
   * 'double-up' (TFLite's optimized kernels, ruy): exponent in -31..31; wrapping left shift by max(e,0),
   *   SRDHM, then a rounding right shift by max(-e,0) whose ties go up: floor((y + 2^(r-1)) / 2^r), exact.
   * 'single' (TFLite TFLITE_SINGLE_ROUNDING, ruy): exponent in -31..30; (x*m + 2^(30-e)) >> (31-e),
   *   saturated to int32 (the sources only assert that it fits).
   * multiplier and exponent are scalars, or vectors along `axis`; offsetAfterShift is scalar.
   * rounding defaults to 'double' (gemmlowp's stage of this name), in the library and the CLI alike.
   */
  | {
      type: 'scaleInt32ByFixedPointAndExponent';
      multiplier: PerChannel;
      exponent: PerChannel;
      offsetAfterShift: number;
      rounding?: Rounding | undefined;
      axis?: Axis | undefined;
    }
  /**
   * XNNPACK's fp32 requantization (qs8/qu8, and TFLite's default delegate), in float32 throughout:
   *   saturateToInt32(rint(f32(f32(x) * scale)) + zeroPoint)
   * f32(x) rounds the int32 to float32 (ties to even), the product is rounded once to float32 (ties to
   * even), rint rounds to the nearest integer with ties to even, and the sum is exact, then saturated.
   * scale is a float32 value (finite; a number must be exactly representable as float32), scalar or a
   * Float32Array along `axis`. XNNPACK clamps in float before rint; with the integer clamp that follows
   * (a clamp stage) the result is the same, since rint is monotonic and the bounds are integers.
   */
  | { type: 'requantizeFloat32'; scale: number | Float32Array; zeroPoint: number; axis?: Axis | undefined }
  /** gemmlowp OutputStageClamp: min(max(x, min), max), min <= max. */
  | { type: 'clamp'; min: number; max: number }
  /**
   * gemmlowp OutputStageTanh: realZeroAsInt32 + amplitude * tanh((x - realZeroAsInt32) / amplitude)
   * in fixed point (gemmlowp fixedpoint.h tanh), saturating to zero +- amplitude outside +-8 amplitudes.
   * realAmplitudeAsInt32 >= 1 and |realZeroAsInt32| + 8*amplitude <= INT32_MAX (so amplitude < 2^28).
   */
  | { type: 'tanh'; realZeroAsInt32: number; realAmplitudeAsInt32: number }
  /** gemmlowp OutputStageSaturatingCastTo{Uint8,Int8,Int16}: clamp to the type's range. Last stage only. */
  | { type: 'saturatingCast'; to: 'uint8' | 'int8' | 'int16' }
  /** gemmlowp OutputStageTruncatingCastToUint8: keep the low 8 bits. Last stage only. */
  | { type: 'truncatingCast'; to: 'uint8' };

/** Less-than-8-bit operands (gemmlowp's requantization at packing), specified in src/quant/lowbit.ts. */
export type BitDepthRounding = 'nearest' | 'probabilistic-addmod' | 'probabilistic-xorshift' | 'default';
export interface BitDepth {
  lhs: number;
  rhs: number;
  rounding: BitDepthRounding;
}

/** One GEMM: dst = pipeline(acc) with acc as specified at the top of this file. */
export interface GemmProblem {
  lhs: Operand;
  rhs: Operand;
  /** Scalar, or Int32Array of length M. Default 0. */
  lhsZeroPoint?: PerChannel | undefined;
  /** Scalar, or Int32Array of length N. Default 0. */
  rhsZeroPoint?: PerChannel | undefined;
  /** Default []: int32 output. */
  pipeline?: readonly OutputStage[] | undefined;
  /** Default 'row-major'. */
  dstOrder?: Order | undefined;
  /** Default: none, 8-bit operands used as they are. */
  bitDepth?: BitDepth | undefined;
}

/** The dst matrix, [M,N], of the dtype the last cast stage chose (int32 when none). */
export interface GemmResult {
  data: DstData;
  rows: number;
  cols: number;
  order: Order;
  dtype: DstType;
}

/** The value range of each 8- and 16-bit type: saturating casts and quantization clamp to it. */
export const TYPE_RANGE = { uint8: [0, 255], int8: [-128, 127], int16: [-32768, 32767] } as const;

/**
 * int8 operands enter the uint8 domain as v + 128 (= the byte XOR 0x80), their zero points moving by
 * the same 128 (mod 2^32): the GPU packs every operand so, and less-than-8-bit requantization works
 * there. The accumulator is unchanged, since (v + 128) - (z + 128) = v - z.
 */
export const UINT8_DOMAIN_SHIFT = 128;

export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;
