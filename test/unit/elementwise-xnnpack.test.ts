// Kernel path 'xnnpack' of the elementwise add, sub and mul (src/problem/elementwise.ts, evaluated by
// src/reference/elementwise.ts) against an exact oracle written here in BigInt rationals: every float32
// rounding of XNNPACK's parameter derivation and of its fp32 mul done on exact fractions (ties to even),
// the add's shift and floor on integers. All 65536 input pairs per parameter set, uint8 and int8, at
// both ends of the scale range TFLite's delegate takes; the builtin fallback outside that range; the
// typed errors; and the graph layers' default (src/layers/sequential.ts). The WebGPU kernel is checked
// against the same reference in test/gpu/elementwise.test.ts, and both against LiteRT in
// test/golden/tflite.test.ts.

import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { activationRange } from '../../src/layers/derive.ts';
import { runLayers, type SequentialLayer } from '../../src/layers/sequential.ts';
import { elementwiseReference, runElementwisePlan } from '../../src/reference/elementwise.ts';
import type { ElementwiseProblem } from '../../src/problem/elementwise.ts';
import { prepareElementwise, xnnpackTakesElementwise } from '../../src/problem/elementwise-plan.ts';

/** An exact fraction n / d, d > 0. */
interface Q {
  n: bigint;
  d: bigint;
}

const abs = (x: bigint) => (x < 0n ? -x : x);

/** The float32 value of a JS number (rounded to float32) as an exact fraction. */
function f32q(x: number): Q {
  const bits = new Uint32Array(Float32Array.of(x).buffer)[0];
  const e = (bits >>> 23) & 0xff;
  const m = BigInt(e === 0 ? (bits & 0x7fffff) * 2 : (bits & 0x7fffff) | 0x800000);
  const sign = bits >>> 31 ? -1n : 1n;
  const p = e - 150; // value = m * 2^p (subnormals: m doubled, e - 150 = -150)
  return p >= 0 ? { n: sign * m * (1n << BigInt(p)), d: 1n } : { n: sign * m, d: 1n << BigInt(-p) };
}

const mul = (a: Q, b: Q): Q => ({ n: a.n * b.n, d: a.d * b.d });
const div = (a: Q, b: Q): Q => (b.n < 0n ? { n: -a.n * b.d, d: a.d * -b.n } : { n: a.n * b.d, d: a.d * b.n });
const cmp = (a: Q, b: Q) => {
  const l = a.n * b.d;
  const r = b.n * a.d;
  return l < r ? -1 : l > r ? 1 : 0;
};

/** floor(n / d) for d > 0. */
function floorDiv(n: bigint, d: bigint): bigint {
  const q = n / d;
  return q * d > n ? q - 1n : q;
}

/** The nearest integer to a fraction, ties to even. */
function rintQ(x: Q): bigint {
  const f = floorDiv(x.n, x.d);
  const twice = 2n * (x.n - f * x.d); // 2 * fractional part, times d
  if (twice > x.d) return f + 1n;
  if (twice < x.d) return f;
  return f % 2n === 0n ? f : f + 1n;
}

/** floor(log2 |x|), x != 0. */
function log2Floor(x: Q): number {
  let k = abs(x.n).toString(2).length - x.d.toString(2).length;
  const two = (e: number): Q => (e >= 0 ? { n: 1n << BigInt(e), d: 1n } : { n: 1n, d: 1n << BigInt(-e) });
  const ax = { n: abs(x.n), d: x.d };
  while (cmp(ax, two(k)) < 0) k--;
  while (cmp(ax, two(k + 1)) >= 0) k++;
  return k;
}

