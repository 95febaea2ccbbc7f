// Inputs for the TFLite-path requantizations (test/unit/float32.test.ts, test/gpu/float32.test.ts):
// accumulators at every float32 rounding edge (|x| around 2^24..2^31, ties at 2^24 + odd, INT32_MIN/MAX),
// scales by their float32 bits (subnormal, smallest normal, powers of two that make rint ties, the
// largest finite, negative, random in TFLite's range), zero points, and seeded random crossings.

import { Rng } from '../../tools/random.ts';
import { INT32_MAX, INT32_MIN } from '../../src/types.ts';
import { float32Bits } from '../../src/quant/float32.ts';

export const ACC_EDGES: number[] = (() => {
  const s = new Set<number>([0, 1, -1, 2, -2, 3, -3, 5, -5, INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1]);
  for (let k = 1; k <= 31; k++) {
    for (const d of [-3, -2, -1, 0, 1, 2, 3]) for (const x of [2 ** k + d, -(2 ** k + d)]) if (x >= INT32_MIN && x <= INT32_MAX) s.add(x);
  }
  for (let k = 24; k <= 31; k++) {
    const half = 2 ** (k - 24); // a tie of i32 -> f32 rounding sits at an odd multiple of half the ulp
    for (const m of [1, 3, 5, 2 ** 23 - 1, 2 ** 23 + 1])
      for (const x of [2 ** k + m * half, -(2 ** k + m * half)]) if (x >= INT32_MIN && x <= INT32_MAX) s.add(x);
  }
  return [...s];
})();

export const SCALE_BITS: number[] = (() => {
  const s = new Set<number>([0, 1, 2, 0x7fffff, 0x800000, 0x800001, 0x7f7fffff, 0x3f800000, 0x3f000000, 0x3e800000]);
  for (let e = -40; e <= 40; e++) s.add(float32Bits(2 ** e));
  for (const v of [0.1, 0.0235, 1 / 3, 0.999999, 1.5, 3.75e-5, 2 ** -24 * 3, 1e-10, 255, 300.5]) s.add(float32Bits(v));
  for (const b of [...s]) s.add(b | (1 << 31)); // negative scales
  const r = new Rng(19);
  for (let i = 0; i < 60; i++) s.add(((((100 + (r.next() % 30)) << 23) | (r.next() & 0x7fffff)) >>> 0) | 0); // 2^-27..2^2
  return [...s];
})();

export const ZERO_POINTS = [0, 1, -1, 128, -128, 127, -3, INT32_MAX, INT32_MIN];

/** Every edge accumulator crossed with every scale (zero point cycling), then seeded random triples. */
export function float32Cases(randomCount: number, seed: number): { x: number[]; scaleBits: number[]; zeroPoint: number[] } {
  const x: number[] = [];
  const scaleBits: number[] = [];
  const zeroPoint: number[] = [];
  let i = 0;
  for (const a of ACC_EDGES)
    for (const b of SCALE_BITS) {
      x.push(a);
      scaleBits.push(b);
      zeroPoint.push(ZERO_POINTS[i++ % ZERO_POINTS.length]);
    }
  const r = new Rng(seed);
  for (let k = 0; k < randomCount; k++) {
    x.push(r.next() % 3 === 0 ? r.next() | 0 : ((r.next() % 2 ** 20) - 2 ** 19) | 0);
    scaleBits.push(SCALE_BITS[r.next() % SCALE_BITS.length]);
    zeroPoint.push(((r.next() % 256) - 128) | 0);
  }
  return { x, scaleBits, zeroPoint };
}

/** Multipliers QuantizeMultiplier can make (2^30..2^31-1) and a few others, for the ruy rounding. */
export function multiplierCases(randomCount: number, seed: number): { x: number[]; m: number[]; shift: number[] } {
  const x: number[] = [];
  const m: number[] = [];
  const shift: number[] = [];
  const ms = [2 ** 30, 2 ** 30 + 1, INT32_MAX, 1518500250, 0, 1, -1, INT32_MIN, 12345];
  for (const a of ACC_EDGES)
    for (const mm of ms)
      for (let s = -31; s <= 31; s += 3) {
        x.push(a);
        m.push(mm);
        shift.push(s);
      }
  const r = new Rng(seed);
  for (let k = 0; k < randomCount; k++) {
    x.push(r.next() % 2 ? r.next() | 0 : (r.next() % 65536) - 32768);
    m.push((2 ** 30 + (r.next() % 2 ** 30)) | 0);
    shift.push((r.next() % 63) - 31);
  }
  return { x, m, shift };
}
