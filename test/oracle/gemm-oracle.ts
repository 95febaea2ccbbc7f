// An independent, BigInt oracle for the whole `op: "gemm"` of the spec contract (README): it reads
// operands element by element through their storage order, accumulates
//   acc[m][n] = sum_k (lhs[m][k] - zL[m]) * (rhs[k][n] - zR[n])
// exactly and reduces it mod 2^32 to int32 (a naive triple loop, no offset trick), then applies every
// output stage as gemmlowp's internal/output.h evaluates it, using ./bigint-fixedpoint.ts. With a
// "bitDepth" it instead follows gemmlowp's removed less-than-8-bit path: requantization at
// packing with position-defined rounding offsets, then RoundingMultiplyByConstantFraction unpacking.
// It shares no code with src/quant or src/reference, so `qgemm run` can be checked against it bit
// for bit.

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseNpy, type NpyArray } from '../../src/io/npy.ts';
import { big32, evalTanhStageB, makeTanhStage, mbqmDoubleB, mbqmSingleB, rdbpB, rmbcfB, srdhmB, wrap32 } from './bigint-fixedpoint.ts';

/** The JSON of a gemm spec, as the contract spells it (fields loosely typed: this is raw JSON). */
export interface GemmSpecJson {
  op: 'gemm';
  lhs: string;
  rhs: string;
  lhsZeroPoint?: number | string;
  rhsZeroPoint?: number | string;
  pipeline?: StageJson[];
  bitDepth?: { lhs: number; rhs: number; rounding: string };
  out: string;
}

export type AxisJson = 'row' | 'col';
export type StageJson =
  | { type: 'bias'; axis: AxisJson; values: number[] }
  | { type: 'quantizeDownInt32ToUint8Scale'; offset: number | number[]; multiplier: number | number[]; shift: number; axis?: AxisJson }
  | { type: 'quantizeDownInt32ByFixedPoint'; multiplier: number; shift: number; offsetAfterShift: number }
  | {
      type: 'scaleInt32ByFixedPointAndExponent';
      multiplier: number | number[];
      exponent: number | number[];
      offsetAfterShift: number;
      rounding?: 'double' | 'single';
      axis?: AxisJson;
    }
  | { type: 'clamp'; min: number; max: number }
  | { type: 'tanh'; realZeroAsInt32: number; realAmplitudeAsInt32: number }
  | { type: 'saturatingCast'; to: 'uint8' | 'int8' | 'int16' }
  | { type: 'truncatingCast'; to: 'uint8' };

/** The .npy arrays a spec refers to, already parsed. Zero points only when given as files. */
export interface GemmArrays {
  lhs: NpyArray;
  rhs: NpyArray;
  lhsZeroPoint?: NpyArray;
  rhsZeroPoint?: NpyArray;
}

export type OracleDtype = 'int32' | 'uint8' | 'int8' | 'int16';
export interface OracleResult {
  dtype: OracleDtype;
  shape: [number, number];
  /** C order (row-major), M*N elements. */
  data: Int32Array | Uint8Array | Int8Array | Int16Array;
}

// ------------------------------------------------------------------ element access

function toBig(v: number | bigint): bigint {
  return typeof v === 'bigint' ? v : BigInt(v);
}

/** A 2-D 8-bit operand as a function (r, c) -> bigint, honouring fortran_order. */
function operandReader(arr: NpyArray, name: string): { rows: number; cols: number; at: (r: number, c: number) => bigint } {
  if (arr.dtype !== 'uint8' && arr.dtype !== 'int8') throw new Error(`${name}: dtype ${arr.dtype} is not uint8/int8`);
  if (arr.shape.length !== 2) throw new Error(`${name}: shape ${JSON.stringify(arr.shape)} is not 2-D`);
  const [rows, cols] = arr.shape;
  const data = arr.data as Uint8Array | Int8Array;
  // Pre-convert to bigint once; the element of (r, c) lives at r*cols + c (C) or c*rows + r (Fortran).
  const big = Array.from(data, (v) => BigInt(v));
  const at = arr.fortranOrder ? (r: number, c: number) => big[c * rows + r] : (r: number, c: number) => big[r * cols + c];
  return { rows, cols, at };
}