/** x rounded to float32 (24 significant bits, ties to even; normal range only, as every value here is). */
function roundF32(x: Q): Q {
  if (x.n === 0n) return x;
  const e = log2Floor(x) - 23; // |x| / 2^e in [2^23, 2^24)
  const scaled = e >= 0 ? { n: x.n, d: x.d << BigInt(e) } : { n: x.n << BigInt(-e), d: x.d };
  const m = rintQ(scaled); // may reach 2^24: still exact
  return e >= 0 ? { n: m << BigInt(e), d: 1n } : { n: m, d: 1n << BigInt(-e) };
}

/** The oracle: one output element on XNNPACK's path, clamped to [lo, hi]. */
function oracle(
  op: 'add' | 'sub' | 'mul',
  sa: number,
  sb: number,
  so: number,
  z: [number, number, number],
  lo: number,
  hi: number,
): (qa: number, qb: number) => number {
  const [A, B, O] = [f32q(sa), f32q(sb), f32q(so)];
  const clamp = (v: bigint) => Math.min(hi, Math.max(lo, Number(v)));
  if (op === 'mul') {
    const scale = roundF32(div(roundF32(mul(A, B)), O));
    return (qa, qb) => clamp(rintQ(roundF32(mul({ n: BigInt((qa - z[0]) * (qb - z[1])), d: 1n }, scale))) + BigInt(z[2]));
  }
  const ra = roundF32(div(A, O));
  const rb = roundF32(div(B, O));
  const shift = 20 - log2Floor(cmp(ra, rb) >= 0 ? ra : rb);
  const pow = 1n << BigInt(shift);
  const ma = rintQ(mul(ra, { n: pow, d: 1n }));
  const mb = rintQ(mul(rb, { n: pow, d: 1n })) * (op === 'sub' ? -1n : 1n);
  return (qa, qb) => clamp(floorDiv((pow >> 1n) + ma * BigInt(qa - z[0]) + mb * BigInt(qb - z[1]), pow) + BigInt(z[2]));
}

/** a = every value as a column (256, 1), b = every value as a row (1, 256). */
function allPairs(dtype: 'uint8' | 'int8') {
  const values = Array.from({ length: 256 }, (_, i) => (dtype === 'uint8' ? i : i - 128));
  const data = () => (dtype === 'uint8' ? Uint8Array.from(values) : Int8Array.from(values));
  return { values, a: data(), b: data() };
}

const SETS: [string, 'add' | 'sub' | 'mul', number, number, number][] = [
  ['add, dyadic scales (ties)', 'add', 0.5, 0.25, 1],
  ['add, float32 scales', 'add', 0.1, 0.3, 0.25],
  ['add, ratios 255.9 and 2^-10', 'add', 255.9, 2 ** -10, 1],
  ['add, ratios below 2^-9 (shift 30)', 'add', 2 ** -9 * 0.999, 2 ** -10, 1],
  ['add, multiplier rounded up to 2^21', 'add', 2 - 2 ** -22, 1, 1],
  // ra * 2^20 = 1270538.5 exactly: the a multiplier on a tie (to even; 67 where half up gives 66 at 43 + 156).
  ['add, a multiplier on an exact tie', 'add', 1.8775079250335693, 2.483102321624756, 1.5495080947875977],
  ['sub, typical', 'sub', 0.02, 0.03, 0.05],
  ['sub, b dominant, ties', 'sub', 0.125, 0.75, 0.5],
  ['mul, scale 3/8 (ties)', 'mul', 0.75, 0.5, 1],
  ['mul, scale 2^-16', 'mul', 2 ** -8, 2 ** -8, 1],
  ['mul, float32 scales', 'mul', 0.0235, 0.0117, 0.00391],
  ['mul, scale just below 2^8', 'mul', 0.9, 0.7, (0.7 * 0.9) / 255.99],
];

