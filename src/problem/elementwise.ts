// Elementwise quantized arithmetic, the integer-only work a network does between GEMMs:
// TFLite's add, sub and mul (its builtin reference kernels' arithmetic, or on kernelPath 'xnnpack' that
// of the XNNPACK delegate TFLite's default interpreter runs them on), and the integer-only alignment of
// inputs whose scales differ (alignedAdd, alignedSub), for uint8 and int8 tensors of up to 4 dimensions
// with numpy broadcasting. The math is specified once, here, beside the types that carry it, and
// prepareElementwise (elementwise-plan.ts) turns a problem into a plan of integer parameters; src/reference/elementwise.ts
// evaluates a plan naively (the normative reference, and the CPU backend), and
// src/elementwise/elementwise.wgsl (run by src/elementwise/gpu.ts) computes the same bits on WebGPU. Doubles are used only while the parameters are prepared
// (elementwise-plan.ts), never per element; XNNPACK's mul rounds to float32 per element, exactly
// (Math.fround on the CPU, integers in WGSL).
//
// Quantization: real = scale · (q − zeroPoint). Both inputs and the output have the same dtype, uint8
// (0..255) or int8 (−128..127); every zero point lies in that range (TFLite's Prepare ensures this for
// add and sub; we require it of every op).
//
// Shapes (numpy broadcasting). Each input has 0..4 dimensions. Shapes are aligned on their last
// dimension and padded with leading 1s to the longer rank; in each dimension the sizes must be equal,
// or one of them 1 (it is then repeated). The output has the longer rank and the larger size in each
// dimension (0 where a size is 0). Inputs may be stored in C or Fortran order; the output is C order.
// Evaluation is per output element, as TFLite's BroadcastAdd/Sub/Mul4DSlow (NdArrayDesc strides, 0 on
// broadcast dimensions) do.
//
// In the formulas, qa and qb are the input values at the element, za, zb, zo the zero points, sa, sb,
// so the scales, and clamp(x) = min(max(x, output.min), output.max), where output.min/max (the
// activation range, TFLite's quantized_activation_min/max) default to the dtype's range.
// MBQM(x, M, shift) is multiplyByQuantizedMultiplier(x, M, shift, 'double') of src/quant/fixedpoint.ts
// (gemmlowp's double rounding: saturating left shift by max(shift, 0), SaturatingRoundingDoublingHighMul,
// RoundingDivideByPOT by max(−shift, 0)); QuantizeMultiplier* are those of src/quant/quantize.ts
// (TFLite quantization_util.cc). All + − · are int32 and wrap (two's complement), as in C.
//
// ---- add, sub: TFLite kernels/add.cc, sub.cc (Prepare, 8-bit path) and reference add.h / sub.h -----
//   left_shift = 20
//   twice_max_input_scale = 2 · max(sa, sb)
//   (M1, S1) = QuantizeMultiplierSmallerThanOneExp(sa / twice_max_input_scale)      S1 in −31..0
//   (M2, S2) = QuantizeMultiplierSmallerThanOneExp(sb / twice_max_input_scale)      S2 in −31..0
//   real_out = twice_max_input_scale / (2^20 · so)
//   (Mo, So) = add: QuantizeMultiplierSmallerThanOneExp(real_out)   (real_out must be < 1)
//              sub: real_out > 1 ? QuantizeMultiplierGreaterThanOne(real_out)
//                                : QuantizeMultiplierSmallerThanOneExp(real_out)   (sub.cc; real_out = 1
//                   exactly fails both, as in TFLite)
//   per element:
//     x = (qa − za) · 2^20,  y = (qb − zb) · 2^20              (|x|, |y| < 2^28)
//     raw = MBQM(x, M1, S1) ± MBQM(y, M2, S2)                    (+ for add, − for sub)
//     out = clamp(MBQM(raw, Mo, So) + zo)
//   TFLite calls MultiplyByQuantizedMultiplierSmallerThanOneExp = RoundingDivideByPOT(SRDHM(x, M), −S),
//   which equals MBQM for S <= 0. For sub's GreaterThanOne case (So > 0) that call would divide by a
//   negative power of two (undefined in gemmlowp); we apply MBQM, i.e. MultiplyByQuantizedMultiplier,
//   which is also what TFLite's single-rounding build does there. Its left shift saturates (gemmlowp)
//   where TFLite's `x * (1 << shift)` would overflow. So must be <= 31 (rejected otherwise).
//
// ---- mul: TFLite kernels/mul.cc (Prepare) and reference mul.h / integer_ops/mul.h MulElementwise -----
//   (M, S) = QuantizeMultiplier(f32(f32(sa · sb) / so))   (S must be <= 31)
//   out = clamp(zo + MBQM((qa − za) · (qb − zb), M, S))
//   mul.cc computes `input1->params.scale * input2->params.scale / output->params.scale` on float32
//   scales in float32 arithmetic and only then widens it to double: so does this, the scales taken as
//   float32 (f32 = Math.fround). A mul marked REQUANTIZE (a Sequential's requantize layer: TFLite's
//   QUANTIZE, a mul by the scalar 1 of scale 1) takes quantize.cc's double quotient of the float32
//   scales, f32(sa) / f32(so).
//
// ---- kernelPath 'xnnpack' (add, sub, mul): XNNPACK's qs8/qu8 vadd and vmul, TFLite's default delegate -----
//   TFLite's default interpreter hands quantized ADD, SUB and MUL to XNNPACK, whose arithmetic differs
//   from the builtin kernels above (checked against LiteRT's XNNPACK delegate: test/golden/tflite/).
//   The scales are float32 (Math.fround of the given ones) and each step below is one float32 operation.
//   add, sub (xnn_init_qs8_add_minmax_scalar_params; SUB is vadd with b's scale negated):
//     ra = f32(sa / so),  rb = f32(sb / so)
//     shift = 20 − floor(log2(max(ra, rb)))                       (12..30)
//     Ma = rint(ra · 2^shift),  Mb = ±rint(rb · 2^shift)            (ties to even; − for sub; |M| <= 2^21)
//     out = clamp(((2^(shift−1) + Ma·(qa − za) + Mb·(qb − zb)) >> shift) + zo)
//   with >> arithmetic (floor), so ties round toward +infinity; the sum is below 2^31 in magnitude.
//   mul (xnn_init_qs8_mul_minmax_scalar_params, the fp32 vmul kernels):
//     scale = f32(f32(sa · sb) / so)
//     out = clamp(rint(f32(f32((qa − za)·(qb − zb)) · scale)) + zo)   (ties to even; the requantizeFloat32
//     of src/quant/float32.ts, |(qa − za)·(qb − zb)| <= 65025 exact in float32)
//   TFLite's delegate takes the node only when XNNPACK can: add/sub with ra and rb in [2^−10, 2^8), mul
//   with scale in [2^−16, 2^8) (xnnpack_delegate.cc); otherwise the builtin kernel runs it, and so does
//   this path (xnnpackTakesElementwise). The activation clamp's bounds are the caller's (output.min/max):
//   XNNPACK's own are those of activationRange(..., 'xnnpack') of src/layers/derive.ts.
//
// ---- alignedAdd, alignedSub: integer-only alignment of different scales (docs/scale-alignment.md) -----
//   Each input scale s (the tensor's one scale, or each channel's along `axis` when `scale` is an array)
//   becomes an 8-bit mantissa and a number of fractional bits:
//     e = floor(log2 s)                       (exact: the frexp exponent of s, minus 1)
//     m = round(s · 2^(7 − e))                (s · 2^(7−e) in [128, 256), exact; round half away from 0)
//     if m = 256: m = 128, e = e + 1
//     frac = 7 − e                            so that s ≈ m · 2^−frac, m in 128..255
//   F = the largest frac over all channels of both inputs; each channel's alignment shift is F − frac,
//   which must be <= 15 (InputError naming the scale otherwise).
//   per element, c being the element's channel of a (its index along a's axis) and likewise for b:
//     ta = ((qa − za) · m_a[c]) << (F − frac_a[c])      (|ta| <= 255 · 255 · 2^15 < 2^31)
//     tb = ((qb − zb) · m_b[c]) << (F − frac_b[c])
//     sum = ta ± tb                                       (int32, wraps; only both near 2^31 can wrap)
//   (M, S) = QuantizeMultiplier(2^−F / so)               (double; S must be <= 31)
//   out = clamp(zo + MBQM(sum, M, S))
//
// The sums `MBQM(...) + zo` wrap in int32 like every other + here (TFLite's C code has the same int32
// addition); they can only wrap when MBQM itself is within 255 of INT32_MAX/INT32_MIN.

