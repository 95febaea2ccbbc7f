// The WebAssembly CPU kernels' workers (src/kernels/cpu-wasm/pool.ts): when they start (the first
// prepackCpu starts them while it packs and warms the call path up, so that a worker's start, tens of ms,
// does not fall on the first GEMM that takes threads; growths of the pool asked for at once start no
// extra workers), and how they join a job (job.ts joinJob): an open job, the few-row kernels' ranges of
// panels (dyn_*), is finished by the threads present, and a worker that comes after it is closed stays
// out. Its own file: the first prepackCpu of the process is the one under test.

import { describe, expect, it } from 'vitest';
import { gemm } from '../../src/api.ts';
import { configureWasm, wasmEngine } from '../../src/kernels/cpu-wasm/engine.ts';
import { prepackCpu, wasmRunStats } from '../../src/kernels/cpu-wasm/kernel.ts';
import { WorkerPool } from '../../src/kernels/cpu-wasm/pool.ts';
import { CONTROL, joinJob, openTaken } from '../../src/kernels/cpu-wasm/job.ts';
import { CHUNK_COUNTERS, DATA_START } from '../../src/kernels/cpu-wasm/layout.ts';
import { makePlan, runPlan } from '../../src/kernels/cpu-wasm/run.ts';
import { selfCheck } from '../../src/kernels/cpu-wasm/self-check.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { normalizeProblem } from '../../src/problem/problem.ts';
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

  it('an open job is done by the threads present: the calling thread alone runs every range, from any', async () => {
    // 3 rows against a row-major rhs: the direct kernel's dyn_* driver, split 4 ways (makePlan), run
    // by the calling thread only, as thread `alone` of 4; the workers' lists are empty, as for workers
    // that come after the job is closed.
    const [M, N, K] = [3, 1000, 300];
    const operand = (rows: number, cols: number, seed: number) => ({
      data: Uint8Array.from({ length: rows * cols }, (_, i) => (Math.imul(i + seed, 2654435761) >>> 24) & 255),
      rows,
      cols,
    });
    const problem = { lhs: operand(M, K, 1), rhs: operand(K, N, 2), lhsZeroPoint: 7, rhsZeroPoint: 200 };
    const want = referenceGemm(problem);
    const p = normalizeProblem(problem);
    for (const alone of [0, 2, 3]) {
      const pl = makePlan(e!, p, 'i16', 4);
      expect(pl.ranges).toHaveLength(4);
      const own = pl.lists[alone];
      expect(own[0][0]).toMatch(/^dyn_gemm_direct_/);
      pl.lists = pl.lists.map((_, i) => (i === 0 ? own : []));
      const got = await runPlan(e!, pl, p, true);
      expect(diffResults(got, want), `thread ${alone} alone`).toBeNull();
    }
  });

  it('every thread a plan can have has a range counter of its own', () => {
    expect(CHUNK_COUNTERS.count).toBeGreaterThanOrEqual(CONTROL.maxThreads);
    expect(CHUNK_COUNTERS.at + CHUNK_COUNTERS.stride * CHUNK_COUNTERS.count).toBeLessThanOrEqual(DATA_START);
  });

  it('a worker joins only the job it woke for, and only before it is closed', () => {
    const ctl = new Int32Array(new SharedArrayBuffer(4 * CONTROL.words));
    ctl[CONTROL.taken] = openTaken(41, CONTROL);
    expect(joinJob(ctl, 41, CONTROL)).toBe(1);
    expect(joinJob(ctl, 41, CONTROL)).toBe(2);
    expect(joinJob(ctl, 40, CONTROL)).toBe(0); // a worker that read the job before
    Atomics.or(ctl, CONTROL.taken, CONTROL.closed);
    expect(joinJob(ctl, 41, CONTROL)).toBe(0);
    expect(ctl[CONTROL.taken] & CONTROL.countMask).toBe(2);
    ctl[CONTROL.taken] = openTaken(42 + CONTROL.tagMask + 1, CONTROL); // the tag wraps with gen
    expect(joinJob(ctl, 42 + CONTROL.tagMask + 1, CONTROL)).toBe(1);
    expect(joinJob(ctl, 42, CONTROL)).toBe(1 + 1);
  });

  it('open jobs closed before the workers wake, between jobs that need them all, never lose a worker', async () => {
    const pool = new WorkerPool(e!.module, e!.memory, e!.exports);
    try {
      await pool.ensure(3);
      for (let i = 0; i < 300; i++) {
        // spinUs 0: the workers sleep between jobs, so most of them wake after an empty open job is closed.
        await pool.run([[], [], [], []], 0, true);
        if (i % 10 === 9) await pool.run([[['barrier']], [['barrier']], [['barrier']], [['barrier']]], 0);
      }
      expect(pool.isLost).toBe(false);
    } finally {
      pool.close();
    }
  });
});