describe("elementwise kernelPath 'xnnpack' == the exact BigInt oracle", () => {
  for (const dtype of ['uint8', 'int8'] as const)
    for (const [name, op, sa, sb, so] of SETS)
      it(`all 65536 ${dtype} pairs: ${name}`, () => {
        const mid = dtype === 'uint8' ? 128 : 0;
        const z: [number, number, number] = [mid - 3, mid + 5, mid + 1];
        const { values, a, b } = allPairs(dtype);
        const [lo, hi] = dtype === 'uint8' ? [0, 255] : [-128, 127];
        const problem: ElementwiseProblem = {
          op,
          a: { data: a, shape: [256, 1], scale: sa, zeroPoint: z[0] },
          b: { data: b, shape: [1, 256], scale: sb, zeroPoint: z[1] },
          output: { scale: so, zeroPoint: z[2], min: lo + 7, max: hi - 9 },
          kernelPath: 'xnnpack',
        };
        const plan = prepareElementwise(problem);
        expect(plan.kernelPath).toBe('xnnpack');
        const got = runElementwisePlan(plan).data;
        const want = oracle(op, sa, sb, so, z, lo + 7, hi - 9);
        let bad = 0;
        let first = '';
        for (let i = 0; i < 256; i++)
          for (let j = 0; j < 256; j++) {
            const w = want(values[i], values[j]);
            if (got[i * 256 + j] !== w) {
              bad++;
              if (!first) first = `(${values[i]}, ${values[j]}): got ${got[i * 256 + j]}, want ${w}`;
            }
          }
        expect(bad, first).toBe(0);
      });

  it('differs from the builtin arithmetic on exact ties (add rounds ties up, mul to even; builtin away from zero)', () => {
    for (const [op, sa, sb] of [
      ['add', 0.5, 0.25],
      ['mul', 0.75, 0.5],
    ] as const) {
      const { a, b } = allPairs('int8');
      const problem = (kernelPath: 'xnnpack' | 'builtin'): ElementwiseProblem => ({
        op,
        a: { data: a, shape: [256, 1], scale: sa, zeroPoint: 0 },
        b: { data: b, shape: [1, 256], scale: sb, zeroPoint: 0 },
        output: { scale: 1, zeroPoint: 0 },
        kernelPath,
      });
      const x = elementwiseReference(problem('xnnpack')).data;
      const y = elementwiseReference(problem('builtin')).data;
      expect(
        x.some((v, i) => v !== y[i]),
        op,
      ).toBe(true);
    }
  });
});

describe("kernelPath 'xnnpack' outside the scales TFLite's delegate takes: the builtin kernel", () => {
  const { a, b } = allPairs('uint8');
  for (const [name, op, sa, sb, so] of [
    ['add, a ratio of 2^8', 'add', 256, 1, 1],
    ['add, a ratio below 2^-10', 'add', 1, 2 ** -10 * 0.99, 1],
    ['sub, a ratio of 300', 'sub', 1, 300, 1],
    ['mul, a scale below 2^-16', 'mul', 2 ** -8, 2 ** -8 * 0.99, 1],
    ['mul, a scale of 2^8', 'mul', 16, 16, 1],
  ] as const)
    it(name, () => {
      expect(xnnpackTakesElementwise(op, sa, sb, so)).toBe(false);
      const problem = (kernelPath: 'xnnpack' | 'builtin'): ElementwiseProblem => ({
        op,
        a: { data: a, shape: [256, 1], scale: sa, zeroPoint: 120 },
        b: { data: b, shape: [1, 256], scale: sb, zeroPoint: 130 },
        output: { scale: so, zeroPoint: 128 },
        kernelPath,
      });
      const plan = prepareElementwise(problem('xnnpack'));
      expect(plan.kernelPath).toBe('builtin');
      expect(plan.xnnpack).toBeNull();
      expect(Array.from(runElementwisePlan(plan).data)).toEqual(Array.from(elementwiseReference(problem('builtin')).data));
    });
  it('the edges it does take: ratios 2^-10 and just below 2^8; a mul scale of 2^-16', () => {
    expect(xnnpackTakesElementwise('add', 2 ** -10, 255.9, 1)).toBe(true);
    expect(xnnpackTakesElementwise('sub', 2 ** -10, 2 ** -10, 1)).toBe(true);
    expect(xnnpackTakesElementwise('mul', 2 ** -8, 2 ** -8, 1)).toBe(true);
  });
});

