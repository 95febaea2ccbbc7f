// TFLite's derivation of a quantized layer's output stage (what sits after pack -> gemm, in OUTPUT):
// from the float32 scales and zero points as a .tflite file stores them to the stages of src/types.ts,
// exactly as each of TFLite's kernel paths computes them:
//   'xnnpack'   (the default delegate): scale = f32(f32(in * w) / out) per channel, then XNNPACK's fp32
//               requantization (the requantizeFloat32 stage);
//   'optimized' (builtin optimized kernels): QuantizeMultiplier of the effective scale, then
//               SaturatingRoundingDoublingHighMul and a right shift with ties up (rounding 'double-up');
//   'reference' (builtin reference kernels): CONV_2D as 'optimized' but gemmlowp's rounding ('double');
//               FULLY_CONNECTED in float64: round(double(acc) * in * w / out), ties away from zero, which
//               float64Requantize below computes on the host (not an output stage: WGSL has no f64).
// Where the effective scale is computed: FC optimized with one weight scale: the product in float32
// (GetQuantizedConvolutionMultipler), otherwise in double; conv: double for int8, float32 for uint8;
// FC reference: double; XNNPACK: float32. The activation clamp is CalculateActivationRangeQuantized's
// (ties away from zero) on the builtin paths; XNNPACK quantizes the delegate's float output range itself,
// lrintf(f32(f32(v / scale) + zeroPoint)) with ties to even, so an exact half (6 / scale = k + 0.5) rounds
// apart: checked against the interpreter (test/golden/tflite/, LiteRT's XNNPACK delegate).

import { InputError } from '../errors.ts';
import { roundTiesToEven } from '../quant/float32.ts';
import { quantizeMultiplier } from '../quant/quantize.ts';
import type { OutputStage } from '../types.ts';
import { TYPE_RANGE } from '../types.ts';
import { brief } from '../problem/echo.ts';
import { checkScale32, checkZeroPoint, type QuantParams } from './validate.ts';

export type KernelPath = 'xnnpack' | 'optimized' | 'reference';
export type FusedActivation = 'NONE' | 'RELU' | 'RELU6' | 'RELU_N1_TO_1';
export type { QuantParams } from './validate.ts';

/**
 * The clamp of a fused activation in the output's quantized domain, as `kernelPath` computes it:
 * TFLite's CalculateActivationRangeQuantized on the builtin paths ('optimized', 'reference', the default):
 * zeroPoint + round(f32(v / scale)), ties away from zero, within the type's range; XNNPACK's on
 * 'xnnpack' (xnn_qs8_quantize / xnn_qu8_quantize of the delegate's float range):
 * rint(f32(f32(v / scale) + zeroPoint)), ties to even, within the type's range.
 */
export function activationRange(
  activation: FusedActivation,
  output: QuantParams,
  dtype: 'uint8' | 'int8',
  kernelPath: KernelPath = 'optimized',
): [number, number] {
  if (dtype !== 'uint8' && dtype !== 'int8') throw new InputError('dtype', `expected "uint8" or "int8", got ${brief(dtype)}`);
  if (!['xnnpack', 'optimized', 'reference'].includes(kernelPath)) {
    throw new InputError('kernelPath', `expected "xnnpack", "optimized" or "reference", got ${brief(kernelPath)}`);
  }
  const [qmin, qmax] = TYPE_RANGE[dtype];
  // The float32 scale a .tflite file stores (0 or a subnormal gives no range), a zero point of the dtype.
  const scale = checkScale32('output.scale', output?.scale);
  checkZeroPoint('output.zeroPoint', output.zeroPoint, dtype);
  const quantize =
    kernelPath === 'xnnpack'
      ? (f: number) => roundTiesToEven(Math.fround(Math.fround(f / scale) + output.zeroPoint))
      : (f: number) => {
          // quantize(f) = zero_point + int32(TfLiteRound(f / scale)): a float32 division, std::round (ties away)
          const v = Math.fround(f / scale);
          return output.zeroPoint + Math.sign(v) * Math.floor(Math.abs(v) + 0.5);
        };
  const within = (v: number) => Math.min(qmax, Math.max(qmin, v));
  switch (activation) {
    case 'NONE':
      return [qmin, qmax];
    case 'RELU':
      return [within(quantize(0)), qmax];
    case 'RELU6':
      return [within(quantize(0)), within(quantize(6))];
    case 'RELU_N1_TO_1':
      return [within(quantize(-1)), within(quantize(1))];
    default:
      throw new InputError('activation', `expected NONE, RELU, RELU6 or RELU_N1_TO_1, got ${brief(activation)}`);
  }
}

