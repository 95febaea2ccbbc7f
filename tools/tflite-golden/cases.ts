/**
 * The golden cases: small one-layer FULLY_CONNECTED and CONV_2D problems, seeded and deterministic.
 * - a grid: each op x {int8 per-tensor, int8 per-channel, legacy uint8 with a weight zero point} x each
 *   fused activation, the conv cases cycling SAME/VALID, strides 1 and 2 and a dilation of 2;
 * - crafted cases where TFLite's kernel paths disagree: power-of-two and other dyadic scales (exact ties
 *   of acc * scale), scales found by search where float32 and float64 scale products round apart, and
 *   activation bounds that fall on a tie (RELU6 with output scale 4, RELU_N1_TO_1 with output scale 2).
 * The accumulators of the crafted cases are set through the bias and a 1-wide reduction (K = 1, or a
 * 1x1 filter over one channel), so each output element is one chosen acc. Part of the golden generator
 * (tools/tflite-golden/), which runs them in TFLite; the layers compute the same through pack -> gemm -> output.
 */
import { Rng } from '../random.ts';
import type { Activation, Dtype, ElementwiseCase, LayerCase } from './model.ts';
import { type KernelPath, broadcastPairs, libraryBuiltinElementwise, naiveXnnpackElementwise, requantize } from './paths.ts';

const f = Math.fround;
const ACTIVATIONS: Activation[] = ['NONE', 'RELU', 'RELU6', 'RELU_N1_TO_1'];
type WeightKind = 'int8-pertensor' | 'int8-perchannel' | 'uint8';
const KINDS: WeightKind[] = ['int8-pertensor', 'int8-perchannel', 'uint8'];

const ints = (rng: Rng, n: number, lo: number, hi: number) => Array.from({ length: n }, () => rng.int(lo, hi));

function convOut(size: number, k: number, stride: number, dilation: number, padding: 'SAME' | 'VALID'): number {
  const ek = (k - 1) * dilation + 1;
  return padding === 'SAME' ? Math.ceil(size / stride) : Math.ceil((size - ek + 1) / stride);
}

/** Quantization of one weight kind: dtypes, zero points, weight scales (per channel or one). */
function quant(rng: Rng, kind: WeightKind, channels: number, wBase: number) {
  const dtype: Dtype = kind === 'uint8' ? 'uint8' : 'int8';
  const inZp = dtype === 'uint8' ? rng.int(100, 150) : rng.int(-10, 10);
  const wZp = dtype === 'uint8' ? rng.int(110, 140) : 0;
  const outZp = dtype === 'uint8' ? rng.int(100, 150) : rng.int(-10, 10);
  const scale =
    kind === 'int8-perchannel' ? Array.from({ length: channels }, () => f(wBase * (0.5 + rng.float()))) : f(wBase * (0.5 + rng.float()));
  return { dtype, inZp, wZp, outZp, scale };
}