/** A zero point: JSON int, .npy vector (int32 or int64) of `length`, or absent (0). */
function zeroPointVector(value: number | string | undefined, arr: NpyArray | undefined, length: number, name: string): bigint[] {
  if (value === undefined) return new Array<bigint>(length).fill(0n);
  if (typeof value === 'number') return new Array<bigint>(length).fill(big32(value, name));
  if (arr === undefined) throw new Error(`${name}: file ${value} was not loaded`);
  if (arr.shape.length !== 1 || arr.shape[0] !== length) {
    throw new Error(`${name}: shape ${JSON.stringify(arr.shape)} is not [${length}]`);
  }
  const out = Array.from(arr.data as ArrayLike<number | bigint>, toBig);
  for (const v of out) if (v !== wrap32(v)) throw new Error(`${name}: ${v} is not an int32`);
  return out;
}

function perChannel(
  value: number | number[],
  axis: AxisJson | undefined,
  M: number,
  N: number,
  name: string,
): (m: number, n: number) => bigint {
  if (typeof value === 'number') {
    const v = big32(value, name);
    return () => v;
  }
  if (axis !== 'row' && axis !== 'col') throw new Error(`${name}: per-channel values need "axis"`);
  const len = axis === 'row' ? M : N;
  if (value.length !== len) throw new Error(`${name}: length ${value.length}, expected ${len} (axis ${axis})`);
  const big = value.map((v, i) => big32(v, `${name}[${i}]`));
  return axis === 'row' ? (m) => big[m] : (_m, n) => big[n];
}

// ------------------------------------------------------------------ the pipeline

type StageFn = (x: bigint, m: number, n: number) => bigint;

