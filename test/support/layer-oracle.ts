// The oracle of the TFLite layer tests (test/unit/layers.test.ts on the CPU, test/gpu/layers.test.ts on
// WebGPU): a naive FC and a naive NHWC convolution (TFLite's SAME/VALID padding arithmetic written out
// again, padded positions at the input zero point), requantized with the BigInt oracles of each kernel
// path, compared with src/layers on a backend for seeded random layers.

import { expect } from 'vitest';
import { Rng } from '../../tools/random.ts';
import {
  conv2d,
  fullyConnected,
  type Conv2dParams,
  type FullyConnectedParams,
  type KernelPath,
  type FusedActivation,
} from '../../src/layers/layers.ts';
import { activationRange } from '../../src/layers/derive.ts';
import { float32Bits } from '../../src/quant/float32.ts';
import { mbqmBig, quantizeMultiplierBig } from '../oracle/bigint-fixedpoint.ts';
import { mbqmDoubleUpBig, requantizeFloat32Big } from '../oracle/bigint-float32.ts';

export type Backend = 'cpu' | 'webgpu';

/** The oracle's requantization of one accumulator (bias included) for output channel n. */
function requant(
  path: KernelPath,
  op: 'FC' | 'CONV',
  acc: number,
  inS: number,
  wS: number,
  perTensor: boolean,
  wType: string,
  out: { scale: number; zeroPoint: number },
): number {
  if (path === 'xnnpack') {
    const s = Math.fround(Math.fround(inS * wS) / out.scale);
    return requantizeFloat32Big(acc, float32Bits(s), out.zeroPoint);
  }
  if (path === 'reference' && op === 'FC') {
    const v = acc * ((inS * wS) / out.scale);
    const r = Math.abs(v - Math.trunc(v)) >= 0.5 ? Math.trunc(v) + Math.sign(v) : Math.trunc(v);
    return r + out.zeroPoint;
  }
  const f32 = op === 'FC' ? perTensor : wType === 'uint8';
  const real = (f32 ? Math.fround(inS * wS) : inS * wS) / out.scale;
  const q = quantizeMultiplierBig(real);
  const y = path === 'optimized' ? mbqmDoubleUpBig(acc, q.multiplier, q.shift) : mbqmBig(acc, q.multiplier, q.shift, 'double');
  return y + out.zeroPoint;
}

function randomData(r: Rng, n: number, type: 'uint8' | 'int8'): Uint8Array | Int8Array {
  const a = type === 'uint8' ? new Uint8Array(n) : new Int8Array(n);
  for (let i = 0; i < n; i++) a[i] = type === 'uint8' ? r.next() % 256 : (r.next() % 256) - 128;
  return a;
}

export interface Case {
  name: string;
  type: 'uint8' | 'int8';
  perChannel: boolean;
  activation: FusedActivation;
}

export const CASES: Case[] = [
  { name: 'int8 per-channel RELU6', type: 'int8', perChannel: true, activation: 'RELU6' },
  { name: 'int8 per-tensor NONE', type: 'int8', perChannel: false, activation: 'NONE' },
  { name: 'int8 per-tensor RELU_N1_TO_1', type: 'int8', perChannel: false, activation: 'RELU_N1_TO_1' },
  { name: 'uint8 legacy RELU', type: 'uint8', perChannel: false, activation: 'RELU' },
];
export const PATHS: KernelPath[] = ['xnnpack', 'optimized', 'reference'];

export async function checkFc(c: Case, path: KernelPath, backend: Backend, seed: number): Promise<void> {
  const r = new Rng(seed);
  const [M, K, N] = [3 + (r.next() % 5), 1 + (r.next() % 40), 1 + (r.next() % 9)];
  const inS = Math.fround(0.01 + (r.next() % 1000) / 20000);
  const outS = Math.fround(0.02 + (r.next() % 1000) / 5000);
  const wScales = Float32Array.from({ length: c.perChannel ? N : 1 }, () => Math.fround(0.001 + (r.next() % 1000) / 50000));
  const input = { data: randomData(r, M * K, c.type), shape: [M, K] };
  const weights = randomData(r, N * K, c.type === 'uint8' ? 'uint8' : 'int8');
  const inZ = c.type === 'uint8' ? r.next() % 256 : (r.next() % 256) - 128;
  const outZ = c.type === 'uint8' ? r.next() % 256 : (r.next() % 256) - 128;
  const wZ = c.type === 'uint8' ? r.next() % 256 : 0;
  const bias = Int32Array.from({ length: N }, () => (r.next() % 20001) - 10000);
  const params: FullyConnectedParams = {
    input: { scale: inS, zeroPoint: inZ },
    weights: { data: weights, shape: [N, K], scale: c.perChannel ? wScales : wScales[0], zeroPoint: wZ },
    bias,
    output: { scale: outS, zeroPoint: outZ },
    activation: c.activation,
    kernelPath: path,
  };
  const got = await fullyConnected(input, params, { backend });
  expect(got.shape).toEqual([M, N]);
  const [lo, hi] = activationRange(c.activation, params.output, c.type, path);
  const want: number[] = [];
  for (let m = 0; m < M; m++)
    for (let n = 0; n < N; n++) {
      let acc = bias[n];
      for (let k = 0; k < K; k++) acc += (input.data[m * K + k] - inZ) * (weights[n * K + k] - wZ);
      const y = requant(path, 'FC', acc, inS, wScales[c.perChannel ? n : 0], !c.perChannel, c.type, params.output);
      want.push(Math.min(Math.max(y, lo), hi));
    }
  expect(Array.from(got.data), `${c.name} ${path} M=${M} K=${K} N=${N}`).toEqual(want);
}