function gridCases(): LayerCase[] {
  const rng = new Rng(19);
  const out: LayerCase[] = [];
  const geometries: { padding: 'SAME' | 'VALID'; stride: [number, number]; dilation: [number, number] }[] = [
    { padding: 'SAME', stride: [1, 1], dilation: [1, 1] },
    { padding: 'VALID', stride: [2, 2], dilation: [1, 1] },
    { padding: 'SAME', stride: [2, 2], dilation: [1, 1] },
    { padding: 'VALID', stride: [1, 1], dilation: [2, 2] },
  ];
  for (const kind of KINDS)
    for (const [ai, activation] of ACTIVATIONS.entries()) {
      // FULLY_CONNECTED: [M, K] x [N, K]
      {
        const [m, k, n] = [3, 17, 5];
        const q = quant(rng, kind, n, 0.006);
        const lo = q.dtype === 'int8' ? -128 : 0;
        const hi = q.dtype === 'int8' ? 127 : 255;
        const noBias = kind === 'int8-pertensor' && activation === 'NONE';
        out.push({
          name: `fc-${kind}-${activation.toLowerCase()}${noBias ? '-nobias' : ''}`,
          op: 'FULLY_CONNECTED',
          input: { dtype: q.dtype, shape: [m, k], data: ints(rng, m * k, lo, hi), scale: f(0.0235), zeroPoint: q.inZp },
          weights: {
            dtype: q.dtype,
            shape: [n, k],
            data: ints(rng, n * k, q.dtype === 'int8' ? -127 : 0, hi),
            scale: q.scale,
            zeroPoint: q.wZp,
          },
          bias: noBias ? null : ints(rng, n, -3000, 3000),
          output: { dtype: q.dtype, scale: f(activation === 'RELU_N1_TO_1' ? 0.0125 : 0.0625), zeroPoint: q.outZp },
          activation,
          outputShape: [m, n],
        });
      }
      // CONV_2D: NHWC [1, 7, 6, 3] x OHWI [4, 3, 3, 3]
      {
        const [h, w, c, o, kh, kw] = [7, 6, 3, 4, 3, 3];
        const g = geometries[(ai + KINDS.indexOf(kind)) % geometries.length];
        const q = quant(rng, kind, o, 0.004);
        const lo = q.dtype === 'int8' ? -128 : 0;
        const hi = q.dtype === 'int8' ? 127 : 255;
        const oh = convOut(h, kh, g.stride[0], g.dilation[0], g.padding);
        const ow = convOut(w, kw, g.stride[1], g.dilation[1], g.padding);
        out.push({
          name: `conv-${kind}-${activation.toLowerCase()}-${g.padding.toLowerCase()}-s${g.stride[0]}-d${g.dilation[0]}`,
          op: 'CONV_2D',
          input: { dtype: q.dtype, shape: [1, h, w, c], data: ints(rng, h * w * c, lo, hi), scale: f(0.0235), zeroPoint: q.inZp },
          weights: {
            dtype: q.dtype,
            shape: [o, kh, kw, c],
            data: ints(rng, o * kh * kw * c, q.dtype === 'int8' ? -127 : 0, hi),
            scale: q.scale,
            zeroPoint: q.wZp,
          },
          bias: ints(rng, o, -3000, 3000),
          stride: g.stride,
          dilation: g.dilation,
          padding: g.padding,
          output: { dtype: q.dtype, scale: f(activation === 'RELU_N1_TO_1' ? 0.0125 : 0.0625), zeroPoint: q.outZp },
          activation,
          outputShape: [1, oh, ow, o],
        });
      }
    }
  return out;
}

/**
 * A case whose output element (row r, channel n) has accumulator bias[n] + xs[r] * wq[n] (K = 1, or a
 * 1x1 filter over one channel with the rows laid out as a 1 x rows image).
 */
function oneTap(
  name: string,
  op: 'FULLY_CONNECTED' | 'CONV_2D',
  kind: WeightKind,
  xs: number[],
  wq: number[],
  bias: number[],
  scales: { input: number; weights: number | number[]; output: number },
  zps: { input: number; weights: number; output: number },
  activation: Activation,
): LayerCase {
  const dtype: Dtype = kind === 'uint8' ? 'uint8' : 'int8';
  const [rows, n] = [xs.length, wq.length];
  const input = { dtype, data: xs.map((x) => x + zps.input), scale: scales.input, zeroPoint: zps.input };
  const weights = { dtype, data: wq.map((w) => w + zps.weights), scale: scales.weights, zeroPoint: zps.weights };
  const output = { dtype, scale: scales.output, zeroPoint: zps.output };
  if (op === 'FULLY_CONNECTED')
    return {
      name,
      op,
      input: { ...input, shape: [rows, 1] },
      weights: { ...weights, shape: [n, 1] },
      bias,
      output,
      activation,
      outputShape: [rows, n],
    };
  return {
    name,
    op,
    input: { ...input, shape: [1, 1, rows, 1] },
    weights: { ...weights, shape: [n, 1, 1, 1] },
    bias,
    stride: [1, 1],
    dilation: [1, 1],
    padding: 'VALID',
    output,
    activation,
    outputShape: [1, 1, rows, n],
  };
}

