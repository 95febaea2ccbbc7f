/**
 * Naive models of TFLite's three requantization paths (output stage only: acc -> quantized dst),
 * used by test/golden/tflite.test.ts to check the golden files written from the real interpreter.
 * They document the semantics of issue 19's table; they are not the library's implementation.
 * acc is the int32 accumulator sum((in - inZp) * (w - wZp)) + bias, per output channel.
 * For the elementwise ADD, SUB and MUL: a naive model of XNNPACK's qs8/qu8 vadd and vmul
 * (naiveXnnpackElementwise), and, to compare with, the library's own builtin arithmetic
 * (libraryBuiltinElementwise, which is the library's implementation, not a model).
 */

import { activationRange as libraryActivationRange } from '../../src/layers/derive.ts';
import { elementwiseReference } from '../../src/reference/elementwise.ts';

export type KernelPath = 'xnnpack' | 'optimized' | 'reference';
/**
 * A further model, no kernel path of the layers: the builtin kernels' fixed point with one rounding
 * (TFLITE_SINGLE_ROUNDING's MultiplyByQuantizedMultiplier: (acc * multiplier + 2^(30 - shift)) >> (31 - shift),
 * ties up), the scale product computed where the optimized kernels compute it.
 */
export type PathModel = KernelPath | 'single';

const f = Math.fround;

/** TFLite's QuantizeMultiplier: multiplier in [2^30, 2^31) and a shift (left if positive), with the 2^31 edge. */
export function quantizeMultiplier(m: number): { multiplier: number; shift: number } {
  if (m === 0) return { multiplier: 0, shift: 0 };
  let shift = Math.floor(Math.log2(Math.abs(m))) + 1;
  let frac = m / 2 ** shift;
  while (Math.abs(frac) >= 1) {
    frac /= 2;
    shift++;
  }
  while (Math.abs(frac) < 0.5) {
    frac *= 2;
    shift--;
  }
  let q = Math.round(frac * 2 ** 31); // std::round: ties away from zero for positive values
  if (q === 2 ** 31) {
    q /= 2;
    shift++;
  }
  if (shift < -31) {
    shift = 0;
    q = 0;
  }
  return { multiplier: q, shift };
}

function srdhm(a: bigint, b: bigint): bigint {
  if (a === b && a === -(2n ** 31n)) return 2n ** 31n - 1n;
  const ab = a * b;
  const nudge = ab >= 0n ? 1n << 30n : 1n - (1n << 30n);
  const s = ab + nudge;
  return s >= 0n ? s / (1n << 31n) : -(-s / (1n << 31n)); // C++ truncating division
}

function clampI32(x: bigint): bigint {
  return x > 2147483647n ? 2147483647n : x < -2147483648n ? -2147483648n : x;
}

/** gemmlowp RoundingDivideByPOT: ties away from zero. */
function rdbpotAway(x: bigint, e: number): bigint {
  if (e === 0) return x;
  const mask = (1n << BigInt(e)) - 1n;
  const rem = x & mask;
  const threshold = (mask >> 1n) + (x < 0n ? 1n : 0n);
  return (x >> BigInt(e)) + (rem > threshold ? 1n : 0n);
}

/** Rounding right shift with ties up (NEON vrshl), the optimized kernels' last step per issue 19. */
function rshiftTiesUp(x: bigint, e: number): bigint {
  if (e === 0) return x;
  return (x + (1n << BigInt(e - 1))) >> BigInt(e);
}

