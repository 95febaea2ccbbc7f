// When the WebAssembly CPU kernels' workers start (src/kernels/cpu-wasm/pool.ts): the first prepackCpu
// starts them while it packs and warms the call path up, so that a worker's start (tens of ms) does not
// fall on the first GEMM that takes threads; growths of the pool asked for at once start no extra
// workers. Its own file: the first prepackCpu of the process is the one under test.

import { describe, expect, it } from 'vitest';
import { gemm } from '../../src/api.ts';
import { configureWasm, wasmEngine } from '../../src/kernels/cpu-wasm/engine.ts';
import { prepackCpu, wasmRunStats } from '../../src/kernels/cpu-wasm/kernel.ts';
import { WorkerPool } from '../../src/kernels/cpu-wasm/pool.ts';
import { selfCheck } from '../../src/kernels/cpu-wasm/run.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { diffResults } from '../support/compare.ts';

const e = await wasmEngine(selfCheck);

describe.skipIf(!e?.shared)('the CPU workers start', () => {
  it('with the first prepackCpu: its workers are ready before a GEMM, and the first GEMM on them is exact', async () => {
    configureWasm({ threads: 3 });
    expect(e!.pool).toBeNull();
    const [K, N] = [2048, 2048];
    const rhs = { data: Uint8Array.from({ length: K * N }, (_, i) => (i * 7) & 255), rows: K, cols: N };
    const packed = await prepackCpu(rhs);
    try {
      expect(e!.pool?.size).toBe(2);
      const problem = { lhs: { data: Uint8Array.from({ length: K }, (_, i) => i & 255), rows: 1, cols: K }, rhs, lhsZeroPoint: 9 };
      const got = await gemm({ ...problem, rhs: packed }, { backend: 'cpu' });
      expect(wasmRunStats.lastThreads).toBe(3);
      expect(diffResults(got, referenceGemm(problem))).toBeNull();
    } finally {
      packed.destroy();
      configureWasm({ threads: 2 });
    }
  });

  it('growths asked for at once start no extra workers', async () => {
    const pool = new WorkerPool(e!.module, e!.memory, e!.exports);
    try {
      await Promise.all([pool.ensure(2), pool.ensure(2), pool.ensure(1)]);
      expect(pool.size).toBe(2);
      await pool.run([[['barrier']], [['barrier']], [['barrier']]]);
    } finally {
      pool.close();
    }
  });
});
