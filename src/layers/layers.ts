// TFLite's FULLY_CONNECTED and CONV_2D as quantized layers (pack -> gemm -> output): the parameters as
// a .tflite file stores them (float32 scales, zero points, int8 weights with per-tensor or per-channel
// scales or legacy uint8 weights with a zero point, an int32 bias, a fused activation), TFLite's layouts
// (FC weights [N, K]; conv input NHWC, filter OHWI), one GEMM with the output stages ./derive.ts derives
// for the chosen kernel path. The FC weights are the GEMM's rhs as they lie ([N, K] is [K, N]
// column-major). conv2d lowers to the same GEMM over the input's patches (padded positions hold the input
// zero point, as in TFLite): on the GPU packed straight from the NHWC input in the GEMM's own pass (a
// PatchOperand lhs, src/pack/patches.wgsl), on the CPU as im2col rows built on the host; the output is
// NHWC directly.

import { checkOptions, gemm, type GemmOptions, onBackend } from '../api.ts';
import { InputError, LimitExceededError } from '../errors.ts';
import { im2col, MAX_PATCH_POSITION, type PatchGeometry } from '../pack/patches.ts';
import type { GpuContext, GpuGemmProblem } from '../scheduler/context.ts';
import type { GemmProblem, Operand, OperandData, OutputStage } from '../types.ts';
import {
  activationRange,
  deriveStages,
  float64Requantize,
  float64Scales,
  type FusedActivation,
  type KernelPath,
  type QuantParams,
  xnnpackTakesGemm,
} from './derive.ts';
import { checkDtypeKey, checkKnownKeys, everyItem, RESULT_KEYS } from '../problem/check.ts';
import { brief } from '../problem/echo.ts';
import { allocationLimit } from '../problem/dst.ts';
import { fcOutShape, type WeightZeroPoint, weightZeroPoint } from './tflite-params.ts';
import { checkDims, checkEffectiveScales, checkQuant, checkZeroPoint, shown, weightScales } from './validate.ts';

export type { FusedActivation, KernelPath, QuantParams } from './derive.ts';
export type { WeightZeroPoint } from './tflite-params.ts';

/** A tensor in C order. */
export interface Tensor {
  data: Uint8Array | Int8Array;
  shape: number[];
}

/** A layer's result: its tensor and the backend that ran its GEMM (as a GEMM's result says). */
export interface LayerResult extends Tensor {
  backend: 'cpu' | 'webgpu';
}

/** A layer's input: a tensor whose shape may be any array of sizes, a tuple, `number[]` or a readonly one. */
export interface TensorInput {
  data: Uint8Array | Int8Array;
  shape: readonly number[];
}

interface LayerWeights {
  data: Int8Array | Uint8Array;
  /** FULLY_CONNECTED [N, K]; CONV_2D OHWI [O, KH, KW, C]. Checked when called. */
  shape: readonly number[];
  /** Per-tensor, or one per output channel. */
  scale: number | Float32Array;
  /**
   * 0 for int8 (the default); legacy uint8 weights carry one. As a number, or as TFLite stores it: an
   * array of 1 or N equal values (per-channel int8 weights: all 0).
   */
  zeroPoint?: WeightZeroPoint | undefined;
}

/** The keys of each layer's params (the two interfaces below): another is a misspelling. */
export const LAYER_PARAM_KEYS = {
  fullyConnected: ['input', 'weights', 'bias', 'output', 'activation', 'kernelPath', 'keepNumDims'],
  conv2d: ['input', 'filter', 'bias', 'stride', 'dilation', 'padding', 'output', 'activation', 'kernelPath'],
} as const;

/**
 * A layer's params (`field`: 'params', or 'layers[2].params') with a key they do not have, at any level
 * (`activaton`, `weights.zeropoint`, `output.zeroPoin`): an InputError naming it, not a default silently used.
 */
export function checkLayerParamKeys(field: string, op: keyof typeof LAYER_PARAM_KEYS, params: unknown): void {
  if (!params || typeof params !== 'object') throw new InputError(field, `expected an object, got ${brief(params)}`);
  checkKnownKeys(field, params, LAYER_PARAM_KEYS[op]);
  const p = params as Record<string, unknown>;
  const weights = op === 'conv2d' ? 'filter' : 'weights';
  if (p[weights] && typeof p[weights] === 'object')
    checkKnownKeys(`${field}.${weights}`, p[weights], ['data', 'shape', 'scale', 'zeroPoint']);
  for (const q of ['input', 'output']) {
    if (p[q] && typeof p[q] === 'object') checkKnownKeys(`${field}.${q}`, p[q], ['scale', 'zeroPoint']);
  }
}