const PATHS: KernelPath[] = ['xnnpack', 'optimized', 'reference'];

/** How many of `accs` the three path models do not all agree on, for one channel's scales. */
function disagreements(
  accs: number[],
  inS: number,
  wS: number,
  outS: number,
  op: 'FULLY_CONNECTED' | 'CONV_2D',
  dtype: Dtype,
  perChannel: boolean,
): number {
  let d = 0;
  for (const acc of accs) {
    const v = PATHS.map((p) => requantize(acc, inS, wS, outS, p, op, dtype, perChannel));
    if (v[0] !== v[1] || v[1] !== v[2]) d++;
  }
  return d;
}

function craftedCases(): LayerCase[] {
  const rng = new Rng(1919);
  const out: LayerCase[] = [];
  const xs32 = Array.from({ length: 32 }, (_, i) => i - 16);
  for (const op of ['FULLY_CONNECTED', 'CONV_2D'] as const) {
    const tag = op === 'FULLY_CONNECTED' ? 'fc' : 'conv';
    for (const kind of KINDS) {
      const dtype: Dtype = kind === 'uint8' ? 'uint8' : 'int8';
      const zps = dtype === 'uint8' ? { input: 128, weights: 128, output: 128 } : { input: 0, weights: 0, output: 0 };
      // Dyadic scales: acc * scale lands on exact ties (x.5) for many accs, on both signs.
      const ws = kind === 'int8-perchannel' ? [f(0.5), f(0.25), f(0.75), f(0.375)] : f(0.5);
      out.push(
        oneTap(
          `${tag}-${kind}-ties-dyadic`,
          op,
          kind,
          xs32,
          [1, 3, -5, 7],
          [0, 1, -2, 3],
          { input: 0.5, weights: ws, output: 1 },
          zps,
          'NONE',
        ),
      );
      // Searched scales: float32 and float64 scale products (and the paths' roundings) disagree.
      const inS = f(0.0078125 * (1 + rng.float()));
      const outS = f(0.05 + 0.05 * rng.float());
      const channels = kind === 'int8-perchannel' ? 4 : 1;
      const chosen: { w: number; bias: number; wq: number }[] = [];
      let sharedW = 0;
      for (let ch = 0; ch < channels; ch++) {
        let best = { w: 0, bias: 0, wq: 1, d: -1 };
        for (let t = 0; t < 400; t++) {
          const w = kind === 'int8-perchannel' || ch === 0 ? f(0.002 + 0.02 * rng.float()) : sharedW;
          const wq = rng.int(1, 9) * (rng.int(0, 1) ? 1 : -1);
          const bias = rng.int(-20000, 20000);
          const accs = xs32.map((x) => bias + x * wq);
          const d = disagreements(accs, inS, w, outS, op, dtype, kind === 'int8-perchannel');
          if (d > best.d) best = { w, bias, wq, d };
        }
        if (ch === 0) sharedW = best.w;
        chosen.push(best);
      }
      // Per-tensor kinds repeat the first channel's scale on 3 more channels with other biases.
      while (chosen.length < 4) chosen.push({ ...chosen[0], bias: chosen[0].bias + 37 * chosen.length });
      out.push(
        oneTap(
          `${tag}-${kind}-ties-searched`,
          op,
          kind,
          xs32,
          chosen.map((c) => c.wq),
          chosen.map((c) => c.bias),
          { input: inS, weights: kind === 'int8-perchannel' ? chosen.map((c) => c.w) : chosen[0].w, output: outS },
          zps,
          'NONE',
        ),
      );
      // Activation bounds on a tie: RELU6 at output scale 4 (6 / 4 = 1.5), RELU_N1_TO_1 at scale 2 (1 / 2 = 0.5).
      for (const [activation, outScale] of [
        ['RELU6', 4],
        ['RELU_N1_TO_1', 2],
      ] as const)
        for (const outZp of dtype === 'uint8' ? [128, 129] : [0, 1]) {
          const wsA = kind === 'int8-perchannel' ? [f(0.5), f(1), f(0.25), f(2)] : f(1);
          out.push(
            oneTap(
              `${tag}-${kind}-${activation.toLowerCase()}-bound-tie-zp${outZp - zps.output}`,
              op,
              kind,
              xs32,
              [1, -1, 2, 3],
              [0, 1, -1, 2],
              { input: 1, weights: wsA, output: outScale },
              { ...zps, output: outZp },
              activation,
            ),
          );
        }
    }
  }
  return out;
}

