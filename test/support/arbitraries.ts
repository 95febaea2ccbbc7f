// fast-check arbitraries of GemmProblem (src/types.ts) for the property tiers: the shape sweep of the
// style guide (1-10, 15-17, 31-33, 63-65 and odd rectangles), uint8/int8 operands in either storage
// order, scalar and per-channel zero points of any int32 value, and pipelines drawn from every stage
// kind with valid random parameters. Shared by the CPU property tests and the GPU tests.

import fc from 'fast-check';
import { INT32_MAX, INT32_MIN, type Axis, type GemmProblem, type Operand, type OutputStage, type Order } from '../../src/types.ts';

export const SWEEP = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 17, 31, 32, 33, 63, 64, 65];
export const ODD = [11, 13, 19, 23, 37, 47, 53, 71, 97];

export const int32 = fc.integer({ min: INT32_MIN, max: INT32_MAX });
/** Mostly small values, sometimes anything in int32 (to make the accumulator wrap). */
const zeroPointValue = fc.oneof({ weight: 4, arbitrary: fc.integer({ min: -300, max: 300 }) }, { weight: 1, arbitrary: int32 });
const dim = (dims: number[]) => fc.constantFrom(...dims);

export function arbOperand(rows: number, cols: number): fc.Arbitrary<Operand> {
  return fc
    .record({
      signed: fc.boolean(),
      order: fc.constantFrom<Order>('row-major', 'col-major'),
      seed: fc.integer(),
    })
    .map(({ signed, order, seed }) => {
      const data = signed ? new Int8Array(rows * cols) : new Uint8Array(rows * cols);
      let s = seed >>> 0;
      for (let i = 0; i < data.length; i++) {
        s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
        data[i] = s >>> 24; // typed array wraps into the signed range for Int8Array
      }
      return { data, rows, cols, order };
    });
}

function arbVector(length: number, value: fc.Arbitrary<number>): fc.Arbitrary<Int32Array> {
  return fc.array(value, { minLength: length, maxLength: length }).map((a) => Int32Array.from(a));
}

function arbPerChannel(axis: Axis, M: number, N: number, value: fc.Arbitrary<number>) {
  return fc.oneof(value, arbVector(axis === 'row' ? M : N, value));
}

/** One non-cast stage with valid random parameters. */
export function arbStage(M: number, N: number): fc.Arbitrary<OutputStage> {
  const axis = fc.constantFrom<Axis>('row', 'col');
  return fc.oneof(
    axis.chain((a) => arbVector(a === 'row' ? M : N, int32).map((values): OutputStage => ({ type: 'bias', axis: a, values }))),
    axis.chain((a) =>
      fc
        .record({
          offset: arbPerChannel(a, M, N, int32),
          multiplier: arbPerChannel(a, M, N, fc.oneof(fc.integer({ min: -1000, max: 1000 }), int32)),
          shift: fc.integer({ min: 0, max: 31 }),
        })
        .map((s): OutputStage => ({ type: 'quantizeDownInt32ToUint8Scale', ...s, axis: a })),
    ),
    fc
      .record({ multiplier: int32, shift: fc.integer({ min: 0, max: 31 }), offsetAfterShift: int32 })
      .map((s): OutputStage => ({ type: 'quantizeDownInt32ByFixedPoint', ...s })),
    fc.tuple(axis, fc.constantFrom<'double' | 'double-up' | 'single'>('double', 'double-up', 'single')).chain(([a, rounding]) =>
      fc
        .record({
          multiplier: arbPerChannel(a, M, N, int32),
          exponent: arbPerChannel(a, M, N, fc.integer({ min: -31, max: rounding === 'single' ? 30 : 31 })),
          offsetAfterShift: int32,
        })
        .map((s): OutputStage => ({ type: 'scaleInt32ByFixedPointAndExponent', ...s, rounding, axis: a })),
    ),
    // requantizeFloat32: finite float32 scales, mostly in a layer's range, sometimes anywhere (subnormal, huge, negative)
    fc.tuple(axis, fc.boolean(), int32).chain(([a, perChannel, zeroPoint]) => {
      const scale = fc.oneof(
        fc.float({ min: Math.fround(2 ** -24), max: 4, noNaN: true }),
        fc.float({ noNaN: true, noDefaultInfinity: true }),
      );
      const n = a === 'row' ? M : N;
      return (perChannel ? fc.array(scale, { minLength: n, maxLength: n }).map((v) => Float32Array.from(v)) : scale).map(
        (sc): OutputStage => ({ type: 'requantizeFloat32', scale: sc, zeroPoint, axis: a }),
      );
    }),
    fc.tuple(int32, int32).map(([a, b]): OutputStage => ({ type: 'clamp', min: Math.min(a, b), max: Math.max(a, b) })),
    fc.integer({ min: 1, max: (1 << 28) - 1 }).chain((amplitude) => {
      const limit = INT32_MAX - 8 * amplitude;
      return fc
        .integer({ min: -limit, max: limit })
        .map((zero): OutputStage => ({ type: 'tanh', realZeroAsInt32: zero, realAmplitudeAsInt32: amplitude }));
    }),
  );
}

export const arbCast: fc.Arbitrary<OutputStage> = fc.constantFrom<OutputStage>(
  { type: 'saturatingCast', to: 'uint8' },
  { type: 'saturatingCast', to: 'int8' },
  { type: 'saturatingCast', to: 'int16' },
  { type: 'truncatingCast', to: 'uint8' },
);

export function arbPipeline(M: number, N: number): fc.Arbitrary<OutputStage[]> {
  return fc
    .tuple(fc.array(arbStage(M, N), { maxLength: 4 }), fc.option(arbCast))
    .map(([stages, cast]) => (cast ? [...stages, cast] : stages));
}

export function arbProblemOfShape(M: number, N: number, K: number): fc.Arbitrary<GemmProblem> {
  return fc.record({
    lhs: arbOperand(M, K),
    rhs: arbOperand(K, N),
    lhsZeroPoint: fc.oneof(zeroPointValue, arbVector(M, zeroPointValue)),
    rhsZeroPoint: fc.oneof(zeroPointValue, arbVector(N, zeroPointValue)),
    pipeline: arbPipeline(M, N),
    dstOrder: fc.constantFrom<Order>('row-major', 'col-major'),
  });
}

/** Shapes from the sweep and odd rectangles. */
export function arbProblem(dims: number[] = [...SWEEP, ...ODD]): fc.Arbitrary<GemmProblem> {
  return fc.tuple(dim(dims), dim(dims), dim(dims)).chain(([M, N, K]) => arbProblemOfShape(M, N, K));
}

/** Readable one-line description of a problem, for failure messages. */
export function describeProblem(p: GemmProblem): string {
  const t = (d: ArrayLike<number>) => (d instanceof Int8Array ? 'int8' : 'uint8');
  const zp = (z: unknown) => (z instanceof Int32Array ? `vec[${z.length}]` : String(z ?? 0));
  return (
    `M=${p.lhs.rows} N=${p.rhs.cols} K=${p.lhs.cols} lhs=${t(p.lhs.data)}/${p.lhs.order} rhs=${t(p.rhs.data)}/${p.rhs.order} ` +
    `zL=${zp(p.lhsZeroPoint)} zR=${zp(p.rhsZeroPoint)} dst=${p.dstOrder} pipeline=[${(p.pipeline ?? []).map((s) => s.type).join(',')}]`
  );
}
