// The CPU path's thread count (src/kernels/cpu-wasm/engine.ts), as configureCpu and QGEMM_THREADS give it:
// anything but an integer in 1..MAX_CPU_THREADS is an InputError naming `threads` (or `QGEMM_THREADS`),
// never a silently wrong GEMM (a NaN thread count once made a 1x2 by 2x1 product return 84215045).

import { afterEach, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { configureWasm, MAX_CPU_THREADS, parseThreadsEnv } from '../../src/kernels/cpu-wasm/engine.ts';
import { gemm } from '../../src/api.ts';

const problem = () => ({
  lhs: { data: new Uint8Array([1, 2]), rows: 1, cols: 2 },
  rhs: { data: new Uint8Array([3, 4]), rows: 2, cols: 1 },
});

describe('configureCpu({ threads })', () => {
  afterEach(() => configureWasm({ threads: 1 }));

  it.each([Number.NaN, 'x', -1, 0, 2.5, 1e6, Number.POSITIVE_INFINITY, null, MAX_CPU_THREADS + 1])(
    'refuses %s, naming threads',
    (threads) => {
      let err: unknown;
      try {
        configureWasm({ threads: threads as number });
      } catch (e) {
        err = e;
      }
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
});

describe('QGEMM_THREADS', () => {
  it.each(['x', 'NaN', '-1', '0', '2.5', '1e6', '0x2', ' 3'])('refuses %j, naming QGEMM_THREADS', (text) => {
    let err: unknown;
    try {
      parseThreadsEnv(text);
    } catch (e) {
      err = e;
    }
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
