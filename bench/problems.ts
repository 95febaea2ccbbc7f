// The data every implementation multiplies: uint8 x uint8 operands from a seeded generator, scalar zero
// points in 0..255 (so that onnxruntime's MatMulInteger takes the very same problem), and the output
// pipeline of this project's rows:
//   'uint8' (default, what a quantized inference engine runs after each layer, TFLite-style): per-column
//           bias, per-column scaleInt32ByFixedPointAndExponent (multipliers from quantizeMultiplier),
//           + output zero point 128, saturatingCast to uint8;
//   'int32': the raw int32 accumulators (what MatMulInteger returns).
// tfjs multiplies the same values as f32, (q - zeroPoint) as floats.
// A convolution layer (shape.conv) has its own data (ShapeData.conv): a uint8 NHWC input and a uint8 OHWI
// filter with the same zero points, TFLite-like parameters (float32 scales, a per-tensor filter scale as
// legacy uint8 models have, an int32 bias, output zero point 128) and the output stages the library's
// conv2d derives from them (src/layers/layers.ts layerGemm, kernel path 'xnnpack'); its `problem` is the
// reference GEMM over the layer's im2col rows, built here with plain loops, for verification.
//
// generateOperands and hashBytes are self-contained on purpose (no outside names, plain loops): the
// Chrome runtime injects their source into the page, so that the page makes the same operands and
// hashes its results the same way without shipping megabytes through the DevTools protocol.

import { type Conv2dParams, convGeometry, layerGemm } from '../src/layers/layers.ts';
import type { PatchGeometry } from '../src/pack/patches.ts';
import { quantizeMultiplier } from '../src/quant/quantize.ts';
import type { BitDepth, GemmProblem, Operand, OutputStage } from '../src/types.ts';
import type { ConvLayer, Shape } from './shapes.ts';

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

/** The pipeline as plain JSON (Int32Array -> {int32: number[]}, Float32Array -> {float32: number[]}), for the page. */
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

export function pipelineToJson(stages: readonly OutputStage[]): StageJson[] {
  return stages.map((s) => {
    const out: StageJson = {};
    for (const [key, value] of Object.entries(s))
      out[key] =
        value instanceof Int32Array ? { int32: Array.from(value) } : value instanceof Float32Array ? { float32: Array.from(value) } : value;
    return out;
  });
}

/** The pipeline in words; `conv`: the run has convolution layers, whose uint8 rows run conv2d's stages. */
export function describePipeline(kind: PipelineKind, conv = false): string {
  return kind === 'uint8'
    ? 'int32 -> uint8: bias (per column) + scaleInt32ByFixedPointAndExponent (per column, double rounding) + 128, saturatingCast uint8' +
        (conv
          ? "; convolution layers: conv2d's stages from TFLite-like scales (kernel path 'xnnpack'): bias + requantizeFloat32 (per tensor) + 128, clamp, saturatingCast uint8"
          : '')
    : 'raw int32 accumulators (empty pipeline)';
}

/** Bit widths of the weights (rhs) that `--rhs-bits` runs: 8 (as given) or 4 (two values per byte). */
export const RHS_BITS = [8, 4] as const;
export type RhsBits = (typeof RHS_BITS)[number];

/**
 * The bitDepth of qgemm's rows with `rhsBits`-bit weights (--rhs-bits): none for 8 (the operands as
 * they are); for 4, lhs stays 8-bit and rhs is requantized to 4 bits with nearest rounding (the weights'
 * requantization happens once, in ctx.prepack, outside the timing) and stored two values per byte where
 * the adapter has dot4 (pack format 'u4k8-r128'). The GEMM is called, and verified, with the same bitDepth.
 */
export function bitDepthFor(rhsBits: RhsBits): BitDepth | undefined {
  return rhsBits === 8 ? undefined : { lhs: 8, rhs: rhsBits, rounding: 'nearest' };
}

/** The shape's problem as qgemm runs it with `rhsBits`-bit weights (bitDepthFor). */
export function problemFor(problem: GemmProblem, rhsBits: RhsBits): GemmProblem {
  const bitDepth = bitDepthFor(rhsBits);
  return bitDepth ? { ...problem, bitDepth } : problem;
}