/** The keys of a layer's input tensor: data and shape, and a result's dtype and backend (checkTensorKeys). */
const TENSOR_KEYS = ['data', 'shape', ...RESULT_KEYS];

/** A tensor (`field`) with a key a Tensor does not have, or a dtype its data does not have: an InputError. */
export function checkTensorKeys(field: string, t: unknown): void {
  if (!t || typeof t !== 'object') return;
  checkKnownKeys(field, t, TENSOR_KEYS);
  const { data, dtype } = t as { data?: unknown; dtype?: unknown };
  if (data instanceof Uint8Array || data instanceof Int8Array) checkDtypeKey(field, dtype, dtypeOf(data, `${field}.data`));
}

/** A layer call's input and params with a key they do not have (checkLayerParamKeys). */
function checkLayerKeys(op: keyof typeof LAYER_PARAM_KEYS, input: unknown, params: unknown): void {
  checkTensorKeys('input', input);
  checkLayerParamKeys('params', op, params);
}

export interface FullyConnectedParams {
  input: QuantParams;
  /** [N, K], TFLite's layout. */
  weights: LayerWeights;
  /** Length N. */
  bias?: Int32Array | undefined;
  output: QuantParams;
  activation?: FusedActivation | undefined;
  kernelPath?: KernelPath | undefined;
  /** TFLite's keep_num_dims: the output keeps the input's shape, its last dimension (K) set to N. Default [M, N]. */
  keepNumDims?: boolean | undefined;
}

export interface Conv2dParams {
  input: QuantParams;
  /** OHWI. */
  filter: LayerWeights;
  /** Length O. */
  bias?: Int32Array | undefined;
  /** [h, w], default [1, 1]. */
  stride?: readonly number[] | undefined;
  /** [h, w], default [1, 1]. */
  dilation?: readonly number[] | undefined;
  padding: 'SAME' | 'VALID';
  output: QuantParams;
  activation?: FusedActivation | undefined;
  kernelPath?: KernelPath | undefined;
}

/**
 * A layer's options: those of a GEMM (src/api.ts GemmOptions: `backend`, default 'auto'; a GPU context's
 * options, a tuning table among them; `warn`, `onKernel`, `onTrace`), for the layer's one GEMM.
 */
export type LayerOptions = GemmOptions;

export const dtypeOf = (d: OperandData, field: string): 'uint8' | 'int8' => {
  if (d instanceof Uint8Array) return 'uint8';
  if (d instanceof Int8Array) return 'int8';
  throw new InputError(field, 'expected a Uint8Array or an Int8Array');
};

/** A layer's GEMM without its lhs: the weights as rhs, zero points, the derived stages; `post` for the FC reference path. */
export interface LayerGemm {
  rhs: GemmProblem['rhs'];
  lhsZeroPoint: number;
  rhsZeroPoint: number;
  pipeline: OutputStage[];
  /** FC reference path: the float64 requantization of the int32 result, on the host. */
  post?: ((acc: ArrayLike<number>, M: number) => Uint8Array | Int8Array) | undefined;
  /** The kernel path derived: the one asked for, or 'optimized' where XNNPACK refuses the layer (xnnpackTakesGemm). */
  path: KernelPath;
}

const ACTIVATIONS: readonly unknown[] = ['NONE', 'RELU', 'RELU6', 'RELU_N1_TO_1'];

type LayerCommon = { input: QuantParams; bias?: Int32Array; output: QuantParams; activation?: FusedActivation; kernelPath?: KernelPath };

