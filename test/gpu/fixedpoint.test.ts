// GPU tier: src/wgsl/{fixedpoint,tanh,lowbit}.wgsl, the exact int32 fixed-point arithmetic of the output stage
// (pack -> gemm -> OUTPUT), run on a real WebGPU device (SwiftShader on machines without a GPU) and
// compared bit for bit with the CPU reference of the same names in src/quant/fixedpoint.ts,
// src/quant/tanh.ts and src/quant/lowbit.ts. Inputs: every edge value (0, +-1, +-2^k, +-(2^k +- 1), INT32_MIN/MAX and their
// neighbours) crossed with every other, every shift/exponent in range, and tens of thousands of seeded
// random values. The tanh functions are also checked against values computed by gemmlowp's own C++
// (scalar path), embedded at the bottom. Each dispatch runs inside validation and out-of-memory error
// scopes (test/gpu/gpu-env.ts); a mismatch reports how many elements differ and a few examples.

import { afterAll, describe, expect, test } from 'vitest';
import { Rng } from '../../tools/random.ts';
import fixedpointWgsl from '../../src/wgsl/fixedpoint.wgsl?raw';
import lowbitWgsl from '../../src/wgsl/lowbit.wgsl?raw';
import tanhWgsl from '../../src/wgsl/tanh.wgsl?raw';
import harnessWgsl from './fixedpoint-harness.wgsl?raw';
import {
  mulWide,
  multiplyByQuantizedMultiplier,
  roundingDivideByPOT,
  roundingHalfSum,
  saturatingLeftShift,
  saturatingRoundingDoublingHighMul,
} from '../../src/quant/fixedpoint.ts';
import { fixedPointTanhF3, tanhParams, tanhStage, type TanhParams } from '../../src/quant/tanh.ts';
import { GpuValidationError } from '../../src/errors.ts';
import { INT32_MAX, INT32_MIN } from '../../src/types.ts';
import { getGpu, grid1D, releaseGpu, runCompute, runInErrorScope } from './gpu-env.ts';

const gpu = await getGpu();
afterAll(releaseGpu);

const CODE = [fixedpointWgsl, tanhWgsl, lowbitWgsl, harnessWgsl].join('\n');

/** 0, +-1..3, INT32_MIN/MAX and neighbours, 2^30 and, for k = 1..31, +-2^k and +-(2^k +- 1) within int32. */
const EDGES: number[] = (() => {
  const s = new Set<number>([0, 1, -1, 2, -2, 3, -3, INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1]);
  for (let k = 1; k <= 31; k++) {
    for (const v of [2 ** k, 2 ** k - 1, 2 ** k + 1]) for (const x of [v, -v]) if (x >= INT32_MIN && x <= INT32_MAX) s.add(x);
  }
  return [...s];
})();

/** Seeded draws (tools/random.ts): reproducible inputs. */
function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

/** Random int32 values: half uniform over int32, the rest small, near powers of two, or edges. */
function randomInt32s(n: number, seed: number): number[] {
  const r = rng(seed);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const kind = r() % 8;
    let v: number;
    if (kind < 4) v = r() | 0;
    else if (kind === 4) v = (r() % 131072) - 65536;
    else if (kind < 7) v = (r() & 1 ? -1 : 1) * (2 ** (r() % 32) + (r() % 9) - 4);
    else v = EDGES[r() % EDGES.length];
    out.push(Math.max(INT32_MIN, Math.min(INT32_MAX, Math.trunc(v))));
  }
  return out;
}

/** Evaluates harness OP on the GPU; b and c default to a 1-element dummy. */
async function gpuEval(op: number, a: number[], b: number[] = [0], c: number[] = [0], outPerElement = 1): Promise<Int32Array> {
  const [out] = await runCompute(gpu!.device, {
    code: CODE,
    constants: { OP: op },
    inputs: [Int32Array.from(a), Int32Array.from(b), Int32Array.from(c)],
    outputs: [a.length * outPerElement],
    workgroups: grid1D(a.length),
    label: `fixedpoint OP ${op}`,
  });
  return out;
}

/** Compares all elements; fails with the count of mismatches and the first few, with their arguments. */
function expectSame(name: string, got: ArrayLike<number>, want: ArrayLike<number>, args: (i: number) => string): void {
  expect(got.length, `${name}: length`).toBe(want.length);
  let count = 0;
  const examples: string[] = [];
  for (let i = 0; i < want.length; i++) {
    if ((got[i] | 0) !== (want[i] | 0)) {
      count++;
      if (examples.length < 8) examples.push(`${name}(${args(i)}): gpu ${got[i] | 0}, reference ${want[i] | 0}`);
    }
  }
  if (count)
    expect.fail(
      `${name}: ${count} of ${want.length} differ (${((100 * count) / want.length).toFixed(3)}%). First:\n  ${examples.join('\n  ')}`,
    );
}

