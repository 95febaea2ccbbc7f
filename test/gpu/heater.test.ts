// GPU tier for the tuner's heater (src/gpu/heater.ts) on SwiftShader: it submits its spin kernel back to
// back from start() to stop(), and nothing after; it goes on while a pipeline compiles (the set-up's
// calls hold the device then, and the heater does not wait for it); a GEMM run meanwhile is exact; a
// start() during a stop() waits for that stop; a lost device ends it with a DeviceLostError; measure()
// (src/tune-measure.ts) runs it through a configuration's set-up only, stopped before the first warm-up
// call; and tune({ heater: true }) runs with it. No uncaptured GPU error.

import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { acquireDevice } from '../../src/gpu/acquire.ts';
import { Heater } from '../../src/gpu/heater.ts';
import { GPU_KERNELS } from '../../src/kernels/registry.ts';
import { referenceGemm } from '../../src/reference/gemm.ts';
import { GpuContext } from '../../src/scheduler/context.ts';
import { tune } from '../../src/tune.ts';
import { measure } from '../../src/tune-measure.ts';
import { arbProblemOfShape } from '../support/arbitraries.ts';
import { diffResults, formatMismatch } from '../support/compare.ts';
import { getGpu, releaseGpu, uncapturedErrors } from './gpu-env.ts';

vi.setConfig({ testTimeout: 300_000 });
const gpu = await getGpu();
afterAll(releaseGpu);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!gpu)('the heater', () => {
  it('submits from start() to stop() and nothing after, and through a compile; a GEMM meanwhile is exact', async () => {
    const device = gpu!.device;
    const heater = await Heater.create(device, 16); // a few rounds: SwiftShader runs them on these cores
    const ctx = await GpuContext.create({ device });
    // Submissions made while each pipeline compiled (the set-up's call holds the device meanwhile).
    const during: number[] = [];
    const compile = device.createComputePipelineAsync.bind(device);
    const spy = vi.spyOn(device, 'createComputePipelineAsync').mockImplementation(async (d) => {
      const before = heater.submissions;
      const pipeline = await compile(d);
      during.push(heater.submissions - before);
      return pipeline;
    });
    try {
      heater.start();
      heater.start(); // started already: one loop
      const p = fc.sample(arbProblemOfShape(17, 33, 65), { numRuns: 1, seed: 7 })[0];
      const d = diffResults(await ctx.gemm(p), referenceGemm(p));
      if (d) expect.fail(formatMismatch(d, 'a GEMM while the heater runs'));
      expect(during.length).toBeGreaterThan(0); // the GEMM compiled its pipelines
      expect(Math.max(...during)).toBeGreaterThan(0);
      await sleep(50);
      await heater.stop();
      const made = heater.submissions;
      expect(made).toBeGreaterThan(0);
      await sleep(100);
      expect(heater.submissions).toBe(made); // stopped
      // A start() while a stop() is under way: that stop still ends, and the new loop runs after it.
      heater.start();
      await sleep(20);
      const stopping = heater.stop();
      heater.start();
      await stopping;
      await sleep(50);
      await heater.stop();
      expect(heater.submissions).toBeGreaterThan(made);
      const after = heater.submissions;
      await sleep(50);
      expect(heater.submissions).toBe(after);
    } finally {
      spy.mockRestore();
      ctx.destroy();
      await heater.destroy();
    }
    expect(uncapturedErrors).toEqual([]);
  });

  it('a lost device ends it: stop() rejects with a DeviceLostError', async () => {
    const own = await acquireDevice({ allowSoftware: true });
    const heater = await Heater.create(own.device, 16);
    heater.start();
    await sleep(20);
    own.device.destroy();
    await own.device.lost;
    await sleep(50);
    const made = heater.submissions;
    await sleep(50);
    expect(heater.submissions).toBe(made); // ended by itself, before any stop()
    await expect(heater.stop()).rejects.toMatchObject({ name: 'DeviceLostError' });
  });

  it("runs through measure()'s set-up only: stopped before the first warm-up call", async () => {
    const device = gpu!.device;
    const heater = await Heater.create(device, 16);
    // The clock measure() reads: at the set-up's start, when the warm-up starts, after each call since.
    const seen: number[] = [];
    const clock = {
      now: () => {
        seen.push(heater.submissions);
        return performance.now();
      },
    };
    try {
      const kernel = GPU_KERNELS.find((k) => k.id === 'dot4-64x64')!;
      const m = await measure(device, kernel, [32, 32, 32], performance.now() + 3000, clock, { warmupMs: 50, heater });
      expect(m.ms).toBeGreaterThan(0);
      expect(seen[0]).toBe(0);
      expect(heater.submissions).toBeGreaterThan(0);
      expect(new Set(seen.slice(1))).toEqual(new Set([heater.submissions])); // none from the warm-up on
    } finally {
      await heater.destroy();
    }
    expect(uncapturedErrors).toEqual([]);
  });

  it('tune({ heater: true }) runs with it on a CPU emulation (few rounds a dispatch) and measures', async () => {
    const lines: string[] = [];
    const report = await tune({
      device: gpu!.device,
      budgetMs: 3000,
      classes: ['decode'],
      maxCandidates: 1,
      seed: null,
      heater: true,
      onProgress: (l) => lines.push(l),
    });
    expect(report.table.entries.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain('no heater');
    expect(uncapturedErrors).toEqual([]);
  });
});
