// Unit tier of the elementwise ops (src/problem/elementwise.ts, src/reference/elementwise.ts): values worked out by hand
// for every op; the integer parameters TFLite's Prepare derives; TFLite's published quantized test
// expectations (kernels/add_test.cc, sub_test.cc, mul_test.cc: float inputs quantized with the test
// utility's float32 QuantizationParams, outputs within the tests' own tolerances); the float32-vs-double
// difference of mul's multiplier; the 8-bit fixed-point form of scales against the oracle's independent
// derivation; numpy broadcasting (scalars, Fortran order, empty dimensions, per-axis channels under
// broadcast); the int32 wrap of the aligned sum; and every InputError, of the API and of the spec parser.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseElementwiseSpec } from '../../src/cli/elementwise-spec.ts';
import { main } from '../../src/cli/main.ts';
import { InputError } from '../../src/errors.ts';
import { serializeNpy, type NpyArray } from '../../src/io/npy.ts';
import { quantizeMultiplier } from '../../src/quant/quantize.ts';
import { elementwiseReference } from '../../src/reference/elementwise.ts';
import { type ElementwiseOp, type ElementwiseProblem, type QuantizedTensor, REQUANTIZE } from '../../src/problem/elementwise.ts';
import { broadcastShapes, prepareElementwise, scaleToFixedPoint } from '../../src/problem/elementwise-plan.ts';
import { elementwise } from '../../src/api.ts';
import { alignedFixedPoint } from '../oracle/elementwise-oracle.ts';
import { Rng } from '../oracle/random-spec.ts';

const u8 = (...v: number[]) => Uint8Array.from(v);
const i8 = (...v: number[]) => Int8Array.from(v);
const tensor = (
  data: Uint8Array | Int8Array,
  shape: number[],
  scale: number | number[],
  zeroPoint: number,
  extra: Partial<QuantizedTensor> = {},
): QuantizedTensor => ({ data, shape, scale, zeroPoint, ...extra });
const run = (p: ElementwiseProblem) => Array.from(elementwiseReference(p).data);

/** The field of the InputError `fn` throws. */
function fieldOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof InputError) return e.field;
    throw e;
  }
  return '(no error)';
}