export async function checkConv(
  c: Case,
  path: KernelPath,
  backend: Backend,
  seed: number,
  padding: 'SAME' | 'VALID',
  stride: number,
  dilation: number,
): Promise<void> {
  const r = new Rng(seed);
  const [B, H, W, C, O, KH, KW] = [
    1 + (r.next() % 2),
    4 + (r.next() % 5),
    4 + (r.next() % 5),
    1 + (r.next() % 5),
    1 + (r.next() % 6),
    1 + (r.next() % 3),
    1 + (r.next() % 3),
  ];
  const inS = Math.fround(0.01 + (r.next() % 1000) / 20000);
  const outS = Math.fround(0.02 + (r.next() % 1000) / 5000);
  const wScales = Float32Array.from({ length: c.perChannel ? O : 1 }, () => Math.fround(0.001 + (r.next() % 1000) / 50000));
  const input = { data: randomData(r, B * H * W * C, c.type), shape: [B, H, W, C] };
  const filter = randomData(r, O * KH * KW * C, c.type === 'uint8' ? 'uint8' : 'int8');
  const inZ = c.type === 'uint8' ? r.next() % 256 : (r.next() % 256) - 128;
  const outZ = c.type === 'uint8' ? r.next() % 256 : (r.next() % 256) - 128;
  const wZ = c.type === 'uint8' ? r.next() % 256 : 0;
  const bias = Int32Array.from({ length: O }, () => (r.next() % 20001) - 10000);
  const params: Conv2dParams = {
    input: { scale: inS, zeroPoint: inZ },
    filter: { data: filter, shape: [O, KH, KW, C], scale: c.perChannel ? wScales : wScales[0], zeroPoint: wZ },
    bias,
    stride: [stride, stride],
    dilation: [dilation, dilation],
    padding,
    output: { scale: outS, zeroPoint: outZ },
    activation: c.activation,
    kernelPath: path,
  };
  // TFLite's padding arithmetic, written out again (ComputePaddingHeightWidth)
  const geo = (size: number, k: number) => {
    const eff = (k - 1) * dilation + 1;
    const out = padding === 'SAME' ? Math.floor((size + stride - 1) / stride) : Math.floor((size + stride - eff) / stride);
    const total = Math.max((out - 1) * stride + eff - size, 0);
    return [out, padding === 'SAME' ? Math.floor(total / 2) : 0];
  };
  const [OH, padH] = geo(H, KH);
  const [OW, padW] = geo(W, KW);
  if (OH < 1 || OW < 1) return;
  const got = await conv2d(input, params, { backend });
  expect(got.shape).toEqual([B, OH, OW, O]);
  const [lo, hi] = activationRange(c.activation, params.output, c.type, path);
  const want: number[] = [];
  for (let b = 0; b < B; b++)
    for (let oh = 0; oh < OH; oh++)
      for (let ow = 0; ow < OW; ow++)
        for (let o = 0; o < O; o++) {
          let acc = bias[o];
          for (let kh = 0; kh < KH; kh++)
            for (let kw = 0; kw < KW; kw++)
              for (let ci = 0; ci < C; ci++) {
                const ih = oh * stride - padH + kh * dilation;
                const iw = ow * stride - padW + kw * dilation;
                const x = ih >= 0 && ih < H && iw >= 0 && iw < W ? input.data[((b * H + ih) * W + iw) * C + ci] : inZ;
                acc += (x - inZ) * (filter[((o * KH + kh) * KW + kw) * C + ci] - wZ);
              }
          const y = requant(path, 'CONV', acc, inS, wScales[c.perChannel ? o : 0], !c.perChannel, c.type, params.output);
          want.push(Math.min(Math.max(y, lo), hi));
        }
  expect(
    Array.from(got.data),
    `${c.name} ${path} ${padding} s${stride} d${dilation} [${B},${H},${W},${C}] filter [${O},${KH},${KW},${C}]`,
  ).toEqual(want);
}