/** Checks a layer's parameters and derives its GEMM ([M, K] x weights [N, K]) for activations of `dtype`. */
export function layerGemm(
  op: 'FULLY_CONNECTED' | 'CONV_2D',
  dtype: 'uint8' | 'int8',
  K: number,
  weights: LayerWeights,
  weightsField: string,
  N: number,
  p: LayerCommon,
): LayerGemm {
  const weightType = dtypeOf(weights.data, `${weightsField}.data`);
  // one dtype for activations and weights, as in TFLite's int8 and legacy uint8 models (and Sequential)
  if (weightType !== dtype) throw new InputError('input.data', `expected ${weightType} data, as the weights (${weightsField}.data)`);
  checkQuant('params.input', p.input, dtype);
  checkQuant('params.output', p.output, dtype);
  if (weights.data.length !== N * K)
    throw new InputError(`${weightsField}.data`, `expected ${N * K} values (${N} x ${K}), got ${weights.data.length}`);
  const scales = weightScales(weightsField, weights.scale, N);
  const wz = checkZeroPoint(`${weightsField}.zeroPoint`, weightZeroPoint(`${weightsField}.zeroPoint`, weights.zeroPoint, N), weightType);
  if (p.bias !== undefined && (!(p.bias instanceof Int32Array) || p.bias.length !== N)) {
    throw new InputError('params.bias', `expected an Int32Array of ${N} (one per output channel)`);
  }
  const asked = p.kernelPath === undefined ? 'xnnpack' : p.kernelPath; // null is not absent
  if (asked !== 'xnnpack' && asked !== 'optimized' && asked !== 'reference') {
    throw new InputError('params.kernelPath', `expected 'xnnpack', 'optimized' or 'reference', got ${brief(asked)}`);
  }
  // where XNNPACK refuses the layer's operator, TFLite's builtin optimized kernel runs it (xnnpackTakesGemm)
  const path = asked === 'xnnpack' && !xnnpackTakesGemm(p.input, scales, p.output) ? 'optimized' : asked;
  const activation = p.activation === undefined ? 'NONE' : p.activation;
  if (!ACTIVATIONS.includes(activation))
    throw new InputError('params.activation', `expected ${ACTIVATIONS.join(', ')}, got ${brief(activation)}`);
  // a copy, as the weights are packed and the scales derived: a Sequential reads its parameters once
  const bias: OutputStage[] = p.bias ? [{ type: 'bias', axis: 'col', values: Int32Array.from(p.bias) }] : [];
  const gemm: LayerGemm = {
    rhs: { data: weights.data, rows: K, cols: N, order: 'col-major' },
    lhsZeroPoint: p.input.zeroPoint,
    rhsZeroPoint: wz,
    pipeline: bias,
    path,
  };
  if (path === 'reference' && op === 'FULLY_CONNECTED') {
    const [lo, hi] = activationRange(activation, p.output, dtype);
    const s64 = float64Scales(p.input, scales, p.output);
    gemm.post = (acc, M) => {
      const out = dtype === 'uint8' ? new Uint8Array(M * N) : new Int8Array(M * N);
      for (let m = 0; m < M; m++)
        for (let n = 0; n < N; n++)
          out[m * N + n] = float64Requantize(acc[m * N + n], s64[s64.length === 1 ? 0 : n], p.output.zeroPoint, lo, hi);
      return out;
    };
  } else {
    gemm.pipeline = [
      ...bias,
      ...deriveStages({ op, path, input: p.input, weightScales: scales, weightType, output: p.output, channels: N, dtype, activation }),
    ];
    checkEffectiveScales(gemm.pipeline, weightsField, scales.length > 1);
  }
  return gemm;
}

/** The GEMM of a layer and its requantization, run on the chosen backend. */
async function runLayer(
  op: 'FULLY_CONNECTED' | 'CONV_2D',
  lhs: OperandData,
  M: number,
  K: number,
  weights: LayerWeights,
  weightsField: string,
  N: number,
  p: LayerCommon,
  opts: LayerOptions,
): Promise<{ data: Uint8Array | Int8Array; backend: 'cpu' | 'webgpu' }> {
  const g = layerGemm(op, dtypeOf(lhs, 'input.data'), K, weights, weightsField, N, p);
  const problem: GemmProblem = {
    lhs: { data: lhs, rows: M, cols: K },
    rhs: g.rhs,
    lhsZeroPoint: g.lhsZeroPoint,
    rhsZeroPoint: g.rhsZeroPoint,
    pipeline: g.pipeline,
  };
  const { data, backend } = await gemm(problem, opts);
  return { data: g.post ? g.post(data, M) : (data as Uint8Array | Int8Array), backend };
}

/** M of a FULLY_CONNECTED over an input of `shape` holding `length` values: TFLite flattens it to [size / K, K]. */
export function fcRows(shape: readonly number[], length: number, K: number): number {
  if (!Array.isArray(shape) || shape.length < 1 || !everyItem(shape, (d) => Number.isInteger(d) && (d as number) >= 0))
    throw new InputError('input.shape', 'expected [..., K]: a list of sizes');
  const size = shape.reduce((a, b) => a * b, 1);
  if (size < K) throw new InputError('input.shape', `expected at least one row of K = ${K} values, got [${shape}]`);
  if (length !== size || size % K !== 0) {
    throw new InputError(
      'input.shape',
      `expected ${length} values in a whole number of rows of K = ${K} (TFLite flattens the input to [size / K, K]), got [${shape}]`,
    );
  }
  return size / K;
}