/** All (x, y) with x, y in xs (crossed) followed by `extra` random pairs. */
function pairs(xs: number[], extra: number, seed: number): [number[], number[]] {
  const a: number[] = [];
  const b: number[] = [];
  for (const x of xs) for (const y of xs) a.push(x), b.push(y);
  const ra = randomInt32s(extra, seed);
  const rb = randomInt32s(extra, seed * 7 + 1);
  return [a.concat(ra), b.concat(rb)];
}

/** Every x of xs with every shift in lo..hi. */
function withShifts(xs: number[], lo: number, hi: number): [number[], number[]] {
  const a: number[] = [];
  const s: number[] = [];
  for (const x of xs) for (let e = lo; e <= hi; e++) a.push(x), s.push(e);
  return [a, s];
}

const tanhParamsFlat = (p: TanhParams): number[] => [
  p.realZero,
  p.inputCutoffMin,
  p.inputCutoffMax,
  p.outputMin,
  p.outputMax,
  p.inverseAmplitudeNormalized,
  p.inverseAmplitudeNegExponent,
  p.amplitudeNormalized,
  p.amplitudeExponent,
];

describe.skipIf(!gpu)('fixedpoint.wgsl, tanh.wgsl and lowbit.wgsl on the GPU, bit for bit with src/quant', () => {
  test('the libraries are plain WGSL that compile on their own, in order (no entry point, no templating)', async () => {
    const device = gpu!.device;
    const libraries = [fixedpointWgsl, tanhWgsl, lowbitWgsl];
    for (let i = 1; i <= libraries.length; i++) {
      expect(libraries[i - 1]).not.toContain('${');
      await runInErrorScope(device, async () => {
        const info = await device
          .createShaderModule({ code: libraries.slice(0, i).join('\n'), label: 'fixedpoint libraries' })
          .getCompilationInfo();
        const bad = info.messages.filter((m) => m.type !== 'info').map((m) => `${m.type} line ${m.lineNum}: ${m.message}`);
        expect(bad).toEqual([]);
      });
    }
  });

  test('GPU errors are never silent: a validation error fails the run with GpuValidationError', async () => {
    const device = gpu!.device;
    await expect(runInErrorScope(device, () => device.createBuffer({ size: 4, usage: 0 }))).rejects.toThrow(GpuValidationError);
    // The harness bound with a missing input: the layout does not match the shader.
    const bad = runCompute(device, { code: CODE, constants: { OP: 1 }, inputs: [Int32Array.of(1)], outputs: [1], label: 'bad bindings' });
    await expect(bad).rejects.toThrow(GpuValidationError);
    // And the device still works afterwards.
    expect([...(await gpuEval(1, [INT32_MIN], [INT32_MIN]))]).toEqual([INT32_MAX]);
  });

  test('mulWide: exact signed 32x32 -> 64', async () => {
    const [a, b] = pairs(EDGES, 30000, 1);
    const got = await gpuEval(0, a, b, [0], 2);
    const want = new Int32Array(2 * a.length);
    a.forEach((x, i) => {
      const [lo, hi] = mulWide(x, b[i]);
      want[2 * i] = lo;
      want[2 * i + 1] = hi;
    });
    expectSame('mulWide (lo, hi)', got, want, (i) => `${a[i >> 1]}, ${b[i >> 1]} ${i & 1 ? 'hi' : 'lo'}`);
  });

  test('saturatingRoundingDoublingHighMul', async () => {
    const [a, b] = pairs(EDGES, 30000, 2);
    const got = await gpuEval(1, a, b);
    expectSame(
      'saturatingRoundingDoublingHighMul',
      got,
      a.map((x, i) => saturatingRoundingDoublingHighMul(x, b[i])),
      (i) => `${a[i]}, ${b[i]}`,
    );
  });

  test('roundingHalfSum', async () => {
    const [a, b] = pairs(EDGES, 30000, 3);
    const got = await gpuEval(6, a, b);
    expectSame(
      'roundingHalfSum',
      got,
      a.map((x, i) => roundingHalfSum(x, b[i])),
      (i) => `${a[i]}, ${b[i]}`,
    );
  });

  test('roundingDivideByPOT and saturatingLeftShift, every exponent 0..31', async () => {
    const [x, e] = withShifts(EDGES.concat(randomInt32s(2000, 4)), 0, 31);
    const rdbp = await gpuEval(2, x, e);
    expectSame(
      'roundingDivideByPOT',
      rdbp,
      x.map((v, i) => roundingDivideByPOT(v, e[i])),
      (i) => `${x[i]}, ${e[i]}`,
    );
    const sls = await gpuEval(3, x, e);
    expectSame(
      'saturatingLeftShift',
      sls,
      x.map((v, i) => saturatingLeftShift(v, e[i])),
      (i) => `${x[i]}, ${e[i]}`,
    );
  });

  // x: every edge; multiplier: edges and typical TFLite multipliers in [2^30, 2^31); every shift; plus random triples.
  const multipliers = [0, 1, -1, INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1, 2 ** 30, -(2 ** 30), 2 ** 30 + 1, 3, -3, 65537].concat(
    randomInt32s(8, 5).map((v) => 2 ** 30 + ((v >>> 0) % 2 ** 30)),
  );
  const mbqmInputs = (lo: number, hi: number, seed: number): [number[], number[], number[]] => {
    const x: number[] = [];
    const m: number[] = [];
    const s: number[] = [];
    for (const xv of EDGES) for (const mv of multipliers) for (let e = lo; e <= hi; e++) x.push(xv), m.push(mv), s.push(e);
    const rx = randomInt32s(30000, seed);
    const rm = randomInt32s(30000, seed + 1);
    const r = rng(seed + 2);
    rx.forEach((v, i) => {
      x.push(v);
      m.push(rm[i]);
      s.push(lo + (r() % (hi - lo + 1)));
    });
    return [x, m, s];
  };

  test('multiplyByQuantizedMultiplierDouble, shift -31..31', async () => {
    const [x, m, s] = mbqmInputs(-31, 31, 6);
    const got = await gpuEval(4, x, m, s);
    const want = x.map((v, i) => multiplyByQuantizedMultiplier(v, m[i], s[i], 'double'));
    expectSame('multiplyByQuantizedMultiplierDouble', got, want, (i) => `${x[i]}, ${m[i]}, ${s[i]}`);
  });

  test('multiplyByQuantizedMultiplierSingle, shift -31..30', async () => {
    const [x, m, s] = mbqmInputs(-31, 30, 7);
    const got = await gpuEval(5, x, m, s);
    const want = x.map((v, i) => multiplyByQuantizedMultiplier(v, m[i], s[i], 'single'));
    expectSame('multiplyByQuantizedMultiplierSingle', got, want, (i) => `${x[i]}, ${m[i]}, ${s[i]}`);
  });

  test('fixedPointTanhF3 (gemmlowp tanh on FixedPoint<int32, 3>)', async () => {
    const r = rng(8);
    const sweep = Array.from({ length: 4096 }, (_, i) => (i - 2048) * (1 << 19) + (r() % 4096)); // -8..8 in F3
    const x = EDGES.concat(sweep, randomInt32s(40000, 9));
    const golden = GEMMLOWP_TANH_F3.filter((_, i) => i % 2 === 0);
    const all = x.concat(golden);
    const got = await gpuEval(7, all);
    expectSame('fixedPointTanhF3', got, all.map(fixedPointTanhF3), (i) => `${all[i]}`);
    const goldGot = got.subarray(x.length);
    expectSame(
      'fixedPointTanhF3 vs gemmlowp C++',
      goldGot,
      GEMMLOWP_TANH_F3.filter((_, i) => i % 2 === 1),
      (i) => `${golden[i]}`,
    );
  });

  test('tanhStage (gemmlowp OutputStageTanh) over many amplitudes and zero points', async () => {
    const sets: [number, number][] = [];
    for (let i = 0; i < GEMMLOWP_TANH_STAGE.length; i += 4) {
      const z = GEMMLOWP_TANH_STAGE[i];
      const amp = GEMMLOWP_TANH_STAGE[i + 1];
      if (!sets.some(([a, b]) => a === z && b === amp)) sets.push([z, amp]);
    }
    const r = rng(10);
    for (let k = 0; k <= 27; k++) if (!sets.some(([z, a]) => z === 0 && a === 2 ** k)) sets.push([0, 2 ** k]); // powers of two: 8*amp - 1 rounds up to exactly 8.0
    for (let i = 0; i < 40; i++) {
      const amp = 1 + (r() % (i % 2 ? 5000 : 268435455));
      const maxZero = INT32_MAX - 8 * amp;
      sets.push([(r() % (2 * maxZero + 1)) - maxZero, amp]);
    }
    const params = sets.map(([z, amp]) => tanhParams(z, amp));
    const x: number[] = [];
    const idx: number[] = [];
    params.forEach((p, k) => {
      const [z, amp] = sets[k];
      const near = [z, z + 1, z - 1, p.inputCutoffMin, p.inputCutoffMax, INT32_MIN, INT32_MAX];
      for (let d = -3; d <= 3; d++) near.push(p.inputCutoffMin + d, p.inputCutoffMax + d, z + amp + d, z - amp + d);
      for (let j = 0; j < 300; j++) near.push(z + Math.round((r() / 2 ** 32 - 0.5) * 18 * amp));
      for (const v of new Set(near)) if (v >= INT32_MIN && v <= INT32_MAX) x.push(v), idx.push(k);
    });
    const got = await gpuEval(8, x, idx, params.flatMap(tanhParamsFlat));
    expectSame(
      'tanhStage',
      got,
      x.map((v, i) => tanhStage(v, params[idx[i]])),
      (i) => `${x[i]}, zero ${sets[idx[i]][0]}, amplitude ${sets[idx[i]][1]}`,
    );

    // gemmlowp's own results (its constructor's double maths included, via tanhParams).
    const gx: number[] = [];
    const gi: number[] = [];
    const gp: TanhParams[] = [];
    const want: number[] = [];
    for (let i = 0; i < GEMMLOWP_TANH_STAGE.length; i += 4) {
      gp.push(tanhParams(GEMMLOWP_TANH_STAGE[i], GEMMLOWP_TANH_STAGE[i + 1]));
      gx.push(GEMMLOWP_TANH_STAGE[i + 2]);
      gi.push(gi.length);
      want.push(GEMMLOWP_TANH_STAGE[i + 3]);
    }
    const gold = await gpuEval(8, gx, gi, gp.flatMap(tanhParamsFlat));
    expectSame('tanhStage vs gemmlowp C++', gold, want, (i) => `${gx[i]}, zero ${gp[i].realZero}, amplitude row ${i}`);
  });
});