/** The op whose derivation applies, and the weights' dtype (conv: double for int8, float32 for uint8). */
interface DeriveOptions {
  op: 'FULLY_CONNECTED' | 'CONV_2D';
  path: KernelPath;
  input: QuantParams;
  /** One scale per output channel (length 1: per-tensor). */
  weightScales: Float32Array;
  weightType: 'uint8' | 'int8';
  output: QuantParams;
  /** Output channels (N). */
  channels: number;
  dtype: 'uint8' | 'int8';
  activation: FusedActivation;
}

/** The output stages after the bias: requantization, activation clamp, cast. Not for the FC reference path (see float64Requantize). */
export function deriveStages(o: DeriveOptions): OutputStage[] {
  if (!o || typeof o !== 'object') throw new InputError('options', `expected an object, got ${brief(o)}`);
  const [lo, hi] = activationRange(o.activation, o.output, o.dtype, o.path);
  checkScale32('input.scale', o.input?.scale);
  if (!(o.weightScales instanceof Float32Array) || o.weightScales.length === 0)
    throw new InputError('weightScales', `expected a Float32Array of one scale, or one per channel, got ${brief(o.weightScales)}`);
  for (const [i, w] of o.weightScales.entries()) checkScale32(`weightScales[${i}]`, w);
  const tail: OutputStage[] = [
    { type: 'clamp', min: lo, max: hi },
    { type: 'saturatingCast', to: o.dtype },
  ];
  const perTensor = o.weightScales.length === 1;
  const inS = Math.fround(o.input.scale);
  const outS = Math.fround(o.output.scale);
  const pick = <T>(v: T[]): T | T[] => (perTensor ? v[0] : v);
  if (o.path === 'xnnpack') {
    const scales = Float32Array.from(o.weightScales, (w) => Math.fround(Math.fround(inS * w) / outS));
    const scale = perTensor ? scales[0] : scales;
    return [{ type: 'requantizeFloat32', scale, zeroPoint: o.output.zeroPoint, ...(perTensor ? {} : { axis: 'col' as const }) }, ...tail];
  }
  if (o.path === 'reference' && o.op === 'FULLY_CONNECTED')
    throw new Error('the FC reference path requantizes in float64 (float64Requantize)');
  const float32Product = o.op === 'FULLY_CONNECTED' ? perTensor : o.weightType === 'uint8';
  const reals = Array.from(o.weightScales, (w) => (float32Product ? Math.fround(inS * w) : inS * w) / outS);
  // 2^31 or more (or not finite): a shift past 31, which checkEffectiveScales refuses naming the scale
  const q = reals.map((r) => (r < 2 ** 31 ? quantizeMultiplier(r) : { multiplier: 0, shift: 32 }));
  const multiplier = pick(q.map((x) => x.multiplier));
  const exponent = pick(q.map((x) => x.shift));
  const vec = (v: number | number[]) => (typeof v === 'number' ? v : Int32Array.from(v));
  return [
    {
      type: 'scaleInt32ByFixedPointAndExponent',
      multiplier: vec(multiplier),
      exponent: vec(exponent),
      offsetAfterShift: o.output.zeroPoint,
      rounding: o.path === 'optimized' ? 'double-up' : 'double',
      ...(perTensor ? {} : { axis: 'col' as const }),
    },
    ...tail,
  ];
}

/**
 * Whether XNNPACK makes a layer's operator: its requantization scale f32(f32(in * w) / out) is below 256
 * on every channel. XNNPACK refuses the FULLY_CONNECTED or CONV_2D operator otherwise ("requantization
 * scale ... is greater or equal to 256.0"), the delegate fails and the interpreter restores its original
 * execution plan: TFLite's builtin kernels run the model.
 */
export function xnnpackTakesGemm(input: QuantParams, weightScales: Float32Array, output: QuantParams): boolean {
  const f = Math.fround;
  return weightScales.every((w) => f(f(f(input.scale) * w) / f(output.scale)) < 256);
}

/** The FC reference kernel's double-precision scales: double(in) * double(w) / double(out). */
export function float64Scales(input: QuantParams, weightScales: Float32Array, output: QuantParams): Float64Array {
  return Float64Array.from(weightScales, (w) => (Math.fround(input.scale) * w) / Math.fround(output.scale));
}

/**
 * TFLite's FC reference requantization of one int32 accumulator (bias included): round(acc * scale) in
 * double with ties away from zero, plus the zero point, clamped to [lo, hi]. JavaScript numbers are
 * IEEE doubles, so this is exact.
 */
export function float64Requantize(acc: number, scale: number, zeroPoint: number, lo: number, hi: number): number {
  const v = acc * scale;
  let r = Math.trunc(v);
  if (Math.abs(v - r) >= 0.5) r += Math.sign(v);
  return Math.min(Math.max(r + zeroPoint, lo), hi);
}
