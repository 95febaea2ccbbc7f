// A seeded generator of random elementwise specs (the add/sub/mul/alignedAdd/alignedSub spec contract)
// for differential testing of `qgemm run` against the BigInt oracle (./elementwise-oracle.ts). It writes
// spec.json, a.npy and b.npy into a folder. Coverage: uint8 and int8; shapes of 0..4 dimensions that
// broadcast (dimensions dropped to 1 or leading dimensions left out on either side, now and then an
// empty dimension), C or Fortran order per input; uniform, narrow and extreme data; zero points
// anywhere in the type's range; scale ratios from 1 to 2^±40 for add/sub (below 2^−31 an input
// multiplier flushes to 0), output scales that put sub's output multiplier above 1 (QuantizeMultiplierGreaterThanOne),
// mul multipliers from 2^−12 to 2^8, per-tensor and per-axis aligned scales spanning up to 2^14,
// output scales that need a positive shift, float32-rounded scales as TFLite stores them, and optional
// activation clamps. With `invalid`, one field is spoiled the way a user might (the CLI must exit 2, and
// the oracle must reject it too). Same seed, same files.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serializeNpy, type NpyArray } from '../../src/io/npy.ts';
import type { ElementwiseOpJson, ElementwiseSpecJson, InputJson } from './elementwise-oracle.ts';
import { Rng } from './random-spec.ts';

export interface RandomElementwiseOptions {
  /** Most output elements (default 2048). */
  maxElements?: number;
  /** Spoil one field (default false). */
  invalid?: boolean;
}

export interface RandomElementwiseSpec {
  specPath: string;
  spec: ElementwiseSpecJson;
  /** What was spoiled, when `invalid`. */
  spoiled?: string;
}

const OPS: ElementwiseOpJson[] = ['add', 'sub', 'mul', 'alignedAdd', 'alignedSub'];
const DIMS = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33];

const logUniform = (rng: Rng, lo: number, hi: number) => lo * (hi / lo) ** rng.float();

function templateShape(rng: Rng, maxElements: number): number[] {
  const rank = rng.int(0, 4);
  const shape: number[] = [];
  let count = 1;
  for (let k = 0; k < rank; k++) {
    let d = rng.pick(DIMS);
    if (count * d > maxElements) d = rng.int(1, Math.max(1, Math.floor(maxElements / count)));
    shape.push(d);
    count *= d;
  }
  if (rank > 0 && rng.bool(0.02)) shape[rng.int(0, rank - 1)] = 0;
  return shape;
}

/** An input shape that broadcasts to `template`: a suffix of it, some dimensions replaced by 1. */
function inputShape(rng: Rng, template: number[]): number[] {
  const rank = rng.bool(0.7) ? template.length : rng.int(0, template.length);
  return template.slice(template.length - rank).map((d) => (rng.bool(0.25) ? 1 : d));
}

function inputArray(rng: Rng, shape: number[], dtype: 'uint8' | 'int8'): NpyArray {
  const [lo, hi] = dtype === 'uint8' ? [0, 255] : [-128, 127];
  const n = shape.reduce((p, d) => p * d, 1);
  const mode = rng.int(0, 19);
  const center = rng.int(lo, hi);
  const data = dtype === 'uint8' ? new Uint8Array(n) : new Int8Array(n);
  for (let i = 0; i < n; i++) {
    if (mode < 14) data[i] = rng.int(lo, hi);
    else if (mode < 18) data[i] = Math.min(hi, Math.max(lo, center + rng.int(-3, 3)));
    else data[i] = rng.bool() ? lo : hi;
  }
  // Fortran order: the same logical values stored column-major (data is random anyway; the order is a flag).
  return { dtype, shape, fortranOrder: shape.length >= 2 && rng.bool(0.3), data };
}

function zeroPoint(rng: Rng, lo: number, hi: number): number {
  const r = rng.float();
  if (r < 0.1) return lo;
  if (r < 0.2) return hi;
  if (r < 0.3) return lo === 0 ? 128 : 0;
  return rng.int(lo, hi);
}

