// Unit tier for the tuner's warm-up (src/tune-measure.ts warmUntilSteady), on a fake clock that only the
// fake calls advance: a configuration is warmed for at least its minimum, then until its per-call GPU
// time stops falling (the GPU's clocks have risen), at most MAX_WARMUP_MS, and never so long that its
// shortest batches would pass the deadline. An H200 needed about 3 s to raise its clock from idle
// (bench/results/2026-11-28-h200-clocks.csv), where the warm-up was a fixed 0.1 to 0.5 s. A rule without
// its cap still ends; and the function names nothing outside itself, since the bench's Chrome page runs it
// from its source text.

import { describe, expect, it } from 'vitest';
import {
  batchesMs,
  MAX_OPERAND_SETS,
  MAX_WARMUP_MS,
  MIN_OPERAND_SETS,
  operandSets,
  ROTATION_BYTES,
  STEADY,
  STEADY_TOLERANCE,
  warmUntilSteady,
} from '../../src/tune-measure.ts';

/** The tuner's rule after a minimum of `minMs`. */
const rule = (minMs: number) => ({ ...STEADY, minMs });

/** Calls whose GPU time at wall time t is gpu(t), each taking that long plus `overheadMs` of the clock. */
function fakeCalls(gpu: (t: number) => number, overheadMs = 0.1) {
  const clock = { t: 0, now: () => clock.t };
  const times: number[] = [];
  const once = async () => {
    const ms = gpu(clock.t);
    clock.t += ms + overheadMs;
    times.push(ms);
    return ms;
  };
  return { clock, once, times };
}

describe('warmUntilSteady', () => {
  it('steady calls: stops after the minimum and two windows of calls', async () => {
    const f = fakeCalls(() => 1);
    const r = await warmUntilSteady(f.once, f.clock, rule(100));
    expect(r.steady).toBe(true);
    expect(f.clock.t).toBeGreaterThanOrEqual(100);
    expect(f.clock.t).toBeLessThan(300);
  });

  it('a clock that rises for 3 s: warms until the calls stop getting faster', async () => {
    // 6 ms per call at the idle clock, falling to 1 ms over 3 s (the H200's 345 -> 1980 MHz), then flat.
    const f = fakeCalls((t) => (t >= 3000 ? 1 : 6 * (1 / 6) ** (t / 3000)));
    const r = await warmUntilSteady(f.once, f.clock, rule(100));
    expect(r.steady).toBe(true);
    expect(f.clock.t).toBeGreaterThan(2500); // a fixed 100 ms warm-up would have measured at 5.7 ms a call
    expect(f.clock.t).toBeLessThan(MAX_WARMUP_MS);
    expect(f.times[f.times.length - 1]).toBeLessThan(1 + 3 * STEADY_TOLERANCE);
  });

  it('calls that never settle: stops at MAX_WARMUP_MS, not steady', async () => {
    const f = fakeCalls((t) => 10 * 0.5 ** (t / 300));
    const r = await warmUntilSteady(f.once, f.clock, rule(100));
    expect(r.steady).toBe(false);
    expect(f.clock.t).toBeGreaterThanOrEqual(MAX_WARMUP_MS);
    expect(f.clock.t).toBeLessThan(MAX_WARMUP_MS + 50);
  });

  it('keeps the deadline: the shortest batches still fit after it, but the minimum warm-up always runs', async () => {
    const rising = (t: number) => 10 * 0.5 ** (t / 300);
    const f = fakeCalls(rising);
    expect((await warmUntilSteady(f.once, f.clock, rule(100), 1000, batchesMs)).steady).toBe(false);
    expect(f.clock.t).toBeLessThanOrEqual(1000 - 5 * 10);
    const g = fakeCalls(rising);
    await warmUntilSteady(g.once, g.clock, rule(500), 100, batchesMs); // the deadline before the minimum
    expect(g.clock.t).toBeGreaterThanOrEqual(500);
    expect(g.clock.t).toBeLessThan(520);
  });

  it('slow calls (a CPU emulation, seconds each): two calls of the same time are steady', async () => {
    const f = fakeCalls(() => 700);
    const r = await warmUntilSteady(f.once, f.clock, rule(100));
    expect(r).toEqual({ calls: 2, ms: 1400.2, steady: true });
  });

  it('a rule without its cap (maxMs missing or NaN) still ends, at the first check that fails, not steady', async () => {
    for (const maxMs of [undefined, Number.NaN]) {
      const f = fakeCalls((t) => 10 * 0.5 ** (t / 300)); // never settles
      const r = await warmUntilSteady(f.once, f.clock, { ...rule(100), maxMs: maxMs as never });
      expect(r.steady).toBe(false);
      expect(f.clock.t).toBeLessThan(200);
    }
  });

  it("is self-contained: the bench's Chrome page runs it from its source text", async () => {
    const fromSource = new Function(`return (${warmUntilSteady.toString()});`)() as typeof warmUntilSteady;
    const f = fakeCalls(() => 700);
    expect(await fromSource(f.once, f.clock, rule(100))).toEqual({ calls: 2, ms: 1400.2, steady: true });
  });
});

describe('operandSets', () => {
  it('rotates enough distinct sets on a GPU that no cache holds the one a call reads (256 MiB, 3 to 64), and 3 on a software adapter', () => {
    const MiB = 1 << 20;
    expect(operandSets(1 * MiB, false)).toBe(MAX_OPERAND_SETS); // 16x1024²: 64 sets, 64 MiB past a 50 MB L2
    expect(operandSets(16 * MiB, false)).toBe(16); // 1x4096²: 256 MiB
    expect(operandSets(121 * MiB, false)).toBe(MIN_OPERAND_SETS); // 11008²
    expect(operandSets(0, false)).toBe(MAX_OPERAND_SETS);
    expect(operandSets(1 * MiB, true)).toBe(MIN_OPERAND_SETS);
    expect(ROTATION_BYTES).toBe(256 * MiB);
  });
});