describe('hand-checked values', () => {
  it('add: 0.5·10 + 0.25·6 = 6.5 rounds away from zero to 7', () => {
    const p: ElementwiseProblem = {
      op: 'add',
      a: tensor(u8(10), [1], 0.5, 0),
      b: tensor(u8(6), [1], 0.25, 0),
      output: { scale: 1, zeroPoint: 0 },
    };
    const plan = prepareElementwise(p);
    expect([plan.input1, plan.input2, plan.output]).toEqual([
      { multiplier: 2 ** 30, shift: 0 }, // 0.5 / 1.0
      { multiplier: 2 ** 30, shift: -1 }, // 0.25 / 1.0
      { multiplier: 2 ** 30, shift: -19 }, // 1.0 / 2^20
    ]);
    // x = 10·2^20 -> 5·2^20; y = 6·2^20 -> 1.5·2^20; raw = 6.5·2^20 -> SRDHM 3.25·2^20 -> RDBP 19 -> 6.5 -> 7
    expect(run(p)).toEqual([7]);
  });

  it('sub, int8: 0.5·(−4 − 2) − 0.25·(7 − (−1)) = −5 at zero point −3, output scale 0.5', () => {
    const p: ElementwiseProblem = {
      op: 'sub',
      a: tensor(i8(-4), [], 0.5, 2),
      b: tensor(i8(7), [], 0.25, -1),
      output: { scale: 0.5, zeroPoint: -3 },
    };
    expect(run(p)).toEqual([-3 + -10]);
  });

  it('mul: 0.5·3 · 0.5·5 / 0.25 = 15', () => {
    const p: ElementwiseProblem = {
      op: 'mul',
      a: tensor(u8(13), [1], 0.5, 10),
      b: tensor(u8(25), [1], 0.5, 20),
      output: { scale: 0.25, zeroPoint: 7 },
    };
    expect(prepareElementwise(p).output).toEqual({ multiplier: 2 ** 30, shift: 1 });
    expect(run(p)).toEqual([22]);
  });

  it("alignedAdd, the issue's example scales: 0.05·20 + 0.1·10 = 2.0 -> 13.33 LSBs of 0.15", () => {
    const p: ElementwiseProblem = {
      op: 'alignedAdd',
      a: tensor(u8(120), [1], 0.05, 100),
      b: tensor(u8(130), [1], 0.1, 120),
      output: { scale: 0.15, zeroPoint: 110 },
    };
    const plan = prepareElementwise(p);
    // 0.05 = 0.8·2^−4: e = −5, m = round(204.8) = 205, frac = 12;  0.1: e = −4, m = 205, frac = 11; F = 12.
    expect(plan.fracBits).toBe(12);
    expect([...plan.alignA!.mantissa, ...plan.alignA!.shift, ...plan.alignB!.mantissa, ...plan.alignB!.shift]).toEqual([205, 0, 205, 1]);
    // 2^−12 / 0.15 = 0.8333·2^−9: M = round(0.8333…·2^31) = 1789569707, shift −9.
    expect(plan.output).toEqual({ multiplier: 1789569707, shift: -9 });
    // ta = 20·205 = 4100, tb = (10·205) << 1 = 4100, sum 8200; SRDHM -> 6833; RDBP 9 -> 13; + 110.
    expect(run(p)).toEqual([123]);
  });

  it('alignedSub with per-axis scales picks each element its channel', () => {
    const p: ElementwiseProblem = {
      op: 'alignedSub',
      a: tensor(u8(10, 10, 10), [3], [1, 0.5, 0.25], 0, { axis: 0 }),
      b: tensor(u8(4), [1], 0.25, 0),
      output: { scale: 0.25, zeroPoint: 0 },
    };
    // Scales are powers of two: exact. 10·{1, .5, .25} − 4·.25 = {9, 4, 1.5} -> {36, 16, 6} LSBs.
    expect(run(p)).toEqual([36, 16, 6]);
  });

  it("sub's GreaterThanOne case: a real output multiplier of ~19 saturates any difference", () => {
    const p: ElementwiseProblem = {
      op: 'sub',
      a: tensor(u8(100, 101, 99), [3], 1, 100),
      b: tensor(u8(100), [1], 1, 100),
      output: { scale: 1e-7, zeroPoint: 128 },
    };
    const plan = prepareElementwise(p);
    expect(plan.output.shift).toBe(5); // 2 / (2^20 · 1e−7) = 19.07 = 0.596 · 2^5
    expect(plan.output.multiplier).toBe(quantizeMultiplier(2 / (2 ** 20 * 1e-7)).multiplier);
    expect(run(p)).toEqual([128, 255, 0]);
  });

  it('add flushes an input multiplier below 2^−31 to 0 (QuantizeMultiplier)', () => {
    const p: ElementwiseProblem = {
      op: 'add',
      a: tensor(u8(200), [1], 1, 0),
      b: tensor(u8(255), [1], 2 ** -40, 0),
      output: { scale: 1, zeroPoint: 0 },
    };
    expect(prepareElementwise(p).input2).toEqual({ multiplier: 0, shift: 0 });
    expect(run(p)).toEqual([200]);
  });

  it('the activation clamp', () => {
    const p: ElementwiseProblem = {
      op: 'add',
      a: tensor(u8(0, 50, 255), [3], 1, 0),
      b: tensor(u8(0), [], 1, 0),
      output: { scale: 1, zeroPoint: 0, min: 10, max: 100 },
    };
    expect(run(p)).toEqual([10, 50, 100]);
  });

  it('the aligned sum wraps in int32 when both terms are near 2^31 (as specified)', () => {
    // a per axis: channel 0 has scale 255/128 (m 255, frac 7), channel 1 has 2^−15 (frac 22): F = 22,
    // so channel 0 and b (255/128) shift by 15: 255·255·2^15 twice = 4261478400 wraps to −33488896.
    const p: ElementwiseProblem = {
      op: 'alignedAdd',
      a: tensor(u8(255, 0), [2], [255 / 128, 2 ** -15], 0, { axis: 0 }),
      b: tensor(u8(255), [1], 255 / 128, 0),
      output: { scale: 1, zeroPoint: 128 },
    };
    const plan = prepareElementwise(p);
    expect([plan.fracBits, plan.alignA!.shift[0], plan.alignB!.shift[0]]).toEqual([22, 15, 15]);
    // −33488896 · 2^−22 = −7.98 -> −8; channel 1: (0·128) + 255·255·2^15·2^−22 = 508.0 -> saturates.
    expect(run(p)).toEqual([120, 255]);
  });
});

describe("TFLite's Prepare", () => {
  it('add with equal scales: input multipliers 1/2, output 2^−19', () => {
    const s = 2 / 255;
    const plan = prepareElementwise({
      op: 'add',
      a: tensor(u8(0), [1], s, 128),
      b: tensor(u8(0), [1], s, 128),
      output: { scale: s, zeroPoint: 128 },
    });
    expect(plan.leftShift).toBe(20);
    expect(plan.input1).toEqual({ multiplier: 2 ** 30, shift: 0 });
    expect(plan.input2).toEqual({ multiplier: 2 ** 30, shift: 0 });
    expect(plan.output).toEqual({ multiplier: 2 ** 30, shift: -18 });
  });

  it("mul's multiplier in float32, as TFLite's mul.cc multiplies float scales; a requantize's in double, as quantize.cc", () => {
    const [sa, sb, so] = [0.1, 0.2, 0.3].map(Math.fround);
    const mul = (a: number, b: number, o: number) =>
      prepareElementwise({ op: 'mul', a: tensor(u8(0), [1], a, 0), b: tensor(u8(0), [1], b, 0), output: { scale: o, zeroPoint: 0 } });
    expect(mul(sa, sb, so).output).toEqual({ multiplier: 1145324672, shift: -3 }); // f32(f32(sa·sb)/so); in double 1145324601
    // an output TFLite's builtin MUL gives: 19 · (-128 - 9) at these scales is -72 (the double quotient gave -73)
    const [a, b, o] = [0.01927752047777176, 0.03432757779955864, 0.023764248937368393];
    const r = elementwiseReference({
      op: 'mul',
      a: { data: Int8Array.of(19), shape: [1], scale: a, zeroPoint: 0 },
      b: { data: Int8Array.of(-128), shape: [1], scale: b, zeroPoint: 9 },
      output: { scale: o, zeroPoint: 0 },
      kernelPath: 'builtin',
    });
    expect(Array.from(r.data)).toEqual([-72]);
    // a Sequential's requantize (TFLite's QUANTIZE) derives sa / so in double
    const requantize = Object.assign(
      { op: 'mul' as const, a: tensor(u8(0), [1], sa, 0), b: tensor(u8(1), [], 1, 0), output: { scale: so, zeroPoint: 0 } },
      { [REQUANTIZE]: true as const },
    );
    expect(prepareElementwise(requantize).output).toEqual(quantizeMultiplier(sa / so));
    expect(quantizeMultiplier(sa / so)).not.toEqual(quantizeMultiplier(Math.fround(sa / so)));
  });
});