function compileStage(stage: StageJson, M: number, N: number, where: string): { fn: StageFn; castTo?: OracleDtype } {
  switch (stage.type) {
    case 'bias': {
      // OutputStageBiasAddition: x + bias[pos], int32 wrap.
      const bias = perChannel(stage.values, stage.axis, M, N, `${where}.values`);
      return { fn: (x, m, n) => wrap32(x + bias(m, n)) };
    }
    case 'quantizeDownInt32ToUint8Scale': {
      // OutputStageQuantizeDownInt32ToUint8Scale(PC): RDBP(Mul(Add(x, offset), mult), shift), wrapping Add and Mul.
      const offset = perChannel(stage.offset, stage.axis, M, N, `${where}.offset`);
      const mult = perChannel(stage.multiplier, stage.axis, M, N, `${where}.multiplier`);
      const shift = stage.shift;
      rdbpB(0n, shift); // validates 0..31
      return { fn: (x, m, n) => rdbpB(wrap32(wrap32(x + offset(m, n)) * mult(m, n)), shift) };
    }
    case 'quantizeDownInt32ByFixedPoint': {
      // OutputStageQuantizeDownInt32ByFixedPoint: Add(RDBP(SRDHM(x, M), shift), offset_after_shift).
      const mult = big32(stage.multiplier, `${where}.multiplier`);
      const off = big32(stage.offsetAfterShift, `${where}.offsetAfterShift`);
      const shift = stage.shift;
      rdbpB(0n, shift);
      return { fn: (x) => wrap32(rdbpB(srdhmB(x, mult), shift) + off) };
    }
    case 'scaleInt32ByFixedPointAndExponent': {
      // OutputStageScaleInt32ByFixedPointAndExponent(PC): MBQM(x, m, e) + offset_after_shift, wrapping Add.
      const rounding = stage.rounding ?? 'double';
      if (rounding !== 'double' && rounding !== 'single') throw new Error(`${where}.rounding: ${String(rounding)}`);
      const mult = perChannel(stage.multiplier, stage.axis, M, N, `${where}.multiplier`);
      const expo = perChannel(stage.exponent, stage.axis, M, N, `${where}.exponent`);
      const off = big32(stage.offsetAfterShift, `${where}.offsetAfterShift`);
      const mbqm = rounding === 'double' ? mbqmDoubleB : mbqmSingleB;
      return { fn: (x, m, n) => wrap32(mbqm(x, mult(m, n), Number(expo(m, n))) + off) };
    }
    case 'clamp': {
      // OutputStageClamp: Min(Max(x, min), max).
      const lo = big32(stage.min, `${where}.min`);
      const hi = big32(stage.max, `${where}.max`);
      if (lo > hi) throw new Error(`${where}: min > max`);
      // biome-ignore lint/complexity/useMathMinMax: x is a bigint
      return { fn: (x) => (x < lo ? lo : x > hi ? hi : x) };
    }
    case 'tanh': {
      const params = makeTanhStage(stage.realZeroAsInt32, stage.realAmplitudeAsInt32);
      return { fn: (x) => evalTanhStageB(params, x) };
    }
    case 'saturatingCast': {
      const ranges: Record<string, [bigint, bigint]> = { uint8: [0n, 255n], int8: [-128n, 127n], int16: [-32768n, 32767n] };
      if (!Object.hasOwn(ranges, stage.to)) throw new Error(`${where}.to: ${String(stage.to)}`);
      const [lo, hi] = ranges[stage.to];
      return { fn: (x) => (x > hi ? hi : x < lo ? lo : x), castTo: stage.to };
    }
    case 'truncatingCast': {
      // OutputStageTruncatingCastToUint8: the uint8 conversion keeps the low 8 bits.
      if (stage.to !== 'uint8') throw new Error(`${where}.to: ${String((stage as { to: unknown }).to)}`);
      return { fn: (x) => BigInt.asUintN(8, x), castTo: 'uint8' };
    }
    default:
      throw new Error(`${where}: unknown stage type ${JSON.stringify((stage as { type: unknown }).type)}`);
  }
}

// ------------------------------------------------------------------ gemm

/**
 * The int32 accumulators of `spec`'s gemm, C order: the exact sum of (lhs - zL)(rhs - zR) over k,
 * reduced mod 2^32 (the same as wrapping every + and *).
 */
export function oracleAccumulators(spec: GemmSpecJson, arrays: GemmArrays): { M: number; N: number; acc: bigint[] } {
  if (spec.op !== 'gemm') throw new Error(`op ${String(spec.op)} is not gemm`);
  if (spec.bitDepth !== undefined) return lowBitAccumulators(spec, arrays, spec.bitDepth);
  const lhs = operandReader(arrays.lhs, 'lhs');
  const rhs = operandReader(arrays.rhs, 'rhs');
  const M = lhs.rows;
  const K = lhs.cols;
  const N = rhs.cols;
  if (rhs.rows !== K) throw new Error(`rhs rows ${rhs.rows} != lhs cols ${K}`);
  const zL = zeroPointVector(spec.lhsZeroPoint, arrays.lhsZeroPoint, M, 'lhsZeroPoint');
  const zR = zeroPointVector(spec.rhsZeroPoint, arrays.rhsZeroPoint, N, 'rhsZeroPoint');
  const acc: bigint[] = new Array<bigint>(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let sum = 0n;
      for (let k = 0; k < K; k++) sum += (lhs.at(m, k) - zL[m]) * (rhs.at(k, n) - zR[n]);
      acc[m * N + n] = wrap32(sum);
    }
  }
  return { M, N, acc };
}

// ------------------------------------------------------------------ less than 8 bits

