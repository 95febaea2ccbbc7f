// Less-than-8-bit operands (gemmlowp's removed bit-depth path, internal/pack.h and internal/unpack.h
// before commit 4746387): requantization while packing (PACK -> gemm -> output) and the rescaling of
// the accumulator terms when unpacking (pack -> gemm -> OUTPUT). Every offset is defined by the
// element's row-major linear index i in its logical matrix (lhs: i = m*K + k; rhs: i = k*N + n), so the
// GPU's packing threads and the CPU compute the same values in any order.
//
//   requantize(src, bits, i) = floor((src * maxval + offset(i)) / 255),  maxval = 2^bits - 1,
//   src in the uint8 domain (int8 operands: v + 128, and their zero point + 128).
//   offset: 'nearest' 127; 'probabilistic-addmod' (1 + 97*(i+1)) mod 255 (closed form of gemmlowp's
//   add-mod-97 generator: 98, 195, 37, ...); 'probabilistic-xorshift' output number (i mod 255) of
//   gemmlowp's 8-bit xorshift (shifts 7,5,3; state 128; returns state-1 before each advance:
//   127, 163, 168, ...); 'default': 'nearest' when K < 384, else 'probabilistic-addmod'.
//
//   acc = RMBCF<255^2, Lmax*Rmax>(sum_k l'r') + RMBCF<255, Lmax>(rowSum' * -zR)
//       + RMBCF<255, Rmax>(colSum' * -zL) + K*zL*zR                              (int32 with wrap)
// RMBCF<num, den> is gemmlowp's RoundingMultiplyByConstantFraction (below). With 8 bits every RMBCF
// is the identity and this is the four-term expansion of src/types.ts.

import type { BitDepthRounding } from '../types.ts';
import { add64, int64From32, mulWide } from './fixedpoint.ts';

/** gemmlowp's 8-bit xorshift offsets, one period (255 values). */
export const XORSHIFT_OFFSETS: readonly number[] = (() => {
  const out: number[] = [];
  let state = 128;
  for (let i = 0; i < 255; i++) {
    out.push(state - 1);
    state ^= (state << 7) & 0xff;
    state ^= state >> 5;
    state ^= (state << 3) & 0xff;
  }
  return out;
})();

export type ConcreteRounding = Exclude<BitDepthRounding, 'default'>;

export function resolveRounding(rounding: BitDepthRounding, K: number): ConcreteRounding {
  return rounding === 'default' ? (K < 384 ? 'nearest' : 'probabilistic-addmod') : rounding;
}

/** The rounding offset of the element with row-major linear index i. */
export function roundingOffset(rounding: ConcreteRounding, i: number): number {
  if (rounding === 'nearest') return 127;
  if (rounding === 'probabilistic-addmod') return (1 + 97 * ((i + 1) % 255)) % 255;
  return XORSHIFT_OFFSETS[i % 255];
}

/** floor((src * maxval + offset) / 255) for src in 0..255: a value in 0..maxval. */
export function requantize(src: number, bits: number, offset: number): number {
  return Math.floor((src * (2 ** bits - 1) + offset) / 255);
}

/** The per-fraction constants of RMBCF<num, den>, computed once (gemmlowp made them static). */
interface ConstantFraction {
  identity: boolean;
  intQuotient: number;
  scaledRemainingNumerator: number;
}

export function constantFraction(numerator: number, denominator: number): ConstantFraction {
  const intQuotient = Math.trunc((numerator + Math.trunc(denominator / 2)) / denominator);
  const remaining = numerator - intQuotient * denominator; // |remaining| < denominator <= 65025
  // (remaining * 2^31) / denominator truncated; exact: the quotient is never within 2^-22 of an integer.
  const scaledRemainingNumerator = Math.trunc((remaining * 2 ** 31) / denominator) | 0;
  return { identity: numerator === denominator, intQuotient, scaledRemainingNumerator };
}

/**
 * gemmlowp RoundingMultiplyByConstantFraction: x * num / den as
 *   x * intQuotient + (x * scaledRemainingNumerator + (p > 0 ? 2^30 : -2^30)) / 2^31
 * with truncating division and int32 wrap; x itself when num == den.
 */
export function roundingMultiplyByConstantFraction(x: number, f: ConstantFraction): number {
  if (f.identity) return x;
  let p = mulWide(x, f.scaledRemainingNumerator);
  const positive = p[1] > 0 || (p[1] === 0 && p[0] > 0);
  p = add64(p, int64From32(positive ? 1 << 30 : -(1 << 30)));
  if (p[1] < 0) p = add64(p, [0x7fffffff, 0]); // truncate toward zero
  const remainingProduct = (p[1] << 1) | (p[0] >>> 31);
  return (Math.imul(x, f.intQuotient) + remainingProduct) | 0;
}

/** The three fractions of the unpacking formula for operands of lhsBits and rhsBits. */
export function unpackFractions(lhsBits: number, rhsBits: number): { xx: ConstantFraction; x1: ConstantFraction; onex: ConstantFraction } {
  const lMax = 2 ** lhsBits - 1;
  const rMax = 2 ** rhsBits - 1;
  return { xx: constantFraction(255 * 255, lMax * rMax), x1: constantFraction(255, lMax), onex: constantFraction(255, rMax) };
}
