// An independent BigInt oracle for the elementwise ops of the spec contract: TFLite's
// quantized add, sub and mul, and the integer-only scale alignment (alignedAdd, alignedSub). It follows
// TFLite's structure literally — kernels/add.cc, sub.cc (PrepareGeneralSubOp) and mul.cc Prepare into an
// OpData, then reference_ops BroadcastAdd4DSlow / BroadcastSubSlow / BroadcastMul4DSlow: NdArrayDesc
// strides for both inputs, four nested loops over the extended 4-D output shape, AddElementwise /
// SubElementwise / MulElementwise per element — with every integer step in BigInt through
// ./bigint-fixedpoint.ts. The alignment method follows the text step by step; there, floor(log2 s)
// and the 8-bit mantissa are derived exactly from the IEEE-754 bits of s with BigInt, not with frexp.
// It shares no code with src/ (only the .npy parser), so `qgemm run` can be checked against it bit for
// bit. Anything TFLite would reject (a failed TF_LITE_ENSURE/CHECK) or the issue forbids throws a plain
// Error: the CLI must then exit 2.
//
// Where TFLite itself is undefined we take what the spec (src/reference/elementwise.ts) chose:
// sub's output multiplier above 1 goes through MultiplyByQuantizedMultiplier (saturating left shift)
// instead of RoundingDivideByPOT by a negative exponent; int32 + wraps.

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseNpy, type NpyArray } from '../../src/io/npy.ts';
import { mbqmDoubleB, quantizeMultiplierBig, rdbpB, srdhmB, wrap32 } from './bigint-fixedpoint.ts';

export type ElementwiseOpJson = 'add' | 'sub' | 'mul' | 'alignedAdd' | 'alignedSub';

export interface InputJson {
  data: string;
  scale: number | number[];
  zeroPoint: number;
  axis?: number;
}

/** The JSON of an elementwise spec, as the contract spells it. */
export interface ElementwiseSpecJson {
  op: ElementwiseOpJson;
  a: InputJson;
  b: InputJson;
  output: { scale: number; zeroPoint: number; min?: number; max?: number };
  out: string;
}

export interface ElementwiseArrays {
  a: NpyArray;
  b: NpyArray;
}

export interface ElementwiseOracleResult {
  dtype: 'uint8' | 'int8';
  shape: number[];
  data: number[];
}

// ------------------------------------------------------------------ TFLite quantization_util.cc

function ensure(cond: boolean, what: string): void {
  if (!cond) throw new Error(`rejected: ${what}`);
}

/** QuantizeMultiplierSmallerThanOneExp: CHECK_LT(m, 1), CHECK_GT(m, 0); QuantizeMultiplier; CHECK_LE(shift, 0). */
function quantizeMultiplierSmallerThanOneExp(real: number, what: string): { multiplier: bigint; shift: number } {
  ensure(real < 1 && real > 0, `${what} = ${real} not in (0, 1)`);
  const { multiplier, shift } = quantizeMultiplierBig(real);
  ensure(shift <= 0, `${what}: shift ${shift} > 0`);
  return { multiplier: BigInt(multiplier), shift };
}

/** QuantizeMultiplierGreaterThanOne: CHECK_GT(m, 1); QuantizeMultiplier; CHECK_GE(shift, 0). */
function quantizeMultiplierGreaterThanOne(real: number, what: string): { multiplier: bigint; shift: number } {
  ensure(real > 1, `${what} = ${real} not > 1`);
  const { multiplier, shift } = quantizeMultiplierBig(real);
  ensure(shift >= 0, `${what}: shift ${shift} < 0`);
  return { multiplier: BigInt(multiplier), shift };
}

function quantizeMultiplier(real: number): { multiplier: bigint; shift: number } {
  const { multiplier, shift } = quantizeMultiplierBig(real);
  return { multiplier: BigInt(multiplier), shift };
}