/**
 * TFLite FULLY_CONNECTED: input of any shape whose size is a multiple of K, flattened to [M, K] (usually
 * [..., K]); weights [N, K]; output [M, N], the input's dtype.
 */
export async function fullyConnected(input: TensorInput, params: FullyConnectedParams, opts: LayerOptions = {}): Promise<LayerResult> {
  checkOptions(opts);
  checkLayerKeys('fullyConnected', input, params);
  const w = params?.weights;
  if (!w || typeof w !== 'object') throw new InputError('params.weights', `expected {data, shape, scale}, got ${brief(w)}`);
  const [N, K] = checkDims('params.weights.shape', w.shape, 2, '[N, K]');
  if (!input || typeof input !== 'object') throw new InputError('input', 'expected a Tensor { data, shape }');
  dtypeOf(input.data, 'input.data');
  const M = fcRows(input.shape, input.data.length, K);
  const shape = fcOutShape(input.shape, M, K, N, params.keepNumDims);
  const { data, backend } = await runLayer('FULLY_CONNECTED', input.data, M, K, w, 'params.weights', N, params, opts);
  return { data, shape, backend };
}

/** TFLite's output size and leading padding for one spatial dimension (ComputePaddingHeightWidth). */
export function convGeometry(
  size: number,
  filter: number,
  stride: number,
  dilation: number,
  padding: 'SAME' | 'VALID',
): { out: number; pad: number } {
  for (const [name, v] of Object.entries({ size, filter, stride, dilation })) {
    if (!Number.isSafeInteger(v) || v < 1) throw new InputError(name, `expected an integer >= 1, got ${brief(v)}`);
  }
  if (padding !== 'SAME' && padding !== 'VALID') throw new InputError('padding', `expected 'SAME' or 'VALID', got ${brief(padding)}`);
  const effective = (filter - 1) * dilation + 1;
  const out = padding === 'SAME' ? Math.ceil(size / stride) : Math.floor((size - effective + stride) / stride);
  const total = Math.max((out - 1) * stride + effective - size, 0);
  return { out, pad: padding === 'SAME' ? Math.floor(total / 2) : 0 };
}

/**
 * A CONV_2D's GEMM shape for an NHWC input of `inputShape`: its patch geometry (TFLite's padding
 * arithmetic), M = output pixels, K = filter taps x channels, and the NHWC output shape.
 */
