// Elementwise quantized arithmetic, the integer-only work a network does between GEMMs:
// TFLite's add, sub and mul (its builtin reference kernels' arithmetic, or on kernelPath 'xnnpack' that
// of the XNNPACK delegate TFLite's default interpreter runs them on), and the integer-only alignment of
// inputs whose scales differ (alignedAdd, alignedSub), for uint8 and int8 tensors of up to 4 dimensions
// with numpy broadcasting. The math is specified once, here, beside the types that carry it, and
// prepareElementwise turns a problem into a plan of integer parameters; src/reference/elementwise.ts
// evaluates a plan naively (the normative reference, and the CPU backend), and elementwise.wgsl (run by
// ./gpu.ts) computes the same bits on WebGPU. Doubles are used only while the parameters are prepared,
// never per element; XNNPACK's mul rounds to float32 per element, exactly (Math.fround on the CPU,
// integers in WGSL). (Over ~450 lines because the specification below, written once beside its types,
// is a third of the file.)
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
//   (M, S) = QuantizeMultiplier(sa · sb / so)        computed in double (S must be <= 31)
//   out = clamp(zo + MBQM((qa − za) · (qb − zb), M, S))
//   TFLite's mul.cc computes `input1->params.scale * input2->params.scale / output->params.scale` with
//   float32 scales in float32 arithmetic, and only then widens it to double; for some scales that gives a
//   different (M, S) than the double computation specified here (see test/unit/elementwise.test.ts).
//   TFLite's tensors store float32 scales: pass Math.fround(scale) to reproduce TFLite bit for bit.
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

import { InputError } from '../errors.ts';
import {
  frexp,
  quantizeMultiplier,
  quantizeMultiplierGreaterThanOne,
  quantizeMultiplierSmallerThanOneExp,
  roundHalfAwayFromZero,
  type QuantizedMultiplier,
} from '../quant/quantize.ts';
import { roundTiesToEven } from '../quant/float32.ts';
import { TYPE_RANGE, type OperandType } from '../types.ts';
import { operandType } from './problem.ts';
import { brief } from './echo.ts';

export type ElementwiseOp = 'add' | 'sub' | 'mul' | 'alignedAdd' | 'alignedSub';
export const ELEMENTWISE_OPS: readonly ElementwiseOp[] = ['add', 'sub', 'mul', 'alignedAdd', 'alignedSub'];
export const isAlignedOp = (op: ElementwiseOp): boolean => op === 'alignedAdd' || op === 'alignedSub';

/** The most dimensions an elementwise operand or result may have. */
export const MAX_RANK = 4;
/** The largest alignment shift F − frac of alignedAdd/alignedSub. */
const MAX_ALIGNMENT_SHIFT = 15;
/** TFLite's left_shift for 8-bit add/sub. */
const ADD_LEFT_SHIFT = 20;

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
  fortranOrder?: boolean;
  /** A positive finite scale, or (alignedAdd/alignedSub only) one per index along `axis`. */
  scale: number | ArrayLike<number>;
  /** With an array `scale`: the dimension of this tensor it runs along, 0..rank−1. */
  axis?: number;
  /** In the dtype's range. */
  zeroPoint: number;
}

/** The output's quantization and its activation clamp (integers in the dtype's range, default all of it). */
export interface ElementwiseOutput {
  scale: number;
  zeroPoint: number;
  min?: number;
  max?: number;
}