/** A convolution layer's data (ShapeData.conv). */
export interface ConvData {
  /** NHWC [1, H, W, C]. */
  input: Uint8Array;
  /** OHWI [O, KH, KW, C]. */
  filter: Uint8Array;
  /** The patch geometry of the input (a PatchOperand's), TFLite's padding (convGeometry). */
  geometry: PatchGeometry;
  /** The layer's parameters as conv2d takes them ('uint8' pipeline; the 'int32' one runs the same GEMM with no stages). */
  params: Conv2dParams;
  /** The layer's GEMM as conv2d runs it (layerGemm): rhs = the filter as [K, O] column-major, zero points, the output stages. */
  gemm: Pick<GemmProblem, 'lhsZeroPoint' | 'rhsZeroPoint' | 'pipeline'> & { rhs: Operand };
  /** (q - zeroPoint) as f32 for tfjs: input NHWC, filter HWIO (tf.conv2d's layout); made on first use. */
  floats(): { input: Float32Array; filter: Float32Array };
}

/** One shape's data, made once and shared by every implementation. */
export interface ShapeData {
  shape: Shape;
  /** GEMM shapes: the operands; a convolution layer: its im2col rows and its filter as [K, O] row-major (those of `problem`). */
  lhs: Uint8Array;
  rhs: Uint8Array;
  /** The GEMM (a convolution layer: the reference GEMM over its im2col rows, which verification computes). */
  problem: GemmProblem;
  /** (q - zeroPoint) as f32, for tfjs; made on first use. */
  floats(): { lhs: Float32Array; rhs: Float32Array };
  /** A convolution layer (shape.conv): its input, filter, geometry and the GEMM conv2d derives. */
  conv?: ConvData;
}

/**
 * A convolution layer's operands: the lhs and rhs bytes of generateOperands(seed, H*W, O*KH*KW, C), read
 * as the NHWC input (H*W*C bytes) and the OHWI filter (O*KH*KW*C bytes). The Chrome page can make the
 * same with the same function.
 */
export function convOperands(seed: number, c: ConvLayer): { input: Uint8Array; filter: Uint8Array } {
  const { lhs, rhs } = generateOperands(seed, c.height * c.width, c.outChannels * c.filterHeight * c.filterWidth, c.channels);
  return { input: lhs, filter: rhs };
}

/** The patch geometry of a layer of batch 1 (TFLite's output size and leading padding). */
export function convPatchGeometry(c: ConvLayer): PatchGeometry {
  const gh = convGeometry(c.height, c.filterHeight, c.stride, 1, c.padding);
  const gw = convGeometry(c.width, c.filterWidth, c.stride, 1, c.padding);
  return {
    batch: 1,
    height: c.height,
    width: c.width,
    channels: c.channels,
    filterHeight: c.filterHeight,
    filterWidth: c.filterWidth,
    strideHeight: c.stride,
    strideWidth: c.stride,
    dilationHeight: 1,
    dilationWidth: 1,
    padTop: gh.pad,
    padLeft: gw.pad,
    outHeight: gh.out,
    outWidth: gw.out,
  };
}

/**
 * The layer's TFLite-like parameters: input scale 0.02 and zero point 119, uint8 filter with zero point
 * 131 and one scale 0.005 (legacy uint8 models: per tensor), a bias per output channel, output zero point
 * 128 and a scale that maps the accumulators' spread to about +-40 around it, no activation, kernel path
 * 'xnnpack' (the default: the requantizeFloat32 stage).
 */
export function convParams(c: ConvLayer, filter: Uint8Array): Conv2dParams {
  const k = c.filterHeight * c.filterWidth * c.channels;
  const inScale = Math.fround(0.02);
  const wScale = Math.fround(0.005);
  const bias = new Int32Array(c.outChannels);
  for (let o = 0; o < c.outChannels; o++) bias[o] = (((o * 2654435761) >>> 0) % 4001) - 2000;
  return {
    input: { scale: inScale, zeroPoint: LHS_ZERO_POINT },
    filter: { data: filter, shape: [c.outChannels, c.filterHeight, c.filterWidth, c.channels], scale: wScale, zeroPoint: RHS_ZERO_POINT },
    bias,
    stride: [c.stride, c.stride],
    padding: c.padding,
    output: { scale: Math.fround((inScale * wScale * Math.sqrt(k) * 74 * 74) / 40), zeroPoint: OUTPUT_ZERO_POINT },
    activation: 'NONE',
    kernelPath: 'xnnpack',
  };
}

