// Accuracy study of the less-than-8-bit GEMM (`bitDepth`: src/quant/lowbit.ts, docs/lowbit-accuracy.md).
// It tests the claim of gemmlowp's doc/less-than-8-bit.md (removed in commit 4746387): requantizing
// with round-to-nearest biases the accumulators "resulting in an error that grows linearly with the
// depth dimension of the GEMM", while probabilistic rounding is unbiased and its error, a sum of K
// independent terms, grows like sqrt(K) (with a per-term variance twice that of round-to-nearest).
//
// For each operand distribution, depth K and bit depth it draws seeded random operands and runs the
// library's cpuGemm twice on the same data: once with 8-bit operands (the exact int32 accumulator) and
// once per rounding with `bitDepth`. The error is acc(bitDepth) - acc(8-bit), in units of the int32
// accumulator (8-bit LSB x 8-bit LSB). It reports the mean error (bias, with its standard error from
// the spread of the per-trial means), the RMS error and, for reference, the RMS of the exact
// accumulator; then the least-squares slopes of log|bias| and log RMS against log K.
//
// The work per GEMM is held constant (M = N = sqrt(32*32*4096 / K)), so small depths get many more
// accumulators and the statistics are about equally precise at every K.
//
// Distributions (why: the bias of round-to-nearest needs requantization errors whose mean is not 0,
// which happens when most values sit in a narrow range that does not line up with the coarse grid):
//   uniform      — lhs and rhs uniform on 0..255, zero points 128. Every code is equally likely, so the
//                  rounding errors average out: this hides the bias.
//   layer        — i.i.d. draws from the histograms of gemmlowp's test/test_data.cc, a real conv layer
//                  (GoogLeNet; weights: zero point 84, 89% of codes in 70..100; activations: zero point
//                  0, half exactly 0, the rest spread like an exponential of mean 32).
//   concentrated — the same activations, weights round(N(84, 3)): the layer's weights three times
//                  narrower. Nearly all of them requantize to the 4-bit code 85 or its neighbours.
//
// Output: markdown tables on stdout (the ones in docs/lowbit-accuracy.md) and docs/lowbit-accuracy.svg.
//
// Run from the repository root:  npm run study:lowbit
// (QGEMM_TRIALS sets the trials per point, default 8; QGEMM_SVG sets the plot's path, default
//  docs/lowbit-accuracy.svg, relative to the current directory.)

import { writeFileSync } from 'node:fs';

import { cpuGemm } from '../src/kernels/cpu-js/kernel.ts';
import type { BitDepthRounding, GemmProblem, Operand } from '../src/types.ts';
import { splitmix32 } from '../tools/random.ts';

const TRIALS = Number(process.env.QGEMM_TRIALS ?? 8);
const SVG_PATH = process.env.QGEMM_SVG ?? 'docs/lowbit-accuracy.svg';
const DEPTHS = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
const K_MAX = DEPTHS[DEPTHS.length - 1];
const WORK = 32 * 32 * 4096; // M*N*K per GEMM

/** Bit depths of lhs and rhs (the rounding is the third axis of the study). */
interface Bits {
  lhs: number;
  rhs: number;
}
const BIT_DEPTHS: readonly Bits[] = [
  { lhs: 4, rhs: 4 },
  { lhs: 7, rhs: 5 },
];
/** The roundings compared ('default' is one of them under another name). */
type StudyRounding = Exclude<BitDepthRounding, 'default'>;
const ROUNDINGS: readonly StudyRounding[] = ['nearest', 'probabilistic-addmod', 'probabilistic-xorshift'];
const SHORT: Record<StudyRounding, string> = { nearest: 'nearest', 'probabilistic-addmod': 'addmod', 'probabilistic-xorshift': 'xorshift' };
const COLORS: Record<StudyRounding, string> = {
  nearest: '#d62728',
  'probabilistic-addmod': '#1f77b4',
  'probabilistic-xorshift': '#2ca02c',
};

const rng = splitmix32;

