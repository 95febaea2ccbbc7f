// The floor: a naive JavaScript triple loop over the uint8 operands with the zero points subtracted,
// int32 accumulators out (i-j-k order, rhs read down its columns), one thread.

import type { ShapeData } from '../problems.ts';
import { LHS_ZERO_POINT, RHS_ZERO_POINT } from '../problems.ts';
import { measure } from '../timing.ts';
import type { Runner } from './types.ts';

export function naiveGemm(lhs: Uint8Array, rhs: Uint8Array, M: number, N: number, K: number, zl: number, zr: number): Int32Array {
  const out = new Int32Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let k = 0; k < K; k++) acc += (lhs[i * K + k] - zl) * (rhs[k * N + j] - zr);
      out[i * N + j] = acc;
    }
  }
  return out;
}

export function naiveJs(): Runner {
  return {
    impl: 'naive-js',
    backend: 'cpu',
    runtime: 'node',
    mode: 'call',
    adapter: 'cpu',
    computes: 'uint8 x uint8 -> int32, zero points subtracted',
    details: 'i-j-k triple loop over typed arrays, one thread',
    run: async (data: ShapeData, policy) => {
      const { m, n, k } = data.shape;
      const r = await measure(policy, async () => {
        const t0 = performance.now();
        const output = naiveGemm(data.lhs, data.rhs, m, n, k, LHS_ZERO_POINT, RHS_ZERO_POINT);
        return { timing: { wallMs: performance.now() - t0, gpuMs: null }, output };
      });
      return { wall: r.wall, gpu: null, warm: r.warm };
    },
    close: async () => undefined,
  };
}
