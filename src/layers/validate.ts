// The checks every TFLite layer entry point shares, before pack -> gemm -> output starts on any backend
// (fullyConnected, conv2d, the graphs of ./graph.ts, and through them the CLI): scales as the float32 a
// .tflite file stores (positive, finite, normal), zero points within their dtype, weights of the
// activations' dtype, shapes of integers >= 1, and the effective scale of the derived output stage within
// what that stage holds. Each failure is an InputError naming the field as the caller wrote it.

import { InputError } from '../errors.ts';
import { brief } from '../problem/echo.ts';
import { everyItem } from '../problem/check.ts';
import { TYPE_RANGE, type OutputStage } from '../types.ts';

/** scale as TFLite stores it (float32), zeroPoint an integer: what every check below takes. */
export interface QuantParams {
  scale: number;
  zeroPoint: number;
}

/** The smallest normal float32, 2^-126. */
const MIN_NORMAL_FLOAT32 = 2 ** -126;

/** A scale as float32: positive, finite and normal (a subnormal or 0 loses the value; Infinity has none). */
export function checkScale32(field: string, v: unknown): number {
  const f = typeof v === 'number' ? Math.fround(v) : Number.NaN;
  if (!(f >= MIN_NORMAL_FLOAT32 && f < Number.POSITIVE_INFINITY)) {
    const as32 = typeof v === 'number' && f !== v && !Number.isNaN(v) ? ` (${f} as float32)` : '';
    throw new InputError(field, `expected a positive, finite, normal float32 (2^-126 .. 3.4e38), got ${brief(v)}${as32}`);
  }
  return f;
}

export function checkZeroPoint(field: string, z: unknown, dtype: 'uint8' | 'int8'): number {
  const [lo, hi] = TYPE_RANGE[dtype];
  if (typeof z !== 'number' || !Number.isInteger(z) || z < lo || z > hi)
    throw new InputError(field, `expected an integer in ${lo}..${hi} (${dtype}), got ${brief(z)}`);
  return z;
}

/** A tensor's quantization: {scale, zeroPoint} for values of `dtype`. */
export function checkQuant(field: string, q: QuantParams, dtype: 'uint8' | 'int8'): void {
  if (!q || typeof q !== 'object') throw new InputError(field, `expected {scale, zeroPoint}, got ${brief(q)}`);
  checkScale32(`${field}.scale`, q.scale);
  checkZeroPoint(`${field}.zeroPoint`, q.zeroPoint, dtype);
}

/** Weight scales: one, or one per output channel, each a normal positive float32. */
export function weightScales(field: string, scale: number | Float32Array, channels: number): Float32Array {
  if (typeof scale === 'number') return Float32Array.of(checkScale32(`${field}.scale`, scale));
  if (!(scale instanceof Float32Array) || (scale.length !== 1 && scale.length !== channels)) {
    throw new InputError(`${field}.scale`, `expected a number or a Float32Array of ${channels} (one per output channel)`);
  }
  for (const [i, v] of scale.entries()) checkScale32(`${field}.scale[${i}]`, v);
  return scale;
}

/** A short list as written ([1, -1, 2.5]), anything else as brief() echoes it. */
export function shown(v: unknown): string {
  return Array.isArray(v) && v.length <= 8 && v.every((x) => typeof x === 'number') ? `[${v.join(', ')}]` : brief(v);
}

/** A shape of `rank` positive integers. */
export function checkDims(field: string, shape: unknown, rank: number, what: string): number[] {
  if (
    !Array.isArray(shape) ||
    shape.length !== rank ||
    !everyItem(shape, (d) => Number.isInteger(d) && (d as number) >= 1 && (d as number) <= 2 ** 53)
  )
    throw new InputError(field, `expected ${what} of integers >= 1, got ${shown(shape)}`);
  return shape;
}

/**
 * The derived requantization stage holds the effective scale input.scale × weights.scale / output.scale:
 * below 2^31 for the fixed-point stages (a shift of at most 31; XNNPACK's takes below 256 only, else the
 * layer runs on the builtin kernels: ./derive.ts xnnpackTakesGemm). Out of range, the field is the output
 * scale (per-tensor weights) or the weight scale of that channel.
 */
export function checkEffectiveScales(pipeline: OutputStage[], weightsField: string, perChannel: boolean): void {
  const name = (i: number) => (perChannel ? `${weightsField}.scale[${i}]` : 'params.output.scale');
  const what = 'the effective scale input.scale × weights.scale / output.scale';
  for (const s of pipeline) {
    if (s.type === 'scaleInt32ByFixedPointAndExponent') {
      const e = typeof s.exponent === 'number' ? [s.exponent] : Array.from(s.exponent);
      const bad = e.findIndex((x) => x > 31);
      if (bad >= 0)
        throw new InputError(name(bad), `${what} is at least 2^31, above what a fixed-point multiplier holds (a shift of at most 31)`);
    }
  }
}