// ---- TFLite's published quantized tests -------------------------------------------------------------

type Dtype = 'uint8' | 'int8';
const f = Math.fround;
const roundAway = (x: number) => Math.sign(x) * Math.round(Math.abs(x));

/** TFLite test_util.h SingleOpModel::QuantizationParams<T>(f_min, f_max), in float32. */
function quantizationParams(fMin: number, fMax: number, dtype: Dtype): { scale: number; zeroPoint: number } {
  const [qmin, qmax] = dtype === 'uint8' ? [0, 255] : [-128, 127];
  const [min, max] = [f(fMin), f(fMax)];
  const scale = f(f(max - min) / f(qmax - qmin));
  const zeroPointFromMin = f(qmin - f(min / scale));
  const zeroPointFromMax = f(qmax - f(max / scale));
  const errorFromMin = f(Math.abs(qmin) + Math.abs(f(min / scale)));
  const errorFromMax = f(Math.abs(qmax) + Math.abs(f(max / scale)));
  const zp = errorFromMin < errorFromMax ? zeroPointFromMin : zeroPointFromMax;
  return { scale, zeroPoint: zp < qmin ? qmin : zp > qmax ? qmax : roundAway(zp) };
}

/** TFLite test_util.h Quantize<T>: clamp(round(zero_point + f / scale)) in float32. */
function quantizeValues(values: number[], q: { scale: number; zeroPoint: number }, dtype: Dtype): Uint8Array | Int8Array {
  const [lo, hi] = dtype === 'uint8' ? [0, 255] : [-128, 127];
  const out = values.map((x) => Math.max(lo, Math.min(hi, roundAway(f(q.zeroPoint + f(f(x) / q.scale))))));
  return dtype === 'uint8' ? Uint8Array.from(out) : Int8Array.from(out);
}

interface TfliteCase {
  op: ElementwiseOp;
  dtype: Dtype;
  range1: [number, number];
  range2: [number, number];
  rangeOut: [number, number];
  shape1: number[];
  shape2: number[];
  in1: number[];
  in2: number[];
  want: number[];
  tolerance: number;
  /** RELU_N1_TO_1: CalculateActivationRangeQuantized clamps to the quantized [−1, 1]. */
  reluN1To1?: boolean;
}

function runTflite(c: TfliteCase): number[] {
  const p1 = quantizationParams(...c.range1, c.dtype);
  const p2 = quantizationParams(...c.range2, c.dtype);
  const po = quantizationParams(...c.rangeOut, c.dtype);
  const [lo, hi] = c.dtype === 'uint8' ? [0, 255] : [-128, 127];
  const output = { scale: po.scale, zeroPoint: po.zeroPoint } as ElementwiseProblem['output'];
  if (c.reluN1To1) {
    output.min = Math.max(lo, po.zeroPoint + roundAway(-1 / po.scale));
    output.max = Math.min(hi, po.zeroPoint + roundAway(1 / po.scale));
  }
  const result = elementwiseReference({
    op: c.op,
    a: tensor(quantizeValues(c.in1, p1, c.dtype), c.shape1, p1.scale, p1.zeroPoint),
    b: tensor(quantizeValues(c.in2, p2, c.dtype), c.shape2, p2.scale, p2.zeroPoint),
    output,
  });
  return Array.from(result.data, (q) => f(po.scale * (q - po.zeroPoint)));
}

function expectNear(got: number[], want: number[], tolerance: number, what: string) {
  expect(got.length, what).toBe(want.length);
  got.forEach((g, i) => {
    expect(Math.abs(g - want[i]), `${what} [${i}]: got ${g}, want ${want[i]} ± ${tolerance}`).toBeLessThanOrEqual(tolerance);
  });
}