// Histograms (counts of codes 0..255) of gemmlowp's test/test_data.cc (before commit 4746387):
// a_data, the [192 x 1152] weights with a_offset = -84, and b_data, the [1152 x 256] activations
// with b_offset = 0.
// biome-ignore format: one histogram per line
const LAYER_WEIGHTS = [1,0,0,0,0,1,0,0,0,0,0,0,0,0,0,1,1,0,0,0,1,0,1,0,1,0,2,1,4,3,2,2,5,1,4,5,8,6,5,6,15,13,15,21,21,24,36,36,46,51,52,76,85,109,106,190,177,259,252,353,437,521,613,747,985,1118,1380,1681,2041,2520,2957,3464,4153,4799,5577,6304,7117,7852,8435,9280,9773,10166,10315,10604,10302,10018,9716,9155,8317,7534,6728,6068,5445,4739,4019,3465,2988,2571,2160,1844,1580,1291,1106,920,797,735,602,482,419,391,316,289,237,229,182,167,131,100,133,115,87,85,74,79,64,40,53,42,38,40,32,20,26,17,17,25,23,17,18,20,15,15,14,7,9,7,7,12,13,9,12,7,5,6,2,10,9,2,6,3,5,5,6,2,2,3,5,3,2,2,3,3,3,4,0,0,1,0,0,1,1,3,2,1,1,1,0,2,0,0,0,0,0,1,1,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,0,1,1,0,0,0,0,0,0,0,0,2,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1];
// biome-ignore format: one histogram per line
const LAYER_ACTIVATIONS = [151533,3225,3038,3101,2979,3068,2842,2982,2908,2887,2856,2907,3031,2912,2907,2835,2882,2885,2395,2556,2388,2662,2627,2428,2434,2264,2381,2224,1976,2431,2179,2087,2165,1822,1614,2085,1870,1688,1527,1857,1574,1734,1624,1562,1364,1425,1224,1183,1377,1354,1155,1298,1177,1219,1125,964,1055,1016,974,927,733,832,722,878,726,608,704,674,618,626,593,467,513,454,590,333,459,440,376,445,407,339,354,331,274,281,266,309,222,187,277,276,132,270,159,145,154,171,129,141,203,99,108,124,120,90,110,140,84,69,102,93,99,100,72,73,62,69,69,51,39,59,66,90,57,75,18,45,60,37,67,60,0,36,30,30,27,42,33,31,21,18,36,12,24,27,0,9,6,24,30,9,24,23,6,50,17,9,15,9,9,9,0,6,30,6,9,9,6,0,3,9,0,36,0,24,0,0,6,21,0,0,0,0,15,0,0,6,0,9,0,0,6,15,0,0,9,0,9,0,0,6,0,0,0,6,6,0,0,6,0,0,0,0,6,0,0,13,0,0,0,0,6,0,0,0,0,0,0,0,0,0,9,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,4,0,0,0,6];

/** A code 0..255 from a uniform draw u in [0, 1). */
type Sampler = (u: number) => number;

