// Peer check: onnxruntime's QLinearMatMul (onnxruntime-node, CPU execution provider) requantizes as the
// requantizeFloat32 stage does, i.e. XNNPACK's order of operations: scale = f32(f32(a_scale * b_scale) /
// y_scale), rint(f32(f32(acc) * scale)) with ties to even, + y_zero_point, saturated to uint8. The
// model is built in code (bench/onnx-model.ts's protobuf encoder); inputs are random, plus crafted
// exact ties (power-of-two scales) and large accumulators (|acc| > 2^24 needs K in the hundreds).
// Also checks that the other orders (a double-precision scale, or ties away from zero) do NOT match
// on the crafted ties, so that the agreement is not an accident of random data.

import { describe, expect, test } from 'vitest';
import { intField, message, stringField } from '../../bench/onnx-model.ts';
import { loadOrt } from '../../bench/impls/onnxruntime.ts';
import { requantizeFloat32 } from '../../src/quant/float32.ts';
import { Rng } from '../../tools/random.ts';

const FLOAT = 1;
const UINT8 = 2;

const concat = (parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

function valueInfo(field: number, name: string, elemType: number, dims: (number | string)[]): Uint8Array {
  const dimFields = dims.map((d) => message(1, typeof d === 'number' ? intField(1, d) : stringField(2, d)));
  return message(field, stringField(1, name), message(2, message(1, intField(1, elemType), message(2, ...dimFields))));
}

const INPUTS = ['a', 'a_scale', 'a_zero_point', 'b', 'b_scale', 'b_zero_point', 'y_scale', 'y_zero_point'];

function qlinearMatMulModel(): Uint8Array {
  const node = message(
    1,
    ...INPUTS.map((i) => stringField(1, i)),
    stringField(2, 'y'),
    stringField(3, 'qlmm'),
    stringField(4, 'QLinearMatMul'),
  );
  const graph = message(
    7,
    node,
    stringField(2, 'qgemm_qlinearmatmul_check'),
    valueInfo(11, 'a', UINT8, ['M', 'K']),
    valueInfo(11, 'a_scale', FLOAT, []),
    valueInfo(11, 'a_zero_point', UINT8, []),
    valueInfo(11, 'b', UINT8, ['K', 'N']),
    valueInfo(11, 'b_scale', FLOAT, []),
    valueInfo(11, 'b_zero_point', UINT8, []),
    valueInfo(11, 'y_scale', FLOAT, []),
    valueInfo(11, 'y_zero_point', UINT8, []),
    valueInfo(12, 'y', UINT8, ['M', 'N']),
  );
  return concat([intField(1, 7), stringField(2, 'qgemm-webgpu test'), graph, message(8, stringField(1, ''), intField(2, 13))]);
}

interface Case {
  M: number;
  K: number;
  N: number;
  a: Uint8Array;
  b: Uint8Array;
  az: number;
  bz: number;
  as: number;
  bs: number;
  ys: number;
  yz: number;
}

function acc(c: Case, m: number, n: number): number {
  let s = 0;
  for (let k = 0; k < c.K; k++) s += (c.a[m * c.K + k] - c.az) * (c.b[k * c.N + n] - c.bz);
  return s;
}

/** What each candidate order of operations predicts for the case. */
function predict(c: Case, order: 'float32' | 'double-scale' | 'ties-away'): number[] {
  const out: number[] = [];
  const s32 = Math.fround(Math.fround(c.as * c.bs) / c.ys);
  for (let m = 0; m < c.M; m++)
    for (let n = 0; n < c.N; n++) {
      const x = acc(c, m, n);
      let y: number;
      if (order === 'float32') y = requantizeFloat32(x, s32, c.yz);
      else if (order === 'double-scale') y = Math.round((x * c.as * c.bs) / c.ys) + c.yz;
      else {
        const v = Math.fround(Math.fround(x) * s32);
        y = Math.sign(v) * Math.floor(Math.abs(v) + 0.5) + c.yz;
      }
      out.push(Math.min(Math.max(y, 0), 255));
    }
  return out;
}

function randomCase(r: Rng, crafted: boolean): Case {
  const M = 1 + (r.next() % 8);
  const K = crafted ? 1 + (r.next() % 16) : 1 + (r.next() % 600);
  const N = 1 + (r.next() % 8);
  const a = Uint8Array.from({ length: M * K }, () => r.next() % 256);
  const b = Uint8Array.from({ length: K * N }, () => r.next() % 256);
  if (crafted) {
    // power-of-two scales: scale = 2^-3 makes every acc = 4 (mod 8) an exact tie
    return { M, K, N, a, b, az: r.next() % 256, bz: r.next() % 256, as: 0.5, bs: 0.25, ys: 1, yz: 128 };
  }
  return {
    M,
    K,
    N,
    a,
    b,
    az: r.next() % 256,
    bz: r.next() % 256,
    as: Math.fround(0.001 + (r.next() % 10000) / 100000),
    bs: Math.fround(0.001 + (r.next() % 10000) / 100000),
    ys: Math.fround(0.05 + (r.next() % 10000) / 1000),
    yz: r.next() % 256,
  };
}

describe("onnxruntime's QLinearMatMul (CPU EP) requantizes as requantizeFloat32", () => {
  test('random and crafted-tie cases: float32 matches every element; the other orders miss the ties', async () => {
    const ort = loadOrt();
    const session = await ort.InferenceSession.create(qlinearMatMulModel());
    const r = new Rng(0x0a7);
    const miss = { float32: 0, 'double-scale': 0, 'ties-away': 0 };
    let elements = 0;
    for (let i = 0; i < 120; i++) {
      const c = randomCase(r, i % 3 === 0);
      const scalar = (v: number) => new ort.Tensor('float32', Float32Array.of(v), []);
      const u8 = (v: number) => new ort.Tensor('uint8', Uint8Array.of(v), []);
      const out = await session.run({
        a: new ort.Tensor('uint8', c.a, [c.M, c.K]),
        a_scale: scalar(c.as),
        a_zero_point: u8(c.az),
        b: new ort.Tensor('uint8', c.b, [c.K, c.N]),
        b_scale: scalar(c.bs),
        b_zero_point: u8(c.bz),
        y_scale: scalar(c.ys),
        y_zero_point: u8(c.yz),
      });
      const got = Array.from(out.y.data as Uint8Array);
      elements += got.length;
      for (const order of ['float32', 'double-scale', 'ties-away'] as const) {
        const want = predict(c, order);
        miss[order] += got.filter((g, j) => g !== want[j]).length;
      }
    }
    expect(miss.float32, `float32 order: ${miss.float32} of ${elements} elements differ`).toBe(0);
    expect(miss['ties-away'], 'ties away from zero must miss some crafted ties').toBeGreaterThan(0);
    expect(miss['double-scale'], 'a double-precision order must miss some crafted ties').toBeGreaterThan(0);
    await session.release?.();
  });
});