/** common.h MultiplyByQuantizedMultiplierSmallerThanOneExp (double rounding): RDBP(SRDHM(x, M), -shift). */
function multiplyByQuantizedMultiplierSmallerThanOneExp(x: bigint, multiplier: bigint, shift: number): bigint {
  if (shift > 0) return mbqmDoubleB(x, multiplier, shift); // the spec's choice for sub's GreaterThanOne case
  return rdbpB(srdhmB(x, multiplier), -shift);
}

/** common.h MultiplyByQuantizedMultiplier (double rounding), shift <= 31. */
function multiplyByQuantizedMultiplier(x: bigint, multiplier: bigint, shift: number): bigint {
  ensure(shift <= 31, `output shift ${shift} > 31`);
  return mbqmDoubleB(x, multiplier, shift);
}

// ------------------------------------------------------------------ OpData (Prepare)

interface OpData {
  op: ElementwiseOpJson;
  type: 'uint8' | 'int8';
  input1Offset: bigint;
  input2Offset: bigint;
  outputOffset: bigint;
  leftShift: number;
  input1Multiplier: bigint;
  input1Shift: number;
  input2Multiplier: bigint;
  input2Shift: number;
  outputMultiplier: bigint;
  outputShift: number;
  activationMin: bigint;
  activationMax: bigint;
  // alignment (per channel of input 1 and input 2)
  mantissa1: bigint[];
  shift1: number[];
  mantissa2: bigint[];
  shift2: number[];
}

/**
 * floor(log2 s) and the 8-bit mantissa round(s·2^(7−e)) (half away from zero), from the IEEE-754 bits:
 * s = M · 2^E with M an integer, so floor(log2 s) = E + bitLength(M) − 1 and s·2^(7−e) = M / 2^(bitLength(M) − 8).
 */
export function alignedFixedPoint(s: number): { m: number; e: number; frac: number } {
  ensure(Number.isFinite(s) && s > 0, `scale ${s} must be positive and finite`);
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, s);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & ((1n << 52n) - 1n);
  const M = biased === 0 ? fraction : fraction | (1n << 52n);
  const E = (biased === 0 ? 1 : biased) - 1075;
  const bitLength = M.toString(2).length;
  let e = E + bitLength - 1;
  const drop = BigInt(bitLength - 8); // may be negative for subnormals with few bits
  let m: bigint;
  if (drop <= 0n) m = M << -drop;
  else {
    const q = M >> drop;
    const r = M - (q << drop);
    m = 2n * r >= 1n << drop ? q + 1n : q; // half away from zero (s > 0)
  }
  if (m === 256n) {
    m = 128n;
    e += 1;
  }
  return { m: Number(m), e, frac: 7 - e };
}

function scalesOf(t: InputJson, shape: number[], which: string): number[] {
  if (Array.isArray(t.scale)) {
    ensure(t.axis !== undefined && Number.isInteger(t.axis) && t.axis >= 0 && t.axis < shape.length, `${which}.axis`);
    ensure(t.scale.length === shape[t.axis!] && t.scale.length > 0, `${which}.scale length`);
    return t.scale;
  }
  ensure(t.axis === undefined, `${which}.axis without per-axis scales`);
  return [t.scale];
}

