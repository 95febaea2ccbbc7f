// The CPU path's thread count (src/kernels/cpu-wasm/engine.ts), as configureCpu and QGEMM_THREADS give it:
// anything but an integer in 1..MAX_CPU_THREADS is an InputError naming `threads` (or `QGEMM_THREADS`),
// never a silently wrong GEMM (a NaN thread count once made a 1x2 by 2x1 product return 84215045). The
// workers' spin after a job (`spinMs`): refused outside 0..100, and GEMMs back to back while the workers
// spin are exact. The capability report follows the configured count.

import { afterEach, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { configureWasm, MAX_CPU_THREADS, parseThreadsEnv, wasmSpinUs } from '../../src/kernels/cpu-wasm/engine.ts';
import { prepackCpu, wasmCpuCaps, wasmRunStats } from '../../src/kernels/cpu-wasm/kernel.ts';
import { describeDevice, gemm } from '../../src/api.ts';
import { readyCpuCaps } from '../../src/kernels/cpu-caps.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { diffResults } from '../support/compare.ts';

const problem = () => ({
  lhs: { data: new Uint8Array([1, 2]), rows: 1, cols: 2 },
  rhs: { data: new Uint8Array([3, 4]), rows: 2, cols: 1 },
});

/** What f throws, or undefined. */
function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe('configureCpu({ threads })', () => {
  afterEach(() => configureWasm({ threads: 1 }));

  it.each([Number.NaN, 'x', -1, 0, 2.5, 1e6, Number.POSITIVE_INFINITY, null, MAX_CPU_THREADS + 1])(
    'refuses %s, naming threads',
    (threads) => {
      const err = thrown(() => configureWasm({ threads: threads as number }));
      expect(err).toBeInstanceOf(InputError);
      expect((err as InputError).field).toBe('threads');
      expect((err as InputError).message).toContain(`1..${MAX_CPU_THREADS}`);
    },
  );

  it('a refused value leaves the count as it was, and the GEMM exact', async () => {
    configureWasm({ threads: 1 });
    expect(() => configureWasm({ threads: Number.NaN })).toThrow(InputError);
    const r = await gemm(problem(), { backend: 'cpu' });
    expect(Array.from(r.data)).toEqual([11]);
  });

  it.each([1, 2, MAX_CPU_THREADS])('accepts %i', (threads) => {
    expect(() => configureWasm({ threads })).not.toThrow();
  });

  it('the capability report (readyCpuCaps, describeDevice().cpu) follows the count configured since', async () => {
    const shared = (await wasmCpuCaps()).sharedMemory; // without a shared memory a GEMM has one thread
    for (const threads of [1, 3, 2]) {
      configureWasm({ threads });
      expect((await readyCpuCaps()).threads).toBe(shared ? threads : 1);
      expect((await describeDevice()).cpu.threads).toBe(shared ? threads : 1);
    }
  });
});

describe('QGEMM_THREADS', () => {
  it.each(['x', 'NaN', '-1', '0', '2.5', '1e6', '0x2', ' 3'])('refuses %j, naming QGEMM_THREADS', (text) => {
    const err = thrown(() => parseThreadsEnv(text));
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).field).toBe('QGEMM_THREADS');
  });

  it('unset or empty: no count; a decimal integer in range: that count', () => {
    expect(parseThreadsEnv(undefined)).toBeUndefined();
    expect(parseThreadsEnv('')).toBeUndefined();
    expect(parseThreadsEnv('3')).toBe(3);
    expect(parseThreadsEnv(String(MAX_CPU_THREADS))).toBe(MAX_CPU_THREADS);
  });
});

const shared = (await wasmCpuCaps()).sharedMemory;

describe('configureCpu({ spinMs })', () => {
  afterEach(() => configureWasm({ threads: 1, spinMs: 1 }));

  it.each([Number.NaN, 'x', -1, 101, Number.POSITIVE_INFINITY, null])('refuses %s, naming spinMs', (spinMs) => {
    const err = thrown(() => configureWasm({ spinMs: spinMs as number }));
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).field).toBe('spinMs');
  });

  it('defaults to 1 ms; takes 0..100', () => {
    expect(wasmSpinUs()).toBe(1000);
    for (const ms of [0, 0.25, 100]) {
      configureWasm({ spinMs: ms });
      expect(wasmSpinUs()).toBe(1000 * ms);
    }
  });

  it.skipIf(!shared)('GEMMs back to back on two threads while the workers spin are exact', async () => {
    configureWasm({ threads: 2, spinMs: 20 });
    const K = 300;
    const N = 4000;
    const rhs = { data: Uint8Array.from({ length: K * N }, (_, i) => (i * 2654435761) >>> 24), rows: K, cols: N };
    const packed = await prepackCpu(rhs);
    try {
      let multi = 0;
      for (let i = 0; i < 12; i++) {
        const M = 1 + (i % 3);
        const problem = {
          lhs: { data: Uint8Array.from({ length: M * K }, (_, j) => (j * 31 + i) & 255), rows: M, cols: K },
          rhs,
          lhsZeroPoint: i,
          rhsZeroPoint: 3,
        };
        const got = await gemm({ ...problem, rhs: packed }, { backend: 'cpu' });
        expect(diffResults(got, referenceGemm(problem))).toBeNull();
        if (wasmRunStats.lastThreads === 2) multi++;
      }
      expect(multi).toBeGreaterThan(0);
    } finally {
      packed.destroy();
    }
  });
});
