// Float32 requantization of the output stage (pack -> gemm -> OUTPUT): XNNPACK's fp32 requantization of
// qs8/qu8 GEMMs and convolutions, which TFLite's default delegate runs, in its exact order of operations:
//   rint(f32(f32(acc) * scale)) + zeroPoint
// f32() rounds to float32 with ties to even, rint to an integer with ties to even. Here JavaScript's
// Math.fround does each float32 rounding: f32(acc) * scale is exact in a double (24 x 24 significant
// bits), so Math.fround of it is the float32 product rounded once. The WGSL library src/wgsl/float32.wgsl
// computes the same in integers only (no trust in a GPU's float conversion or rounding);
// test/unit/float32.test.ts checks both against an exact BigInt/rational oracle.

import { INT32_MAX, INT32_MIN } from '../types.ts';

/** The nearest integer to v, ties to even (IEEE roundTiesToEven, C's rint/nearbyint). */
export function roundTiesToEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f; // exact for float32 values (and every double below 2^52)
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** The bits of a float32 value, as an int32. */
export function float32Bits(v: number): number {
  const f = new Float32Array(1);
  f[0] = v;
  return new Int32Array(f.buffer)[0];
}

/** The requantizeFloat32 stage on one int32 accumulator: saturateToInt32(rint(f32(f32(x) * scale)) + zeroPoint). */
export function requantizeFloat32(x: number, scale: number, zeroPoint: number): number {
  const r = roundTiesToEven(Math.fround(Math.fround(x) * scale)) + zeroPoint; // exact below 2^53; beyond, saturated either way
  return Math.min(Math.max(r, INT32_MIN), INT32_MAX);
}
