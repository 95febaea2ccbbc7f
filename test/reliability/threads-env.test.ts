// QGEMM_THREADS end to end (src/kernels/cpu-wasm/engine.ts reads it once per process, so this file sets
// it before the library loads): a value that is not an integer in 1..256 makes a CPU GEMM reject with an
// InputError naming QGEMM_THREADS, never a silently wrong result.

import { expect, it } from 'vitest';

process.env.QGEMM_THREADS = 'NaN';
const { gemm } = await import('../../src/api.ts');
const { InputError } = await import('../../src/errors.ts');

it('QGEMM_THREADS=NaN: a CPU GEMM rejects with an InputError naming QGEMM_THREADS', async () => {
  const p = { lhs: { data: new Uint8Array([1, 2]), rows: 1, cols: 2 }, rhs: { data: new Uint8Array([3, 4]), rows: 2, cols: 1 } };
  const err = await gemm(p, { backend: 'cpu' }).then(
    () => null,
    (e) => e,
  );
  expect(err).toBeInstanceOf(InputError);
  expect(err.field).toBe('QGEMM_THREADS');
});