function prepare(spec: ElementwiseSpecJson, type: 'uint8' | 'int8', shape1: number[], shape2: number[]): OpData {
  const [lo, hi] = type === 'uint8' ? [0, 255] : [-128, 127];
  const inRange = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi;
  ensure(inRange(spec.a.zeroPoint) && inRange(spec.b.zeroPoint) && inRange(spec.output.zeroPoint), 'zero points in the type range');
  const s1 = scalesOf(spec.a, shape1, 'a');
  const s2 = scalesOf(spec.b, shape2, 'b');
  for (const s of [...s1, ...s2, spec.output.scale]) ensure(typeof s === 'number' && Number.isFinite(s) && s > 0, `scale ${s}`);
  const aligned = spec.op === 'alignedAdd' || spec.op === 'alignedSub';
  ensure(
    aligned || (s1.length === 1 && !Array.isArray(spec.a.scale) && !Array.isArray(spec.b.scale)),
    'per-axis scales only for aligned ops',
  );
  const actMin = spec.output.min ?? lo;
  const actMax = spec.output.max ?? hi;
  ensure(inRange(actMin) && inRange(actMax) && actMin <= actMax, 'activation range');
  const d: OpData = {
    op: spec.op,
    type,
    input1Offset: BigInt(-spec.a.zeroPoint),
    input2Offset: BigInt(-spec.b.zeroPoint),
    outputOffset: BigInt(spec.output.zeroPoint),
    leftShift: 0,
    input1Multiplier: 0n,
    input1Shift: 0,
    input2Multiplier: 0n,
    input2Shift: 0,
    outputMultiplier: 0n,
    outputShift: 0,
    activationMin: BigInt(actMin),
    activationMax: BigInt(actMax),
    mantissa1: [],
    shift1: [],
    mantissa2: [],
    shift2: [],
  };
  const outScale = spec.output.scale;
  if (spec.op === 'add' || spec.op === 'sub') {
    // add.cc Prepare / sub.cc PrepareGeneralSubOp, 8-bit: left_shift = 20.
    d.leftShift = 20;
    const twiceMaxInputScale = 2 * Math.max(s1[0], s2[0]);
    const realInput1Multiplier = s1[0] / twiceMaxInputScale;
    const realInput2Multiplier = s2[0] / twiceMaxInputScale;
    const realOutputMultiplier = twiceMaxInputScale / ((1 << d.leftShift) * outScale);
    ({ multiplier: d.input1Multiplier, shift: d.input1Shift } = quantizeMultiplierSmallerThanOneExp(
      realInput1Multiplier,
      'input1 multiplier',
    ));
    ({ multiplier: d.input2Multiplier, shift: d.input2Shift } = quantizeMultiplierSmallerThanOneExp(
      realInput2Multiplier,
      'input2 multiplier',
    ));
    if (spec.op === 'sub' && realOutputMultiplier > 1) {
      ({ multiplier: d.outputMultiplier, shift: d.outputShift } = quantizeMultiplierGreaterThanOne(
        realOutputMultiplier,
        'output multiplier',
      ));
      ensure(d.outputShift <= 31, 'output shift <= 31');
    } else {
      ({ multiplier: d.outputMultiplier, shift: d.outputShift } = quantizeMultiplierSmallerThanOneExp(
        realOutputMultiplier,
        'output multiplier',
      ));
    }
  } else if (spec.op === 'mul') {
    // mul.cc Prepare, with the real multiplier in double (TFLite: float32).
    const realMultiplier = (s1[0] * s2[0]) / outScale;
    ({ multiplier: d.outputMultiplier, shift: d.outputShift } = quantizeMultiplier(realMultiplier));
  } else {
    const f1 = s1.map(alignedFixedPoint);
    const f2 = s2.map(alignedFixedPoint);
    let F = -Infinity;
    for (const x of [...f1, ...f2]) F = Math.max(F, x.frac);
    d.mantissa1 = f1.map((x) => BigInt(x.m));
    d.shift1 = f1.map((x) => F - x.frac);
    d.mantissa2 = f2.map((x) => BigInt(x.m));
    d.shift2 = f2.map((x) => F - x.frac);
    for (const k of [...d.shift1, ...d.shift2]) ensure(k <= 15, `alignment shift ${k} > 15`);
    ({ multiplier: d.outputMultiplier, shift: d.outputShift } = quantizeMultiplier(2 ** -F / outScale));
  }
  ensure(d.outputShift <= 31, 'output shift <= 31');
  return d;
}

// ------------------------------------------------------------------ per element (reference_ops)

function clampOutput(d: OpData, rawOutput: bigint): number {
  const clamped = rawOutput < d.activationMin ? d.activationMin : rawOutput > d.activationMax ? d.activationMax : rawOutput;
  return Number(clamped);
}

