// The WebAssembly CPU kernels' thread count as users give it (configureCpu({ threads }) and env
// QGEMM_THREADS): anything but an integer from 1 to MAX_THREADS is an InputError naming the field. A
// NaN count (`Number(process.env.UNSET)`) used to be taken as is and made a 1x2 * 2x1 GEMM return
// 84215045 instead of 11, with no error; 1e6 started 256 workers on 2 cores.

import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { gemm } from '../../src/api.ts';
import { InputError } from '../../src/errors.ts';
import { configureWasm, wasmCpuCaps } from '../../src/kernels/cpu-wasm/kernel.ts';
import { MAX_THREADS } from '../../src/kernels/cpu-wasm/engine.ts';
import type { GemmProblem } from '../../src/types.ts';

const caps = await wasmCpuCaps();
const tiny: GemmProblem = {
  lhs: { data: Uint8Array.of(1, 2), rows: 1, cols: 2 },
  rhs: { data: Uint8Array.of(3, 4), rows: 2, cols: 1 },
};

describe.skipIf(!caps.wasmSimd)('CPU thread count', () => {
  afterAll(() => configureWasm({ threads: caps.threads }));

  it.each([NaN, Number.POSITIVE_INFINITY, -1, 0, 2.5, 1e6, MAX_THREADS + 1, '2', 'x', null])(
    'configureCpu({ threads: %s }) is an InputError naming threads, and the next GEMM is still exact',
    async (threads) => {
      let error: unknown;
      try {
        configureWasm({ threads: threads as number });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).field).toBe('threads');
      const dst = await gemm(tiny, { backend: 'cpu' });
      expect(Array.from(dst.data)).toEqual([11]);
    },
  );

  it('takes every integer from 1 to MAX_THREADS', async () => {
    for (const threads of [1, 2, 3]) {
      configureWasm({ threads });
      expect(Array.from((await gemm(tiny, { backend: 'cpu' })).data)).toEqual([11]);
    }
    expect(() => configureWasm({ threads: MAX_THREADS })).not.toThrow();
  });

  it('relaxedSimd must be a boolean', () => {
    expect(() => configureWasm({ relaxedSimd: 'no' as unknown as boolean })).toThrow(InputError);
  });

  it.each(['x', 'NaN', '-1', '2.5', '1e6', '0'])('QGEMM_THREADS=%s fails the GEMM with an InputError naming it', (value) => {
    // the built package (npm test builds before it tests): a child Node runs no TypeScript
    const api = fileURLToPath(new URL('../../dist/node/index.js', import.meta.url));
    const script = `import { gemm } from ${JSON.stringify(api)};
      try { const d = await gemm({ lhs: { data: Uint8Array.of(1, 2), rows: 1, cols: 2 }, rhs: { data: Uint8Array.of(3, 4), rows: 2, cols: 1 } }, { backend: 'cpu' });
        console.log('result', d.data[0]); } catch (e) { console.log(e.name, e.field); }`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, QGEMM_THREADS: value },
      encoding: 'utf8',
    });
    expect(out.trim()).toBe('InputError QGEMM_THREADS');
  });
});
