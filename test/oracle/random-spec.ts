// A seeded generator of random `op: "gemm"` specs (the CLI's spec contract, README) for differential testing of
// `qgemm run` against the BigInt oracle. It writes spec.json and its .npy files into a folder and
// returns the spec. Coverage: the shape sweep 1-10, 15-17, 31-33, 63-65 and odd rectangles up to
// ~100; uint8/int8 and C/Fortran order per operand; zero points absent, small, extreme int32, or as
// int32/int64 .npy vectors; pipelines of 0-5 stages of every kind, scalar and per-channel, with
// parameters drawn both "realistic" (values that land in range) and "wild" (anywhere in int32, to
// exercise wrap and saturation); a cast only as the last stage. Same seed, same files.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../../tools/random.ts';
import { serializeNpy, type NpyArray } from '../../src/io/npy.ts';
export { Rng };

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
import { quantizeMultiplierBig } from './bigint-fixedpoint.ts';
import { oracleAccumulators, oraclePipeline, type AxisJson, type GemmArrays, type GemmSpecJson, type StageJson } from './gemm-oracle.ts';

/** Dimensions of the shape sweep, and odd rectangles up to ~100. */
export const SHAPE_SWEEP = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 17, 31, 32, 33, 63, 64, 65];

function dim(rng: Rng): number {
  return rng.bool(0.7) ? rng.pick(SHAPE_SWEEP) : 2 * rng.int(0, 50) + 1;
}

type Dtype8 = 'uint8' | 'int8';

function operand(rng: Rng, rows: number, cols: number): { arr: NpyArray; dtype: Dtype8; fortran: boolean } {
  const dtype: Dtype8 = rng.bool() ? 'uint8' : 'int8';
  const fortran = rng.bool();
  const [lo, hi] = dtype === 'uint8' ? [0, 255] : [-128, 127];
  const mode = rng.int(0, 9);
  const center = rng.int(lo, hi);
  const value = (): number => {
    if (mode < 6) return rng.int(lo, hi); // uniform
    if (mode < 8) return Math.min(hi, Math.max(lo, center + rng.int(-3, 3))); // narrow
    return rng.bool() ? lo : hi; // extremes only
  };
  const logical: number[] = [];
  for (let i = 0; i < rows * cols; i++) logical.push(value()); // row-major logical order
  const data = dtype === 'uint8' ? new Uint8Array(rows * cols) : new Int8Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) data[fortran ? c * rows + r : r * cols + c] = logical[r * cols + c];
  }
  return { arr: { dtype, shape: [rows, cols], fortranOrder: fortran, data }, dtype, fortran };
}

function zeroPointValue(rng: Rng, extremeP: number): number {
  return rng.bool(extremeP) ? rng.anyInt32() : rng.int(-300, 300);
}

/** A zero point: undefined (default 0), a JSON int, or an .npy vector file written into `dir`. */
function zeroPoint(rng: Rng, dir: string, file: string, length: number): number | { file: string; arr: NpyArray } | undefined {
  const r = rng.float();
  if (r < 0.1) return undefined;
  if (r < 0.45) return rng.int(-300, 300);
  if (r < 0.6) return rng.anyInt32();
  const values = Array.from({ length }, () => zeroPointValue(rng, 0.15));
  const int64 = r >= 0.9;
  const arr: NpyArray = int64
    ? { dtype: 'int64', shape: [length], fortranOrder: false, data: BigInt64Array.from(values, (v) => BigInt(v)) }
    : { dtype: 'int32', shape: [length], fortranOrder: false, data: Int32Array.from(values) };
  writeFileSync(join(dir, file), serializeNpy(arr));
  return { file, arr };
}

/** A small-or-wild int32: realistic magnitude up to `small`, or anything. */
function someInt32(rng: Rng, small: number, wildP = 0.4): number {
  return rng.bool(wildP) ? rng.anyInt32() : rng.int(-small, small);
}

function vectorOrScalar(perChannel: boolean, len: number, draw: () => number): number | number[] {
  return perChannel ? Array.from({ length: len }, draw) : draw();
}

const clampI32 = (v: number): number => Math.max(INT32_MIN, Math.min(INT32_MAX, Math.round(v)));