type ElementwiseOp = ElementwiseCase['op'];
const ELEMENTWISE_OPS: ElementwiseOp[] = ['ADD', 'SUB', 'MUL'];
/** Shapes of a and b: same shape, [1,4,5,3] and [3], [2,3] and [1,3], a one-element a, both sides broadcast. */
const ELEMENTWISE_SHAPES: [number[], number[]][] = [
  [
    [2, 3, 4],
    [2, 3, 4],
  ],
  [[1, 4, 5, 3], [3]],
  [
    [2, 3],
    [1, 3],
  ],
  [[1], [2, 3, 4]],
  [
    [3, 1, 5],
    [1, 4, 1],
  ],
];

function elementwiseCase(
  name: string,
  op: ElementwiseOp,
  dtype: Dtype,
  shapes: [number[], number[]],
  data: [number[], number[]],
  scales: [number, number, number],
  zps: [number, number, number],
  activation: Activation,
): ElementwiseCase {
  return {
    name,
    op,
    a: { dtype, shape: shapes[0], data: data[0], scale: f(scales[0]), zeroPoint: zps[0] },
    b: { dtype, shape: shapes[1], data: data[1], scale: f(scales[1]), zeroPoint: zps[1] },
    output: { dtype, scale: f(scales[2]), zeroPoint: zps[2] },
    activation,
    outputShape: broadcastPairs(shapes[0], shapes[1]).shape,
  };
}

/** Elements on which XNNPACK's arithmetic and the library's builtin one differ. */
const elementwiseDisagreements = (c: ElementwiseCase) => {
  const x = naiveXnnpackElementwise(c);
  return libraryBuiltinElementwise(c).filter((v, i) => v !== x[i]).length;
};

/**
 * ADD, SUB and MUL, int8 and uint8:
 * - a grid: each op x dtype x fused activation, random data, random scales inside the range the XNNPACK
 *   delegate takes, the shapes of ELEMENTWISE_SHAPES in turn;
 * - crafted: every pair of 16 x 16 small values around the zero points (a [16, 1] against b [1, 16])
 *   with dyadic scales (exact ties: x.5 and x.25 on both signs), with searched scales over 16 x 16 values of the whole range (the ones, of 300
 *   tries, on which XNNPACK's arithmetic and TFLite's builtin one disagree most), and with activation
 *   bounds on a tie (RELU6 at output scale 4, RELU_N1_TO_1 at output scale 2; output zero point 0 or 1),
 *   and (ADD, SUB) scales outside the range the delegate takes.
 */