describe("TFLite's quantized add/sub/mul tests (dequantized outputs within the tests' tolerances)", () => {
  const shape = [1, 2, 2, 1];
  for (const dtype of ['uint8', 'int8'] as const) {
    it(`add_test.cc QuantizedTestsNoActivation, ${dtype}`, () => {
      const inputs1 = [
        [0.1, 0.2, 0.3, 0.4],
        [-0.8, 0.2, 0.4, 0.7],
        [-0.8, 0.2, 0.7, 0.3],
      ];
      const inputs2 = [
        [0.6, 0.4, 0.3, 0.1],
        [0.6, 0.4, 0.5, -0.8],
        [0.6, 0.4, -0.8, 0.5],
      ];
      const results = [
        [0.7, 0.6, 0.6, 0.5],
        [-0.2, 0.6, 0.9, -0.1],
        [-0.2, 0.6, -0.1, 0.8],
      ];
      results.forEach((want, i) => {
        const got = runTflite({
          op: 'add',
          dtype,
          range1: [-1, 1],
          range2: [-1, 1],
          rangeOut: [-1, 1],
          shape1: shape,
          shape2: shape,
          in1: inputs1[i],
          in2: inputs2[i],
          want,
          tolerance: 2 / 255,
        });
        expectNear(got, want, 2 / 255, `test ${i}`);
      });
    });

    it(`add_test.cc QuantizedTestsActivationRELU_N1_TO_1, ${dtype}`, () => {
      const inputs1 = [
        [-0.8, 0.2, 0.9, 0.7],
        [-0.8, 0.2, 0.7, 0.3],
      ];
      const inputs2 = [
        [0.6, 0.4, 0.9, -0.8],
        [0.6, 0.4, -0.8, 0.5],
      ];
      const results = [
        [-0.2, 0.6, 1.0, -0.1],
        [-0.2, 0.6, -0.1, 0.8],
      ];
      results.forEach((want, i) => {
        const got = runTflite({
          op: 'add',
          dtype,
          range1: [-1, 1],
          range2: [-1, 1],
          rangeOut: [-1, 1],
          shape1: shape,
          shape2: shape,
          in1: inputs1[i],
          in2: inputs2[i],
          want,
          tolerance: 2 / 255,
          reluN1To1: true,
        });
        expectNear(got, want, 2 / 255, `test ${i}`);
      });
    });

    it(`sub_test.cc QuantizedTestsNoActivation, ${dtype}`, () => {
      const inputs1 = [
        [0.1, 0.2, 0.3, 0.4],
        [-0.2, 0.2, 0.4, 0.7],
        [-0.01, 0.2, 0.7, 0.3],
      ];
      const inputs2 = [
        [0.6, 0.4, 0.3, 0.1],
        [0.6, 0.4, 0.5, -0.2],
        [0.6, 0.4, -0.18, 0.5],
      ];
      const results = [
        [-0.5, -0.2, 0.0, 0.3],
        [-0.8, -0.2, -0.1, 0.9],
        [-0.61, -0.2, 0.88, -0.2],
      ];
      results.forEach((want, i) => {
        const got = runTflite({
          op: 'sub',
          dtype,
          range1: [-0.7, 0.7],
          range2: [-0.6, 0.6],
          rangeOut: [-0.9, 0.9],
          shape1: shape,
          shape2: shape,
          in1: inputs1[i],
          in2: inputs2[i],
          want,
          tolerance: 1.8 / 255,
        });
        expectNear(got, want, 1.8 / 255, `test ${i}`);
      });
    });

    it(`mul_test.cc NoActivation and NoActivationLargeMultiplier, ${dtype}`, () => {
      const step = 2 / 255;
      expectNear(
        runTflite({
          op: 'mul',
          dtype,
          range1: [-1, 1],
          range2: [-1, 1],
          rangeOut: [-1, 1],
          shape1: shape,
          shape2: shape,
          in1: [-0.8, 0.2, 0.9, 0.7],
          in2: [0.6, 0.4, 0.9, 0.8],
          want: [],
          tolerance: 0,
        }),
        [-0.48, 0.08, 0.81, 0.56],
        2 * step + step * step,
        'NoActivation',
      );
      // "Intentionally pathological output range much narrower than needed ... the multiplier > 1 case."
      expectNear(
        runTflite({
          op: 'mul',
          dtype,
          range1: [-100, 100],
          range2: [-100, 100],
          rangeOut: [-10, 10],
          shape1: shape,
          shape2: shape,
          in1: [-4, 2, 3, 1],
          in2: [-1, -3, 4, 2],
          want: [],
          tolerance: 0,
        }),
        [4, -6, 10, 2],
        1.4,
        'NoActivationLargeMultiplier',
      );
    });

    it(`mul_test.cc WithBroadcast (a scalar second input; multipliers below and above 1), ${dtype}`, () => {
      for (const s of [[6], [2, 3], [2, 1, 3], [1, 3, 1, 2]]) {
        for (const range of [
          [-3, 3],
          [-6, 6],
        ] as [number, number][]) {
          const got = runTflite({
            op: 'mul',
            dtype,
            range1: range,
            range2: range,
            rangeOut: [-0.2, 0.2],
            shape1: s,
            shape2: [],
            in1: [-2.0, 0.2, 0.7, 0.8, 1.1, 2.0],
            in2: [0.1],
            want: [],
            tolerance: 0,
          });
          expectNear(got, [-0.2, 0.02, 0.07, 0.08, 0.11, 0.2], (2 * 6) / 255, `shape (${s}) range ${range}`);
        }
      }
    });

    it(`mul_test.cc QuantizedWithMixedBroadcast (both inputs broadcast, both orders), ${dtype}`, () => {
      const base = [2, 3, 1, 2];
      const shapes = [
        [1, 1, 3, 2],
        [1, 3, 1, 2],
        [2, 1, 3, 1],
        [2, 3, 1, 1],
      ];
      const outputs = [
        [
          -0.06, 0.69, 0.12, 1.15, -0.3, 2.07, 0.18, 0.15, -0.36, 0.25, 0.9, 0.45, 0.16, -0.33, -0.32, -0.55, 0.8, -0.99, 0.24, 0.84, -0.48,
          1.4, 1.2, 2.52, -0.32, 0.0, 0.64, 0.0, -1.6, 0.0, 0.14, -0.66, -0.28, -1.1, 0.7, -1.98,
        ],
        [-0.06, 0.69, -0.36, 0.25, 0.8, -0.99, 0.24, 0.84, 0.64, 0.0, 0.7, -1.98],
        [
          -0.06, 0.46, -0.09, 0.69, 0.12, -0.92, 0.18, 0.1, 0.27, 0.15, -0.36, -0.2, 0.16, -0.22, 0.24, -0.33, -0.32, 0.44, 0.6, 1.4, 1.2,
          2.8, 1.08, 2.52, -0.8, 0.0, -1.6, 0.0, -1.44, 0.0, 0.35, -1.1, 0.7, -2.2, 0.63, -1.98,
        ],
        [-0.06, 0.46, 0.27, 0.15, -0.32, 0.44, 0.6, 1.4, -1.6, 0.0, 0.63, -1.98],
      ];
      const x = [-0.3, 2.3, 0.9, 0.5, 0.8, -1.1, 1.2, 2.8, -1.6, 0.0, 0.7, -2.2];
      const y = [0.2, 0.3, -0.4, 0.5, 1.0, 0.9];
      const r: [number, number] = [-3, 3];
      shapes.forEach((s, i) => {
        const tolerance = (2 * 6) / 255;
        expectNear(
          runTflite({ op: 'mul', dtype, range1: r, range2: r, rangeOut: r, shape1: base, shape2: s, in1: x, in2: y, want: [], tolerance }),
          outputs[i],
          tolerance,
          `(${base}) * (${s})`,
        );
        expectNear(
          runTflite({ op: 'mul', dtype, range1: r, range2: r, rangeOut: r, shape1: s, shape2: base, in1: y, in2: x, want: [], tolerance }),
          outputs[i],
          tolerance,
          `(${s}) * (${base})`,
        );
      });
    });
  }
});