/**
 * The 8-bit xorshift rounding offsets of gemmlowp's old pack.h
 * (ScalarRoundingOffsetGenerator<ProbabilisticXorshift>): state 128, get() returns state - 1 and
 * then advances Xorshift8(7,5,3). Period 255.
 */
export const XORSHIFT_OFFSETS: readonly number[] = (() => {
  const out: number[] = [];
  let x = 128;
  for (let i = 0; i < 255; i++) {
    out.push((x - 1) & 0xff);
    x = (x ^ (x << 7)) & 0xff;
    x = (x ^ (x >> 5)) & 0xff;
    x = (x ^ (x << 3)) & 0xff;
  }
  return out;
})();

export type LowBitRounding = 'nearest' | 'probabilistic-addmod' | 'probabilistic-xorshift' | 'default';

/** The rounding offset of the element with row-major linear index i (src/quant/lowbit.ts's definition). */
export function roundingOffset(rounding: LowBitRounding, i: number, K: number): number {
  const r = rounding === 'default' ? (K < 384 ? 'nearest' : 'probabilistic-addmod') : rounding;
  switch (r) {
    case 'nearest':
      return 127;
    case 'probabilistic-addmod':
      return Number((1n + 97n * (BigInt(i) + 1n)) % 255n); // closed form of the add-mod-97 sequence
    case 'probabilistic-xorshift':
      return XORSHIFT_OFFSETS[i % 255];
    default:
      throw new Error(`bitDepth.rounding: unknown ${JSON.stringify(rounding)}`);
  }
}

/**
 * gemmlowp's removed less-than-8-bit path: requantize each operand while packing,
 * q = floor((src * maxval + offset(i)) / 255) with src in the uint8 domain (int8: v + 128, and the
 * zero point + 128, int32 wrap), then unpack with RoundingMultiplyByConstantFraction:
 *   acc = RMBCF<255^2, Lmax*Rmax>(sum_k l'r') + RMBCF<255, Lmax>(rowSum'[m] * -zR[n])
 *       + RMBCF<255, Rmax>(colSum'[n] * -zL[m]) + K * zL[m] * zR[n]       (all int32 with wrap)
 */
function lowBitAccumulators(
  spec: GemmSpecJson,
  arrays: GemmArrays,
  bitDepth: NonNullable<GemmSpecJson['bitDepth']>,
): { M: number; N: number; acc: bigint[] } {
  const { lhs: lhsBits, rhs: rhsBits, rounding } = bitDepth;
  for (const [name, b] of [
    ['lhs', lhsBits],
    ['rhs', rhsBits],
  ] as const) {
    if (!Number.isInteger(b) || b < 1 || b > 8) throw new Error(`bitDepth.${name}: ${b} is not in 1..8`);
  }
  const lhs = operandReader(arrays.lhs, 'lhs');
  const rhs = operandReader(arrays.rhs, 'rhs');
  const M = lhs.rows;
  const K = lhs.cols;
  const N = rhs.cols;
  if (rhs.rows !== K) throw new Error(`rhs rows ${rhs.rows} != lhs cols ${K}`);
  const shiftL = arrays.lhs.dtype === 'int8' ? 128n : 0n;
  const shiftR = arrays.rhs.dtype === 'int8' ? 128n : 0n;
  const zL = zeroPointVector(spec.lhsZeroPoint, arrays.lhsZeroPoint, M, 'lhsZeroPoint').map((z) => wrap32(z + shiftL));
  const zR = zeroPointVector(spec.rhsZeroPoint, arrays.rhsZeroPoint, N, 'rhsZeroPoint').map((z) => wrap32(z + shiftR));
  const lMax = 2 ** lhsBits - 1;
  const rMax = 2 ** rhsBits - 1;
  const requantize = (src: bigint, maxval: number, offset: number): bigint => (src * BigInt(maxval) + BigInt(offset)) / 255n;
  // requantized operands, logical row-major
  const lq: bigint[] = new Array<bigint>(M * K);
  for (let m = 0; m < M; m++) {
    for (let k = 0; k < K; k++)
      lq[m * K + k] = requantize(lhs.at(m, k) + shiftL, lMax, roundingOffset(rounding as LowBitRounding, m * K + k, K));
  }
  const rq: bigint[] = new Array<bigint>(K * N);
  for (let k = 0; k < K; k++) {
    for (let n = 0; n < N; n++)
      rq[k * N + n] = requantize(rhs.at(k, n) + shiftR, rMax, roundingOffset(rounding as LowBitRounding, k * N + n, K));
  }
  const rowSum = Array.from({ length: M }, (_, m) => wrap32(lq.slice(m * K, (m + 1) * K).reduce((a, b) => a + b, 0n)));
  const colSum = Array.from({ length: N }, (_, n) => {
    let s = 0n;
    for (let k = 0; k < K; k++) s += rq[k * N + n];
    return wrap32(s);
  });
  const acc: bigint[] = new Array<bigint>(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let xx = 0n;
      for (let k = 0; k < K; k++) xx += lq[m * K + k] * rq[k * N + n];
      const termXX = rmbcfB(wrap32(xx), 255 * 255, lMax * rMax);
      const termX1 = rmbcfB(wrap32(rowSum[m] * wrap32(-zR[n])), 255, lMax);
      const term1X = rmbcfB(wrap32(colSum[n] * wrap32(-zL[m])), 255, rMax);
      const term11 = wrap32(wrap32(zL[m] * zR[n]) * BigInt(K));
      acc[m * N + n] = wrap32(termXX + termX1 + term1X + term11);
    }
  }
  return { M, N, acc };
}