export function convShape(
  inputShape: readonly number[],
  params: Conv2dParams,
): { geometry: PatchGeometry; M: number; K: number; outShape: [number, number, number, number] } {
  // every dimension checked before any work that is proportional to one (0 channels: no im2col at all)
  const [B, H, W, C] = checkDims('input.shape', inputShape, 4, 'NHWC [B, H, W, C]');
  const f = params?.filter;
  if (!f || typeof f !== 'object') throw new InputError('params.filter', `expected {data, shape, scale}, got ${brief(f)}`);
  const [O, KH, KW, FC] = checkDims('params.filter.shape', f.shape, 4, 'OHWI [O, KH, KW, C]');
  if (FC !== C) throw new InputError('params.filter.shape', `filter depth ${FC} != input channels ${C}`);
  const limit = `${MAX_PATCH_POSITION} (2^31 - 1: patch positions are 32-bit integers on the GPU, and every backend takes the same limit)`;
  const pairOf = (name: 'stride' | 'dilation'): [number, number] => {
    const v = params[name] === undefined ? [1, 1] : params[name]; // null is not absent
    if (
      !Array.isArray(v) ||
      v.length !== 2 ||
      !everyItem(v, (x) => Number.isInteger(x) && (x as number) >= 1 && (x as number) <= MAX_PATCH_POSITION)
    )
      throw new InputError(`params.${name}`, `expected [h, w] of integers in 1..${limit}, got ${shown(v)}`);
    return [v[0], v[1]];
  };
  const [sh, sw] = pairOf('stride');
  const [dh, dw] = pairOf('dilation');
  if (params.padding !== 'SAME' && params.padding !== 'VALID')
    throw new InputError('params.padding', `expected 'SAME' or 'VALID', got ${brief(params.padding)}`);
  const gh = convGeometry(H, KH, sh, dh, params.padding);
  const gw = convGeometry(W, KW, sw, dw, params.padding);
  if (gh.out < 1 || gw.out < 1) {
    // The filter itself fits: its dilation makes it larger than the input.
    if (KH <= H && KW <= W) {
      throw new InputError(
        'params.dilation',
        `the dilated filter (extent ${(KH - 1) * dh + 1} x ${(KW - 1) * dw + 1}) is larger than the ${H} x ${W} input (VALID padding)`,
      );
    }
    throw new InputError('params.filter.shape', 'the filter is larger than the input (VALID padding)');
  }
  for (const [g, k, s, d] of [
    [gh, KH, sh, dh],
    [gw, KW, sw, dw],
  ] as const) {
    // the last tap's position in the padded input, as the GPU's patch packing computes it
    const last = (g.out - 1) * s + (k - 1) * d;
    if (last > MAX_PATCH_POSITION) {
      // the larger of the two terms is blamed: the filter's dilated extent, or the output positions (the input's size)
      const field = (k - 1) * d >= (g.out - 1) * s ? (d > 1 ? 'params.dilation' : 'params.filter.shape') : 'input.shape';
      throw new InputError(field, `the last filter tap lies at position ${last} of the padded input, above ${limit}`);
    }
  }
  const geometry: PatchGeometry = {
    batch: B,
    height: H,
    width: W,
    channels: C,
    filterHeight: KH,
    filterWidth: KW,
    strideHeight: sh,
    strideWidth: sw,
    dilationHeight: dh,
    dilationWidth: dw,
    padTop: gh.pad,
    padLeft: gw.pad,
    outHeight: gh.out,
    outWidth: gw.out,
  };
  return { geometry, M: B * gh.out * gw.out, K: KH * KW * C, outShape: [B, gh.out, gw.out, O] };
}

/** TFLite CONV_2D: input NHWC [B, H, W, C], filter OHWI [O, KH, KW, C]; output NHWC [B, OH, OW, O], the input's dtype. */
export async function conv2d(input: TensorInput, params: Conv2dParams, opts: LayerOptions = {}): Promise<LayerResult> {
  checkOptions(opts);
  checkLayerKeys('conv2d', input, params);
  if (!input || typeof input !== 'object') throw new InputError('input', 'expected a Tensor { data, shape }');
  dtypeOf(input.data, 'input.data');
  const { geometry, M, K, outShape } = convShape(input.shape, params);
  const O = outShape[3];
  const size = input.shape.reduce((a, b) => a * b, 1);
  if (input.data.length !== size) throw new InputError('input.data', `expected ${size} values, got ${input.data.length}`);
  const f = params.filter;
  const g = layerGemm('CONV_2D', dtypeOf(input.data, 'input.data'), K, f, 'params.filter', O, params);
  const { post, path: _, ...common } = g;
  const gemmOf = (lhs: GpuGemmProblem['lhs']): GpuGemmProblem => ({ ...common, lhs });
  const hostPatches = (): Operand => {
    try {
      return { data: im2col(input.data, geometry, params.input.zeroPoint), rows: M, cols: K };
    } catch (e) {
      throw allocationLimit(e, `the im2col rows (${M} x ${K})`);
    }
  };
  // On the GPU the patches are read straight from the input inside the GEMM's own pass (one submission:
  // gathered by the kernel, else packed first); an input too large for one binding goes through
  // host im2col rows, which the GEMM splits into bands.
  const call = { onTrace: opts.onTrace };
  const onGpu = async (ctx: GpuContext) => {
    const r = await ctx.gemm(gemmOf({ input: input.data, geometry, zeroPoint: params.input.zeroPoint }), undefined, call).catch((e) => {
      if (!(e instanceof LimitExceededError)) throw e;
      return ctx.gemm(gemmOf(hostPatches()), undefined, call);
    });
    opts.onKernel?.(ctx.lastRun.kernel ?? 'unknown');
    return r;
  };
  const onCpu = () => gemm({ ...common, lhs: hostPatches() }, { ...opts, backend: 'cpu' });
  const result = await onBackend(onCpu, onGpu, opts.backend === undefined ? 'auto' : opts.backend, opts);
  const data = post ? post(result.data, M) : (result.data as Uint8Array | Int8Array);
  return { data, shape: outShape, backend: result.backend };
}