describe('typed errors', () => {
  const base: ElementwiseProblem = {
    op: 'add',
    a: { data: Int8Array.of(1, 2), shape: [2], scale: 0.1, zeroPoint: 0 },
    b: { data: Int8Array.of(3, 4), shape: [2], scale: 0.1, zeroPoint: 0 },
    output: { scale: 0.2, zeroPoint: 0 },
  };
  it('an unknown kernelPath, or null, names kernelPath', () => {
    for (const kernelPath of ['optimized', null])
      expect(() => prepareElementwise({ ...base, kernelPath: kernelPath as 'xnnpack' })).toThrow(
        expect.objectContaining({ name: InputError.name, field: 'kernelPath' }),
      );
  });
  it("'xnnpack' on alignedAdd names kernelPath", () => {
    expect(() => prepareElementwise({ ...base, op: 'alignedAdd', kernelPath: 'xnnpack' })).toThrow(
      expect.objectContaining({ field: 'kernelPath' }),
    );
  });
  it('a bare problem keeps the builtin arithmetic', () => {
    expect(prepareElementwise(base).kernelPath).toBe('builtin');
  });
});

describe("graph layers: add/sub/mul default to kernelPath 'xnnpack'", () => {
  const { a, b } = allPairs('int8');
  const inputs = { x: { data: a, shape: [256, 1] }, y: { data: b, shape: [1, 256] } };
  const quant = { x: { scale: 0.5, zeroPoint: 0 }, y: { scale: 0.25, zeroPoint: 0 } };
  const layer = (op: 'add' | 'sub' | 'mul', extra: object = {}): SequentialLayer[] => [
    { op, inputs: ['x', 'y'], params: { output: { scale: 2, zeroPoint: 1 }, activation: 'RELU_N1_TO_1', ...extra } },
  ];
  /** The op through elementwise's reference with the path's arithmetic and activation clamp. */
  const direct = (op: 'add' | 'sub' | 'mul', path: 'xnnpack' | 'builtin') => {
    const [min, max] = activationRange('RELU_N1_TO_1', { scale: 2, zeroPoint: 1 }, 'int8', path === 'xnnpack' ? 'xnnpack' : 'optimized');
    return Array.from(
      elementwiseReference({
        op,
        a: { data: a, shape: [256, 1], ...quant.x },
        b: { data: b, shape: [1, 256], ...quant.y },
        output: { scale: 2, zeroPoint: 1, min, max },
        kernelPath: path,
      }).data,
    );
  };
  for (const op of ['add', 'sub', 'mul'] as const)
    it(`${op}: default == XNNPACK's arithmetic and clamp; 'builtin' == TFLite's builtin; they differ`, async () => {
      const def = Array.from((await runLayers(layer(op), inputs, { inputs: quant, backend: 'cpu' })).data);
      const builtin = Array.from((await runLayers(layer(op, { kernelPath: 'builtin' }), inputs, { inputs: quant, backend: 'cpu' })).data);
      expect(def).toEqual(direct(op, 'xnnpack'));
      expect(builtin).toEqual(direct(op, 'builtin'));
      expect(def).not.toEqual(builtin);
    });
  it('a bad kernelPath, or null, names the layer field', async () => {
    for (const kernelPath of ['optimized', null])
      await expect(
        runLayers(layer('add', { kernelPath: kernelPath as 'xnnpack' }), inputs, { inputs: quant, backend: 'cpu' }),
      ).rejects.toMatchObject({ field: 'layers[0].params.kernelPath' });
    await expect(runLayers(layer('add', { activation: null as never }), inputs, { inputs: quant, backend: 'cpu' })).rejects.toMatchObject({
      name: 'InputError',
      field: 'layers[0].params.activation',
    });
  });
});
