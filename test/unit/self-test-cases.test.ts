// Unit tier for the self-test's reference results (src/scheduler/self-test.ts): computed once per process
// and rhs bit depth, whatever the number of kernels and devices that run the self-test, and each only when
// a kernel's result reaches its problem.

import { describe, expect, it, vi } from 'vitest';
import type { PatchProblem } from '../../src/scheduler/self-test.ts';
import type { GemmProblem, GemmResult } from '../../src/types.ts';

const calls = vi.hoisted(() => ({ n: 0 }));
vi.mock('../../src/reference/gemm.ts', async (importActual) => {
  const actual = await importActual<typeof import('../../src/reference/gemm.ts')>();
  return { ...actual, referenceGemm: (p: Parameters<typeof actual.referenceGemm>[0]) => (calls.n++, actual.referenceGemm(p)) };
});

const { referenceGemm } = await import('../../src/reference/gemm.ts');
const { patchReference, runSelfTest } = await import('../../src/scheduler/self-test.ts');

// A "kernel" that is the reference itself (its own calls are not counted), each problem's result computed
// once and returned as a copy.
const results = new Map<object, GemmResult>();
const exact = async (p: GemmProblem | PatchProblem): Promise<GemmResult> => {
  let r = results.get(p);
  if (!r) {
    const before = calls.n;
    r = referenceGemm('input' in p.lhs ? patchReference(p as PatchProblem) : (p as GemmProblem));
    calls.n = before;
    results.set(p, r);
  }
  return { ...r, data: r.data.slice() };
};

describe('self-test references', () => {
  it('are computed once per rhs bit depth, and only as far as a kernel gets', async () => {
    const failing = async () => {
      throw new Error('no kernel here');
    };
    expect((await runSelfTest(failing, 8)).ok).toBe(false);
    expect(calls.n).toBe(0);
    expect(await runSelfTest(exact, 8)).toEqual({ ok: true, detail: '' });
    const first = calls.n;
    expect(first).toBeGreaterThan(4);
    expect(await runSelfTest(exact, 8)).toEqual({ ok: true, detail: '' });
    expect(calls.n).toBe(first);
    expect(await runSelfTest(exact, 4)).toEqual({ ok: true, detail: '' });
    expect(calls.n).toBe(2 * first);
    // A wrong result is still caught with the kept reference.
    const wrong = async (p: GemmProblem | PatchProblem) => {
      const r = await exact(p);
      r.data[r.data.length - 1] ^= 1;
      return r;
    };
    expect((await runSelfTest(wrong, 8)).detail).toMatch(/problem 0 .*1 of \d+ elements differ/);
    expect(calls.n).toBe(2 * first);
  }, 120_000);
});