export const TANH_MAX_AMPLITUDE = Math.floor(INT32_MAX / 8); // 268435455

const STAGE_KINDS = [
  'bias',
  'quantizeDownInt32ToUint8Scale',
  'quantizeDownInt32ByFixedPoint',
  'scaleInt32ByFixedPointAndExponent',
  'clamp',
  'tanh',
] as const;

/** Where the values flowing into a stage are: a sorted sample of them and a few order statistics. */
interface ValueStats {
  sorted: number[];
  lo: number; // 5th percentile
  hi: number; // 95th percentile
  center: number;
  spread: number; // >= 1
}

function valueStats(values: readonly bigint[]): ValueStats {
  const step = Math.max(1, Math.floor(values.length / 4096));
  const sorted: number[] = [];
  for (let i = 0; i < values.length; i += step) sorted.push(Number(values[i]));
  sorted.sort((a, b) => a - b);
  const q = (f: number): number => sorted[Math.min(sorted.length - 1, Math.floor(f * sorted.length))];
  const lo = q(0.05);
  const hi = q(0.95);
  return { sorted, lo, hi, center: (lo + hi) / 2, spread: Math.max(1, hi - lo) };
}

type Range = readonly [number, number];
const TARGETS: readonly Range[] = [
  [0, 255],
  [-128, 127],
  [-32768, 32767],
  [-(2 ** 20), 2 ** 20],
];

/**
 * One random non-cast stage. "Realistic" parameters are fitted to the values that reach the stage
 * (`st`), so that its output spreads over `target` instead of saturating; "wild" ones are drawn
 * anywhere in their valid range, to exercise int32 wrap and saturation.
 */
