// The Chrome runtime's after-pause calls, without a browser: bench/timing.ts pausedCalls (the rule the
// page runs from its source: each call only after its pause, under fake timers) and
// bench/impls/chrome-outcome.ts pageOutcome (the page's result turned into the harness's outcome: the
// after-pause statistics for qgemm and the peers, qgemm's hashes for the check against the back-to-back
// bytes, none missing; onnxruntime-web's GPU time from its profiled runs after their warm-up). The
// browser run of the same rows is in test/bench/bench.test.ts.

import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PageCellResult } from '../../bench/chrome-page.ts';
import { afterPauseRow } from '../../bench/report.ts';
import { pageOutcome } from '../../bench/impls/chrome-outcome.ts';
import { parseShapes } from '../../bench/shapes.ts';
import { PAUSE_MS, pausedCalls, stats } from '../../bench/timing.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('after-pause calls in Chrome', () => {
  it('makes each call only after its pause, one after another', async () => {
    vi.useFakeTimers();
    const made: number[] = [];
    const done = pausedCalls(3, PAUSE_MS, async () => {
      made.push(Date.now());
      return made.length * 1.5;
    });
    const t0 = Date.now();
    await vi.advanceTimersByTimeAsync(PAUSE_MS - 1);
    expect(made).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(made).toEqual([t0 + PAUSE_MS]);
    await vi.advanceTimersByTimeAsync(2 * PAUSE_MS);
    expect(made).toEqual([t0 + PAUSE_MS, t0 + 2 * PAUSE_MS, t0 + 3 * PAUSE_MS]);
    expect(await done).toEqual([1.5, 3, 4.5]);
  });

  const qgemm: PageCellResult = {
    walls: [2, 3],
    gpus: [0.5, 0.5],
    hashes: ['a', 'a'],
    outputBase64: Buffer.from([1, 2, 3, 4]).toString('base64'),
    dtype: 'uint8',
    kernel: 'gemv',
    gpuNote: 'GPU time from 2 separate calls with timestamp queries; the wall time from calls without any',
  };

  it("turns the page's after-pause walls into the outcome, qgemm's with a hash per call", () => {
    const out = pageOutcome('qgemm', { ...qgemm, pausedWalls: [4, 6, 5], pausedHashes: ['a', 'a', 'b'] }, [], 2);
    expect(out.afterPause).toEqual(stats([4, 6, 5]));
    expect(out.afterPauseHashes).toEqual(['a', 'a', 'b']);
    // The harness's row of it: one call returned other bytes, so it is not verified.
    const [shape] = parseShapes('1x2x2');
    const row = afterPauseRow(
      { verified: true, verification: { verified: true, consistent: true } } as never,
      out.afterPause!,
      { loop: out.hashes!, paused: out.afterPauseHashes },
      shape,
    );
    expect(row.verified).toBe(false);
    // A peer's after-pause calls: walls only.
    const peer = pageOutcome('ort-webgpu', { walls: [1, 1], gpus: [null, null], hashes: [], pausedWalls: [3, 2] }, [], 2);
    expect(peer.afterPause).toEqual(stats([3, 2]));
    expect(peer.afterPauseHashes).toBeUndefined();
    // No pause asked (call, device, CPU rows): no after-pause outcome.
    expect(pageOutcome('qgemm', qgemm, [], 2).afterPause).toBeUndefined();
  });

  it('fails a qgemm cell whose after-pause calls lack a hash, rather than pass it unchecked', () => {
    expect(() => pageOutcome('qgemm', { ...qgemm, pausedWalls: [4, 6], pausedHashes: ['a'] }, [], 2)).toThrow(/after-pause/);
    expect(() => pageOutcome('qgemm', { ...qgemm, pausedWalls: [4] }, [], 2)).toThrow(/after-pause/);
  });

  it("takes onnxruntime-web's GPU time from the profiled runs after its warm-up runs", () => {
    // Three warm-up runs (slow: the clocks rising), then two timed ones; one kernel event a run, in microseconds.
    const lines = [900, 700, 500, 100, 120].map((dur, i) => JSON.stringify({ cat: 'Api', ts: 1000 * i, dur }));
    const peer = { walls: [1, 1], gpus: [null, null], hashes: [], profiled: true };
    expect(pageOutcome('ort-webgpu', { ...peer, profiledWarm: 3 }, lines, 2).gpu).toEqual(stats([0.1, 0.12]));
    expect(pageOutcome('ort-webgpu', peer, lines.slice(3), 2).gpu).toEqual(stats([0.1, 0.12])); // no warm-up
  });
});
