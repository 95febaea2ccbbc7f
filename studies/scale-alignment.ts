// Accuracy study of the integer-only scale alignment of alignedAdd/alignedSub (docs/scale-alignment.md):
// on the same seeded random uint8 data it compares three ways of adding (and subtracting) two tensors
// quantized with different scales, against the exact real result expressed in output LSBs:
//   float   — clamp(round((sa·(qa−za) ± sb·(qb−zb)) / so) + zo), in double: the best an 8-bit output can do;
//   TFLite  — the library's 'add'/'sub' (TFLite's reference kernels: left shift 20, 31-bit multipliers);
//   aligned — the library's 'alignedAdd'/'alignedSub' (8-bit scale mantissas, shifts to a common exponent).
// Per tensor: one scale per input, ratios up to 32x. Per axis: 16 channels along the last axis of each
// input, scales spread over 64x; TFLite has no per-axis add, so its column runs TFLite's add channel by
// channel (each channel its own pair of scales). The output scale and zero point fit the real range.
// Errors exclude nothing: the reference is the real result clamped to the output range, so saturation
// costs nothing. Prints a markdown table (the one in docs/scale-alignment.md).
//
// Run from the repository root:  npm run study:alignment
// (QGEMM_TRIALS sets the trials per row, default 300.)

import { elementwiseReference } from '../src/reference/elementwise.ts';
import type { ElementData, QuantizedTensor } from '../src/problem/elementwise.ts';
import { Rng } from '../tools/random.ts';

const TRIALS = Number(process.env.QGEMM_TRIALS ?? 300);
const ROWS = 256;
const CHANNELS = 16;

type Op = 'add' | 'sub';
type Method = 'float' | 'TFLite' | 'aligned';
const METHODS: readonly Method[] = ['float', 'TFLite', 'aligned'];

/** One trial's reference and outputs, per element. */
interface Trial {
  /** The exact real result in output LSBs (unrounded), clamped to 0..255. */
  target: Float64Array;
  methods: Record<Method, ArrayLike<number>>;
  /** The float method's outputs (what "differ" counts against). */
  float: Float64Array;
}

/** Error statistics of one method over all trials of a row, in output LSBs. */
interface ErrorStats {
  sumAbs: number;
  sum: number;
  max: number;
  /** Outputs that differ from the float method's. */
  differ: number;
  count: number;
}

/** Log-uniform in lo..hi. */
const logUniform = (r: Rng, lo: number, hi: number): number => lo * (hi / lo) ** r.float();

const roundAway = (x: number): number => Math.sign(x) * Math.round(Math.abs(x));
const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));