function stage(rng: Rng, M: number, N: number, st: ValueStats, target: Range): StageJson {
  const kind = rng.pick(STAGE_KINDS);
  const axis: AxisJson = rng.bool() ? 'row' : 'col';
  const len = axis === 'row' ? M : N;
  const wild = rng.bool(0.3);
  const scale = (target[1] - target[0]) / st.spread; // real factor that maps the values onto the target
  const targetCenter = (target[0] + target[1]) / 2;
  const jitter = (): number => 0.7 + 0.6 * rng.float();
  switch (kind) {
    case 'bias': {
      const half = Math.max(1, Math.min(2 ** 30, Math.round(st.spread / 2)));
      const draw = wild ? () => someInt32(rng, rng.pick([100, 100000, 1 << 24])) : () => rng.int(-half, half);
      return { type: 'bias', axis, values: Array.from({ length: len }, draw) };
    }
    case 'quantizeDownInt32ToUint8Scale': {
      // RDBP((x + offset) * multiplier, shift) ~ (x + offset) * multiplier / 2^shift
      const pc = rng.bool();
      let offset: number | number[];
      let multiplier: number | number[];
      let shift: number;
      if (wild) {
        offset = vectorOrScalar(pc, len, () => rng.anyInt32());
        multiplier = vectorOrScalar(pc, len, () => rng.anyInt32());
        shift = rng.int(0, 31);
      } else {
        const off = clampI32(targetCenter / scale - st.center);
        const maxAbs = Math.max(Math.abs(st.lo + off), Math.abs(st.hi + off), 1);
        shift = Math.max(0, Math.min(31, Math.floor(Math.log2(2 ** 30 / (maxAbs * scale)))));
        const mult = Math.max(1, Math.min(INT32_MAX, Math.round(scale * 2 ** shift)));
        const wobble = Math.max(1, Math.round(st.spread / 8));
        offset = vectorOrScalar(pc, len, () => clampI32(off + rng.int(-wobble, wobble)));
        multiplier = vectorOrScalar(pc, len, () => Math.max(0, Math.min(INT32_MAX, Math.round(mult * jitter()))));
      }
      const s: StageJson = { type: 'quantizeDownInt32ToUint8Scale', offset, multiplier, shift };
      if (pc) s.axis = axis;
      return s;
    }
    case 'quantizeDownInt32ByFixedPoint': {
      // RDBP(SRDHM(x, m), shift) + offset ~ x * m / 2^(31 + shift) + offset: only scales down
      if (wild) {
        return {
          type: 'quantizeDownInt32ByFixedPoint',
          multiplier: rng.anyInt32(),
          shift: rng.int(0, 31),
          offsetAfterShift: someInt32(rng, 300),
        };
      }
      const q = quantizeMultiplierBig(Math.min(scale * jitter(), 0.99));
      const shift = q.multiplier === 0 ? 31 : Math.min(31, -q.shift);
      const effective = (q.multiplier / 2 ** 31) * 2 ** -shift;
      return {
        type: 'quantizeDownInt32ByFixedPoint',
        multiplier: q.multiplier === 0 ? INT32_MAX : q.multiplier,
        shift,
        offsetAfterShift: clampI32(targetCenter - st.center * effective),
      };
    }
    case 'scaleInt32ByFixedPointAndExponent': {
      // MBQM(x, m, e) + offset ~ x * m / 2^31 * 2^e + offset
      const pc = rng.bool();
      const rounding = rng.bool() ? 'double' : 'single';
      const maxExp = rounding === 'double' ? 31 : 30;
      let multiplier: number | number[];
      let exponent: number | number[];
      let offsetAfterShift: number;
      if (wild) {
        multiplier = vectorOrScalar(pc, len, () => rng.anyInt32());
        exponent = vectorOrScalar(pc, len, () => rng.int(-31, maxExp));
        offsetAfterShift = someInt32(rng, 300);
      } else {
        const qs = Array.from({ length: pc ? len : 1 }, () => {
          const q = quantizeMultiplierBig(scale * jitter());
          return q.multiplier === 0
            ? { multiplier: 1 << 30, shift: -31 }
            : { multiplier: q.multiplier, shift: Math.max(-31, Math.min(maxExp, q.shift)) };
        });
        multiplier = pc ? qs.map((q) => q.multiplier) : qs[0].multiplier;
        exponent = pc ? qs.map((q) => q.shift) : qs[0].shift;
        offsetAfterShift = clampI32(targetCenter - st.center * scale);
      }
      const s: StageJson = { type: 'scaleInt32ByFixedPointAndExponent', multiplier, exponent, offsetAfterShift };
      if (rounding === 'single' || rng.bool(0.7)) s.rounding = rounding; // "double" is the default
      if (pc) s.axis = axis;
      return s;
    }
    case 'clamp': {
      let a: number;
      let b: number;
      if (wild) {
        const range = rng.pick([255, 65536, INT32_MAX]);
        a = rng.bool(0.2) ? rng.anyInt32() : rng.int(-range, range);
        b = rng.bool(0.2) ? rng.anyInt32() : rng.int(-range, range);
      } else {
        // clip some of the values at each end, not all
        a = st.sorted[Math.floor(rng.float() * 0.4 * st.sorted.length)];
        b = st.sorted[Math.min(st.sorted.length - 1, Math.floor((0.6 + 0.4 * rng.float()) * st.sorted.length))];
      }
      if (a > b) [a, b] = [b, a];
      return { type: 'clamp', min: a, max: b };
    }
    case 'tanh': {
      // |zero| + 8 * amplitude <= INT32_MAX caps the amplitude at floor(INT32_MAX / 8) = 2^28 - 1,
      // below the 2^29 that the shift 28 - inverse_amplitude_neg_exponent would allow.
      if (wild) {
        const amplitude = rng.bool(0.1) ? rng.pick([1, 2, TANH_MAX_AMPLITUDE]) : rng.logInt(TANH_MAX_AMPLITUDE);
        const zMax = INT32_MAX - 8 * amplitude;
        const bound = rng.bool(0.7) ? Math.min(zMax, 8 * amplitude) : zMax;
        return { type: 'tanh', realZeroAsInt32: rng.int(-bound, bound), realAmplitudeAsInt32: amplitude };
      }
      const zero = Math.max(-(2 ** 30), Math.min(2 ** 30, Math.round(st.center)));
      const cap = Math.min(TANH_MAX_AMPLITUDE, Math.floor((INT32_MAX - Math.abs(zero)) / 8));
      const amplitude = Math.max(1, Math.min(cap, Math.round(st.spread / rng.pick([1, 2, 4, 8]))));
      return { type: 'tanh', realZeroAsInt32: zero, realAmplitudeAsInt32: amplitude };
    }
  }
}