/** add.h AddElementwise / sub.h SubElementwise, one element. */
function addSubElementwise(d: OpData, in1: number, in2: number, sign: 1n | -1n): number {
  const input1Val = d.input1Offset + BigInt(in1);
  const input2Val = d.input2Offset + BigInt(in2);
  const shiftedInput1Val = input1Val * (1n << BigInt(d.leftShift));
  const shiftedInput2Val = input2Val * (1n << BigInt(d.leftShift));
  const scaledInput1Val = multiplyByQuantizedMultiplierSmallerThanOneExp(shiftedInput1Val, d.input1Multiplier, d.input1Shift);
  const scaledInput2Val = multiplyByQuantizedMultiplierSmallerThanOneExp(shiftedInput2Val, d.input2Multiplier, d.input2Shift);
  const rawSum = wrap32(scaledInput1Val + sign * scaledInput2Val);
  const rawOutput = wrap32(multiplyByQuantizedMultiplierSmallerThanOneExp(rawSum, d.outputMultiplier, d.outputShift) + d.outputOffset);
  return clampOutput(d, rawOutput);
}

/** mul.h / integer_ops/mul.h MulElementwise, one element. */
function mulElementwise(d: OpData, in1: number, in2: number): number {
  const input1Val = d.input1Offset + BigInt(in1);
  const input2Val = d.input2Offset + BigInt(in2);
  const unclampedResult = wrap32(
    d.outputOffset + multiplyByQuantizedMultiplier(wrap32(input1Val * input2Val), d.outputMultiplier, d.outputShift),
  );
  return clampOutput(d, unclampedResult);
}

/** The alignment: a_i = ((q_a − z_a)·m_a) << (F − frac_a), sum in int32, MBQM, + z_out, clamp. */
function alignedElementwise(d: OpData, in1: number, in2: number, c1: number, c2: number, sign: 1n | -1n): number {
  const a = wrap32(((d.input1Offset + BigInt(in1)) * d.mantissa1[c1]) << BigInt(d.shift1[c1]));
  const b = wrap32(((d.input2Offset + BigInt(in2)) * d.mantissa2[c2]) << BigInt(d.shift2[c2]));
  const sum = wrap32(a + sign * b);
  return clampOutput(d, wrap32(multiplyByQuantizedMultiplier(sum, d.outputMultiplier, d.outputShift) + d.outputOffset));
}

// ------------------------------------------------------------------ NdArrayDesc broadcasting

interface NdArrayDesc {
  extents: number[];
  strides: number[];
}

/** RuntimeShape::ExtendedShape(4, shape): leading 1s. */
function extendedShape(shape: number[]): number[] {
  return [...new Array<number>(4 - shape.length).fill(1), ...shape];
}

/** NdArrayDescsForElementwiseBroadcast: C-order strides of each input, 0 where it is broadcast. */
function ndArrayDescsForElementwiseBroadcast(shape1: number[], shape2: number[]): [NdArrayDesc, NdArrayDesc] {
  const ext1 = extendedShape(shape1);
  const ext2 = extendedShape(shape2);
  const desc = (ext: number[]): NdArrayDesc => {
    const strides = [0, 0, 0, 0];
    strides[3] = 1;
    for (let i = 2; i >= 0; i--) strides[i] = strides[i + 1] * ext[i + 1];
    return { extents: [...ext], strides };
  };
  const desc1 = desc(ext1);
  const desc2 = desc(ext2);
  for (let i = 0; i < 4; i++) {
    const e1 = ext1[i];
    const e2 = ext2[i];
    if (e1 !== e2) {
      if (e1 === 1) {
        desc1.strides[i] = 0;
        desc1.extents[i] = e2;
      } else {
        ensure(e2 === 1, `shapes (${shape1}) and (${shape2}) do not broadcast`);
        desc2.strides[i] = 0;
        desc2.extents[i] = e1;
      }
    }
  }
  return [desc1, desc2];
}

const subscriptToIndex = (d: NdArrayDesc, i0: number, i1: number, i2: number, i3: number) =>
  i0 * d.strides[0] + i1 * d.strides[1] + i2 * d.strides[2] + i3 * d.strides[3];