// ---- the fixed-point form of scales -------------------------------------------------------------------

describe('scaleToFixedPoint (alignedAdd/alignedSub)', () => {
  it('known scales, the m = 256 carry, powers of two', () => {
    expect(scaleToFixedPoint(0.05)).toEqual({ mantissa: 205, frac: 12 });
    expect(scaleToFixedPoint(0.1)).toEqual({ mantissa: 205, frac: 11 });
    expect(scaleToFixedPoint(0.25)).toEqual({ mantissa: 128, frac: 9 });
    expect(scaleToFixedPoint(1)).toEqual({ mantissa: 128, frac: 7 });
    expect(scaleToFixedPoint(0.999)).toEqual({ mantissa: 128, frac: 7 }); // 255.74 rounds to 256: m = 128, e + 1
    expect(scaleToFixedPoint(255.5 / 256)).toEqual({ mantissa: 128, frac: 7 }); // a tie, away from zero
    expect(scaleToFixedPoint(255.49 / 256)).toEqual({ mantissa: 255, frac: 8 });
    expect(scaleToFixedPoint(1000)).toEqual({ mantissa: 250, frac: -2 }); // 1000 = 250 · 2^2
    expect(scaleToFixedPoint(2 ** -1074)).toEqual({ mantissa: 128, frac: 1081 }); // the smallest subnormal
  });

  it("agrees with the oracle's derivation from the IEEE-754 bits on 20000 random scales", () => {
    const rng = new Rng(0x5ca1e);
    for (let i = 0; i < 20000; i++) {
      const s = i % 4 === 0 ? Math.fround(2 ** (rng.float() * 80 - 40)) : 2 ** (rng.float() * 200 - 100) * (1 + rng.float());
      const want = alignedFixedPoint(s);
      expect(scaleToFixedPoint(s), `scale ${s}`).toEqual({ mantissa: want.m, frac: want.frac });
    }
  });
});

// ---- broadcasting ---------------------------------------------------------------------------------------