/** The im2col rows of an NHWC input (batch 1): row (oh, ow), column (kh, kw, c); padded taps hold the zero point. Plain loops, for the reference. */
export function im2colRows(input: Uint8Array, g: PatchGeometry, zeroPoint: number): Uint8Array {
  const K = g.filterHeight * g.filterWidth * g.channels;
  const rows = new Uint8Array(g.outHeight * g.outWidth * K);
  let i = 0;
  for (let oh = 0; oh < g.outHeight; oh++)
    for (let ow = 0; ow < g.outWidth; ow++)
      for (let kh = 0; kh < g.filterHeight; kh++)
        for (let kw = 0; kw < g.filterWidth; kw++) {
          const ih = oh * g.strideHeight - g.padTop + kh * g.dilationHeight;
          const iw = ow * g.strideWidth - g.padLeft + kw * g.dilationWidth;
          const inside = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
          for (let ch = 0; ch < g.channels; ch++) rows[i++] = inside ? input[(ih * g.width + iw) * g.channels + ch] : zeroPoint;
        }
  return rows;
}

function makeConvData(shape: Shape, conv: ConvLayer, seed: number, pipeline: PipelineKind): ShapeData {
  const { input, filter } = convOperands(seed, conv);
  const geometry = convPatchGeometry(conv);
  const params = convParams(conv, filter);
  const { m, n, k } = shape;
  const derived = layerGemm('CONV_2D', 'uint8', k, params.filter, 'params.filter', n, params);
  const gemm = {
    rhs: derived.rhs as Operand,
    lhsZeroPoint: derived.lhsZeroPoint,
    rhsZeroPoint: derived.rhsZeroPoint,
    pipeline: pipeline === 'uint8' ? derived.pipeline : [],
  };
  // The reference GEMM: im2col rows x the filter as [K, O] row-major (OHWI is [K, O] column-major).
  const lhs = im2colRows(input, geometry, LHS_ZERO_POINT);
  const rhs = new Uint8Array(k * n);
  for (let o = 0; o < n; o++) for (let kk = 0; kk < k; kk++) rhs[kk * n + o] = filter[o * k + kk];
  const problem: GemmProblem = {
    lhs: { data: lhs, rows: m, cols: k, order: 'row-major' },
    rhs: { data: rhs, rows: k, cols: n, order: 'row-major' },
    lhsZeroPoint: gemm.lhsZeroPoint,
    rhsZeroPoint: gemm.rhsZeroPoint,
    pipeline: gemm.pipeline,
  };
  let floats: { input: Float32Array; filter: Float32Array } | undefined;
  const hwio = () => {
    // OHWI [O, KH*KW*C] -> HWIO [KH*KW*C, O]: the transposed filter, less the zero point.
    const out = new Float32Array(k * n);
    for (let kk = 0; kk < k; kk++) for (let o = 0; o < n; o++) out[kk * n + o] = filter[o * k + kk] - RHS_ZERO_POINT;
    return out;
  };
  const convData: ConvData = {
    input,
    filter,
    geometry,
    params,
    gemm,
    floats: () => (floats ??= { input: centered(input, LHS_ZERO_POINT), filter: hwio() }),
  };
  return {
    shape,
    lhs,
    rhs,
    problem,
    floats: () => {
      throw new Error(`${shape.m}x${shape.n}x${shape.k}: a convolution layer: use conv.floats()`);
    },
    conv: convData,
  };
}

/**
 * q - zeroPoint as f32, the peers' operands. A loop, not Float32Array.from(q, fn): V8 collects an
 * iterable source into a JS array first, which exhausts the heap at 11008 x 11008.
 */
function centered(q: Uint8Array, zeroPoint: number): Float32Array {
  const out = new Float32Array(q.length);
  for (let i = 0; i < q.length; i++) out[i] = q[i] - zeroPoint;
  return out;
}

export function makeShapeData(shape: Shape, seed: number, pipeline: PipelineKind): ShapeData {
  if (shape.conv) return makeConvData(shape, shape.conv, seed, pipeline);
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
        lhs: centered(lhs, LHS_ZERO_POINT),
        rhs: centered(rhs, RHS_ZERO_POINT),
      }),
  };
}
