/**
 * Golden tests against the real TFLite interpreter: every case in test/golden/tflite/*.json (written by
 * tools/tflite-golden/, the format of the layer contract) is checked bit for bit through the library's
 * `fullyConnected`/`conv2d` on the CPU and on WebGPU, for each kernel path whose output the file holds.
 * A self-check recomputes each case with the naive path models of tools/tflite-golden/paths.ts, which
 * document TFLite's rounding per path. Layers sit on top of pack -> gemm -> output.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { activationRange, type KernelPath, requantize } from '../../tools/tflite-golden/paths.js';

interface GoldenTensor {
  dtype: 'int8' | 'uint8';
  shape: number[];
  data: number[];
  scale: number | number[];
  zeroPoint: number;
}
interface GoldenCase {
  name: string;
  op: 'FULLY_CONNECTED' | 'CONV_2D';
  input: GoldenTensor;
  weights: GoldenTensor;
  bias: number[] | null;
  stride?: [number, number];
  dilation?: [number, number];
  padding?: 'SAME' | 'VALID';
  output: { dtype: 'int8' | 'uint8'; scale: number; zeroPoint: number };
  activation: 'NONE' | 'RELU' | 'RELU6' | 'RELU_N1_TO_1';
  outputs: Partial<Record<KernelPath, number[]>>;
  outputShape: number[];
  producedBy: string;
}

const dir = join(__dirname, 'tflite');
const cases: GoldenCase[] = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .flatMap((f) => {
    const j = JSON.parse(readFileSync(join(dir, f), 'utf8'));
    return Array.isArray(j) ? j : [j];
  });

/** Naive layer: accumulators in TFLite's layouts (FC [N,K]; conv NHWC/OHWI, padded with the input zero point). */
function naive(c: GoldenCase, path: KernelPath): number[] {
  const inZp = c.input.zeroPoint;
  const wZp = c.weights.zeroPoint ?? 0;
  const ws = c.weights.scale;
  const perChannel = Array.isArray(ws);
  const [lo, hi] = activationRange(c.activation, c.output.scale, c.output.zeroPoint, c.output.dtype);
  const finish = (acc: number, o: number) => {
    const s = Array.isArray(ws) ? ws[o] : ws;
    const v = requantize(acc, c.input.scale as number, s, c.output.scale, path, c.op, c.input.dtype, perChannel) + c.output.zeroPoint;
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
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue; // padded: input zero point, adds 0
              for (let q = 0; q < ci; q++)
                acc += (c.input.data[((n * h + iy) * w + ix) * ci + q] - inZp) * (c.weights.data[((o * kh + ky) * kw + kx) * ci + q] - wZp);
            }
          out.push(finish(acc, o));
        }
  return out;
}

describe('TFLite goldens: naive path models reproduce the interpreter', () => {
  it('golden files are present', () => {
    expect(cases.length, 'no golden files in test/golden/tflite/; run npm run golden:tflite').toBeGreaterThan(0);
  });
  for (const c of cases)
    for (const [path, want] of Object.entries(c.outputs) as [KernelPath, number[]][])
      it(`${c.name} ${path}`, () => {
        const got = naive(c, path);
        const diff = got.filter((v, i) => v !== want[i]).length;
        expect(diff, `${diff}/${want.length} elements differ from ${c.producedBy}`).toBe(0);
      });
});

describe('TFLite goldens: library layers', async () => {
  const lib = (await import('../../src/index.js')) as Record<string, unknown>;
  const fc = lib.fullyConnected as undefined | ((...a: unknown[]) => Promise<{ data: ArrayLike<number> }>);
  const conv = lib.conv2d as undefined | ((...a: unknown[]) => Promise<{ data: ArrayLike<number> }>);
  const present = typeof fc === 'function' && typeof conv === 'function';
  it.skipIf(present)('fullyConnected/conv2d are not exported from src/index.ts yet', () => {});
  for (const backend of ['cpu', 'webgpu'] as const)
    for (const c of cases)
      for (const [path, want] of Object.entries(c.outputs) as [KernelPath, number[]][])
        it.runIf(present)(`${c.name} ${path} ${backend}`, async () => {
          const arr = (t: GoldenTensor) => (t.dtype === 'int8' ? Int8Array.from(t.data) : Uint8Array.from(t.data));
          const wScale = Array.isArray(c.weights.scale) ? Float32Array.from(c.weights.scale) : c.weights.scale;
          const weights = { data: arr(c.weights), shape: c.weights.shape, scale: wScale, zeroPoint: c.weights.zeroPoint };
          const common = {
            input: { scale: c.input.scale as number, zeroPoint: c.input.zeroPoint },
            bias: c.bias ? Int32Array.from(c.bias) : undefined,
            output: { scale: c.output.scale, zeroPoint: c.output.zeroPoint },
            activation: c.activation,
            kernelPath: path,
          };
          const input = { data: arr(c.input), shape: c.input.shape };
          const out =
            c.op === 'FULLY_CONNECTED'
              ? await fc!(input, { ...common, weights }, { backend })
              : await conv!(input, { ...common, filter: weights, stride: c.stride, dilation: c.dilation, padding: c.padding }, { backend });
          const got = Array.from(out.data);
          const diff = got.filter((v, i) => v !== want[i]).length;
          expect(diff, `${diff}/${want.length} elements differ from ${c.producedBy}`).toBe(0);
        });
});