export function elementwiseCases(): ElementwiseCase[] {
  const rng = new Rng(2619);
  const out: ElementwiseCase[] = [];
  let shapeIndex = 0;
  for (const op of ELEMENTWISE_OPS)
    for (const dtype of ['int8', 'uint8'] as Dtype[]) {
      const [lo, hi] = dtype === 'int8' ? [-128, 127] : [0, 255];
      const zp = () => (dtype === 'int8' ? rng.int(-20, 20) : rng.int(100, 150));
      const tag = `${op.toLowerCase()}-${dtype}`;
      for (const activation of ACTIVATIONS) {
        const shapes = ELEMENTWISE_SHAPES[shapeIndex++ % ELEMENTWISE_SHAPES.length];
        const size = (s: number[]) => s.reduce((p, d) => p * d, 1);
        const sa = 0.01 + 0.04 * rng.float();
        const sb = 0.01 + 0.04 * rng.float();
        const so =
          op === 'MUL'
            ? sa * sb * (activation === 'RELU_N1_TO_1' ? 200 : 40) * (0.5 + rng.float())
            : (activation === 'RELU_N1_TO_1' ? 0.4 : 2) * Math.max(sa, sb) * (0.5 + rng.float());
        out.push(
          elementwiseCase(
            `${tag}-${activation.toLowerCase()}-${shapes.map((s) => s.join('x') || 'scalar').join('-')}`,
            op,
            dtype,
            shapes,
            [ints(rng, size(shapes[0]), lo, hi), ints(rng, size(shapes[1]), lo, hi)],
            [sa, sb, so],
            [zp(), zp(), zp()],
            activation,
          ),
        );
      }
      // Crafted: all 16 x 16 pairs of values (q - z) in -8..7.
      const z0 = dtype === 'int8' ? 0 : 128;
      const xs = Array.from({ length: 16 }, (_, i) => i - 8 + z0);
      const pairShapes: [number[], number[]] = [
        [16, 1],
        [1, 16],
      ];
      const dyadic: [number, number, number] = op === 'MUL' ? [0.5, 0.25, 1] : [0.5, 0.25, 1];
      out.push(elementwiseCase(`${tag}-ties-dyadic`, op, dtype, pairShapes, [xs, xs], dyadic, [z0, z0, z0], 'NONE'));
      if (op === 'MUL') {
        // (q - z) products times 1/8 and 3/8: more ties, of odd products too.
        out.push(elementwiseCase(`${tag}-ties-dyadic-eighths`, op, dtype, pairShapes, [xs, xs], [0.375, 0.125, 1], [z0, z0, z0], 'NONE'));
      }
      // Searched: 16 x 16 values over the whole range.
      const ys = ints(rng, 16, lo, hi);
      const ws = ints(rng, 16, lo, hi);
      let best: { c: ElementwiseCase; d: number } | null = null;
      for (let t = 0; t < 300; t++) {
        const sa = f(0.002 + 0.05 * rng.float());
        const sb = f(op === 'MUL' ? 0.002 + 0.05 * rng.float() : sa * (0.01 + 2 * rng.float()));
        const so = op === 'MUL' ? f(sa * sb * (0.05 + 4 * rng.float())) : f(Math.max(sa, sb) * (0.05 + 4 * rng.float()));
        const c = elementwiseCase(`${tag}-searched`, op, dtype, pairShapes, [ys, ws], [sa, sb, so], [z0, z0, z0], 'NONE');
        const d = elementwiseDisagreements(c);
        if (!best || d > best.d) best = { c, d };
      }
      out.push(best!.c);
      // ADD/SUB outside the scales TFLite's delegate takes (a's ratio 2^8): the builtin kernel runs the node.
      // b's ratio 1/2 puts the rows where a is at its zero point on ties, which the two arithmetics round
      // apart. (A MUL outside the range, scale >= 2^8 or < 2^-16, has no ties to tell them apart.)
      if (op !== 'MUL')
        out.push(elementwiseCase(`${tag}-outside-delegate-range`, op, dtype, pairShapes, [xs, xs], [1024, 2, 4], [z0, z0, z0], 'NONE'));
      for (const [activation, outScale] of [
        ['RELU6', 4],
        ['RELU_N1_TO_1', 2],
      ] as const)
        for (const dz of [0, 1]) {
          // Values (q - z) -8..7 at scale 1 (MUL: products at scale 1/4), all of them around the bounds.
          const scales: [number, number, number] = op === 'MUL' ? [0.5, 0.5, outScale] : [1, 1, outScale];
          out.push(
            elementwiseCase(
              `${tag}-${activation.toLowerCase()}-bound-tie-zp${dz}`,
              op,
              dtype,
              pairShapes,
              [xs, xs],
              scales,
              [z0, z0, z0 + dz],
              activation,
            ),
          );
        }
    }
  return out;
}

export function goldenCases(): LayerCase[] {
  return [...gridCases(), ...craftedCases()];
}