export function writeRandomElementwiseSpec(dir: string, seed: number, options: RandomElementwiseOptions = {}): RandomElementwiseSpec {
  const rng = new Rng(seed);
  const maxElements = options.maxElements ?? 2048;
  mkdirSync(dir, { recursive: true });
  const op = rng.pick(OPS);
  const dtype = rng.bool() ? 'uint8' : 'int8';
  const [lo, hi] = dtype === 'uint8' ? [0, 255] : [-128, 127];
  const template = templateShape(rng, maxElements);
  let aShape = inputShape(rng, template);
  let bShape = inputShape(rng, template);
  if (rng.bool(0.15)) bShape = [...aShape]; // TFLite's non-broadcast path
  const f32 = rng.bool(0.3) ? Math.fround : (x: number) => x;

  let aScale: number | number[];
  let bScale: number | number[];
  let aAxis: number | undefined;
  let bAxis: number | undefined;
  let outScale: number;
  if (op === 'add' || op === 'sub') {
    const sa = logUniform(rng, 1e-4, 10);
    const ratio = rng.bool(0.2) ? 1 : rng.bool(0.85) ? logUniform(rng, 2 ** -8, 2 ** 8) : logUniform(rng, 2 ** -40, 2 ** 40); // beyond 2^±31 an input multiplier flushes to 0
    aScale = f32(sa);
    bScale = f32(sa * ratio);
    const maxScale = Math.max(aScale, bScale);
    outScale =
      op === 'sub' && rng.bool(0.35)
        ? f32((maxScale * 2 ** -19) / logUniform(rng, 1.001, 2 ** 12)) // real output multiplier > 1
        : f32(maxScale * logUniform(rng, 2 ** -15, 2 ** 6));
  } else if (op === 'mul') {
    aScale = f32(logUniform(rng, 1e-3, 1));
    bScale = f32(logUniform(rng, 1e-3, 1));
    outScale = f32(aScale * bScale * logUniform(rng, 2 ** -8, 2 ** 12));
  } else {
    const base = logUniform(rng, 1e-4, 10);
    const spanBits = rng.pick([0, 1, 3, 8, 14]);
    const draw = () => f32(base * 2 ** (rng.float() * spanBits));
    // Per axis along a random dimension of non-zero size (an empty dimension would have no scales).
    const axisOf = (shape: number[]) => {
      if (shape.length === 0 || rng.bool(0.5)) return undefined;
      const k = rng.int(0, shape.length - 1);
      return shape[k] > 0 ? k : undefined;
    };
    aAxis = axisOf(aShape);
    aScale = aAxis === undefined ? draw() : Array.from({ length: aShape[aAxis] }, draw);
    bAxis = axisOf(bShape);
    bScale = bAxis === undefined ? draw() : Array.from({ length: bShape[bAxis] }, draw);
    const all = [aScale, bScale].flat();
    outScale = rng.bool(0.8)
      ? f32(Math.max(...all) * logUniform(rng, 2 ** -4, 2 ** 4))
      : f32(Math.min(...all) * logUniform(rng, 2 ** -10, 1)); // 2^−F / so > 1: a positive output shift
  }

  const input = (file: string, scale: number | number[], zp: number, axis: number | undefined): InputJson => ({
    data: file,
    scale,
    zeroPoint: zp,
    ...(axis === undefined ? {} : { axis }),
  });
  const za = zeroPoint(rng, lo, hi);
  const zb = zeroPoint(rng, lo, hi);
  let zo = zeroPoint(rng, lo, hi);
  const greaterThanOne = op === 'sub' && 2 * Math.max(aScale as number, bScale as number) > 2 ** 20 * outScale;
  if (!greaterThanOne && rng.bool(0.7)) {
    // Fit the output quantization to the range of the real results, so that few outputs saturate.
    const sa = Math.max(...[aScale].flat());
    const sb = Math.max(...[bScale].flat());
    const ra = [sa * (lo - za), sa * (hi - za)];
    const rb = [sb * (lo - zb), sb * (hi - zb)];
    const corners =
      op === 'mul'
        ? ra.flatMap((x) => rb.map((y) => x * y))
        : ra.flatMap((x) => rb.map((y) => (op === 'sub' || op === 'alignedSub' ? x - y : x + y)));
    const realMin = Math.min(0, ...corners);
    const realMax = Math.max(0, ...corners);
    outScale = f32(((realMax - realMin) / (hi - lo)) * logUniform(rng, 0.5, 1.25));
    zo = Math.min(hi, Math.max(lo, Math.round(lo - realMin / outScale)));
  }
  const spec: ElementwiseSpecJson = {
    op,
    a: input('a.npy', aScale, za, aAxis),
    b: input('b.npy', bScale, zb, bAxis),
    output: { scale: outScale, zeroPoint: zo },
    out: 'out.npy',
  };
  const clamp = rng.float();
  if (clamp < 0.1) {
    const min = rng.int(lo, hi);
    Object.assign(spec.output, { min, max: rng.int(min, hi) });
  } else if (clamp < 0.2) Object.assign(spec.output, { min: rng.int(lo, lo + 100) });
  else if (clamp < 0.3) Object.assign(spec.output, { max: rng.int(hi - 100, hi) });
  if (spec.output.min !== undefined && spec.output.max === undefined && rng.bool()) spec.output.max = hi;

  let bDtype: 'uint8' | 'int8' = dtype;
  let spoiled: string | undefined;
  if (options.invalid) {
    const kinds = ['zeroPoint', 'clamp', 'dtype', 'broadcast', 'outputScale', 'perAxis', 'alignSpan'];
    spoiled = rng.pick(kinds);
    switch (spoiled) {
      case 'zeroPoint':
        spec.b.zeroPoint = rng.bool() ? hi + rng.int(1, 300) : lo - rng.int(1, 300);
        break;
      case 'clamp':
        spec.output.min = rng.int(lo + 1, hi);
        spec.output.max = rng.int(lo, spec.output.min - 1);
        break;
      case 'dtype':
        bDtype = dtype === 'uint8' ? 'int8' : 'uint8';
        break;
      case 'broadcast':
        aShape = [rng.int(2, 5)];
        bShape = [aShape[0] + rng.int(1, 3)];
        if (Array.isArray(spec.a.scale)) spec.a = input('a.npy', 0.5, spec.a.zeroPoint, undefined);
        if (Array.isArray(spec.b.scale)) spec.b = input('b.npy', 0.5, spec.b.zeroPoint, undefined);
        break;
      case 'outputScale': {
        const sa = Array.isArray(spec.a.scale) ? spec.a.scale[0] : spec.a.scale;
        const sb = Array.isArray(spec.b.scale) ? spec.b.scale[0] : spec.b.scale;
        if (op === 'add')
          spec.output.scale = (2 * Math.max(sa, sb)) / 2 ** 20 / rng.pick([1, 2, 1000]); // real_out >= 1
        else if (op === 'sub')
          spec.output.scale = (2 * Math.max(sa, sb)) / 2 ** 20; // real_out == 1 exactly
        else if (op === 'mul')
          spec.output.scale = sa * sb * 2 ** -40; // shift > 31
        else spec.output.scale = 2 ** -60; // 2^−F / so far above 2^31
        break;
      }
      case 'perAxis':
        if (op === 'alignedAdd' || op === 'alignedSub') {
          aShape = aShape.length ? aShape : [3];
          spec.a = { ...spec.a, scale: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7].slice(0, aShape[0] === 1 ? 2 : 1), axis: 0 }; // wrong length
        } else {
          spec.a = { ...spec.a, scale: [0.1], axis: 0 };
          aShape = [1];
        }
        break;
      default: // alignSpan
        spec.op = rng.bool() ? 'alignedAdd' : 'alignedSub';
        spec.a = input('a.npy', 1.0, spec.a.zeroPoint, undefined);
        spec.b = input('b.npy', 2 ** -(16 + rng.int(0, 5)) * (1 + rng.float() * 0.5), spec.b.zeroPoint, undefined);
        spec.output.scale = 1.0;
    }
  }
  const a = inputArray(rng, aShape, dtype);
  const b = inputArray(rng, bShape, bDtype);
  writeFileSync(join(dir, 'a.npy'), serializeNpy(a));
  writeFileSync(join(dir, 'b.npy'), serializeNpy(b));
  const specPath = join(dir, 'spec.json');
  writeFileSync(specPath, JSON.stringify(spec, null, 1));
  return { specPath, spec, ...(spoiled ? { spoiled } : {}) };
}