/** gemmlowp OutputStageTanh (scalar path, compiled with g++ -fwrapv from the mirror's HEAD): realZero, amplitude, x, result; 474 rows. */
const GEMMLOWP_TANH_STAGE: readonly number[] = [
  0, 1, 0, 0, 0, 1, 1, 0, 0, 1, -1, -1, 0, 1, -8, -1, 0, 1, -9, -1, 0, 1, -7, -1, 0, 1, 8, 1, 0, 1, 9, 1, 0, 1, 7, 0, 0, 1, 6, 0, 0, 1, -6,
  -1, 0, 1, 4, 0, 0, 1, -4, -1, 0, 1, 10, 1, 0, 1, -2147483648, -1, 0, 1, 2147483647, 1, 0, 1, 2, 0, 0, 1, -5, -1, 0, 1, -2, -1, 0, 1, -3,
  -1, 0, 2, 0, 0, 0, 2, 1, 1, 0, 2, -1, 0, 0, 2, -16, -2, 0, 2, -17, -2, 0, 2, -15, -2, 0, 2, 16, 2, 0, 2, 17, 2, 0, 2, 15, 1, 0, 2, 14, 1,
  0, 2, -14, -2, 0, 2, 2, 1, 0, 2, -2, -2, 0, 2, 8, 1, 0, 2, -8, -2, 0, 2, 13, 1, 0, 2, -2147483648, -2, 0, 2, 2147483647, 2, 0, 2, -11, -2,
  0, 2, -9, -2, 0, 2, 12, 1, 0, 2, 9, 1, 0, 3, 0, 0, 0, 3, 1, 1, 0, 3, -1, -2, 0, 3, -24, -3, 0, 3, -25, -3, 0, 3, -23, -3, 0, 3, 24, 3, 0,
  3, 25, 3, 0, 3, 23, 2, 0, 3, 22, 2, 0, 3, -22, -3, 0, 3, 3, 2, 0, 3, -3, -3, 0, 3, 12, 2, 0, 3, -12, -3, 0, 3, 16, 2, 0, 3, -2147483648,
  -3, 0, 3, 2147483647, 3, 0, 3, -8, -3, 0, 3, -2, -2, 0, 3, 21, 2, 0, 3, -18, -3, 0, 3, 5, 2, 0, 3, -16, -3, 0, 5, 0, 0, 0, 5, 1, 1, 0, 5,
  -1, -2, 0, 5, -40, -5, 0, 5, -41, -5, 0, 5, -39, -5, 0, 5, 40, 5, 0, 5, 41, 5, 0, 5, 39, 4, 0, 5, 38, 4, 0, 5, -38, -5, 0, 5, 5, 3, 0, 5,
  -5, -4, 0, 5, 20, 4, 0, 5, -20, -5, 0, 5, 22, 4, 0, 5, -2147483648, -5, 0, 5, 2147483647, 5, 0, 5, 35, 4, 0, 5, 31, 4, 0, 5, 13, 4, 0, 5,
  36, 4, 0, 5, 9, 4, 0, 5, -10, -5, 0, 5, -3, -3, 0, 7, 0, 0, 0, 7, 1, 1, 0, 7, -1, -2, 0, 7, -56, -7, 0, 7, -57, -7, 0, 7, -55, -7, 0, 7,
  56, 7, 0, 7, 57, 7, 0, 7, 55, 6, 0, 7, 54, 6, 0, 7, -54, -7, 0, 7, 7, 5, 0, 7, -7, -6, 0, 7, 28, 6, 0, 7, -28, -7, 0, 7, -2147483648, -7,
  0, 7, 2147483647, 7, 0, 7, -29, -7, 0, 7, -42, -7, 0, 7, -49, -7, 0, 7, -30, -7, 0, 7, 12, 6, 0, 7, 24, 6, 0, 1000, 0, 0, 0, 1000, 1, 1,
  0, 1000, -1, -2, 0, 1000, -8000, -1000, 0, 1000, -8001, -1000, 0, 1000, -7999, -1000, 0, 1000, 8000, 1000, 0, 1000, 8001, 1000, 0, 1000,
  7999, 999, 0, 1000, 7998, 999, 0, 1000, -7998, -1000, 0, 1000, 1000, 761, 0, 1000, -1000, -762, 0, 1000, 4000, 999, 0, 1000, -4000, -1000,
  0, 1000, 3007, 995, 0, 1000, -2147483648, -1000, 0, 1000, 2147483647, 1000, 0, 1000, -6710, -1000, 0, 1000, -193, -191, 0, 1000, 6554,
  999, 0, 1000, 7943, 999, 0, 1000, -1895, -956, 0, 1000, 6241, 999, 0, 1000, -3174, -997, 0, 1000, -6966, -1000, 0, 1024, 0, 0, 0, 1024, 1,
  2, 0, 1024, -1, 0, 0, 1024, -8192, -1024, 0, 1024, -8193, -1024, 0, 1024, -8191, -1024, 0, 1024, 8192, 1024, 0, 1024, 8193, 1024, 0, 1024,
  8191, 1023, 0, 1024, 8190, 1023, 0, 1024, -8190, -1024, 0, 1024, 1024, 779, 0, 1024, -1024, -780, 0, 1024, 4096, 1023, 0, 1024, -4096,
  -1024, 0, 1024, 3079, 1019, 0, 1024, -2147483648, -1024, 0, 1024, 2147483647, 1024, 0, 1024, 3225, 1020, 0, 1024, -482, -450, 0, 1024,
  2501, 1008, 0, 1024, -1321, -880, 0, 1024, -6095, -1024, 0, 1024, -1311, -877, 0, 1024, -608, -546, 0, 1024, 7797, 1023, 0, 1025, 0, 0, 0,
  1025, 1, 1, 0, 1025, -1, -2, 0, 1025, -8200, -1025, 0, 1025, -8201, -1025, 0, 1025, -8199, -1025, 0, 1025, 8200, 1025, 0, 1025, 8201,
  1025, 0, 1025, 8199, 1024, 0, 1025, 8198, 1024, 0, 1025, -8198, -1025, 0, 1025, 1025, 780, 0, 1025, -1025, -781, 0, 1025, 4100, 1024, 0,
  1025, -4100, -1025, 0, 1025, 3082, 1019, 0, 1025, -2147483648, -1025, 0, 1025, 2147483647, 1025, 0, 1025, -4268, -1025, 0, 1025, 4945,
  1024, 0, 1025, 6278, 1024, 0, 1025, 832, 687, 0, 1025, -4175, -1025, 0, 1025, 7627, 1024, 0, 1025, 4802, 1024, 0, 1025, -2291, -1002, 0,
  4095, 0, 0, 0, 4095, 1, 1, 0, 4095, -1, -2, 0, 4095, -32760, -4095, 0, 4095, -32761, -4095, 0, 4095, -32759, -4095, 0, 4095, 32760, 4095,
  0, 4095, 32761, 4095, 0, 4095, 32759, 4094, 0, 4095, 32758, 4094, 0, 4095, -32758, -4095, 0, 4095, 4095, 3118, 0, 4095, -4095, -3119, 0,
  4095, 16380, 4092, 0, 4095, -16380, -4093, 0, 4095, 12292, 4074, 0, 4095, -2147483648, -4095, 0, 4095, 2147483647, 4095, 0, 4095, -25490,
  -4095, 0, 4095, -16681, -4093, 0, 4095, 393, 392, 0, 4095, -30898, -4095, 0, 4095, -14133, -4087, 0, 4095, 20954, 4094, 0, 4095, 8297,
  3955, 0, 4095, -2663, -2343, 128, 10, 128, 128, 128, 10, 129, 129, 128, 10, 127, 126, 128, 10, 48, 118, 128, 10, 47, 118, 128, 10, 49,
  118, 128, 10, 208, 138, 128, 10, 209, 138, 128, 10, 207, 137, 128, 10, 206, 137, 128, 10, 50, 118, 128, 10, 138, 135, 128, 10, 118, 120,
  128, 10, 168, 137, 128, 10, 88, 118, 128, 10, 165, 137, 128, 10, -2147483648, 118, 128, 10, 2147483647, 138, 128, 10, 173, 137, 128, 10,
  109, 118, 128, 10, 60, 118, 128, 10, 130, 130, 128, 10, 124, 124, 128, 10, 152, 137, 128, 10, 142, 136, -5, 65536, -5, -5, -5, 65536, -4,
  -3, -5, 65536, -6, -5, -5, 65536, -524293, -65541, -5, 65536, -524294, -65541, -5, 65536, -524292, -65541, -5, 65536, 524283, 65531, -5,
  65536, 524284, 65531, -5, 65536, 524282, 65530, -5, 65536, 524281, 65530, -5, 65536, -524291, -65541, -5, 65536, 65531, 49906, -5, 65536,
  -65541, -49917, -5, 65536, 262139, 65487, -5, 65536, -262149, -65498, -5, 65536, 196610, 65206, -5, 65536, -2147483648, -65541, -5, 65536,
  2147483647, 65531, -5, 65536, 254005, 65474, -5, 65536, 129923, 63091, -5, 65536, -1513, -1513, -5, 65536, 181702, 65021, -5, 65536,
  -449439, -65541, -5, 65536, -511644, -65541, -5, 65536, 16592, 16246, -5, 65536, 117473, 61994, 0, 268435455, 0, 0, 0, 268435455, 1, 32,
  0, 268435455, -1, -33, 0, 268435455, -2147483640, -268435455, 0, 268435455, -2147483641, -268435455, 0, 268435455, -2147483639,
  -268435395, 0, 268435455, 2147483640, 268435455, 0, 268435455, 2147483641, 268435455, 0, 268435455, 2147483639, 268435394, 0, 268435455,
  2147483638, 268435394, 0, 268435455, -2147483638, -268435395, 0, 268435455, 268435455, 204438858, 0, 268435455, -268435455, -204438859, 0,
  268435455, 1073741820, 268255416, 0, 268435455, -1073741820, -268255416, 0, 268435455, 805306372, 267107976, 0, 268435455, -2147483648,
  -268435455, 0, 268435455, 2147483647, 268435455, 0, 268435455, -574920654, -261130414, 0, 268435455, -1491894860, -268427466, 0,
  268435455, -596269473, -262192170, 0, 268435455, 2138059322, 268435390, 0, 268435455, 1580848408, 268431337, 0, 268435455, -136934092,
  -126174902, 0, 268435455, -395870356, -241719766, 0, 268435455, -155072145, -139850454, 0, 134217728, 0, 0, 0, 134217728, 1, 17, 0,
  134217728, -1, 0, 0, 134217728, -1073741824, -134217728, 0, 134217728, -1073741825, -134217728, 0, 134217728, -1073741823, -134217698, 0,
  134217728, 1073741824, 134217728, 0, 134217728, 1073741825, 134217728, 0, 134217728, 1073741823, 134217697, 0, 134217728, 1073741822,
  134217697, 0, 134217728, -1073741822, -134217698, 0, 134217728, 134217728, 102219429, 0, 134217728, -134217728, -102219430, 0, 134217728,
  536870912, 134127708, 0, 134217728, -536870912, -134127709, 0, 134217728, 402653191, 133553988, 0, 134217728, -2147483648, -134217728, 0,
  134217728, 2147483647, 134217728, 0, 134217728, 422903500, 133726562, 0, 134217728, -616109333, -134190082, 0, 134217728, -982997753,
  -134217611, 0, 134217728, -389942909, -133415998, 0, 134217728, 146982284, 107204158, 0, 134217728, -570160142, -134162905, 0, 134217728,
  808635823, 134216158, 0, 134217728, -648014595, -134200542, 0, 134217729, 0, 0, 0, 134217729, 1, 16, 0, 134217729, -1, -17, 0, 134217729,
  -1073741832, -134217729, 0, 134217729, -1073741833, -134217729, 0, 134217729, -1073741831, -134217699, 0, 134217729, 1073741832,
  134217729, 0, 134217729, 1073741833, 134217729, 0, 134217729, 1073741831, 134217698, 0, 134217729, 1073741830, 134217698, 0, 134217729,
  -1073741830, -134217699, 0, 134217729, 134217729, 102219430, 0, 134217729, -134217729, -102219431, 0, 134217729, 536870916, 134127709, 0,
  134217729, -536870916, -134127710, 0, 134217729, 402653194, 133553989, 0, 134217729, -2147483648, -134217729, 0, 134217729, 2147483647,
  134217729, 0, 134217729, 604940648, 134185076, 0, 134217729, -713494611, -134211251, 0, 134217729, -648293040, -134200614, 0, 134217729,
  -572927719, -134165120, 0, 134217729, 414461684, 133660860, 0, 134217729, 807934204, 134216142, 0, 134217729, -706429767, -134210532, 0,
  134217729, 203349353, 121847523, 123456, 1048576, 123456, 123456, 123456, 1048576, 123457, 123458, 123456, 1048576, 123455, 123456,
  123456, 1048576, -8265152, -925120, 123456, 1048576, -8265153, -925120, 123456, 1048576, -8265151, -925120, 123456, 1048576, 8512064,
  1172032, 123456, 1048576, 8512065, 1172032, 123456, 1048576, 8512063, 1172031, 123456, 1048576, 8512062, 1172031, 123456, 1048576,
  -8265150, -925120, 123456, 1048576, 1172032, 922045, 123456, 1048576, -925120, -675134, 123456, 1048576, 4317760, 1171328, 123456,
  1048576, -4070848, -924417, 123456, 1048576, 3269191, 1166846, 123456, 1048576, -2147483648, -925120, 123456, 1048576, 2147483647,
  1172032, 123456, 1048576, 4574211, 1171600, 123456, 1048576, 1004572, 842744, 123456, 1048576, -456775, -404007, 123456, 1048576, 6292004,
  1172015, 123456, 1048576, -993008, -702269, 123456, 1048576, -2565250, -912765, 123456, 1048576, -2477408, -910527, 123456, 1048576,
  6413955, 1172019, -1073741819, 67108864, -1073741819, -1073741819, -1073741819, 67108864, -1073741818, -1073741810, -1073741819, 67108864,
  -1073741820, -1073741819, -1073741819, 67108864, -1610612731, -1140850683, -1073741819, 67108864, -1610612732, -1140850683, -1073741819,
  67108864, -1610612730, -1140850668, -1073741819, 67108864, -536870907, -1006632955, -1073741819, 67108864, -536870906, -1006632955,
  -1073741819, 67108864, -536870908, -1006632971, -1073741819, 67108864, -536870909, -1006632971, -1073741819, 67108864, -1610612729,
  -1140850668, -1073741819, 67108864, -1006632955, -1022632105, -1073741819, 67108864, -1140850683, -1124851534, -1073741819, 67108864,
  -805306363, -1006677965, -1073741819, 67108864, -1342177275, -1140805674, -1073741819, 67108864, -872415220, -1006964825, -1073741819,
  67108864, -2147483648, -1140850683, -1073741819, 67108864, 2147483647, -1006632955, -1073741819, 67108864, -925994245, -1008255635,
  -1073741819, 67108864, -729094645, -1006637601, -1073741819, 67108864, -1056764354, -1057117501, -1073741819, 67108864, -1203315448,
  -1138085652, -1073741819, 67108864, -550102329, -1006632978, -1073741819, 67108864, -777475540, -1006652597, -1073741819, 67108864,
  -647929274, -1006633369, -1073741819, 67108864, -804887975, -1006677408, 2147482847, 100, 2147482847, 2147482847, 2147482847, 100,
  2147482848, 2147482848, 2147482847, 100, 2147482846, 2147482845, 2147482847, 100, 2147482047, 2147482747, 2147482847, 100, 2147482046,
  2147482747, 2147482847, 100, 2147482048, 2147482747, 2147482847, 100, 2147483647, 2147482947, 2147482847, 100, 2147483646, 2147482946,
  2147482847, 100, 2147483645, 2147482946, 2147482847, 100, 2147482049, 2147482747, 2147482847, 100, 2147482947, 2147482923, 2147482847,
  100, 2147482747, 2147482770, 2147482847, 100, 2147483247, 2147482946, 2147482847, 100, 2147482447, 2147482747, 2147482847, 100,
  2147483154, 2147482946, 2147482847, 100, -2147483648, 2147482747, 2147482847, 100, 2147483393, 2147482946, 2147482847, 100, 2147483074,
  2147482944, 2147482847, 100, 2147483387, 2147482946, 2147482847, 100, 2147482327, 2147482747, 2147482847, 100, 2147482510, 2147482747,
  2147482847, 100, 2147483536, 2147482946, 2147482847, 100, 2147483214, 2147482946, 2147482847, 100, 2147482791, 2147482796, -2147482847,
  100, -2147482847, -2147482847, -2147482847, 100, -2147482846, -2147482846, -2147482847, 100, -2147482848, -2147482849, -2147482847, 100,
  -2147483647, -2147482947, -2147482847, 100, -2147483648, -2147482947, -2147482847, 100, -2147483646, -2147482947, -2147482847, 100,
  -2147482047, -2147482747, -2147482847, 100, -2147482046, -2147482747, -2147482847, 100, -2147482048, -2147482748, -2147482847, 100,
  -2147482049, -2147482748, -2147482847, 100, -2147483645, -2147482947, -2147482847, 100, -2147482747, -2147482771, -2147482847, 100,
  -2147482947, -2147482924, -2147482847, 100, -2147482447, -2147482748, -2147482847, 100, -2147483247, -2147482947, -2147482847, 100,
  -2147482540, -2147482748, -2147482847, 100, 2147483647, -2147482747, -2147482847, 100, -2147482220, -2147482748, -2147482847, 100,
  -2147482823, -2147482824, -2147482847, 100, -2147483443, -2147482947, -2147482847, 100, -2147483205, -2147482947, -2147482847, 100,
  -2147482212, -2147482748, -2147482847, 100, -2147482878, -2147482878, -2147482847, 100, -2147482190, -2147482748, -2147482847, 100,
  -2147482764, -2147482780, 77, 8388607, 77, 77, 77, 8388607, 78, 79, 77, 8388607, 76, 74, 77, 8388607, -67108779, -8388530, 77, 8388607,
  -67108780, -8388530, 77, 8388607, -67108778, -8388529, 77, 8388607, 67108933, 8388684, 77, 8388607, 67108934, 8388684, 77, 8388607,
  67108932, 8388682, 77, 8388607, 67108931, 8388682, 77, 8388607, -67108777, -8388529, 77, 8388607, 8388684, 6388790, 77, 8388607, -8388530,
  -6388637, 77, 8388607, 33554505, 8383057, 77, 8388607, -33554351, -8382904, 77, 8388607, 25165905, 8347200, 77, 8388607, -2147483648,
  -8388530, 77, 8388607, 2147483647, 8388684, 77, 8388607, 12050979, 7491162, 77, 8388607, -47361803, -8388321, 77, 8388607, 1656394,
  1635200, 77, 8388607, -59084361, -8388518, 77, 8388607, 9827984, 6918810, 77, 8388607, -34466173, -8384003, 77, 8388607, 28424732,
  8369584, 77, 8388607, -535619, -534892,
];
/** gemmlowp tanh(FixedPoint<int32, 3>::FromRaw(x)).raw(): x, result; 56 rows. */
const GEMMLOWP_TANH_F3: readonly number[] = [
  0, 0, 1, 248, -1, -248, -2147483648, -2147483164, 2147483647, 2147483164, -2147483647, -2147483164, 268435456, 1635510876, -268435456,
  -1635510876, 536870912, 2070233436, -536870912, -2070233436, 1073741824, 2146043336, -1073741824, -2146043336, 805306368, 2136863820,
  -805306368, -2136863820, 12345, 99004, -12345, -99004, 1416127706, 2147371256, 1183980739, 2146850020, -1538935162, -2147438640,
  1077577292, 2146083892, 244500629, 1549480704, -1484248587, -2147415984, -194130578, -1329041280, -171615666, -1212115252, -1894116344,
  -2147480448, 2129996389, 2147483104, -1400565607, -2147357440, -598684270, -2098417760, 2042561283, 2147482592, -1573203348, -2147448772,
  -158145353, -1136609188, -359766251, -1872022432, -336179133, -1823096540, 507131708, 2051500540, 1131344146, 2146545820, 886245684,
  2141666564, -348005874, -1848552760, -804375602, -2136790092, -662116779, -2116765096, 1275505396, 2147163236, -1303073448, -2147222724,
  -670537145, -2118620504, 2103245831, 2147482980, -1185824695, -2146858664, -1437811643, -2147388024, -2059119033, -2147482712, -31817311,
  -253352964, 1810899062, 2147477720, -1876678999, -2147480020, -1966041359, -2147481776, -1714314186, -2147471468, 129065277, 959685864,
  1498171958, 2147422660, -782850989, -2134935428, -1102835427, -2146323952, -1332589842, -2147274228,
];
