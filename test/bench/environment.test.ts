// The bench's WebGPU context in Node (bench/environment.ts chooseAdapter) with a --tuning table: it asks
// for the table passed before a table committed for the adapter (resolveTuning's passedFirst), so a GPU
// run's fresh `qgemm tune` is what its bench passes measure, and the report names the table by the path
// given. This adapter (SwiftShader in CI) has no committed table, so the order itself is tested in
// test/unit/tuning.test.ts; here, that the bench asks for it.

import { afterAll, describe, expect, it, vi } from 'vitest';
import { chooseAdapter } from '../../bench/environment.ts';
import * as tuning from '../../src/kernels/tuning.ts';
import { getGpu, releaseGpu } from '../gpu/gpu-env.ts';

vi.mock('../../src/kernels/tuning.ts', async (importOriginal) => {
  const mod = await importOriginal<typeof import('../../src/kernels/tuning.ts')>();
  return { ...mod, resolveTuning: vi.fn(mod.resolveTuning) };
});

vi.setConfig({ testTimeout: 120_000 });
const gpu = await getGpu();
afterAll(() => releaseGpu());

describe('chooseAdapter with a --tuning table', () => {
  it.skipIf(!gpu)('asks for the table passed first, and names it by its path', async () => {
    const plain = await chooseAdapter({});
    expect(plain.ctx).not.toBeNull();
    const adapter = tuning.tuningAdapter(plain.ctx!.summary);
    plain.ctx!.destroy();
    const table = {
      format: tuning.TUNING_FORMAT,
      adapter,
      entries: [{ class: 'square', shape: { M: 64, N: 64, K: 64 }, kernel: { family: 'registry', id: 'dot4-64x64' } }],
    };
    const resolve = vi.mocked(tuning.resolveTuning);
    resolve.mockClear();
    const choice = await chooseAdapter({ tuning: table, tuningName: 'out/tuning.json' });
    try {
      expect(resolve).toHaveBeenCalledTimes(1);
      expect(resolve.mock.calls[0][2]).toMatchObject({ passedFirst: true });
      expect([choice.ctx!.tuning.source, choice.ctx!.tuning.name]).toEqual(['user', 'out/tuning.json']);
      expect(tuning.describeTuning(choice.ctx!.tuning)).toMatch(/^table out\/tuning\.json, 1 entries/);
    } finally {
      choice.ctx?.destroy();
    }
  });
});
