// GPU tier for the tuner's heater (src/gpu/heater.ts) on SwiftShader: it submits its spin kernel back to
// back from start() to stop(), and nothing after; it goes on while another call holds the device (the
// set-up's calls hold it through their pipelines' compile, and the heater does not wait for it); a GEMM run meanwhile is exact; a
// start() during a stop() waits for that stop; a lost device ends it with a DeviceLostError; measure()
// (src/tune-measure.ts) runs it through a configuration's set-up only, stopped before the first warm-up
// call; another call's error made while it runs is that call's; and tune({ heater: true }) runs with it
// (and a seed kernel cut by maxCandidates is said to be). No uncaptured GPU error.

import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { acquireDevice } from '../../src/gpu/acquire.ts';
import { Heater } from '../../src/gpu/heater.ts';
import { runInErrorScope, withDevice } from '../../src/gpu/scopes.ts';
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
  it('submits from start() to stop() and nothing after, and while another call holds the device; a GEMM meanwhile is exact', async () => {
    const device = gpu!.device;
    const heater = await Heater.create(device, 16); // a few rounds: SwiftShader runs them on these cores
    const ctx = await GpuContext.create({ device });
    try {
      heater.start();
      heater.start(); // started already: one loop
      const p = fc.sample(arbProblemOfShape(17, 33, 65), { numRuns: 1, seed: 7 })[0];
      const d = diffResults(await ctx.gemm(p), referenceGemm(p));
      if (d) expect.fail(formatMismatch(d, 'a GEMM while the heater runs'));
      // It goes on while another call holds the device (as a GEMM does through its pipelines' compile).
      await withDevice(device, async () => {
        const before = heater.submissions;
        for (let i = 0; i < 1000 && heater.submissions === before; i++) await sleep(10);
        expect(heater.submissions).toBeGreaterThan(before);
      });
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
      ctx.destroy();
      await heater.destroy();
    }
    expect(uncapturedErrors).toEqual([]);
  });

  it("an error of another call made while it runs lands in that call's own scopes, never in the heater's", async () => {
    const device = gpu!.device;
    const heater = await Heater.create(device, 16);
    heater.start();
    await sleep(20);
    const outcomes: string[] = [];
    for (let i = 0; i < 20; i++) {
      // A call that holds its scopes open across awaits (as a GEMM does across its compile), with the
      // heater submitting meanwhile, and makes an invalid buffer inside them.
      const outcome = await runInErrorScope(
        device,
        async () => {
          await sleep(2);
          device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE, label: 'invalid' });
          await sleep(2);
        },
        'the call',
      ).then(
        () => 'resolved',
        (e) => `${e.name}: ${String(e.message).slice(0, 20)}`,
      );
      outcomes.push(outcome);
    }
    await heater.stop(); // and the heater's own scopes caught nothing of the call's
    await heater.destroy();
    expect(new Set(outcomes)).toEqual(new Set(['GpuValidationError: the call: WebGPU val']));
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
    // A seed whose kernel runs here but lies past maxCandidates is said to be cut, not to fail here.
    const seed = {
      ...report.table,
      entries: report.table.entries.map((e) => ({
        ...e,
        kernel: { family: 'dot4-tiled', dot4: 'native', tileM: 64, tileN: 64, tileKW: 8 },
      })),
    };
    const cut: string[] = [];
    await tune({
      device: gpu!.device,
      budgetMs: 3000,
      classes: ['decode'],
      maxCandidates: 1,
      seed: seed as never,
      onProgress: (l) => cut.push(l),
    });
    expect(cut.join('\n')).toMatch(/the seed's dot4-64x64-kw8 is past maxCandidates \(1\): not measured/);
    expect(uncapturedErrors).toEqual([]);
  });
});