/** One elementwise op: output = op(a, b), as specified at the top of this file. */
export interface ElementwiseProblem {
  op: ElementwiseOp;
  a: QuantizedTensor;
  b: QuantizedTensor;
  output: ElementwiseOutput;
  /** add, sub, mul: whose arithmetic, TFLite's builtin kernels' (default) or XNNPACK's. */
  kernelPath?: ElementwiseKernelPath;
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
interface AlignedScales {
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

function checkShape(field: string, shape: unknown, length: number): number[] {
  if (!Array.isArray(shape) || shape.some((d) => !Number.isSafeInteger(d) || d < 0)) {
    throw new InputError(field, `expected a shape of non-negative integers, got ${brief(shape)}`);
  }
  if (shape.length > MAX_RANK) throw new InputError(field, `at most ${MAX_RANK} dimensions, got shape (${shape.join(', ')})`);
  const count = shape.reduce((p: number, d: number) => p * d, 1);
  if (count !== length) throw new InputError(field, `shape (${shape.join(', ')}) has ${count} elements, data has ${length}`);
  return [...shape];
}

function checkScale(field: string, s: unknown): number {
  if (typeof s !== 'number' || !Number.isFinite(s) || !(s > 0)) {
    throw new InputError(field, `expected a positive finite scale, got ${brief(s)}`);
  }
  return s;
}

function checkInRange(field: string, v: unknown, [lo, hi]: readonly [number, number], what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) {
    throw new InputError(field, `expected ${what} in ${lo}..${hi}, got ${brief(v)}`);
  }
  return v;
}

/** numpy's broadcast shape of a and b (at most 4-D), or an InputError naming `field`. */
export function broadcastShapes(aShape: readonly number[], bShape: readonly number[], field = 'b.data'): number[] {
  const rank = Math.max(aShape.length, bShape.length);
  const out: number[] = [];
  for (let k = 0; k < rank; k++) {
    const da = k < rank - aShape.length ? 1 : aShape[k - (rank - aShape.length)];
    const db = k < rank - bShape.length ? 1 : bShape[k - (rank - bShape.length)];
    if (da !== db && da !== 1 && db !== 1) {
      throw new InputError(
        field,
        `shape (${bShape.join(', ')}) does not broadcast with a's shape (${aShape.join(', ')}): ${db} vs ${da} in dimension ${k - (rank - bShape.length)}`,
      );
    }
    out.push(da === 1 ? db : da);
  }
  return out;
}

/** Element strides of `shape` stored in C or Fortran order, padded to 4-D, 0 where the size is 1. */
function strides4(shape: readonly number[], fortranOrder: boolean): number[] {
  const natural = new Array<number>(shape.length);
  let stride = 1;
  for (let i = 0; i < shape.length; i++) {
    const k = fortranOrder ? i : shape.length - 1 - i;
    natural[k] = stride;
    stride *= shape[k];
  }
  const out = [0, 0, 0, 0];
  for (let k = 0; k < shape.length; k++) out[MAX_RANK - shape.length + k] = shape[k] === 1 ? 0 : natural[k];
  return out;
}

/** The 8-bit fixed-point form of one scale: s ≈ m · 2^−frac, m in 128..255 (see the file header). */
export function scaleToFixedPoint(s: number): { mantissa: number; frac: number } {
  const [f, exponent] = frexp(s); // s = f · 2^exponent, f in [0.5, 1)
  let e = exponent - 1; // floor(log2 s)
  let m = roundHalfAwayFromZero(f * 256); // = s · 2^(7 − e), exactly
  if (m === 256) {
    m = 128;
    e += 1;
  }
  return { mantissa: m, frac: 7 - e };
}

function scalesOf(field: string, t: QuantizedTensor, shape: number[], aligned: boolean): { scales: number[]; axis: number | null } {
  const s = t.scale;
  if (typeof s === 'number' || typeof s !== 'object' || s === null) {
    if (t.axis !== undefined) throw new InputError(`${field}.axis`, 'only allowed with an array of per-axis scales');
    return { scales: [checkScale(`${field}.scale`, s)], axis: null };
  }
  if (!aligned)
    throw new InputError(
      `${field}.scale`,
      'per-axis scales (an array) are only for alignedAdd and alignedSub; TFLite add/sub/mul take one scale',
    );
  const axis = t.axis;
  if (axis === undefined) throw new InputError(`${field}.axis`, 'required with an array of per-axis scales');
  if (typeof axis !== 'number' || !Number.isInteger(axis) || axis < 0 || axis >= shape.length) {
    throw new InputError(
      `${field}.axis`,
      `expected a dimension in 0..${shape.length - 1} of shape (${shape.join(', ')}), got ${brief(axis)}`,
    );
  }
  if (s.length !== shape[axis])
    throw new InputError(`${field}.scale`, `expected ${shape[axis]} scales (the size of dimension ${axis}), got ${s.length}`);
  if (s.length === 0) throw new InputError(`${field}.scale`, `dimension ${axis} is empty: per-axis scales need at least one channel`);
  const scales = Array.from({ length: s.length }, (_, i) => checkScale(`${field}.scale[${i}]`, s[i]));
  return { scales, axis };
}

/** QuantizeMultiplier* with the failure reported against `field`. */
function quantizeFor(field: string, what: string, fn: (real: number) => QuantizedMultiplier, real: number): QuantizedMultiplier {
  let q: QuantizedMultiplier;
  try {
    q = fn(real);
  } catch (e) {
    if (e instanceof InputError) throw new InputError(field, `${what} = ${real}: ${e.message.replace(/^multiplier: /, '')}`);
    throw e;
  }
  if (q.shift > 31) throw new InputError(field, `${what} = ${real} is too large (shift ${q.shift} > 31)`);
  return q;
}

const IDENTITY: QuantizedMultiplier = { multiplier: 0, shift: 0 };

/**
 * Whether TFLite's XNNPACK delegate takes a quantized ADD/SUB/MUL with these (float32) scales:
 * add/sub: f32(sa / so) and f32(sb / so) in [2^−10, 2^8); mul: f32(f32(sa · sb) / so) in [2^−16, 2^8).
 */
export function xnnpackTakesElementwise(op: 'add' | 'sub' | 'mul', aScale: number, bScale: number, outScale: number): boolean {
  const f = Math.fround;
  const so = f(outScale);
  if (op === 'mul') {
    const s = f(f(f(aScale) * f(bScale)) / so);
    return s >= 2 ** -16 && s < 2 ** 8;
  }
  return [aScale, bScale].every((s) => {
    const r = f(f(s) / so);
    return r >= 2 ** -10 && r < 2 ** 8;
  });
}

/** XNNPACK's parameters of a taken add/sub/mul (the header's 'xnnpack' formulas). */
function xnnpackParams(op: 'add' | 'sub' | 'mul', aScale: number, bScale: number, outScale: number): XnnpackElementwiseParams {
  const f = Math.fround;
  const so = f(outScale);
  if (op === 'mul') return { aMultiplier: 0, bMultiplier: 0, shift: 0, scale: f(f(f(aScale) * f(bScale)) / so) };
  const ra = f(f(aScale) / so);
  const rb = f(f(bScale) / so);
  const shift = 20 - (frexp(Math.max(ra, rb))[1] - 1); // floor(log2) of a normal float32: its exponent
  const aMultiplier = roundTiesToEven(ra * 2 ** shift); // exact: a float32 times a power of two
  const bMultiplier = roundTiesToEven(rb * 2 ** shift) * (op === 'sub' ? -1 : 1);
  return { aMultiplier, bMultiplier, shift, scale: 0 };
}

/**
 * Validates a problem (InputError naming the field: `a.scale`, `b.data`, `output.min`...) and derives
 * its integer parameters as specified at the top of this file.
 */
export function prepareElementwise(problem: ElementwiseProblem): ElementwisePlan {
  const { op, a, b, output } = problem;
  if (!ELEMENTWISE_OPS.includes(op)) throw new InputError('op', `expected one of ${ELEMENTWISE_OPS.join(', ')}, got ${brief(op)}`);
  const askedPath = problem.kernelPath ?? 'builtin';
  if (!ELEMENTWISE_KERNEL_PATHS.includes(askedPath)) {
    throw new InputError('kernelPath', `expected one of ${ELEMENTWISE_KERNEL_PATHS.join(', ')}, got ${brief(askedPath)}`);
  }
  if (askedPath === 'xnnpack' && isAlignedOp(op)) throw new InputError('kernelPath', `'xnnpack' is for add, sub and mul, not ${op}`);
  for (const [field, t] of [
    ['a', a],
    ['b', b],
    ['output', output],
  ] as const) {
    if (typeof t !== 'object' || t === null) throw new InputError(field, 'missing');
  }
  const dtype = operandType('a.data', a.data);
  const dtypeB = operandType('b.data', b.data);
  if (dtypeB !== dtype) throw new InputError('b.data', `dtype ${dtypeB} differs from a's ${dtype}; both inputs must have the same dtype`);
  const range = TYPE_RANGE[dtype];
  const aShape = checkShape('a.shape', a.shape, a.data.length);
  const bShape = checkShape('b.shape', b.shape, b.data.length);
  const shape = broadcastShapes(aShape, bShape);
  const aligned = isAlignedOp(op);
  const sa = scalesOf('a', a, aShape, aligned);
  const sb = scalesOf('b', b, bShape, aligned);
  const zeroA = checkInRange('a.zeroPoint', a.zeroPoint, range, `a ${dtype} zero point`);
  const zeroB = checkInRange('b.zeroPoint', b.zeroPoint, range, `a ${dtype} zero point`);
  const so = checkScale('output.scale', output.scale);
  const zeroOut = checkInRange('output.zeroPoint', output.zeroPoint, range, `a ${dtype} zero point`);
  const min = output.min === undefined ? range[0] : checkInRange('output.min', output.min, range, 'an activation minimum');
  const max = output.max === undefined ? range[1] : checkInRange('output.max', output.max, range, 'an activation maximum');
  if (min > max) throw new InputError('output.max', `activation maximum ${max} is below the minimum ${min}`);

  const sign = op === 'sub' || op === 'alignedSub' ? -1 : 1;
  const simple = op as 'add' | 'sub' | 'mul';
  const kernelPath: ElementwiseKernelPath =
    askedPath === 'xnnpack' && xnnpackTakesElementwise(simple, sa.scales[0], sb.scales[0], so) ? 'xnnpack' : 'builtin';
  const xnnpack = kernelPath === 'xnnpack' ? xnnpackParams(simple, sa.scales[0], sb.scales[0], so) : null;
  let input1 = IDENTITY;
  let input2 = IDENTITY;
  let out: QuantizedMultiplier;
  let alignA: AlignedScales | null = null;
  let alignB: AlignedScales | null = null;
  let fracBits = 0;
  if (op === 'add' || op === 'sub') {
    const [s1, s2] = [sa.scales[0], sb.scales[0]];
    const twiceMaxInputScale = 2 * Math.max(s1, s2);
    input1 = quantizeFor('a.scale', 'a.scale / (2·max(a.scale, b.scale))', quantizeMultiplierSmallerThanOneExp, s1 / twiceMaxInputScale);
    input2 = quantizeFor('b.scale', 'b.scale / (2·max(a.scale, b.scale))', quantizeMultiplierSmallerThanOneExp, s2 / twiceMaxInputScale);
    const realOut = twiceMaxInputScale / (2 ** ADD_LEFT_SHIFT * so);
    const what = '2·max(a.scale, b.scale) / (2^20·output.scale)';
    out =
      op === 'sub' && realOut > 1
        ? quantizeFor('output.scale', what, quantizeMultiplierGreaterThanOne, realOut)
        : quantizeFor('output.scale', what, quantizeMultiplierSmallerThanOneExp, realOut);
  } else if (op === 'mul') {
    out = quantizeFor('output.scale', 'a.scale·b.scale / output.scale', quantizeMultiplier, (sa.scales[0] * sb.scales[0]) / so);
  } else {
    const fa = sa.scales.map(scaleToFixedPoint);
    const fb = sb.scales.map(scaleToFixedPoint);
    fracBits = Math.max(...fa.map((x) => x.frac), ...fb.map((x) => x.frac));
    const align = (field: string, fixed: { mantissa: number; frac: number }[], perAxis: boolean): AlignedScales => {
      const shift = Int32Array.from(fixed, (x, i) => {
        const k = fracBits - x.frac;
        if (k > MAX_ALIGNMENT_SHIFT) {
          throw new InputError(
            perAxis ? `${field}.scale[${i}]` : `${field}.scale`,
            `needs an alignment shift of ${k} bits to the finest scale (at most ${MAX_ALIGNMENT_SHIFT}: int32 could overflow); the scales of a and b span more than 2^${MAX_ALIGNMENT_SHIFT}`,
          );
        }
        return k;
      });
      return { mantissa: Int32Array.from(fixed, (x) => x.mantissa), shift };
    };
    alignA = align('a', fa, sa.axis !== null);
    alignB = align('b', fb, sb.axis !== null);
    // 2^−F / so, computed as (1/g)·2^(−F−G) with so = g·2^G: the same double, without overflow of 2^−F.
    const [g, G] = frexp(so);
    out = quantizeFor('output.scale', '2^−F / output.scale', quantizeMultiplier, (1 / g) * 2 ** (-fracBits - G));
  }

  const rank = shape.length;
  // Shapes are right-aligned in 4-D: dimension k of a tensor of rank r is 4-D dimension 4 − r + k.
  const channelDim = (axis: number | null, tShape: number[]) =>
    axis === null || tShape[axis] === 1 ? -1 : MAX_RANK - tShape.length + axis;
  return {
    op,
    dtype,
    shape,
    count: shape.reduce((p, d) => p * d, 1),
    dims4: [...new Array<number>(MAX_RANK - rank).fill(1), ...shape],
    aStrides4: strides4(aShape, !!a.fortranOrder),
    bStrides4: strides4(bShape, !!b.fortranOrder),
    aChannelDim4: channelDim(sa.axis, aShape),
    bChannelDim4: channelDim(sb.axis, bShape),
    a: a.data,
    b: b.data,
    zeroA,
    zeroB,
    zeroOut,
    min,
    max,
    sign,
    input1,
    input2,
    leftShift: ADD_LEFT_SHIFT,
    output: out,
    kernelPath,
    xnnpack,
    alignA,
    alignB,
    fracBits,
  };
}
