// TFLite's layer parameters as a .tflite file stores them, turned into what the layers compute with
// (pack -> gemm -> output): a weight tensor's zero points, an int64 array in the file (one entry, or one
// per output channel for per-channel quantization, all 0 for int8 weights), become the GEMM's one rhs
// zero point; FULLY_CONNECTED's keep_num_dims gives the output TFLite's shape. Used by ./layers.ts
// (fullyConnected, conv2d) and ./sequential.ts (a graph's shapes, checked before anything runs).

import { InputError } from '../errors.ts';
import { brief } from '../problem/echo.ts';

/** A weight zero point: one integer, or TFLite's array of them (numbers, or the file's int64 as bigints). */
export type WeightZeroPoint = number | ArrayLike<number> | ArrayLike<bigint>;

/**
 * The one weight zero point of a layer with `channels` output channels: a number as it is; an array of
 * 1 or `channels` integers whose entries are all equal, as that value. TFLite's FULLY_CONNECTED and
 * CONV_2D kernels read one weight zero point (0 for int8 per-channel weights, one per tensor for uint8
 * weights), so no kernel path defines different zero points per channel, and those are refused.
 */
export function weightZeroPoint(field: string, zp: WeightZeroPoint | undefined, channels: number): number {
  if (zp === undefined || typeof zp === 'number') return zp ?? 0;
  const length = (zp as { length?: unknown } | null)?.length;
  if (typeof zp !== 'object' || zp === null || typeof length !== 'number' || (length !== 1 && length !== channels)) {
    throw new InputError(field, `expected an integer, or an array of 1 or ${channels} (one per output channel), got ${brief(zp)}`);
  }
  const values = Array.from(zp as ArrayLike<number | bigint>, (v, i) => {
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (!Number.isSafeInteger(n)) throw new InputError(`${field}[${i}]`, `expected an integer, got ${brief(v)}`);
    return n;
  });
  const other = values.findIndex((v) => v !== values[0]);
  if (other >= 0) {
    throw new InputError(
      `${field}[${other}]`,
      `expected the same zero point for every channel (${values[0]} at [0], ${values[other]} here): TFLite's kernels take one weight zero point (0 for int8 per-channel weights), so no kernel path defines one per channel`,
    );
  }
  return values[0];
}

/**
 * FULLY_CONNECTED's output shape for an input of `inputShape` flattened to [M, K]: [M, N], or with
 * keepNumDims (TFLite's keep_num_dims) the input's shape with its last dimension, which must be K, set to N.
 */
export function fcOutShape(inputShape: readonly number[], M: number, K: number, N: number, keepNumDims: unknown): number[] {
  if (keepNumDims === undefined || keepNumDims === false) return [M, N];
  if (keepNumDims !== true) throw new InputError('params.keepNumDims', `expected true or false, got ${brief(keepNumDims)}`);
  if (inputShape.at(-1) !== K) {
    throw new InputError('input.shape', `expected a last dimension of K = ${K} (keepNumDims keeps the others), got [${inputShape}]`);
  }
  return [...inputShape.slice(0, -1), N];
}
