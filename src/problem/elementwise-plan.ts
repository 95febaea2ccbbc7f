// The elementwise ops' plan (prepareElementwise): a problem validated, each field named as the caller
// wrote it, and turned into the integer parameters of ElementwisePlan, with doubles only here, never per
// element. The arithmetic it prepares is specified once, in ./elementwise.ts beside its types; the
// reference (src/reference/elementwise.ts) and the WebGPU kernel (src/elementwise/) evaluate the plan.

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
import { TYPE_RANGE } from '../types.ts';
import { brief } from './echo.ts';
import {
  type AlignedScales,
  ELEMENTWISE_KERNEL_PATHS,
  ELEMENTWISE_OPS,
  type ElementwiseKernelPath,
  type ElementwisePlan,
  type ElementwiseProblem,
  isAlignedOp,
  MAX_RANK,
  type QuantizedTensor,
  type XnnpackElementwiseParams,
  REQUANTIZE,
} from './elementwise.ts';
import { checkDtypeKey, checkKnownKeys, checkProblemObject, everyItem, RESULT_KEYS } from './check.ts';
import { operandType } from './problem.ts';

/** The largest alignment shift F − frac of alignedAdd/alignedSub. */
const MAX_ALIGNMENT_SHIFT = 15;
/** TFLite's left_shift for 8-bit add/sub. */
const ADD_LEFT_SHIFT = 20;

function checkShape(field: string, shape: unknown, length: number): number[] {
  if (!Array.isArray(shape) || !everyItem(shape, (d) => Number.isSafeInteger(d) && (d as number) >= 0)) {
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
export function broadcastShapes(aShape: readonly number[], bShape: readonly number[], field = 'b.shape'): number[] {
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

/** The keys of a QuantizedTensor (./elementwise.ts): another is a misspelling. */
const TENSOR_KEYS = ['data', 'shape', 'fortranOrder', 'scale', 'axis', 'zeroPoint', ...RESULT_KEYS];

/**
 * Validates a problem (InputError naming the field: `a.scale`, `b.data`, `output.min`...) and derives
 * its integer parameters as specified at the top of this file.
 */
export function prepareElementwise(problem: ElementwiseProblem): ElementwisePlan {
  checkProblemObject(problem, 'an ElementwiseProblem');
  checkKnownKeys('', problem, ['op', 'a', 'b', 'output', 'kernelPath']);
  const { op, a, b, output } = problem;
  if (!ELEMENTWISE_OPS.includes(op)) throw new InputError('op', `expected one of ${ELEMENTWISE_OPS.join(', ')}, got ${brief(op)}`);
  const askedPath = problem.kernelPath === undefined ? 'builtin' : problem.kernelPath; // null is not absent
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
    checkKnownKeys(field, t, field === 'output' ? ['scale', 'zeroPoint', 'min', 'max'] : TENSOR_KEYS);
  }
  const dtype = operandType('a.data', a.data);
  const dtypeB = operandType('b.data', b.data);
  checkDtypeKey('a', (a as { dtype?: unknown }).dtype, dtype);
  checkDtypeKey('b', (b as { dtype?: unknown }).dtype, dtypeB);
  if (dtypeB !== dtype) throw new InputError('b.data', `dtype ${dtypeB} differs from a's ${dtype}; both inputs must have the same dtype`);
  const range = TYPE_RANGE[dtype];
  const aShape = checkShape('a.shape', a.shape, a.data.length);
  const bShape = checkShape('b.shape', b.shape, b.data.length);
  for (const [field, f] of [
    ['a.fortranOrder', a.fortranOrder],
    ['b.fortranOrder', b.fortranOrder],
  ] as const) {
    if (f !== undefined && typeof f !== 'boolean') throw new InputError(field, `expected true or false, got ${brief(f)}`);
  }
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
    const f = Math.fround;
    // quantize.cc divides the float32 scales in double; mul.cc multiplies and divides them in float32
    const real = (problem as { [REQUANTIZE]?: true })[REQUANTIZE]
      ? f(sa.scales[0]) / f(so)
      : f(f(f(sa.scales[0]) * f(sb.scales[0])) / f(so));
    out = quantizeFor('output.scale', 'a.scale·b.scale / output.scale', quantizeMultiplier, real);
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