describe('numpy broadcasting', () => {
  it('broadcast shapes', () => {
    expect(broadcastShapes([2, 1, 3], [4, 1])).toEqual([2, 4, 3]);
    expect(broadcastShapes([], [3, 1, 2, 5])).toEqual([3, 1, 2, 5]);
    expect(broadcastShapes([5], [])).toEqual([5]);
    expect(broadcastShapes([], [])).toEqual([]);
    expect(broadcastShapes([0, 3], [1, 3])).toEqual([0, 3]);
    expect(broadcastShapes([1], [0])).toEqual([0]);
    expect(fieldOf(() => broadcastShapes([2, 3], [4, 3]))).toBe('b.shape');
    expect(fieldOf(() => broadcastShapes([0], [2]))).toBe('b.shape');
  });

  it('a (2,1,3) + (4,1) add equals the explicit loop', () => {
    const a = u8(...Array.from({ length: 6 }, (_, i) => 10 * i));
    const b = u8(1, 2, 3, 4);
    const p: ElementwiseProblem = {
      op: 'add',
      a: tensor(a, [2, 1, 3], 1, 0),
      b: tensor(b, [4, 1], 1, 0),
      output: { scale: 1, zeroPoint: 0 },
    };
    const r = elementwiseReference(p);
    expect(r.shape).toEqual([2, 4, 3]);
    const want: number[] = [];
    for (let i = 0; i < 2; i++) for (let j = 0; j < 4; j++) for (let k = 0; k < 3; k++) want.push(a[i * 3 + k] + b[j]);
    expect(Array.from(r.data)).toEqual(want);
  });

  it('Fortran-order inputs give what their C-order transposes give', () => {
    const rng = new Rng(7);
    const [R, C] = [3, 5];
    const logical = Array.from({ length: R * C }, () => rng.int(-128, 127));
    const cData = Int8Array.from(logical);
    const fData = new Int8Array(R * C);
    for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) fData[c * R + r] = logical[r * C + c];
    const b = tensor(i8(3, -7, 100, -128, 127), [5], 0.03, -5);
    for (const op of ['add', 'mul', 'alignedSub'] as const) {
      const output = { scale: 0.05, zeroPoint: 1 };
      const viaC = run({ op, a: tensor(cData, [R, C], 0.02, 4), b, output });
      const viaF = run({ op, a: tensor(fData, [R, C], 0.02, 4, { fortranOrder: true }), b, output });
      expect(viaF, op).toEqual(viaC);
    }
  });

  it('empty dimensions give an empty result of the broadcast shape', () => {
    const r = elementwiseReference({
      op: 'add',
      a: tensor(u8(), [0, 3], 1, 0),
      b: tensor(u8(1, 2, 3), [1, 3], 1, 0),
      output: { scale: 1, zeroPoint: 0 },
    });
    expect(r.shape).toEqual([0, 3]);
    expect(r.data.length).toBe(0);
  });

  it('an empty result with a huge dimension is made at once, not looped over (a [2^40, 0] output)', () => {
    const r = elementwiseReference({
      op: 'add',
      a: tensor(u8(), [2 ** 40, 0], 1, 0),
      b: tensor(u8(1), [1, 1], 1, 0),
      output: { scale: 1, zeroPoint: 0 },
    });
    expect([r.shape, r.data.length]).toEqual([[2 ** 40, 0], 0]);
  });

  it('a problem that is not an object is an InputError naming problem', () => {
    for (const bad of [null, undefined, 'add', 42]) {
      expect(() => elementwiseReference(bad as never), String(bad)).toThrow(
        expect.objectContaining({ name: 'InputError', field: 'problem' }),
      );
    }
  });

  it('per-axis channels follow the input under broadcasting', () => {
    // a: shape (3, 1), per-axis along 0 (one scale per row); b: shape (1, 4). Output (3, 4).
    const p: ElementwiseProblem = {
      op: 'alignedAdd',
      a: tensor(u8(4, 4, 4), [3, 1], [1, 2, 4], 0, { axis: 0 }),
      b: tensor(u8(0, 1, 2, 3), [1, 4], [1, 1, 1, 1], 0, { axis: 1 }),
      output: { scale: 1, zeroPoint: 0 },
    };
    expect(run(p)).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19]);
  });

  it('elementwise() on the cpu backend says so', async () => {
    const r = await elementwise(
      { op: 'mul', a: tensor(u8(3), [1], 1, 0), b: tensor(u8(4), [1], 1, 0), output: { scale: 1, zeroPoint: 0 } },
      { backend: 'cpu' },
    );
    expect([r.backend, Array.from(r.data)]).toEqual(['cpu', [12]]);
  });
});

// ---- every error ------------------------------------------------------------------------------------------

