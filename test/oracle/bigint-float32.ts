// An independent oracle for the TFLite-path requantizations, in BigInt and exact rationals: XNNPACK's
// fp32 requantization (every float32 rounding done on integer significands by IEEE's rules, subnormals
// and overflow included) and ruy's fixed-point multiplier with its ties-up right shift. It shares no code
// with src/quant: the CPU reference (Math.fround), the WGSL library (integers) and the WebAssembly and
// JavaScript kernels are checked against it.

import { INT32_MAX_B, INT32_MIN_B, sat32, wrap32 } from './bigint-fixedpoint.ts';

const bitLength = (v: bigint) => (v === 0n ? 0 : v.toString(2).length);

/** Floor division by 2^s (s >= 0) of a bigint. */
const floorPow2 = (v: bigint, s: number) => v >> BigInt(s);

/** v / 2^s, v >= 0, rounded to nearest, ties to even. */
function rneShift(v: bigint, s: number): bigint {
  if (s <= 0) return v << BigInt(-s);
  const q = floorPow2(v, s);
  const rem = v - (q << BigInt(s));
  const half = 1n << BigInt(s - 1);
  return rem > half || (rem === half && (q & 1n) === 1n) ? q + 1n : q;
}

/** A non-negative float32 value as significand * 2^exponent, or Infinity. */
type F32 = { sig: bigint; exp: number } | 'inf';

/** The float32 nearest to sig * 2^exp (sig >= 0), ties to even: IEEE binary32, with subnormals and overflow. */
export function roundToFloat32(sig: bigint, exp: number): F32 {
  if (sig === 0n) return { sig: 0n, exp: 0 };
  const top = exp + bitLength(sig) - 1; // exponent of the leading bit
  const ulp = Math.max(top - 23, -149);
  let s = sig;
  let e = exp;
  if (ulp > exp) {
    s = rneShift(sig, ulp - exp);
    e = ulp;
  }
  if (bitLength(s) + e - 1 >= 128) return 'inf';
  return { sig: s, exp: e };
}

/** The float32 bits as sign, significand, exponent. */
export function decodeFloat32(bits: number): { negative: boolean; sig: bigint; exp: number } {
  const u = bits >>> 0;
  const expBits = (u >>> 23) & 0xff;
  const frac = BigInt(u & 0x7fffff);
  if (expBits === 255) throw new Error('not finite');
  return expBits === 0
    ? { negative: u >>> 31 === 1, sig: frac, exp: -149 }
    : { negative: u >>> 31 === 1, sig: frac | 0x800000n, exp: expBits - 150 };
}

/** saturate(rint(f32(f32(x) * scale)) + zeroPoint), scale by its float32 bits. */
export function requantizeFloat32Big(x: number, scaleBits: number, zeroPoint: number): number {
  const s = decodeFloat32(scaleBits);
  const ax = BigInt(Math.abs(x));
  const fx = roundToFloat32(ax, 0) as { sig: bigint; exp: number }; // |x| <= 2^31: never inf
  const prod = roundToFloat32(fx.sig * s.sig, fx.exp + s.exp);
  let mag: bigint;
  if (prod === 'inf') mag = 1n << 40n;
  else mag = rneShift(prod.sig, -prod.exp);
  const negative = x < 0 !== s.negative;
  return Number(sat32((negative ? -mag : mag) + BigInt(zeroPoint)));
}

/** ruy's MultiplyByQuantizedMultiplier as its x86 kernel computes it (kernel_avx2_fma.cc). */
export function mbqmDoubleUpBig(x: number, multiplier: number, shift: number): number {
  const left = Math.max(shift, 0);
  const right = Math.max(-shift, 0);
  const shifted = wrap32(BigInt(x) << BigInt(left));
  const m = BigInt(multiplier);
  // SRDHM: (a*b + 2^30) >> 31, saturating its one overflow (INT32_MIN * INT32_MIN).
  const y = shifted === INT32_MIN_B && m === INT32_MIN_B ? INT32_MAX_B : (shifted * m + (1n << 30n)) >> 31n;
  if (right === 0) return Number(y);
  return Number((y + (1n << BigInt(right - 1))) >> BigInt(right));
}
