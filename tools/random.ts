// The seeded random generator of the tests, benchmark data, accuracy studies and demo (the library's
// self-tests and verify suite draw their operands from an LCG of their own, src/verify-problems.ts):
// splitmix32, a small, well-mixed 32-bit PRNG whose whole state is one uint32. Same seed, same draws,
// on every machine. Not part of the library.

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

/** splitmix32. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** Next uint32. */
  next(): number {
    this.state = (this.state + 0x9e3779b9) >>> 0;
    let z = this.state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  }
  /** Uniform in [0, 1). */
  float(): number {
    return this.next() / 2 ** 32;
  }
  /** Uniform integer in lo..hi inclusive: lo + floor(next() * (hi - lo + 1) / 2^32), exactly. */
  int(lo: number, hi: number): number {
    if (!(hi >= lo)) throw new RangeError(`empty range ${lo}..${hi}`);
    const n = hi - lo + 1;
    // next() * n < 2^53 is exact in a double, and so is the division by 2^32.
    if (n <= 2 ** 21) return lo + Math.floor((this.next() * n) / 2 ** 32);
    return lo + Number((BigInt(this.next()) * BigInt(n)) >> 32n);
  }
  bool(p = 0.5): boolean {
    return this.float() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(0, xs.length - 1)];
  }
  /** n distinct elements of xs (all of them where n >= xs.length), drawn without replacement. */
  sample<T>(xs: readonly T[], n: number): T[] {
    const left = [...xs];
    const out: T[] = [];
    while (out.length < n && left.length) out.push(left.splice(this.int(0, left.length - 1), 1)[0]);
    return out;
  }
  /** Any int32, with a quarter of the draws on edge values. */
  anyInt32(): number {
    if (this.bool(0.25)) return this.pick(EDGE_INT32);
    return this.next() | 0;
  }
  /** Log-uniform positive integer in 1..max. */
  logInt(max: number): number {
    return Math.min(max, Math.max(1, Math.floor(2 ** (this.float() * Math.log2(max + 1)))));
  }
}

/** Edge values of int32 that anyInt32() favours. */
export const EDGE_INT32 = [
  INT32_MIN,
  INT32_MIN + 1,
  INT32_MIN + 255,
  -(2 ** 30),
  -65536,
  -256,
  -129,
  -128,
  -1,
  0,
  1,
  127,
  128,
  255,
  256,
  65535,
  2 ** 30,
  INT32_MAX - 255,
  INT32_MAX - 1,
  INT32_MAX,
];

/** A generator of floats in [0, 1) from the same sequence (for the studies' arithmetic). */
export function splitmix32(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.float();
}