describe('InputErrors of the API, each naming its field', () => {
  const ok = (): ElementwiseProblem => ({
    op: 'alignedAdd',
    a: tensor(u8(1, 2, 3, 4, 5, 6), [2, 3], 0.1, 3),
    b: tensor(u8(7, 8, 9), [3], 0.2, 5),
    output: { scale: 0.3, zeroPoint: 9 },
  });
  const cases: Array<[string, (p: ElementwiseProblem) => void, string]> = [
    [
      'unknown op',
      (p) => {
        (p as { op: string }).op = 'div';
      },
      'op',
    ],
    [
      'missing output',
      (p) => {
        delete (p as Partial<ElementwiseProblem>).output;
      },
      'output',
    ],
    [
      'a not 8-bit',
      (p) => {
        (p.a as { data: unknown }).data = new Int16Array(6);
      },
      'a.data',
    ],
    [
      'dtypes differ',
      (p) => {
        p.b.data = i8(7, 8, 9);
      },
      'b.data',
    ],
    [
      'shape/data mismatch',
      (p) => {
        p.a.shape = [2, 2];
      },
      'a.shape',
    ],
    [
      '5-D',
      (p) => {
        p.a.shape = [1, 2, 1, 3, 1];
      },
      'a.shape',
    ],
    [
      'fortranOrder not a boolean',
      (p) => {
        (p.b as { fortranOrder?: unknown }).fortranOrder = 'yes';
      },
      'b.fortranOrder',
    ],
    [
      'negative size',
      (p) => {
        p.b.shape = [-3];
      },
      'b.shape',
    ],
    [
      'incompatible shapes',
      (p) => {
        p.b.data = u8(1, 2);
        p.b.shape = [2];
      },
      'b.shape',
    ],
    [
      'zero scale',
      (p) => {
        p.a.scale = 0;
      },
      'a.scale',
    ],
    [
      'NaN scale',
      (p) => {
        p.b.scale = NaN;
      },
      'b.scale',
    ],
    [
      'infinite output scale',
      (p) => {
        p.output.scale = Infinity;
      },
      'output.scale',
    ],
    [
      'a.zeroPoint above uint8',
      (p) => {
        p.a.zeroPoint = 256;
      },
      'a.zeroPoint',
    ],
    [
      'b.zeroPoint not an integer',
      (p) => {
        p.b.zeroPoint = 1.5;
      },
      'b.zeroPoint',
    ],
    [
      'output.zeroPoint below uint8',
      (p) => {
        p.output.zeroPoint = -1;
      },
      'output.zeroPoint',
    ],
    [
      'output.min out of range',
      (p) => {
        p.output.min = -5;
      },
      'output.min',
    ],
    [
      'output.max out of range',
      (p) => {
        p.output.max = 300;
      },
      'output.max',
    ],
    [
      'min above max',
      (p) => {
        p.output.min = 100;
        p.output.max = 99;
      },
      'output.max',
    ],
    [
      'axis without per-axis scales',
      (p) => {
        p.a.axis = 0;
      },
      'a.axis',
    ],
    [
      'per-axis without axis',
      (p) => {
        p.a.scale = [0.1, 0.2];
      },
      'a.axis',
    ],
    [
      'axis out of range',
      (p) => {
        p.a.scale = [0.1, 0.2];
        p.a.axis = 2;
      },
      'a.axis',
    ],
    [
      'wrong number of scales',
      (p) => {
        p.a.scale = [0.1, 0.2, 0.3];
        p.a.axis = 0;
      },
      'a.scale',
    ],
    [
      'a bad per-axis scale',
      (p) => {
        p.b.scale = [0.1, -0.2, 0.3];
        p.b.axis = 0;
      },
      'b.scale[1]',
    ],
    [
      'per-axis scales for add',
      (p) => {
        p.op = 'add';
        p.a.scale = [0.1, 0.2];
        p.a.axis = 0;
      },
      'a.scale',
    ],
    [
      'per-axis scales for mul',
      (p) => {
        p.op = 'mul';
        p.b.scale = [0.1, 0.2, 0.3];
        p.b.axis = 0;
      },
      'b.scale',
    ],
    [
      'aligned shift above 15 (per tensor)',
      (p) => {
        p.b.scale = 0.1 * 2 ** -16;
      },
      'a.scale',
    ],
    [
      'aligned shift above 15 (per axis)',
      (p) => {
        p.b.scale = [0.1, 0.1 * 2 ** 17, 0.1];
        p.b.axis = 0;
      },
      'b.scale[1]',
    ],
    [
      'aligned output multiplier too large',
      (p) => {
        p.output.scale = 2 ** -60;
      },
      'output.scale',
    ],
    [
      'add output multiplier >= 1',
      (p) => {
        p.op = 'add';
        p.output.scale = (2 * 0.2) / 2 ** 20;
      },
      'output.scale',
    ],
    [
      'sub output multiplier exactly 1',
      (p) => {
        p.op = 'sub';
        p.output.scale = (2 * 0.2) / 2 ** 20;
      },
      'output.scale',
    ],
    [
      'sub output multiplier too large',
      (p) => {
        p.op = 'sub';
        p.output.scale = 2 ** -60;
      },
      'output.scale',
    ],
    [
      'mul output multiplier too large',
      (p) => {
        p.op = 'mul';
        p.output.scale = 0.02 * 2 ** -40;
      },
      'output.scale',
    ],
  ];
  it.each(cases)('%s', (_name, spoil, field) => {
    const p = ok();
    expect(fieldOf(() => prepareElementwise(p))).toBe('(no error)');
    spoil(p);
    expect(fieldOf(() => prepareElementwise(p))).toBe(field);
  });

  it('an empty per-axis dimension', () => {
    const p: ElementwiseProblem = {
      op: 'alignedAdd',
      a: tensor(u8(), [0, 2], [], 0, { axis: 0 }),
      b: tensor(u8(1), [], 1, 0),
      output: { scale: 1, zeroPoint: 0 },
    };
    expect(fieldOf(() => prepareElementwise(p))).toBe('a.scale');
  });

  it('the message says what is wrong', () => {
    const p = ok();
    p.b.scale = 0.1 * 2 ** -16;
    expect(() => prepareElementwise(p)).toThrow(/a\.scale: needs an alignment shift of 1[67] bits .*at most 15/);
  });
});