import type { QuantizedMultiplier } from '../quant/quantize.ts';
import type { OperandType } from '../types.ts';

export type ElementwiseOp = 'add' | 'sub' | 'mul' | 'alignedAdd' | 'alignedSub';
export const ELEMENTWISE_OPS: readonly ElementwiseOp[] = ['add', 'sub', 'mul', 'alignedAdd', 'alignedSub'];
export const isAlignedOp = (op: ElementwiseOp): boolean => op === 'alignedAdd' || op === 'alignedSub';

/** The most dimensions an elementwise operand or result may have. */
export const MAX_RANK = 4;

export type ElementData = Uint8Array | Int8Array;

/**
 * Whose arithmetic add, sub and mul compute: 'builtin', TFLite's builtin kernels (the default of a bare
 * ElementwiseProblem), or 'xnnpack', XNNPACK's, which TFLite's default interpreter delegates them to.
 */
export type ElementwiseKernelPath = 'builtin' | 'xnnpack';
export const ELEMENTWISE_KERNEL_PATHS: readonly ElementwiseKernelPath[] = ['builtin', 'xnnpack'];

/** A quantized input tensor: real = scale · (q − zeroPoint). The dtype is the array's type. */
export interface QuantizedTensor {
  data: ElementData;
  /** 0..4 dimensions; the product of the sizes is data.length. */
  shape: readonly number[];
  /** Storage order of `data`: false (default) C order (last index fastest), true Fortran order. */
  fortranOrder?: boolean | undefined;
  /** A positive finite scale, or (alignedAdd/alignedSub only) one per index along `axis`. */
  scale: number | ArrayLike<number>;
  /** With an array `scale`: the dimension of this tensor it runs along, 0..rank−1. */
  axis?: number | undefined;
  /** In the dtype's range. */
  zeroPoint: number;
}