/** The values of an .npy array in C order (TFLite tensors are C order). */
function cOrderValues(arr: NpyArray): number[] {
  const values = Array.from(arr.data as ArrayLike<number>, Number);
  if (!arr.fortranOrder || arr.shape.length < 2) return values;
  const shape = arr.shape;
  const out = new Array<number>(values.length);
  for (let f = 0; f < values.length; f++) {
    // Fortran linear index f -> multi-index -> C linear index.
    let rest = f;
    let c = 0;
    const idx = shape.map((dim) => {
      const i = rest % dim;
      rest = Math.floor(rest / dim);
      return i;
    });
    for (let k = 0; k < shape.length; k++) c = c * shape[k] + idx[k];
    out[c] = values[f];
  }
  return out;
}

/** The channel of input element `index` (C order) along `axis`, or 0 for a per-tensor scale. */
function channelOf(index: number, shape: number[], axis: number | undefined): number {
  if (axis === undefined) return 0;
  let inner = 1;
  for (let k = axis + 1; k < shape.length; k++) inner *= shape[k];
  return Math.floor(index / inner) % shape[axis];
}

/** The whole elementwise op of `spec` on its arrays; throws where TFLite or the issue rejects the input. */
export function oracleElementwise(spec: ElementwiseSpecJson, arrays: ElementwiseArrays): ElementwiseOracleResult {
  const type = arrays.a.dtype;
  ensure((type === 'uint8' || type === 'int8') && arrays.b.dtype === type, 'both inputs uint8 or both int8');
  const shape1 = arrays.a.shape;
  const shape2 = arrays.b.shape;
  ensure(shape1.length <= 4 && shape2.length <= 4, 'at most 4-D');
  const d = prepare(spec, type as 'uint8' | 'int8', shape1, shape2);
  const [desc1, desc2] = ndArrayDescsForElementwiseBroadcast(shape1, shape2);
  const rank = Math.max(shape1.length, shape2.length);
  const out4 = desc1.extents.map((e, i) => (e === 1 ? desc2.extents[i] : e)); // 0-size dims propagate
  const outputShape = out4.slice(4 - rank);
  const in1 = cOrderValues(arrays.a);
  const in2 = cOrderValues(arrays.b);
  const data: number[] = [];
  const sign = spec.op === 'sub' || spec.op === 'alignedSub' ? -1n : 1n;
  for (let b = 0; b < out4[0]; ++b) {
    for (let y = 0; y < out4[1]; ++y) {
      for (let x = 0; x < out4[2]; ++x) {
        for (let c = 0; c < out4[3]; ++c) {
          const i1 = subscriptToIndex(desc1, b, y, x, c);
          const i2 = subscriptToIndex(desc2, b, y, x, c);
          let v: number;
          if (spec.op === 'add' || spec.op === 'sub') v = addSubElementwise(d, in1[i1], in2[i2], sign);
          else if (spec.op === 'mul') v = mulElementwise(d, in1[i1], in2[i2]);
          else v = alignedElementwise(d, in1[i1], in2[i2], channelOf(i1, shape1, spec.a.axis), channelOf(i2, shape2, spec.b.axis), sign);
          data.push(v); // Offset(extended_output_shape, b, y, x, c) is this running index
        }
      }
    }
  }
  return { dtype: type as 'uint8' | 'int8', shape: outputShape, data };
}

/** Reads an elementwise spec file and its .npy inputs (paths relative to the spec's folder). */
export function loadElementwiseSpec(specPath: string): { spec: ElementwiseSpecJson; arrays: ElementwiseArrays } {
  const spec = JSON.parse(readFileSync(specPath, 'utf8')) as ElementwiseSpecJson;
  const dir = dirname(specPath);
  const load = (p: string): NpyArray => parseNpy(new Uint8Array(readFileSync(resolve(dir, p))));
  return { spec, arrays: { a: load(spec.a.data), b: load(spec.b.data) } };
}