describe('the spec parser (src/cli/elementwise-spec.ts)', () => {
  const files: Record<string, NpyArray> = {
    'a.npy': { dtype: 'uint8', shape: [2, 3], fortranOrder: false, data: u8(1, 2, 3, 4, 5, 6) },
    'b.npy': { dtype: 'uint8', shape: [3], fortranOrder: false, data: u8(7, 8, 9) },
    'i8.npy': { dtype: 'int8', shape: [3], fortranOrder: false, data: i8(7, 8, 9) },
    'f.npy': { dtype: 'float32', shape: [3], fortranOrder: false, data: Float32Array.from([1, 2, 3]) },
    '5d.npy': { dtype: 'uint8', shape: [1, 1, 1, 1, 3], fortranOrder: false, data: u8(1, 2, 3) },
    'x.npy': { dtype: 'uint8', shape: [2], fortranOrder: false, data: u8(1, 2) },
  };
  const readFile = (path: string): Uint8Array => {
    const name = path.split('/').pop()!;
    if (name === 'garbage.npy') return u8(1, 2, 3);
    const arr = files[name];
    if (!arr) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
    return serializeNpy(arr);
  };
  const ok = () =>
    ({
      op: 'alignedAdd',
      a: { data: 'a.npy', scale: 0.05, zeroPoint: 100 } as Record<string, unknown>,
      b: { data: 'b.npy', scale: 0.1, zeroPoint: 120 } as Record<string, unknown>,
      output: { scale: 0.15, zeroPoint: 110, min: 0, max: 255 } as Record<string, unknown>,
      out: 'c.npy',
    }) as Record<string, unknown> & { a: Record<string, unknown>; b: Record<string, unknown>; output: Record<string, unknown> };
  const parse = (spec: Record<string, unknown>) => parseElementwiseSpec(spec, '/spec/dir', readFile);

  it('the contract example parses into the problem', () => {
    const s = parse(ok());
    expect(s.out).toBe('/spec/dir/c.npy');
    expect(s.problem.op).toBe('alignedAdd');
    expect(s.problem.a).toMatchObject({ shape: [2, 3], scale: 0.05, zeroPoint: 100, fortranOrder: false });
    expect(s.problem.output).toEqual({ scale: 0.15, zeroPoint: 110, min: 0, max: 255 });
    const perAxis = ok();
    perAxis.a = { data: 'a.npy', scale: [0.1, 0.2, 0.3], axis: 1, zeroPoint: 0 };
    expect(parse(perAxis).problem.a).toMatchObject({ scale: [0.1, 0.2, 0.3], axis: 1 });
  });

  const cases: Array<[string, (s: ReturnType<typeof ok>) => void, string]> = [
    [
      'unknown top-level field',
      (s) => {
        s.extra = 1;
      },
      'extra',
    ],
    [
      'unknown op',
      (s) => {
        s.op = 'divide';
      },
      'op',
    ],
    [
      'missing out',
      (s) => {
        delete s.out;
      },
      'out',
    ],
    [
      'a not an object',
      (s) => {
        (s as Record<string, unknown>).a = 'a.npy';
      },
      'a',
    ],
    [
      'unknown field in b',
      (s) => {
        s.b.scales = 1;
      },
      'b.scales',
    ],
    [
      'missing a.data',
      (s) => {
        delete s.a.data;
      },
      'a.data',
    ],
    [
      'missing file',
      (s) => {
        s.a.data = 'nope.npy';
      },
      'a.data',
    ],
    [
      'not an .npy',
      (s) => {
        s.b.data = 'garbage.npy';
      },
      'b.data',
    ],
    [
      'float data',
      (s) => {
        s.b.data = 'f.npy';
      },
      'b.data',
    ],
    [
      '5-D data',
      (s) => {
        s.b.data = '5d.npy';
      },
      'b.data',
    ],
    [
      'dtypes differ',
      (s) => {
        s.b.data = 'i8.npy';
      },
      'b.data',
    ],
    [
      'shapes do not broadcast',
      (s) => {
        s.b.data = 'x.npy';
      },
      'b.data',
    ],
    [
      'missing a.scale',
      (s) => {
        delete s.a.scale;
      },
      'a.scale',
    ],
    [
      'string scale',
      (s) => {
        s.a.scale = '0.05';
      },
      'a.scale',
    ],
    [
      'string in a scale array',
      (s) => {
        s.a.scale = [0.1, 'x', 0.3];
        s.a.axis = 1;
      },
      'a.scale[1]',
    ],
    [
      'scale array for add',
      (s) => {
        s.op = 'add';
        s.a.scale = [0.1, 0.2, 0.3];
        s.a.axis = 1;
      },
      'a.scale',
    ],
    [
      'scale array without axis',
      (s) => {
        s.a.scale = [0.1, 0.2, 0.3];
      },
      'a.axis',
    ],
    [
      'axis without scale array',
      (s) => {
        s.b.axis = 0;
      },
      'b.axis',
    ],
    [
      'axis not an integer',
      (s) => {
        s.a.scale = [0.1, 0.2, 0.3];
        s.a.axis = '1';
      },
      'a.axis',
    ],
    [
      'missing zeroPoint',
      (s) => {
        delete s.b.zeroPoint;
      },
      'b.zeroPoint',
    ],
    [
      'zeroPoint out of range',
      (s) => {
        s.b.zeroPoint = 256;
      },
      'b.zeroPoint',
    ],
    [
      'missing output',
      (s) => {
        delete (s as Record<string, unknown>).output;
      },
      'output',
    ],
    [
      'unknown output field',
      (s) => {
        s.output.clamp = 1;
      },
      'output.clamp',
    ],
    [
      'missing output.scale',
      (s) => {
        delete s.output.scale;
      },
      'output.scale',
    ],
    [
      'output.min not an integer',
      (s) => {
        s.output.min = 0.5;
      },
      'output.min',
    ],
    [
      'output.max out of range',
      (s) => {
        s.output.max = 256;
      },
      'output.max',
    ],
    [
      'output.min above max',
      (s) => {
        s.output.min = 200;
        s.output.max = 100;
      },
      'output.max',
    ],
    [
      'alignment shift above 15',
      (s) => {
        s.b.scale = 1e-7;
      },
      'a.scale',
    ],
  ];
  it.each(cases)('%s', (_name, spoil, field) => {
    const s = ok();
    expect(fieldOf(() => parse(s))).toBe('(no error)');
    spoil(s);
    expect(fieldOf(() => parse(s))).toBe(field);
  });
});

describe('qgemm run with an unknown op', () => {
  const dir = mkdtempSync(join(tmpdir(), 'qgemm-elementwise-unit-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it('exits 2 and lists every op', async () => {
    const spec = join(dir, 'spec.json');
    writeFileSync(spec, JSON.stringify({ op: 'divide', out: 'o.npy' }));
    const write = process.stderr.write.bind(process.stderr);
    let stderr = '';
    process.stderr.write = ((c: string) => ((stderr += c), true)) as typeof process.stderr.write;
    let code: number;
    try {
      code = await main(['run', spec, '--backend', 'cpu']);
    } finally {
      process.stderr.write = write;
    }
    expect(code).toBe(2);
    expect(stderr).toContain(
      'op: unknown op "divide" (expected one of: gemm, add, sub, mul, alignedAdd, alignedSub, fullyConnected, conv2d, sequential)',
    );
  });
});