/** Round half away from zero in float64 (std::round). */
function roundAway(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

/** Round half to even (rint in the default rounding mode). */
function rint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Requantize one accumulator as `path` does for `op`, returning the value before zero point and clamp.
 * inScale, wScale, outScale are the float32 values TFLite stores.
 */
export function requantize(
  acc: number,
  inScale: number,
  wScale: number,
  outScale: number,
  path: PathModel,
  op: 'FULLY_CONNECTED' | 'CONV_2D',
  dtype: 'int8' | 'uint8',
  perChannel: boolean,
): number {
  if (path === 'xnnpack') return rint(f(f(acc) * f(f(inScale * wScale) / outScale)));
  if (path === 'reference' && op === 'FULLY_CONNECTED') return roundAway((acc * (inScale * wScale)) / outScale);
  // Where the scale product is computed, per issue 19.
  let real: number;
  if (op === 'FULLY_CONNECTED') real = perChannel ? (inScale * wScale) / outScale : f(f(inScale * wScale) / outScale);
  else real = dtype === 'int8' ? (inScale * wScale) / outScale : f(f(inScale * wScale) / outScale);
  const { multiplier, shift } = quantizeMultiplier(real);
  if (path === 'single') {
    const total = BigInt(31 - shift);
    return Number((BigInt(acc) * BigInt(multiplier) + (1n << (total - 1n))) >> total);
  }
  const left = Math.max(shift, 0);
  const right = shift > 0 ? 0 : -shift;
  const x = srdhm(clampI32(BigInt(acc) << BigInt(left)), BigInt(multiplier));
  return Number(path === 'reference' ? rdbpotAway(x, right) : rshiftTiesUp(x, right));
}

/**
 * XNNPACK's clamp of a fused activation: the delegate passes the float range (0, 6, -1, 1, or
 * unbounded) and XNNPACK quantizes each end as lrintf(min(max(f32(f32(v / scale) + zp), qmin), qmax)),
 * ties to even (xnn_qs8_quantize / xnn_qu8_quantize).
 */
export function xnnpackActivationRange(
  act: 'NONE' | 'RELU' | 'RELU6' | 'RELU_N1_TO_1',
  scale: number,
  zp: number,
  dtype: 'int8' | 'uint8',
): [number, number] {
  const qmin = dtype === 'int8' ? -128 : 0;
  const qmax = dtype === 'int8' ? 127 : 255;
  const q = (v: number) => Math.min(qmax, Math.max(qmin, rint(f(f(v / f(scale)) + zp))));
  if (act === 'RELU') return [q(0), qmax];
  if (act === 'RELU6') return [q(0), q(6)];
  if (act === 'RELU_N1_TO_1') return [q(-1), q(1)];
  return [qmin, qmax];
}

/** CalculateActivationRangeQuantized: zp + round(f32(v / scale)), ties away from zero. */
export function activationRange(
  act: 'NONE' | 'RELU' | 'RELU6' | 'RELU_N1_TO_1',
  scale: number,
  zp: number,
  dtype: 'int8' | 'uint8',
): [number, number] {
  const qmin = dtype === 'int8' ? -128 : 0;
  const qmax = dtype === 'int8' ? 127 : 255;
  const q = (v: number) => zp + roundAway(f(v / f(scale)));
  if (act === 'RELU') return [Math.max(qmin, q(0)), qmax];
  if (act === 'RELU6') return [Math.max(qmin, q(0)), Math.min(qmax, q(6))];
  if (act === 'RELU_N1_TO_1') return [Math.max(qmin, q(-1)), Math.min(qmax, q(1))];
  return [qmin, qmax];
}

/** One golden case as the layer API and the golden files hold it. */
export interface NaiveCase {
  op: 'FULLY_CONNECTED' | 'CONV_2D';
  input: { dtype: 'int8' | 'uint8'; shape: number[]; data: number[]; scale: number; zeroPoint: number };
  weights: { shape: number[]; data: number[]; scale: number | number[]; zeroPoint: number };
  bias: number[] | null;
  stride?: [number, number];
  dilation?: [number, number];
  padding?: 'SAME' | 'VALID';
  output: { dtype: 'int8' | 'uint8'; scale: number; zeroPoint: number };
  activation: 'NONE' | 'RELU' | 'RELU6' | 'RELU_N1_TO_1';
  outputShape: number[];
}

/**
 * The whole layer as `path` computes it: accumulators in TFLite's layouts (FC [N, K]; conv NHWC/OHWI,
 * padded positions holding the input zero point, so they add 0), the path's requantization, the zero
 * point, and the path's activation clamp (`clamp` overrides which: TFLite's or XNNPACK's).
 */
export function naiveLayer(
  c: NaiveCase,
  path: PathModel,
  clamp: 'tflite' | 'xnnpack' = path === 'xnnpack' ? 'xnnpack' : 'tflite',
): number[] {
  const inZp = c.input.zeroPoint;
  const wZp = c.weights.zeroPoint ?? 0;
  const ws = c.weights.scale;
  const perChannel = Array.isArray(ws);
  const range = clamp === 'xnnpack' ? xnnpackActivationRange : activationRange;
  const [lo, hi] = range(c.activation, c.output.scale, c.output.zeroPoint, c.output.dtype);
  const finish = (acc: number, o: number) => {
    const s = Array.isArray(ws) ? ws[o] : ws;
    const v = requantize(acc, c.input.scale, s, c.output.scale, path, c.op, c.input.dtype, perChannel) + c.output.zeroPoint;
    return Math.min(hi, Math.max(lo, v));
  };
  const out: number[] = [];
  if (c.op === 'FULLY_CONNECTED') {
    const [n, k] = c.weights.shape;
    const m = c.input.data.length / k;
    for (let i = 0; i < m; i++)
      for (let o = 0; o < n; o++) {
        let acc = c.bias ? c.bias[o] : 0;
        for (let j = 0; j < k; j++) acc += (c.input.data[i * k + j] - inZp) * (c.weights.data[o * k + j] - wZp);
        out.push(finish(acc, o));
      }
    return out;
  }
  const [b, h, w, ci] = c.input.shape;
  const [co, kh, kw] = c.weights.shape;
  const [sh, sw] = c.stride ?? [1, 1];
  const [dh, dw] = c.dilation ?? [1, 1];
  const [, oh, ow] = c.outputShape;
  const ekh = (kh - 1) * dh + 1;
  const ekw = (kw - 1) * dw + 1;
  const padH = c.padding === 'SAME' ? Math.max(0, Math.floor(((oh - 1) * sh + ekh - h) / 2)) : 0;
  const padW = c.padding === 'SAME' ? Math.max(0, Math.floor(((ow - 1) * sw + ekw - w) / 2)) : 0;
  for (let n = 0; n < b; n++)
    for (let y = 0; y < oh; y++)
      for (let x = 0; x < ow; x++)
        for (let o = 0; o < co; o++) {
          let acc = c.bias ? c.bias[o] : 0;
          for (let ky = 0; ky < kh; ky++)
            for (let kx = 0; kx < kw; kx++) {
              const iy = y * sh - padH + ky * dh;
              const ix = x * sw - padW + kx * dw;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              for (let q = 0; q < ci; q++)
                acc += (c.input.data[((n * h + iy) * w + ix) * ci + q] - inZp) * (c.weights.data[((o * kh + ky) * kw + kx) * ci + q] - wZp);
            }
          out.push(finish(acc, o));
        }
  return out;
}

/** One elementwise golden case (ADD, SUB, MUL of two quantized tensors) as the golden files hold it. */
export interface NaiveElementwiseCase {
  op: 'ADD' | 'SUB' | 'MUL';
  a: { dtype: 'int8' | 'uint8'; shape: number[]; data: number[]; scale: number; zeroPoint: number };
  b: { dtype: 'int8' | 'uint8'; shape: number[]; data: number[]; scale: number; zeroPoint: number };
  output: { dtype: 'int8' | 'uint8'; scale: number; zeroPoint: number };
  activation: 'NONE' | 'RELU' | 'RELU6' | 'RELU_N1_TO_1';
  outputShape: number[];
}

/** numpy broadcasting of a and b (right-aligned shapes), C order: the pairs of input indices per output element. */
export function broadcastPairs(aShape: number[], bShape: number[]): { shape: number[]; pairs: [number, number][] } {
  const rank = Math.max(aShape.length, bShape.length);
  const pad = (s: number[]) => [...new Array<number>(rank - s.length).fill(1), ...s];
  const [as, bs] = [pad(aShape), pad(bShape)];
  const shape = as.map((d, k) => (d === 1 ? bs[k] : d));
  const strides = (s: number[]) => {
    const st = new Array<number>(rank).fill(0);
    let acc = 1;
    for (let k = rank - 1; k >= 0; k--) {
      st[k] = s[k] === 1 ? 0 : acc;
      acc *= s[k];
    }
    return st;
  };
  const [sa, sb] = [strides(as), strides(bs)];
  const count = shape.reduce((p, d) => p * d, 1);
  const pairs: [number, number][] = [];
  for (let o = 0; o < count; o++) {
    let t = o;
    let ia = 0;
    let ib = 0;
    for (let k = rank - 1; k >= 0; k--) {
      const c = t % shape[k];
      t = Math.floor(t / shape[k]);
      ia += c * sa[k];
      ib += c * sb[k];
    }
    pairs.push([ia, ib]);
  }
  return { shape, pairs };
}

/** floor(log2 x) of a positive normal float32: its biased exponent field minus 127. */
function f32Exponent(x: number): number {
  const v = new DataView(new ArrayBuffer(4));
  v.setFloat32(0, x);
  return ((v.getUint32(0) >>> 23) & 0xff) - 127;
}

/**
 * Whether TFLite's XNNPACK delegate takes this node (xnnpack_delegate.cc): ADD/SUB need each input's
 * f32(input scale / output scale) in [2^-10, 2^8), MUL needs f32(f32(a scale * b scale) / output scale)
 * in [2^-16, 2^8); otherwise the node stays with TFLite's builtin kernel.
 */
export function xnnpackTakesElementwise(c: NaiveElementwiseCase): boolean {
  const so = f(c.output.scale);
  if (c.op === 'MUL') {
    const s = f(f(f(c.a.scale) * f(c.b.scale)) / so);
    return s >= 2 ** -16 && s < 2 ** 8;
  }
  return [c.a.scale, c.b.scale].every((s) => {
    const r = f(f(s) / so);
    return r >= 2 ** -10 && r < 2 ** 8;
  });
}

/**
 * XNNPACK's quantized ADD/SUB/MUL (qs8/qu8 vadd, vmul; SUB is vadd with b's scale negated), before the
 * activation clamp, for one element (qa, qb raw stored values):
 * - ADD/SUB (xnn_init_q{s,u}8_add_minmax_scalar_params): ra = f32(sa / so), rb = ±f32(sb / so);
 *   shift = 20 − floor(log2(max(|ra|, |rb|))) (12..30); multipliers m = ±lrintf(|r| · 2^shift) (ties to
 *   even); out = (2^(shift−1) + ma·(qa − za) + mb·(qb − zb)) >> shift (arithmetic: ties toward +inf) + zo;
 * - MUL (xnn_init_q{s,u}8_mul_minmax_scalar_params, fp32 vmul): scale = f32(f32(sa · sb) / so);
 *   out = rint(f32(f32((qa − za)(qb − zb)) · scale)) (ties to even) + zo.
 */
export function xnnpackElementwiseParams(c: NaiveElementwiseCase): (qa: number, qb: number) => number {
  const so = f(c.output.scale);
  const [za, zb, zo] = [c.a.zeroPoint, c.b.zeroPoint, c.output.zeroPoint];
  if (c.op === 'MUL') {
    const scale = f(f(f(c.a.scale) * f(c.b.scale)) / so);
    return (qa, qb) => rint(f(f((qa - za) * (qb - zb)) * scale)) + zo;
  }
  const ra = f(f(c.a.scale) / so);
  const rb = f(f(c.b.scale) / so);
  const shift = 20 - f32Exponent(Math.max(ra, rb));
  const ma = rint(f(ra * 2 ** shift));
  const mb = rint(f(rb * 2 ** shift)) * (c.op === 'SUB' ? -1 : 1);
  const rounding = 2 ** (shift - 1);
  return (qa, qb) => Math.floor((rounding + ma * (qa - za) + mb * (qb - zb)) / 2 ** shift) + zo;
}

/**
 * The elementwise op as XNNPACK computes it (xnnpackElementwiseParams), then XNNPACK's activation clamp
 * (or TFLite's, with clamp 'tflite'); elements in C order of the broadcast shape.
 */
export function naiveXnnpackElementwise(c: NaiveElementwiseCase, clamp: 'tflite' | 'xnnpack' = 'xnnpack'): number[] {
  const range = clamp === 'xnnpack' ? xnnpackActivationRange : activationRange;
  const [lo, hi] = range(c.activation, c.output.scale, c.output.zeroPoint, c.output.dtype);
  const one = xnnpackElementwiseParams(c);
  return broadcastPairs(c.a.shape, c.b.shape).pairs.map(([ia, ib]) => Math.min(hi, Math.max(lo, one(c.a.data[ia], c.b.data[ib]))));
}

/**
 * Not a naive model: the library's TFLite builtin arithmetic (prepareElementwise's add/sub/mul, run by
 * elementwiseReference on the CPU) with the builtin activation clamp (activationRange of
 * src/layers/derive.ts, CalculateActivationRangeQuantized), what the generator compares the
 * interpreter's outputs with.
 */
export function libraryBuiltinElementwise(c: NaiveElementwiseCase): number[] {
  const arr = (t: { dtype: 'int8' | 'uint8'; data: number[] }) => (t.dtype === 'int8' ? Int8Array.from(t.data) : Uint8Array.from(t.data));
  const [min, max] = libraryActivationRange(c.activation, c.output, c.output.dtype);
  const op = c.op === 'ADD' ? 'add' : c.op === 'SUB' ? 'sub' : 'mul';
  const r = elementwiseReference({
    op,
    a: { data: arr(c.a), shape: c.a.shape, scale: c.a.scale, zeroPoint: c.a.zeroPoint },
    b: { data: arr(c.b), shape: c.b.shape, scale: c.b.scale, zeroPoint: c.b.zeroPoint },
    output: { scale: c.output.scale, zeroPoint: c.output.zeroPoint, min, max },
  });
  return Array.from(r.data);
}