/** Applies an output pipeline (gemmlowp internal/output.h) to int32 values laid out [M,N] in C order. */
export function oraclePipeline(acc: readonly bigint[], pipeline: readonly StageJson[], M: number, N: number): OracleResult {
  if (acc.length !== M * N) throw new Error(`${acc.length} values for [${M},${N}]`);
  const stages = pipeline.map((s, i) => compileStage(s, M, N, `pipeline[${i}]`));
  let dtype: OracleDtype = 'int32';
  stages.forEach((s, i) => {
    if (s.castTo !== undefined) {
      if (i !== stages.length - 1) throw new Error(`pipeline[${i}]: a cast must be the last stage`);
      dtype = s.castTo;
    }
  });
  const data = new { int32: Int32Array, uint8: Uint8Array, int8: Int8Array, int16: Int16Array }[dtype](M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let x = acc[m * N + n];
      for (const s of stages) x = s.fn(x, m, n);
      data[m * N + n] = Number(x);
    }
  }
  return { dtype, shape: [M, N], data };
}

/**
 * The whole gemm of `spec`, given its parsed arrays, bitDepth included. Throws (plain Error) on anything
 * it cannot evaluate.
 */
export function oracleGemm(spec: GemmSpecJson, arrays: GemmArrays): OracleResult {
  const { M, N, acc } = oracleAccumulators(spec, arrays);
  return oraclePipeline(acc, spec.pipeline ?? [], M, N);
}

/** Reads a spec file and its .npy files (paths relative to the spec's folder). */
export function loadGemmSpec(specPath: string): { spec: GemmSpecJson; arrays: GemmArrays } {
  const spec = JSON.parse(readFileSync(specPath, 'utf8')) as GemmSpecJson;
  const dir = dirname(specPath);
  const load = (p: string): NpyArray => parseNpy(new Uint8Array(readFileSync(resolve(dir, p))));
  const arrays: GemmArrays = { lhs: load(spec.lhs), rhs: load(spec.rhs) };
  if (typeof spec.lhsZeroPoint === 'string') arrays.lhsZeroPoint = load(spec.lhsZeroPoint);
  if (typeof spec.rhsZeroPoint === 'string') arrays.rhsZeroPoint = load(spec.rhsZeroPoint);
  return { spec, arrays };
}
