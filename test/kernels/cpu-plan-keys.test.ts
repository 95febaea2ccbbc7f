// Plan keys of the CPU path (src/problem/snapshot.ts, src/kernels/cpu-wasm/kernel.ts runPrepacked): a
// repeated GEMM with a prepacked rhs reuses its plan only when the problem equals the one the plan was
// made for, value for value. Each case changes one thing the existing plan tests changed only together
// with another (dstOrder, bitDepth, the lhs's type, a vector's typed-array class, the very vector edited
// in place), or moves the WebAssembly heap under a plan (a prepack and its destroy), or the thread count;
// every result against the normative reference, bit for bit. Found by a mutation trial: each case fails
// with the key field it names left out.

import { describe, expect, it } from 'vitest';
import { gemm } from '../../src/api.ts';
import { configureWasm, prepackCpu, wasmCpuCaps, wasmRunStats } from '../../src/kernels/cpu-wasm/kernel.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import type { GemmProblem } from '../../src/types.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';

const caps = await wasmCpuCaps();
let seed = 99;
const bytes = (n: number) => Uint8Array.from({ length: n }, () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) >>> 24);

describe.skipIf(!caps.wasmSimd)('CPU plan keys compare values, not only keys', () => {
  const check = async (p: GemmProblem, rhs: Awaited<ReturnType<typeof prepackCpu>>, what: string) => {
    const got = await gemm({ ...p, rhs }, { backend: 'cpu' });
    const want = referenceGemm(p);
    expect(got.order, what).toBe(want.order);
    const d = diffResults(got, want);
    if (d) expect.fail(formatMismatch(d, what));
  };
  it('dstOrder: col-major then row-major', async () => {
    const [M, N, K] = [3, 8, 16];
    const rhs = { data: bytes(K * N), rows: K, cols: N };
    const packed = await prepackCpu(rhs);
    const lhs = { data: bytes(M * K), rows: M, cols: K };
    await check({ lhs, rhs, dstOrder: 'col-major' }, packed, 'col-major');
    await check({ lhs, rhs, dstOrder: 'row-major' }, packed, 'row-major after col-major');
    packed.destroy();
  });
  it('bitDepth: lhs 8 then lhs 5 bits', async () => {
    const [M, N, K] = [2, 8, 32];
    const rhs = { data: bytes(K * N), rows: K, cols: N };
    const bd = (lhs: number) => ({ lhs, rhs: 4, rounding: 'nearest' as const });
    const packed = await prepackCpu(rhs, bd(8));
    const lhs = { data: bytes(M * K), rows: M, cols: K };
    await check({ lhs, rhs, bitDepth: bd(8) }, packed, 'lhs 8 bits');
    await check({ lhs, rhs, bitDepth: bd(5) }, packed, 'lhs 5 bits after 8');
    packed.destroy();
  });
  it('lhs type: uint8 then int8 of the same shape', async () => {
    const [M, N, K] = [2, 8, 16];
    const rhs = { data: bytes(K * N), rows: K, cols: N };
    const packed = await prepackCpu(rhs);
    const u = bytes(M * K);
    await check({ lhs: { data: u, rows: M, cols: K }, rhs }, packed, 'uint8 lhs');
    await check({ lhs: { data: new Int8Array(u.buffer), rows: M, cols: K }, rhs }, packed, 'int8 lhs after uint8');
    packed.destroy();
  });
  it('a per-channel vector of another typed array with the same bytes is refused', async () => {
    const [M, N, K] = [2, 8, 16];
    const rhs = { data: bytes(K * N), rows: K, cols: N };
    const packed = await prepackCpu(rhs);
    const lhs = { data: bytes(M * K), rows: M, cols: K };
    const zp = Int32Array.from({ length: N }, (_, n) => n * 7);
    await check({ lhs, rhs, rhsZeroPoint: zp }, packed, 'Int32Array zero points');
    const other = gemm({ lhs, rhs: packed, rhsZeroPoint: new Uint32Array(zp.buffer) as unknown as Int32Array }, { backend: 'cpu' });
    await expect(other).rejects.toMatchObject({ field: 'rhsZeroPoint' });
    packed.destroy();
  });
  it('the very vector a plan was made with, edited in place: a new plan', async () => {
    const [M, N, K] = [2, 8, 16];
    const rhs = { data: bytes(K * N), rows: K, cols: N };
    const packed = await prepackCpu(rhs);
    const lhs = { data: bytes(M * K), rows: M, cols: K };
    const zp = Int32Array.from({ length: N }, (_, n) => n * 7);
    const problem = { lhs, rhs, rhsZeroPoint: zp };
    await check(problem, packed, 'made');
    zp[3] += 50;
    await check(problem, packed, 'its rhsZeroPoint edited in place');
    packed.destroy();
  });
  it('a prepack and its destroy between two calls of a plan (the heap back where it was)', async () => {
    const [M, N, K] = [3, 40, 33];
    const rhs = { data: bytes(K * N), rows: K, cols: N };
    const packed = await prepackCpu(rhs);
    const lhs = { data: bytes(M * K), rows: M, cols: K };
    const problem = { lhs, rhs, lhsZeroPoint: 3, rhsZeroPoint: 130 };
    await check(problem, packed, 'made');
    const third = await prepackCpu({ data: bytes(K * 5), rows: K, cols: 5 });
    third.destroy();
    lhs.data.set(bytes(M * K));
    await check(problem, packed, 'after a prepack and its destroy');
    packed.destroy();
  });
  it('a plan follows a change of thread count', async () => {
    const [K, N] = [2048, 1024];
    const rhs = { data: bytes(K * N), rows: K, cols: N };
    const packed = await prepackCpu(rhs);
    const problem = { lhs: { data: bytes(K), rows: 1, cols: K }, rhs };
    try {
      configureWasm({ threads: 2 });
      await check(problem, packed, '2 threads');
      expect(wasmRunStats.lastThreads).toBe(2);
      configureWasm({ threads: 1 });
      await check(problem, packed, '1 thread');
      expect(wasmRunStats.lastThreads).toBe(1);
    } finally {
      configureWasm({ threads: 1 });
      packed.destroy();
    }
  });
});