/** The output's quantization and its activation clamp (integers in the dtype's range, default all of it). */
export interface ElementwiseOutput {
  scale: number;
  zeroPoint: number;
  min?: number | undefined;
  max?: number | undefined;
}

/**
 * Marks an internal 'mul' by the scalar 1 (scale 1, zero point 0) as TFLite's QUANTIZE (requantize):
 * its multiplier is quantize.cc's double quotient f32(sa) / f32(so), not mul.cc's float32 one.
 */
export const REQUANTIZE = Symbol('requantize');

/** One elementwise op: output = op(a, b), as specified at the top of this file. */
export interface ElementwiseProblem {
  op: ElementwiseOp;
  a: QuantizedTensor;
  b: QuantizedTensor;
  output: ElementwiseOutput;
  /** add, sub, mul: whose arithmetic, TFLite's builtin kernels' (default) or XNNPACK's. */
  kernelPath?: ElementwiseKernelPath | undefined;
}

/** XNNPACK's parameters (kernelPath 'xnnpack', see the header): add/sub multipliers and shift, mul scale. */
export interface XnnpackElementwiseParams {
  aMultiplier: number;
  /** Negated for sub. */
  bMultiplier: number;
  shift: number;
  /** mul: f32(f32(sa · sb) / so); 0 for add/sub. */
  scale: number;
}

/** The result: C order, the broadcast shape, the inputs' dtype. */
export interface ElementwiseResult {
  data: ElementData;
  shape: number[];
  dtype: OperandType;
}

/** Per-channel alignment of one input (alignedAdd/alignedSub): mantissas m and shifts F − frac. */
export interface AlignedScales {
  mantissa: Int32Array;
  shift: Int32Array;
}

/**
 * Everything the per-element evaluation needs, in integers: made once by prepareElementwise and used
 * as it is by the CPU loop below and by the WebGPU kernel (uniforms + one storage buffer).
 */
export interface ElementwisePlan {
  op: ElementwiseOp;
  dtype: OperandType;
  /** The broadcast output shape and its element count. */
  shape: number[];
  count: number;
  /** The output shape padded with leading 1s to 4 dimensions. */
  dims4: number[];
  /** Element strides of a and b in the 4-D output index space (0 on broadcast dimensions). */
  aStrides4: number[];
  bStrides4: number[];
  /** Per-axis inputs: the 4-D dimension whose index is the channel, or -1 (one channel). */
  aChannelDim4: number;
  bChannelDim4: number;
  a: ElementData;
  b: ElementData;
  zeroA: number;
  zeroB: number;
  zeroOut: number;
  min: number;
  max: number;
  /** +1 for add/alignedAdd/mul, −1 for sub/alignedSub. */
  sign: 1 | -1;
  /** add/sub: TFLite's input multipliers (M1, S1), (M2, S2); identity (unused) otherwise. */
  input1: QuantizedMultiplier;
  input2: QuantizedMultiplier;
  leftShift: number;
  /** The output multiplier (Mo, So) of every op. */
  output: QuantizedMultiplier;
  /**
   * The arithmetic add/sub/mul compute: 'xnnpack' with its parameters, or 'builtin' (also where the
   * problem asked for 'xnnpack' but TFLite's delegate would leave the node to the builtin kernel).
   */
  kernelPath: ElementwiseKernelPath;
  xnnpack: XnnpackElementwiseParams | null;
  /** alignedAdd/alignedSub: per-channel alignment of a and b, and F. */
  alignA: AlignedScales | null;
  alignB: AlignedScales | null;
  fracBits: number;
}