const CASTS: readonly StageJson[] = [
  { type: 'saturatingCast', to: 'uint8' },
  { type: 'saturatingCast', to: 'int8' },
  { type: 'saturatingCast', to: 'int16' },
  { type: 'truncatingCast', to: 'uint8' },
];
const CAST_RANGES: readonly Range[] = [
  [0, 255],
  [-128, 127],
  [-32768, 32767],
  [0, 255],
];

export interface RandomSpec {
  seed: number;
  specPath: string;
  spec: GemmSpecJson;
}

export interface RandomSpecOptions {
  /**
   * Add a random "bitDepth" (bits 1..8 per side, every rounding), and draw K around the
   * 384 threshold of rounding 'default' a third of the time. Off by default; with it off the
   * generator's draws, and so its specs, do not change.
   */
  bitDepth?: boolean;
}

const LOW_BIT_ROUNDINGS = ['nearest', 'probabilistic-addmod', 'probabilistic-xorshift', 'default'] as const;

/**
 * Writes `spec.json` plus lhs.npy, rhs.npy and any zero-point vectors into `dir` (created if
 * needed), with the output named out.npy. Deterministic in `seed` (and the options).
 */
export function writeRandomSpec(dir: string, seed: number, options: RandomSpecOptions = {}): RandomSpec {
  mkdirSync(dir, { recursive: true });
  const rng = new Rng(seed);
  let M = dim(rng);
  let N = dim(rng);
  let K = dim(rng);
  if (options.bitDepth && rng.bool(1 / 3)) {
    K = rng.int(376, 392); // both sides of 384
    M = Math.min(M, 33);
    N = Math.min(N, 33);
  }
  const lhs = operand(rng, M, K);
  const rhs = operand(rng, K, N);
  writeFileSync(join(dir, 'lhs.npy'), serializeNpy(lhs.arr));
  writeFileSync(join(dir, 'rhs.npy'), serializeNpy(rhs.arr));
  const spec: GemmSpecJson = { op: 'gemm', lhs: 'lhs.npy', rhs: 'rhs.npy', out: 'out.npy' };
  const zl = zeroPoint(rng, dir, 'lhs_zero_point.npy', M);
  const zr = zeroPoint(rng, dir, 'rhs_zero_point.npy', N);
  if (zl !== undefined) spec.lhsZeroPoint = typeof zl === 'number' ? zl : zl.file;
  if (zr !== undefined) spec.rhsZeroPoint = typeof zr === 'number' ? zr : zr.file;
  if (options.bitDepth) spec.bitDepth = { lhs: rng.int(1, 8), rhs: rng.int(1, 8), rounding: rng.pick(LOW_BIT_ROUNDINGS) };

  const length = rng.int(0, 5);
  const pipeline: StageJson[] = [];
  const withCast = length > 0 && rng.bool(0.5);
  const castIndex = rng.int(0, CASTS.length - 1);
  if (length - (withCast ? 1 : 0) > 0) {
    // Fit each stage to the values that actually reach it: run the oracle on the accumulators.
    const arrays: GemmArrays = { lhs: lhs.arr, rhs: rhs.arr };
    if (zl !== undefined && typeof zl !== 'number') arrays.lhsZeroPoint = zl.arr;
    if (zr !== undefined && typeof zr !== 'number') arrays.rhsZeroPoint = zr.arr;
    let values = oracleAccumulators(spec, arrays).acc;
    for (let i = 0; i < length - (withCast ? 1 : 0); i++) {
      const target = withCast && rng.bool(0.6) ? CAST_RANGES[castIndex] : rng.pick(TARGETS);
      const s = stage(rng, M, N, valueStats(values), target);
      pipeline.push(s);
      values = Array.from(oraclePipeline(values, [s], M, N).data, (v) => BigInt(v));
    }
  }
  if (withCast) pipeline.push(CASTS[castIndex]);
  if (pipeline.length > 0 || rng.bool(0.5)) spec.pipeline = pipeline; // sometimes "pipeline": [], sometimes absent

  const specPath = join(dir, 'spec.json');
  writeFileSync(specPath, JSON.stringify(spec, null, 1));
  return { seed, specPath, spec };
}
