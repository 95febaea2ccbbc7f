// A dead worker of the WebAssembly CPU kernels' thread pool (src/kernels/cpu-wasm/pool.ts): one that
// died as a job starts, or while idle, fails the call at once with a WorkerLostError (the calling thread
// waits for the workers to take the job, or with no barrier in the job to be done, without blocking the
// event loop, so the worker's `exit` is heard), and the next GEMM recovers on a new pool, exact against
// the reference. A pool closed while its workers start ends each as it comes.

import { describe, expect, it } from 'vitest';
import { WorkerLostError } from '../../src/errors.ts';
import { wasmEngine } from '../../src/kernels/cpu-wasm/engine.ts';
import type { Call } from '../../src/kernels/cpu-wasm/job.ts';
import { WorkerPool } from '../../src/kernels/cpu-wasm/pool.ts';
import { runOnEngine } from '../../src/kernels/cpu-wasm/run.ts';
import { selfCheck } from '../../src/kernels/cpu-wasm/self-check.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { normalizeProblem } from '../../src/problem/problem.ts';
import { diffResults } from '../support/compare.ts';

const e = await wasmEngine(selfCheck);
const kill = (pool: WorkerPool, i: number) => (pool as unknown as { ports: { terminate(): void }[] }).ports[i].terminate();

describe.skipIf(!e?.shared)('a lost worker', () => {
  // With a barrier the caller waits for every worker to take the job; with none (the few-row kernels'
  // column chunks) it starts its own calls at once and hears the exit while it waits for them to be done.
  it.each([
    ['a barrier', [[['barrier']], [['barrier']], [['barrier']]] as Call[][]],
    ['no barrier', [[], [], []] as Call[][]],
  ])('dies as a job with %s starts: the call rejects with WorkerLostError, without a stall', async (_, job) => {
    const pool = new WorkerPool(e!.module, e!.memory, e!.exports);
    try {
      await pool.run(job);
      kill(pool, 1); // no await: the job is handed over before the exit can be heard
      const err = await pool.run(job).then(
        () => null,
        (x) => x,
      );
      expect(err).toBeInstanceOf(WorkerLostError);
      expect(pool.isLost).toBe(true);
    } finally {
      pool.close();
    }
  });

  it('died while idle: the next call rejects with WorkerLostError', async () => {
    const pool = new WorkerPool(e!.module, e!.memory, e!.exports);
    try {
      await pool.run([[['barrier']], [['barrier']]]);
      kill(pool, 0);
      await new Promise((r) => setTimeout(r, 100)); // the exit is heard
      await expect(pool.run([[['barrier']], [['barrier']]])).rejects.toBeInstanceOf(WorkerLostError);
    } finally {
      pool.close();
    }
  });

  it('a pool closed while its workers start ends them as they come: none is left running', async () => {
    const pool = new WorkerPool(e!.module, e!.memory, e!.exports);
    const growth = pool.ensure(2);
    pool.close(); // as a page's first worker that took too long (engine.ts firstWorker)
    await expect(growth).rejects.toBeInstanceOf(WorkerLostError);
    expect(pool.size).toBe(0);
  });

  it('the next GEMM after a loss runs on a new pool and is exact', async () => {
    const lhs = { data: Uint8Array.from({ length: 64 * 96 }, (_, i) => (i * 7) & 0xff), rows: 64, cols: 96 };
    const rhs = { data: Int8Array.from({ length: 96 * 80 }, (_, i) => ((i * 13) & 0xff) - 128), rows: 96, cols: 80 };
    const p = normalizeProblem({ lhs, rhs, lhsZeroPoint: 5 });
    const want = referenceGemm({ lhs, rhs, lhsZeroPoint: 5 });
    expect(diffResults(await runOnEngine(e!, p, 'i16', 2, 2), want)).toBeNull();
    kill(e!.pool!, 0);
    await expect(runOnEngine(e!, p, 'i16', 2, 2)).rejects.toBeInstanceOf(WorkerLostError);
    expect(diffResults(await runOnEngine(e!, p, 'i16', 2, 2), want)).toBeNull();
  });
});