/** One trial: data, scales, fitted output; returns per-element errors of the three methods, in LSBs. */
function trial(r: Rng, op: Op, perAxis: boolean): Trial {
  const n = ROWS * CHANNELS;
  const qa = Uint8Array.from({ length: n }, () => r.int(0, 255));
  const qb = Uint8Array.from({ length: n }, () => r.int(0, 255));
  const za = r.int(0, 255);
  const zb = r.int(0, 255);
  const base = logUniform(r, 1e-3, 1e-1);
  let sa: number[];
  let sb: number[];
  if (perAxis) {
    sa = Array.from({ length: CHANNELS }, () => base * 2 ** (r.float() * 6));
    const ratio = logUniform(r, 1 / 8, 8);
    sb = Array.from({ length: CHANNELS }, () => base * ratio * 2 ** (r.float() * 6));
  } else {
    sa = [base];
    sb = [base * logUniform(r, 1 / 32, 32)];
  }
  const sign = op === 'add' ? 1 : -1;
  const ch = (i: number): number => (perAxis ? i % CHANNELS : 0);
  const real = Float64Array.from({ length: n }, (_, i) => sa[ch(i)] * (qa[i] - za) + sign * sb[ch(i)] * (qb[i] - zb));
  let lo = 0;
  let hi = 0;
  for (const x of real) {
    lo = Math.min(lo, x);
    hi = Math.max(hi, x);
  }
  const so = (hi - lo) / 255;
  const zo = clamp(roundAway(-lo / so), 0, 255);
  const target = Float64Array.from(real, (x) => clamp(x / so + zo, 0, 255));
  const float = Float64Array.from(real, (x) => clamp(roundAway(x / so) + zo, 0, 255));

  const shape = perAxis ? [ROWS, CHANNELS] : [n];
  const tensor = (data: Uint8Array, s: number[], zeroPoint: number): QuantizedTensor =>
    perAxis ? { data, shape, zeroPoint, scale: s, axis: 1 } : { data, shape, zeroPoint, scale: s[0] };
  const aligned = elementwiseReference({
    op: op === 'add' ? 'alignedAdd' : 'alignedSub',
    a: tensor(qa, sa, za),
    b: tensor(qb, sb, zb),
    output: { scale: so, zeroPoint: zo },
  }).data;

  let tflite: ElementData;
  if (!perAxis) {
    tflite = elementwiseReference({
      op,
      a: { data: qa, shape, scale: sa[0], zeroPoint: za },
      b: { data: qb, shape, scale: sb[0], zeroPoint: zb },
      output: { scale: so, zeroPoint: zo },
    }).data;
  } else {
    tflite = new Uint8Array(n);
    for (let c = 0; c < CHANNELS; c++) {
      const column = (q: Uint8Array): Uint8Array => Uint8Array.from({ length: ROWS }, (_, row) => q[row * CHANNELS + c]);
      const out = elementwiseReference({
        op,
        a: { data: column(qa), shape: [ROWS], scale: sa[c], zeroPoint: za },
        b: { data: column(qb), shape: [ROWS], scale: sb[c], zeroPoint: zb },
        output: { scale: so, zeroPoint: zo },
      }).data;
      for (let row = 0; row < ROWS; row++) tflite[row * CHANNELS + c] = out[row];
    }
  }
  return { target, methods: { float, TFLite: tflite, aligned }, float };
}

function study(op: Op, perAxis: boolean, seed: number): Record<Method, ErrorStats> {
  const r = new Rng(seed);
  const empty = (): ErrorStats => ({ sumAbs: 0, sum: 0, max: 0, differ: 0, count: 0 });
  const stats: Record<Method, ErrorStats> = { float: empty(), TFLite: empty(), aligned: empty() };
  for (let t = 0; t < TRIALS; t++) {
    const { target, methods, float } = trial(r, op, perAxis);
    for (const name of METHODS) {
      const out = methods[name];
      const s = stats[name];
      for (let i = 0; i < target.length; i++) {
        const e = out[i] - target[i];
        s.sumAbs += Math.abs(e);
        s.sum += e;
        s.max = Math.max(s.max, Math.abs(e));
        if (out[i] !== float[i]) s.differ++;
        s.count++;
      }
    }
  }
  return stats;
}

const rows: string[] = [];
for (const perAxis of [false, true]) {
  for (const op of ['add', 'sub'] as const) {
    const stats = study(op, perAxis, perAxis ? 0xa11a : 0x7e75 + (op === 'sub' ? 1 : 0));
    for (const name of METHODS) {
      const s = stats[name];
      const mean = s.sum / s.count;
      rows.push(
        `| ${perAxis ? 'per axis' : 'per tensor'} | ${op} | ${name} | ${(s.sumAbs / s.count).toFixed(4)} | ${s.max.toFixed(3)} | ` +
          `${(mean >= 0 ? '+' : '') + mean.toFixed(4)} | ${((100 * s.differ) / s.count).toFixed(2)}% (${s.differ}) |`,
      );
    }
  }
}
console.log(
  `${TRIALS} trials x ${ROWS * CHANNELS} uint8 elements per row; errors in output LSBs against the exact real result (clamped to the output range)\n`,
);
console.log('| scales | op | method | mean abs error | max abs error | mean error (bias) | outputs that differ from float (count) |');
console.log('|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
