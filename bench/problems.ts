// The data every implementation multiplies: uint8 x uint8 operands from a seeded generator, scalar zero
// points in 0..255 (so that onnxruntime's MatMulInteger takes the very same problem), and the output
// pipeline of this project's rows:
//   'uint8' (default, what a quantized inference engine runs after each layer, TFLite-style): per-column
//           bias, per-column scaleInt32ByFixedPointAndExponent (multipliers from quantizeMultiplier),
//           + output zero point 128, saturatingCast to uint8;
//   'int32': the raw int32 accumulators (what MatMulInteger returns).
// tfjs multiplies the same values as f32, (q - zeroPoint) as floats.
//
// generateOperands and hashBytes are self-contained on purpose (no outside names, plain loops): the
// Chrome runtime injects their source into the page, so that the page makes the same operands and
// hashes its results the same way without shipping megabytes through the DevTools protocol.

import { quantizeMultiplier } from '../src/quant/quantize.ts';
import type { BitDepth, GemmProblem, OutputStage } from '../src/types.ts';
import type { Shape } from './shapes.ts';

export type PipelineKind = 'uint8' | 'int32';

export const LHS_ZERO_POINT = 119;
export const RHS_ZERO_POINT = 131;
export const OUTPUT_ZERO_POINT = 128;

/** Uniform uint8 operands, row-major: lhs [m,k], rhs [k,n]. Deterministic in (seed, m, n, k). */
export function generateOperands(seed: number, m: number, n: number, k: number): { lhs: Uint8Array; rhs: Uint8Array } {
  // mulberry32, seeded from the shape too so that every shape gets its own data.
  let state = (seed ^ Math.imul(m, 0x9e3779b1) ^ Math.imul(n, 0x85ebca6b) ^ Math.imul(k, 0xc2b2ae35)) >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  const fill = (a: Uint8Array) => {
    let i = 0;
    for (; i + 4 <= a.length; i += 4) {
      const r = next();
      a[i] = r & 255;
      a[i + 1] = (r >>> 8) & 255;
      a[i + 2] = (r >>> 16) & 255;
      a[i + 3] = r >>> 24;
    }
    for (; i < a.length; i++) a[i] = next() & 255;
    return a;
  };
  const lhs = fill(new Uint8Array(m * k));
  const rhs = fill(new Uint8Array(k * n));
  return { lhs, rhs };
}

/** Two independent 32-bit FNV-1a style hashes of the bytes, as 16 hex digits (equal outputs <=> equal hashes, in practice). */
export function hashBytes(bytes: Uint8Array): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ bytes.length;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    h1 = Math.imul(h1 ^ b, 0x01000193);
    h2 = Math.imul(h2 ^ b ^ (i & 0xff), 0x5bd1e995);
    h2 ^= h2 >>> 13;
  }
  return (h1 >>> 0).toString(16).padStart(8, '0') + (h2 >>> 0).toString(16).padStart(8, '0');
}

/** The pipeline as plain JSON (Int32Array -> number[]), for the page. */
export type StageJson = Record<string, unknown>;

/** The output pipeline of this project's rows for a shape (deterministic). */
export function makePipeline(kind: PipelineKind, shape: Pick<Shape, 'n' | 'k'>): OutputStage[] {
  if (kind === 'int32') return [];
  const { n, k } = shape;
  // |q - zp| is about 74 on average for uniform uint8 data, so acc has a spread of about sqrt(k) * 74^2;
  // map that to about +-40 around the output zero point, with per-channel scales differing by up to 25%.
  const base = 40 / (Math.sqrt(k) * 74 * 74);
  const multiplier = new Int32Array(n);
  const exponent = new Int32Array(n);
  const bias = new Int32Array(n);
  for (let c = 0; c < n; c++) {
    const q = quantizeMultiplier(base * (1 + 0.25 * (((c * 7919) % 101) / 101)));
    multiplier[c] = q.multiplier;
    exponent[c] = q.shift;
    bias[c] = (((c * 2654435761) >>> 0) % 4001) - 2000;
  }
  return [
    { type: 'bias', axis: 'col', values: bias },
    {
      type: 'scaleInt32ByFixedPointAndExponent',
      multiplier,
      exponent,
      offsetAfterShift: OUTPUT_ZERO_POINT,
      rounding: 'double',
      axis: 'col',
    },
    { type: 'saturatingCast', to: 'uint8' },
  ];
}

export function pipelineToJson(stages: OutputStage[]): StageJson[] {
  return stages.map((s) => {
    const out: StageJson = {};
    for (const [key, value] of Object.entries(s)) out[key] = value instanceof Int32Array ? { int32: Array.from(value) } : value;
    return out;
  });
}

export function describePipeline(kind: PipelineKind): string {
  return kind === 'uint8'
    ? 'int32 -> uint8: bias (per column) + scaleInt32ByFixedPointAndExponent (per column, double rounding) + 128, saturatingCast uint8'
    : 'raw int32 accumulators (empty pipeline)';
}

/** Bit widths of the weights (rhs) that `--rhs-bits` runs: 8 (as given) or 4 (two values per byte). */
export const RHS_BITS = [8, 4] as const;
export type RhsBits = (typeof RHS_BITS)[number];

/**
 * The bitDepth of qgemm's rows with `rhsBits`-bit weights (--rhs-bits): none for 8 (the operands as
 * they are); for 4, lhs stays 8-bit and rhs is requantized to 4 bits with nearest rounding (the weights'
 * requantization happens once, in ctx.prepack, outside the timing) and stored two values per byte where
 * the adapter has dot4 (pack format 'u4k8-r64'). The GEMM is called, and verified, with the same bitDepth.
 */
export function bitDepthFor(rhsBits: RhsBits): BitDepth | undefined {
  return rhsBits === 8 ? undefined : { lhs: 8, rhs: rhsBits, rounding: 'nearest' };
}

/** The shape's problem as qgemm runs it with `rhsBits`-bit weights (bitDepthFor). */
export function problemFor(problem: GemmProblem, rhsBits: RhsBits): GemmProblem {
  const bitDepth = bitDepthFor(rhsBits);
  return bitDepth ? { ...problem, bitDepth } : problem;
}

/** One shape's data, made once and shared by every implementation. */
export interface ShapeData {
  shape: Shape;
  lhs: Uint8Array;
  rhs: Uint8Array;
  problem: GemmProblem;
  /** (q - zeroPoint) as f32, for tfjs; made on first use. */
  floats(): { lhs: Float32Array; rhs: Float32Array };
}

export function makeShapeData(shape: Shape, seed: number, pipeline: PipelineKind): ShapeData {
  const { lhs, rhs } = generateOperands(seed, shape.m, shape.n, shape.k);
  const problem: GemmProblem = {
    lhs: { data: lhs, rows: shape.m, cols: shape.k, order: 'row-major' },
    rhs: { data: rhs, rows: shape.k, cols: shape.n, order: 'row-major' },
    lhsZeroPoint: LHS_ZERO_POINT,
    rhsZeroPoint: RHS_ZERO_POINT,
    pipeline: makePipeline(pipeline, shape),
  };
  let floats: { lhs: Float32Array; rhs: Float32Array } | undefined;
  return {
    shape,
    lhs,
    rhs,
    problem,
    floats: () =>
      (floats ??= {
        lhs: Float32Array.from(lhs, (v) => v - LHS_ZERO_POINT),
        rhs: Float32Array.from(rhs, (v) => v - RHS_ZERO_POINT),
      }),
  };
}
