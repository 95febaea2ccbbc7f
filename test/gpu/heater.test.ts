// GPU tier for the tuner's heater (src/gpu/heater.ts) on SwiftShader: it submits its spin kernel back to
// back from start() to stop(), and nothing after; a GEMM run meanwhile (the set-up's calls take the device
// between two of its submissions) is exact; it can start again; and measure() (src/tune-measure.ts) runs
// it through a configuration's set-up only, stopped before the warm-up. No uncaptured GPU error.

import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { Heater } from '../../src/gpu/heater.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { performanceClock } from '../../src/tune-budget.ts';
import { measure } from '../../src/tune-measure.ts';
import { arbProblemOfShape } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

vi.setConfig({ testTimeout: 300_000 });
const gpu = await getGpu();
afterAll(releaseGpu);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!gpu)('the heater', () => {
  it('submits from start() to stop() and nothing after; a GEMM between its submissions is exact', async () => {
    const device = gpu!.device;
    const heater = await Heater.create(device, 16); // a few rounds: SwiftShader runs them on these cores
    const ctx = await GpuContext.create({ device });
    try {
      heater.start();
      heater.start(); // started already: one loop
      const p = fc.sample(arbProblemOfShape(17, 33, 65), { numRuns: 1, seed: 7 })[0];
      const d = diffResults(await ctx.gemm(p), referenceGemm(p));
      if (d) expect.fail(formatMismatch(d, 'a GEMM while the heater runs'));
      await sleep(100);
      await heater.stop();
      const made = heater.submissions;
      expect(made).toBeGreaterThan(0);
      await sleep(100);
      expect(heater.submissions).toBe(made); // stopped
      heater.start();
      await sleep(50);
      await heater.stop();
      expect(heater.submissions).toBeGreaterThan(made);
    } finally {
      ctx.destroy();
      await heater.destroy();
    }
    expect(uncapturedErrors).toEqual([]);
  });

  it("runs through measure()'s set-up only: stopped before the warm-up, whose calls it would disturb", async () => {
    const device = gpu!.device;
    const heater = await Heater.create(device, 16);
    try {
      const kernel = GPU_KERNELS.find((k) => k.id === 'dot4-32x32')!;
      const m = await measure(device, kernel, [32, 32, 32], performance.now() + 3000, performanceClock, { warmupMs: 50, heater });
      expect(m.ms).toBeGreaterThan(0);
      const made = heater.submissions;
      expect(made).toBeGreaterThan(0);
      await sleep(100);
      expect(heater.submissions).toBe(made);
    } finally {
      await heater.destroy();
    }
    expect(uncapturedErrors).toEqual([]);
  });
});