/** A sampler of codes 0..255 with the given weights: u in [0,1) -> inverse CDF (binary search). */
function histogramSampler(weights: readonly number[]): Sampler {
  const total = weights.reduce((a, b) => a + b, 0);
  const cdf: number[] = [];
  let acc = 0;
  for (const w of weights) cdf.push((acc += w) / total);
  return (u) => {
    let lo = 0;
    let hi = 255;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
}
const gaussianWeights = (mu: number, sd: number): number[] => Array.from({ length: 256 }, (_, v) => Math.exp(-0.5 * ((v - mu) / sd) ** 2));

/** An operand distribution: the weights of codes 0..255 of each operand, and their zero points. */
interface DistributionSpec {
  name: string;
  describe: string;
  lhsWeights: readonly number[];
  rhsWeights: readonly number[];
  lhsZeroPoint: number;
  rhsZeroPoint: number;
}
/** A distribution with its samplers. */
interface Distribution extends DistributionSpec {
  lhs: Sampler;
  rhs: Sampler;
}

const UNIFORM = Array.from({ length: 256 }, () => 1);
const SPECS: DistributionSpec[] = [
  {
    name: 'uniform',
    describe: 'lhs, rhs uniform 0..255; zero points 128',
    lhsWeights: UNIFORM,
    rhsWeights: UNIFORM,
    lhsZeroPoint: 128,
    rhsZeroPoint: 128,
  },
  {
    name: 'layer',
    describe: 'gemmlowp test_data.cc histograms: weights with zero point 84, activations with zero point 0',
    lhsWeights: LAYER_WEIGHTS,
    rhsWeights: LAYER_ACTIVATIONS,
    lhsZeroPoint: 84,
    rhsZeroPoint: 0,
  },
  {
    name: 'concentrated',
    describe: "weights round(N(84, 3)) with zero point 84, the layer's activations with zero point 0",
    lhsWeights: gaussianWeights(84, 3),
    rhsWeights: LAYER_ACTIVATIONS,
    lhsZeroPoint: 84,
    rhsZeroPoint: 0,
  },
];
const DISTRIBUTIONS: Distribution[] = SPECS.map((d) => ({
  ...d,
  lhs: histogramSampler(d.lhsWeights),
  rhs: histogramSampler(d.rhsWeights),
}));

/** Moments of one operand's requantization error d and centred value b, over codes and offsets. */
interface Moments {
  d: number;
  d2: number;
  b: number;
  b2: number;
  db: number;
}
/** The error model's per-term mean and deviation. */
interface ErrorModel {
  mu: number;
  sigma: number;
}

/**
 * The error model behind the claim, from the distributions alone. Per term of the depth sum, with
 * l~ = requantized l rescaled by 255/Lmax, dl = l~ - l, b = l - zL (and dr, a = r - zR for rhs):
 *   (l~ - zL)(r~ - zR) - (l - zL)(r - zR) = dl*(a + dr) + b*dr,
 * a sum of K independent terms of mean mu and deviation sigma (up to the O(1) rounding of the three
 * RMBCF), so bias = K*mu and RMS = sqrt(K^2 mu^2 + K sigma^2). Probabilistic offsets are taken as
 * uniform over 0..254 (both generators run through every offset once per 255 elements), which makes
 * E[dl | l] = 0 exactly; round-to-nearest has E[dl | l] != 0 for each code, and mu != 0 unless those
 * conditional means cancel over the distribution.
 */
function operandMoments(weights: readonly number[], bits: number, zeroPoint: number, rounding: StudyRounding): Moments {
  const maxval = 2 ** bits - 1;
  const offsets = rounding === 'nearest' ? [127] : Array.from({ length: 255 }, (_, o) => o);
  const total = weights.reduce((a, b) => a + b, 0);
  const m: Moments = { d: 0, d2: 0, b: 0, b2: 0, db: 0 };
  weights.forEach((w, v) => {
    if (!w) return;
    const p = w / total / offsets.length;
    for (const o of offsets) {
      const d = (Math.floor((v * maxval + o) / 255) * 255) / maxval - v;
      const b = v - zeroPoint;
      m.d += p * d;
      m.d2 += p * d * d;
      m.b += p * b;
      m.b2 += p * b * b;
      m.db += p * d * b;
    }
  });
  return m;
}
function errorModel(dist: DistributionSpec, bits: Bits, rounding: StudyRounding): ErrorModel {
  const L = operandMoments(dist.lhsWeights, bits.lhs, dist.lhsZeroPoint, rounding);
  const R = operandMoments(dist.rhsWeights, bits.rhs, dist.rhsZeroPoint, rounding);
  const mu = L.d * R.b + L.d * R.d + L.b * R.d;
  const second = L.d2 * (R.b2 + 2 * R.db + R.d2) + 2 * L.db * (R.db + R.d2) + L.b2 * R.d2;
  return { mu: Math.abs(mu) < 1e-9 ? 0 : mu, sigma: Math.sqrt(second - mu * mu) }; // |mu| < 1e-9: floating-point dust
}

/** Key of a (bit depth, rounding) pair, e.g. '4/4/nearest'. */
type Key = `${number}/${number}/${StudyRounding}`;
const key = (bits: Bits, rounding: StudyRounding): Key => `${bits.lhs}/${bits.rhs}/${rounding}`;

/** Running sums of one (bit depth, rounding) over the trials of a point. */
interface Accumulator {
  sum: number;
  sumSq: number;
  trialMeans: number[];
}
/** The error of one (bit depth, rounding) at one point, in int32 accumulator units. */
interface PointError {
  /** Mean error. */
  bias: number;
  /** Standard error of the bias, from the spread of the per-trial means (NaN with one trial). */
  se: number;
  rms: number;
}
/** One (distribution, K) point. */
interface Point {
  K: number;
  M: number;
  N: number;
  /** RMS of the exact 8-bit accumulator. */
  exactRms: number;
  errors: Partial<Record<Key, PointError>>;
}
/** The error of a measured (bit depth, rounding) at a point. */
function errorAt(p: Point, bits: Bits, rounding: StudyRounding): PointError {
  const e = p.errors[key(bits, rounding)];
  if (!e) throw new Error(`no measurement for ${key(bits, rounding)} at K = ${p.K}`);
  return e;
}
/** Least-squares slopes of one curve. */
interface Slopes {
  sBias: number;
  sRms: number;
}
/** All points of one distribution. */
interface DistributionResult {
  dist: Distribution;
  points: Point[];
}

/** All trials of one (distribution, K): per bit depth and rounding, error moments and per-trial means. */
function measure(dist: Distribution, distIndex: number, K: number): Point {
  const M = Math.round(Math.sqrt(WORK / K));
  const N = M;
  const next = rng(0x10b17 + 7919 * distIndex + K);
  const acc = new Map<Key, Accumulator>();
  for (const bits of BIT_DEPTHS) for (const r of ROUNDINGS) acc.set(key(bits, r), { sum: 0, sumSq: 0, trialMeans: [] });
  let exactSumSq = 0;
  let count = 0;
  for (let t = 0; t < TRIALS; t++) {
    const lhs: Operand = { data: Uint8Array.from({ length: M * K }, () => dist.lhs(next())), rows: M, cols: K, order: 'row-major' };
    const rhs: Operand = { data: Uint8Array.from({ length: K * N }, () => dist.rhs(next())), rows: K, cols: N, order: 'row-major' };
    const base: GemmProblem = { lhs, rhs, lhsZeroPoint: dist.lhsZeroPoint, rhsZeroPoint: dist.rhsZeroPoint };
    const exact = cpuGemm(base).data;
    for (const x of exact) exactSumSq += x * x;
    count += exact.length;
    for (const bits of BIT_DEPTHS) {
      for (const rounding of ROUNDINGS) {
        const approx = cpuGemm({ ...base, bitDepth: { ...bits, rounding } }).data;
        const s = acc.get(key(bits, rounding))!;
        let sum = 0;
        for (let i = 0; i < exact.length; i++) {
          const e = approx[i] - exact[i];
          sum += e;
          s.sumSq += e * e;
        }
        s.sum += sum;
        s.trialMeans.push(sum / exact.length);
      }
    }
  }
  const out: Point = { K, M, N, exactRms: Math.sqrt(exactSumSq / count), errors: {} };
  for (const [k, s] of acc) {
    const mean = s.sum / count;
    const m = s.trialMeans;
    const variance = m.reduce((a, x) => a + (x - mean) ** 2, 0) / (m.length - 1);
    out.errors[k] = { bias: mean, se: m.length > 1 ? Math.sqrt(variance / m.length) : NaN, rms: Math.sqrt(s.sumSq / count) };
  }
  return out;
}

/** Least-squares slope of log y against log x. */
function logLogSlope(xs: readonly number[], ys: readonly number[]): number {
  const lx = xs.map(Math.log);
  const ly = ys.map((y) => Math.log(Math.max(y, 1e-12)));
  const mx = lx.reduce((a, b) => a + b, 0) / lx.length;
  const my = ly.reduce((a, b) => a + b, 0) / ly.length;
  let num = 0;
  let den = 0;
  for (let i = 0; i < lx.length; i++) {
    num += (lx[i] - mx) * (ly[i] - my);
    den += (lx[i] - mx) ** 2;
  }
  return num / den;
}

/** 3 significant digits, no exponent for the magnitudes seen here. */
function fmt(x: number): string {
  if (x === 0) return '0';
  const a = Math.abs(x);
  const s = a >= 1000 ? String(Math.round(Number(a.toPrecision(3)))) : a >= 0.01 ? String(Number(a.toPrecision(3))) : a.toExponential(1);
  return (x < 0 ? '−' : '') + s;
}
const signed = (x: number): string => (x > 0 ? '+' : '') + fmt(x);

// ---- run ---------------------------------------------------------------------------------------
const started = performance.now();
const results: DistributionResult[] = DISTRIBUTIONS.map((dist, i) => ({ dist, points: DEPTHS.map((K) => measure(dist, i, K)) }));
const seconds = (performance.now() - started) / 1000;

// ---- tables ------------------------------------------------------------------------------------
const lines: string[] = [];
lines.push(
  `${TRIALS} trials per point; M = N = sqrt(${WORK} / K) (${Math.round(Math.sqrt(WORK / DEPTHS[0]))} at K = ${DEPTHS[0]}, ${Math.round(Math.sqrt(WORK / K_MAX))} at K = ${K_MAX}); ` +
    `errors = acc(bitDepth) − acc(8-bit), in int32 accumulator units; bias ± its standard error over trials. Ran in ${seconds.toFixed(1)} s.`,
);
lines.push('');
lines.push('### Fitted log-log slopes, K = 16..4096');
lines.push('');
lines.push(
  '| distribution | bits L/R | rounding | slope of \\|bias\\| | slope of SE(bias) | slope of RMS | slope of RMS, K ≥ 512 | \\|bias\\| > 2 SE at | RMS / exact RMS at K = 4096 |',
);
lines.push('|---|---|---|---|---|---|---|---|---|');
const slopes = new Map<string, Slopes>();
for (const { dist, points } of results) {
  for (const bits of BIT_DEPTHS) {
    for (const rounding of ROUNDINGS) {
      const e = points.map((p) => errorAt(p, bits, rounding));
      const Ks = points.map((p) => p.K);
      const big = points.map((_, i) => i).filter((i) => Ks[i] >= 512);
      const sBias = logLogSlope(
        Ks,
        e.map((x) => Math.abs(x.bias)),
      );
      const sRms = logLogSlope(
        Ks,
        e.map((x) => x.rms),
      );
      const sSe = logLogSlope(
        Ks,
        e.map((x) => x.se),
      );
      const sRmsBig = logLogSlope(
        big.map((i) => Ks[i]),
        big.map((i) => e[i].rms),
      );
      const significant = e.filter((x) => Math.abs(x.bias) > 2 * x.se).length;
      slopes.set(`${dist.name}/${key(bits, rounding)}`, { sBias, sRms });
      lines.push(
        `| ${dist.name} | ${bits.lhs}/${bits.rhs} | ${rounding} | ${sBias.toFixed(2)} | ${Number.isFinite(sSe) ? sSe.toFixed(2) : 'n/a'} | ${sRms.toFixed(2)} | ${sRmsBig.toFixed(2)} | ${significant} of ${e.length} depths | ${(e[e.length - 1].rms / points[points.length - 1].exactRms).toFixed(3)} |`,
      );
    }
  }
}
lines.push('');
lines.push('### The error model against the measurements');
lines.push('');
lines.push(
  'Per term of depth (see errorModel in the script): μ = mean error, σ = its deviation; bias ≈ K·μ, RMS ≈ √(K²μ² + Kσ²). ' +
    'K* = (σ_prob² − σ_nearest²) / μ_nearest² is where nearest stops being the more accurate.',
);
lines.push('');
lines.push(
  '| distribution | bits L/R | nearest μ (model) | nearest bias / K, measured at K = 4096 | nearest σ (model) | probabilistic σ (model) | addmod RMS / √K, measured at K = 4096 | K* (model) | first K with addmod RMS < nearest RMS (measured) |',
);
lines.push('|---|---|---|---|---|---|---|---|---|');
for (const { dist, points } of results) {
  for (const bits of BIT_DEPTHS) {
    const n = errorModel(dist, bits, 'nearest');
    const pr = errorModel(dist, bits, 'probabilistic-addmod');
    const last = points[points.length - 1];
    const kStar = Math.abs(n.mu) > 1e-9 ? (pr.sigma ** 2 - n.sigma ** 2) / n.mu ** 2 : Infinity;
    const crossed = points.find((p) => errorAt(p, bits, 'probabilistic-addmod').rms < errorAt(p, bits, 'nearest').rms);
    lines.push(
      `| ${dist.name} | ${bits.lhs}/${bits.rhs} | ${signed(n.mu)} | ${signed(errorAt(last, bits, 'nearest').bias / last.K)} ± ${fmt(errorAt(last, bits, 'nearest').se / last.K)} | ` +
        `${fmt(n.sigma)} | ${fmt(pr.sigma)} | ${fmt(errorAt(last, bits, 'probabilistic-addmod').rms / Math.sqrt(last.K))} | ` +
        `${Number.isFinite(kStar) ? fmt(kStar) : '∞ (μ = 0)'} | ${crossed ? crossed.K : `none up to ${K_MAX}`} |`,
    );
  }
}
for (const { dist, points } of results) {
  for (const bits of BIT_DEPTHS) {
    lines.push('');
    lines.push(`### ${dist.name} (${dist.describe}), L = ${bits.lhs}, R = ${bits.rhs} bits`);
    lines.push('');
    lines.push(`| K | M = N | exact RMS | ${ROUNDINGS.map((r) => `${SHORT[r]} bias | ${SHORT[r]} RMS`).join(' | ')} |`);
    lines.push(`|---|---|---|${ROUNDINGS.map(() => '---|---|').join('')}`);
    for (const p of points) {
      const cells = ROUNDINGS.map((r) => {
        const e = errorAt(p, bits, r);
        return `${signed(e.bias)} ± ${fmt(e.se)} | ${fmt(e.rms)}`;
      });
      lines.push(`| ${p.K} | ${p.M} | ${fmt(p.exactRms)} | ${cells.join(' | ')} |`);
    }
  }
}
console.log(lines.join('\n'));

// ---- plot --------------------------------------------------------------------------------------
const PANEL_W = 270;
const PANEL_H = 210;
const MARGIN = { left: 62, right: 14, top: 30, bottom: 44 };
const CELL_W = PANEL_W + MARGIN.left + MARGIN.right;
const CELL_H = PANEL_H + MARGIN.top + MARGIN.bottom;
const ROW_LABEL = 34;
const HEADER = 96;
/** One column of panels: a bit depth and a statistic. */
interface Column {
  bits: Bits;
  what: 'bias' | 'rms';
  title: string;
}
/** A plotted point: v is |bias| or RMS, floored at 1e-3 for the log scale. */
interface PlotPoint {
  K: number;
  v: number;
  significant: boolean;
}
/** The points of one rounding in one panel. */
interface Series {
  r: StudyRounding;
  pts: PlotPoint[];
}
const columns: Column[] = BIT_DEPTHS.flatMap((bits): Column[] => [
  { bits, what: 'bias', title: `|bias|, L=${bits.lhs} R=${bits.rhs} bits` },
  { bits, what: 'rms', title: `RMS error, L=${bits.lhs} R=${bits.rhs} bits` },
]);
const width = ROW_LABEL + columns.length * CELL_W + 10;
const height = HEADER + results.length * CELL_H + 10;
const esc = (s: string): string => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const svg: string[] = [];
svg.push(
  `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
);
svg.push(`<rect width="${width}" height="${height}" fill="white"/>`);
svg.push(
  `<text x="${width / 2}" y="22" text-anchor="middle" font-size="16" font-weight="bold">Less-than-8-bit GEMM: int32 accumulator error vs exact 8-bit, as a function of depth K (log-log)</text>`,
);
// legend
{
  let x = ROW_LABEL + 20;
  const y = 50;
  for (const r of ROUNDINGS) {
    svg.push(
      `<line x1="${x}" y1="${y}" x2="${x + 30}" y2="${y}" stroke="${COLORS[r]}" stroke-width="2.5"/><circle cx="${x + 15}" cy="${y}" r="3.5" fill="${COLORS[r]}"/>`,
    );
    svg.push(`<text x="${x + 38}" y="${y + 4}">${esc(r)}</text>`);
    x += 60 + r.length * 7;
  }
  svg.push(`<circle cx="${x + 15}" cy="${y}" r="3.5" fill="white" stroke="#555" stroke-width="1.5"/>`);
  svg.push(`<text x="${x + 26}" y="${y + 4}">|bias| within 2 standard errors of 0 (not significant)</text>`);
  x += 360;
  svg.push(`<line x1="${x}" y1="${y}" x2="${x + 30}" y2="${y}" stroke="#999" stroke-width="1.2" stroke-dasharray="6 4"/>`);
  svg.push(`<text x="${x + 36}" y="${y + 4}">guides: slope 1 (∝ K); RMS panels also slope ½ (∝ √K)</text>`);
  svg.push(
    `<text x="${ROW_LABEL + 20}" y="${y + 26}" fill="#444">error = acc(bitDepth) − acc(8-bit) in int32 accumulator units; ${TRIALS} seeded trials per point, M = N = √(${WORK}/K); rows: operand distribution (see docs/lowbit-accuracy.md)</text>`,
  );
}
const log10 = Math.log10;
results.forEach(({ dist, points }, row) => {
  const y0 = HEADER + row * CELL_H;
  svg.push(
    `<text transform="translate(${ROW_LABEL - 12},${y0 + MARGIN.top + PANEL_H / 2}) rotate(-90)" text-anchor="middle" font-size="14" font-weight="bold">${esc(dist.name)}</text>`,
  );
  columns.forEach((col, c) => {
    const x0 = ROW_LABEL + c * CELL_W + MARGIN.left;
    const py0 = y0 + MARGIN.top;
    const series: Series[] = ROUNDINGS.map((r) => ({
      r,
      pts: points.map((p) => {
        const e = errorAt(p, col.bits, r);
        const v = col.what === 'bias' ? Math.abs(e.bias) : e.rms;
        return { K: p.K, v: Math.max(v, 1e-3), significant: col.what !== 'bias' || Math.abs(e.bias) > 2 * e.se };
      }),
    }));
    const all = series.flatMap((s) => s.pts.map((p) => p.v));
    let lo = Math.floor(log10(Math.min(...all)));
    const hi = Math.ceil(log10(Math.max(...all)));
    if (hi - lo < 2) lo = hi - 2;
    const kLo = log10(DEPTHS[0]) - 0.08;
    const kHi = log10(K_MAX) + 0.08;
    const X = (K: number): number => x0 + ((log10(K) - kLo) / (kHi - kLo)) * PANEL_W;
    const Y = (v: number): number => py0 + PANEL_H - ((log10(v) - lo) / (hi - lo)) * PANEL_H;
    svg.push(`<text x="${x0 + PANEL_W / 2}" y="${py0 - 10}" text-anchor="middle" font-weight="bold">${esc(col.title)}</text>`);
    svg.push(`<rect x="${x0}" y="${py0}" width="${PANEL_W}" height="${PANEL_H}" fill="none" stroke="#333"/>`);
    // y grid: decades (and 2, 5 when few decades)
    for (let d = lo; d <= hi; d++) {
      const y = Y(10 ** d);
      svg.push(`<line x1="${x0}" y1="${y}" x2="${x0 + PANEL_W}" y2="${y}" stroke="#ddd"/>`);
      const label = d === 0 ? '1' : d === 1 ? '10' : `10<tspan dy="-5" font-size="9">${d < 0 ? '−' : ''}${Math.abs(d)}</tspan>`;
      svg.push(`<text x="${x0 - 6}" y="${y + 4}" text-anchor="end">${label}</text>`);
      if (hi - lo <= 3 && d < hi) {
        for (const m of [2, 5])
          svg.push(`<line x1="${x0}" y1="${Y(m * 10 ** d)}" x2="${x0 + PANEL_W}" y2="${Y(m * 10 ** d)}" stroke="#f0f0f0"/>`);
      }
    }
    // x grid: powers of 2
    for (const K of DEPTHS) {
      const x = X(K);
      svg.push(`<line x1="${x}" y1="${py0}" x2="${x}" y2="${py0 + PANEL_H}" stroke="#eee"/>`);
      svg.push(`<text x="${x}" y="${py0 + PANEL_H + 15}" text-anchor="middle" font-size="10.5">${K}</text>`);
    }
    svg.push(`<text x="${x0 + PANEL_W / 2}" y="${py0 + PANEL_H + 33}" text-anchor="middle">depth K</text>`);
    svg.push(
      `<text transform="translate(${x0 - 46},${py0 + PANEL_H / 2}) rotate(-90)" text-anchor="middle">${col.what === 'bias' ? '|mean error|' : 'RMS error'} (acc units)</text>`,
    );
    // guide lines through the last point of nearest (slope 1) and, for RMS, of addmod (slope ½)
    svg.push(`<clipPath id="clip${row}_${c}"><rect x="${x0}" y="${py0}" width="${PANEL_W}" height="${PANEL_H}"/></clipPath>`);
    svg.push(`<g clip-path="url(#clip${row}_${c})">`);
    const guide = (anchor: Series, slope: number): void => {
      const a = anchor.pts[anchor.pts.length - 1];
      const f = (K: number): number => a.v * (K / a.K) ** slope;
      svg.push(
        `<line x1="${X(DEPTHS[0])}" y1="${Y(f(DEPTHS[0]))}" x2="${X(K_MAX)}" y2="${Y(f(K_MAX))}" stroke="#999" stroke-width="1.2" stroke-dasharray="6 4"/>`,
      );
    };
    guide(series[0], 1);
    if (col.what === 'rms') guide(series[1], 0.5); // a bias that is only noise has no slope to compare
    for (const s of series) {
      const d = s.pts.map((p, i) => `${i ? 'L' : 'M'}${X(p.K).toFixed(1)},${Y(p.v).toFixed(1)}`).join(' ');
      svg.push(`<path d="${d}" fill="none" stroke="${COLORS[s.r]}" stroke-width="2" stroke-opacity="0.85"/>`);
      for (const p of s.pts) {
        svg.push(
          `<circle cx="${X(p.K).toFixed(1)}" cy="${Y(p.v).toFixed(1)}" r="3.5" fill="${p.significant ? COLORS[s.r] : 'white'}" stroke="${COLORS[s.r]}" stroke-width="1.5"/>`,
        );
      }
    }
    svg.push('</g>');
    // slopes in the corner
    ROUNDINGS.forEach((r, i) => {
      const s = slopes.get(`${dist.name}/${key(col.bits, r)}`)!;
      const v = col.what === 'bias' ? s.sBias : s.sRms;
      svg.push(`<text x="${x0 + 6}" y="${py0 + 15 + i * 14}" fill="${COLORS[r]}" font-size="11">${SHORT[r]}: slope ${v.toFixed(2)}</text>`);
    });
  });
});
svg.push('</svg>');
writeFileSync(SVG_PATH, svg.join('\n') + '\n');
console.error(`wrote ${SVG_PATH}; measured in ${seconds.toFixed(1)} s`);
