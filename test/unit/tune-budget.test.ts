// Unit tier for the tuner's budget (src/tune-budget.ts), on a fake clock that only the fake measurements
// advance: the sweep predicts each configuration's cost from its family's set-up and the rules' call time,
// holds its share (never starting a configuration that would overrun), reports what it skipped, and hands
// unused time on to later shapes; the verification runs each winner's own-class problems whatever the
// time, then the rest of the suite round-robin while each fits, and stops a winner at its first mismatch.

import { describe, expect, it } from 'vitest';
import {
  type Candidate,
  type CandidateCost,
  type Clock,
  problemClass,
  TuneBudget,
  type VerifyItem,
  WARM_CONFIGURATIONS,
  WinnerVerifier,
} from '../../src/tune-budget.ts';
import type { ShapeClass } from '../../src/kernels/tuning.ts';

/**
 * Verifies each winner as the tuner does (src/tune.ts): first on the problems of its own classes (all of
 * them), then on the rest while each fits the budget's end. `check` returns the mismatch detail ('' when exact).
 */
async function verifyWinners<P>(
  budget: TuneBudget,
  winners: readonly { id: string; classes: readonly ShapeClass[] }[],
  problems: readonly VerifyItem<P>[],
  supports: (winner: string, problem: P) => boolean,
  check: (winner: string, problem: P) => Promise<string>,
) {
  const verifier = new WinnerVerifier(budget, problems, supports, check);
  for (const w of winners) for (const c of w.classes.length ? w.classes : [null]) await verifier.own(w.id, c);
  await verifier.rest();
  return verifier.results();
}

class FakeClock implements Clock {
  t = 1000;
  now(): number {
    return this.t;
  }
}

const RULES = { warmupMs: 500, nextWarmupMs: 100, batchMs: 10, minBatches: 5 };

/** A fake measurement: setup + the warm-up it is given + shortest batches of wall time, at a given call time. */
function fakeMeasure(clock: FakeClock, costs: Record<string, CandidateCost>, log: string[]) {
  return async (c: Candidate, _deadline: number, warmupMs: number) => {
    const cost = costs[c.id];
    clock.t += cost.setupMs + Math.max(warmupMs, cost.callMs) + RULES.minBatches * Math.max(RULES.batchMs, cost.callMs);
    log.push(c.id);
    return { cost, ms: cost.callMs };
  };
}

describe('the sweep holds its share', () => {
  it('predicts a configuration from the largest set-up seen in its family (else any), warm-up and shortest batches', () => {
    const b = new TuneBudget(new FakeClock(), 30_000, 0.8, RULES);
    expect(b.predictCandidate('sgmat', undefined)).toBe(500 + 5 * 10);
    b.recordCandidate('registry', { setupMs: 2000, callMs: 40 });
    b.recordCandidate('registry', { setupMs: 1500, callMs: 40 });
    expect(b.predictCandidate('registry', 40)).toBe(2000 + 500 + 5 * 40);
    b.recordCandidate('sgmat', { setupMs: 6000, callMs: 40 });
    expect(b.predictCandidate('sgmat', 300)).toBe(6000 + 600 + 5 * 300);
    expect(b.predictCandidate('dot4-wide', 1)).toBe(6000 + 500 + 50); // unseen family: the largest set-up
    expect(b.predictCandidate('dot4-wide', 1, 3)).toBe(6000 + 100 + 50); // a later configuration: the short warm-up
    // A family's warm-up as last measured (it runs until the calls are steady): a raised clock takes seconds.
    b.recordCandidate('dot4-wide', { setupMs: 100, callMs: 1, warmupMs: 2500 });
    expect(b.predictCandidate('dot4-wide', 1, 3)).toBe(100 + 2500 + 50);
    b.recordCandidate('dot4-wide', { setupMs: 100, callMs: 1, warmupMs: 300 });
    expect(b.predictCandidate('dot4-wide', 1, 3)).toBe(100 + 300 + 50);
    expect(b.predictCandidate('sgmat', 1, 3)).toBe(6000 + 100 + 50); // another family's is not taken
  });

  it("predicts a configuration measured shortly before at its family's warm set-up, once one is seen", () => {
    const b = new TuneBudget(new FakeClock(), 30_000, 0.8, RULES);
    b.recordCandidate('sgmat', { setupMs: 2700, callMs: 1 }, 'sgmat-64x64');
    b.recordCandidate('sgmat', { setupMs: 2000, callMs: 1 }, 'sgmat-128x128');
    // Measured before, but no warm set-up of the family seen yet: the cold one.
    expect(b.predictCandidate('sgmat', 1, 1, 'sgmat-64x64')).toBe(2700 + 100 + 50);
    b.recordCandidate('sgmat', { setupMs: 40, callMs: 1 }, 'sgmat-64x64'); // again, at another shape: warm
    expect(b.predictCandidate('sgmat', 1, 1, 'sgmat-128x128')).toBe(40 + 100 + 50);
    expect(b.predictCandidate('sgmat', 1, 1, 'sgmat-256x128')).toBe(2700 + 100 + 50); // never measured: cold
    expect(b.predictCandidate('registry', 1, 1, 'sgmat-64x64')).toBe(2700 + 100 + 50); // no warm one in that family
    // Out of the window of the last WARM_CONFIGURATIONS measured (their pipelines may have left the cache): cold.
    for (let i = 0; i < WARM_CONFIGURATIONS; i++) b.recordCandidate('dot4-wide', { setupMs: 300, callMs: 1 }, `d${i}`);
    expect(b.isWarm('sgmat-128x128')).toBe(false);
    expect(b.predictCandidate('sgmat', 1, 1, 'sgmat-128x128')).toBe(2700 + 100 + 50);
    expect(b.isWarm(`d${WARM_CONFIGURATIONS - 1}`)).toBe(true);
  });

  it('re-measures at a later shape the configurations compiled at the one before, where cold ones would not fit', async () => {
    const clock = new FakeClock();
    const b = new TuneBudget(clock, 24_000, 1, RULES); // 12 s a shape
    const compiled = new Set<string>();
    const ids = ['rules', 'a', 'b', 'c', 'd', 'e'];
    const measure = async (c: Candidate, _deadline: number, warmupMs: number) => {
      // 2.5 s to compile a configuration's pipelines the first time, 40 ms of set-up after.
      const setupMs = compiled.has(c.id) ? 40 : 2500;
      compiled.add(c.id);
      clock.t += setupMs + Math.max(warmupMs, 1) + RULES.minBatches * RULES.batchMs;
      return { cost: { setupMs, callMs: 1 }, ms: 1 };
    };
    const candidates = ids.map((id) => ({ id, family: 'sgmat' }));
    // Shape 0: the rules' kernel (3.05 s) and 3 cold configurations (2.65 s each) fit 12 s; d and e do not.
    const first = await b.sweepShape(0, 2, candidates, measure);
    expect(first.measured.map((x) => x.candidate.id)).toEqual(['rules', 'a', 'b', 'c']);
    expect(clock.t).toBe(1000 + 11_000);
    // Shape 1, with 3.1 s for its configurations (a reserve holds the rest, and the rules' kernel must fit
    // it too): the rules' kernel again (predicted 3.05 s cold, as no warm set-up of the family is known yet;
    // it takes 0.59 s), then a, b and c at the warm set-up it showed (0.19 s each); d would take 2.65 s
    // cold, over the 2.51 s left.
    const second = await b.sweepShape(1, 2, candidates, measure, () => 9_900);
    expect(second.measured.map((x) => x.candidate.id)).toEqual(['rules', 'a', 'b', 'c']);
    expect(second.skipped.map((x) => [x.id, x.why.split(',')[0]])).toEqual([
      ['d', 'predicted 2650 ms'],
      ['e', 'predicted 2650 ms'],
    ]);
  });

  it("warms a shape's first configuration for warmupMs and each later one for nextWarmupMs", async () => {
    const clock = new FakeClock();
    const b = new TuneBudget(clock, 60_000, 1, RULES);
    const costs = { r: { setupMs: 100, callMs: 1 }, x: { setupMs: 100, callMs: 1 }, y: { setupMs: 100, callMs: 1 } };
    const warmups: number[] = [];
    const log: string[] = [];
    for (let s = 0; s < 2; s++) {
      await b.sweepShape(
        s,
        2,
        ['r', 'x', 'y'].map((id) => ({ id, family: 'registry' })),
        (c, deadline, warmupMs) => {
          warmups.push(warmupMs);
          return fakeMeasure(clock, costs, log)(c, deadline, warmupMs);
        },
      );
    }
    expect(warmups).toEqual([500, 100, 100, 500, 100, 100]);
  });

  it('never starts a configuration that would overrun; reports the skipped; the sweep ends within its share', async () => {
    const clock = new FakeClock();
    // Each set-up below exceeds what its family has shown (by up to 1.4 s), a miss no prediction from the
    // past can avoid. Every configuration warmed 0.5 s, the sweep ends within its share; with the 0.1 s
    // warm-ups of later configurations the last one started overruns by that miss (25.4 s), which is not
    // what this test is about: the budget's guarantee is on predictions, the miss is the fake's.
    const b = new TuneBudget(clock, 30_000, 0.8, { ...RULES, nextWarmupMs: RULES.warmupMs }); // sweep: 24 s
    // SwiftShader-like costs: seconds of compilation per configuration, growing.
    const costs: Record<string, CandidateCost> = {};
    const shape = (s: number): Candidate[] =>
      ['rules', 'a', 'b', 'c', 'd', 'e'].map((id, i) => {
        costs[`${id}${s}`] = { setupMs: 1500 + 700 * i, callMs: 30 };
        return { id: `${id}${s}`, family: i % 2 ? 'sgmat' : 'registry' };
      });
    const log: string[] = [];
    const skipped: string[] = [];
    for (let s = 0; s < 4; s++) {
      const r = await b.sweepShape(s, 4, shape(s), fakeMeasure(clock, costs, log));
      skipped.push(...r.skipped.map((x) => x.id));
      expect(r.measured[0]?.candidate.id).toBe(`rules${s}`); // the rules' kernel first at every shape
      for (const x of r.skipped) expect(x.why).toMatch(/^predicted \d+ ms, \d+ ms left$/);
    }
    expect(clock.t - 1000).toBeLessThanOrEqual(24_000);
    expect(log.length + skipped.length).toBe(24);
    expect(skipped.length).toBeGreaterThan(0);
    expect(log.length).toBeGreaterThan(4);
  });

  it("the rules' kernel is not started where it and the verification it commits to overrun the sweep's end", async () => {
    // A fuzz trial's `qgemm tune --budget 30s` on SwiftShader ran 37.8 s: the square shape's rules' kernel
    // started with nothing left of its share, and its class's verification (16.9 s) followed.
    const clock = new FakeClock();
    const b = new TuneBudget(clock, 10_000, 1, RULES);
    const costs = { r0: { setupMs: 100, callMs: 1 }, r1: { setupMs: 100, callMs: 1 } };
    const log: string[] = [];
    await b.sweepShape(0, 2, [{ id: 'r0', family: 'registry' }], fakeMeasure(clock, costs, log), () => 0);
    clock.t += 7000; // its verification
    const late = await b.sweepShape(1, 2, [{ id: 'r1', family: 'registry' }], fakeMeasure(clock, costs, log), () => 2500);
    expect(late.measured).toEqual([]);
    expect(late.skipped[0]?.why).toMatch(/^predicted \d+ ms, \d+ ms left$/);
    // With the verification predicted to fit, it runs.
    const b2 = new TuneBudget(clock, 10_000, 1, RULES);
    const fits = await b2.sweepShape(0, 1, [{ id: 'r1', family: 'registry' }], fakeMeasure(clock, costs, log), () => 2500);
    expect(fits.measured.map((x) => x.candidate.id)).toEqual(['r1']);
    expect(log).toEqual(['r0', 'r1']);
  });

  it('a shape that finishes early leaves its time to the next ones', async () => {
    const clock = new FakeClock();
    const b = new TuneBudget(clock, 10_000, 1, RULES);
    const costs = { r0: { setupMs: 100, callMs: 1 }, r1: { setupMs: 100, callMs: 1 }, x1: { setupMs: 100, callMs: 1 } };
    const log: string[] = [];
    // Shape 0 has one candidate (about 0.65 s of its 5 s share); shape 1 then gets the ~9.35 s left.
    await b.sweepShape(0, 2, [{ id: 'r0', family: 'registry' }], fakeMeasure(clock, costs, log));
    const r = await b.sweepShape(
      1,
      2,
      [
        { id: 'r1', family: 'registry' },
        { id: 'x1', family: 'registry' },
      ],
      async (c, deadline, w) => {
        expect(deadline).toBeGreaterThan(clock.now() + 4000); // more than the 5 s even share minus what ran
        return fakeMeasure(clock, costs, log)(c, deadline, w);
      },
    );
    expect(r.skipped).toEqual([]);
    expect(log).toEqual(['r0', 'r1', 'x1']);
  });

  it('a configuration that throws is reported as skipped, with its reason, and the sweep goes on', async () => {
    const clock = new FakeClock();
    const b = new TuneBudget(clock, 60_000, 0.8, RULES);
    const costs = { ok: { setupMs: 100, callMs: 1 } };
    const log: string[] = [];
    const r = await b.sweepShape(
      0,
      1,
      [
        { id: 'bad', family: 'registry' },
        { id: 'ok', family: 'registry' },
      ],
      async (c, d, w) => {
        if (c.id === 'bad') throw new Error('ran dot4-64x64 instead\nstack');
        return fakeMeasure(clock, costs, log)(c, d, w);
      },
    );
    expect(r.skipped).toEqual([{ id: 'bad', why: 'ran dot4-64x64 instead' }]);
    expect(log).toEqual(['ok']);
  });
});

describe('the search order', () => {
  it("after the rules' kernel, `pick` chooses the next of the untried, seeing what was measured", async () => {
    const clock = new FakeClock();
    const b = new TuneBudget(clock, 1_000_000, 0.8, RULES);
    const costs: Record<string, CandidateCost> = {};
    for (const id of ['r', 'a', 'b', 'c', 'd']) costs[id] = { setupMs: 10, callMs: 1 };
    const log: string[] = [];
    const seen: string[][] = [];
    const r = await b.sweepShape(
      0,
      1,
      ['r', 'a', 'b', 'c', 'd'].map((id) => ({ id, family: 'f' })),
      fakeMeasure(clock, costs, log),
      () => 0,
      (left, measured) => {
        seen.push(measured.map((x) => x.candidate.id));
        return left.length === 2 ? 7 : left.length - 1; // the last; an index out of range is the first
      },
    );
    expect(log).toEqual(['r', 'd', 'c', 'a', 'b']);
    expect(seen).toEqual([['r'], ['r', 'd'], ['r', 'd', 'c'], ['r', 'd', 'c', 'a']]);
    expect(r.measured.length).toBe(5);
  });
});

describe('verifying the winners within the budget', () => {
  type P = { name: string; macs: number; cls: 'square' | 'decode' | 'conv' };
  const suite: P[] = [
    { name: 'd1', macs: 1_000, cls: 'decode' },
    { name: 's1', macs: 100_000, cls: 'square' },
    { name: 's2', macs: 1_000_000, cls: 'square' },
    { name: 'c1', macs: 200_000, cls: 'conv' },
    { name: 'huge', macs: 100_000_000, cls: 'square' },
  ];
  const problems = suite.map((p) => ({ problem: p, class: p.cls, macs: p.macs }));

  it("runs each winner's own-class problems whatever the time, then the rest while each fits", async () => {
    const clock = new FakeClock();
    const b = new TuneBudget(clock, 10_000, 0.8, RULES);
    clock.t += 8000; // the sweep used its share: 2 s left
    const ran: string[] = [];
    const out = await verifyWinners(
      b,
      [
        { id: 'gemv', classes: ['decode'] },
        { id: 'tile', classes: ['square'] },
      ],
      problems,
      (id, p) => id !== 'gemv' || p.macs < 10_000_000,
      async (id, p) => {
        ran.push(`${id}:${p.name}`);
        clock.t += 100 + p.macs / 1000; // 100 ms a problem, plus 1 ms per 1000 MACs
        return '';
      },
    );
    // Own class first (tile's square problems cost 100 + 1100 + 100100 ms: over the budget, still run).
    expect(ran.slice(0, 4)).toEqual(['gemv:d1', 'tile:s1', 'tile:s2', 'tile:huge']);
    expect(clock.t - 1000).toBeGreaterThan(10_000);
    // Then nothing more fits the budget's end.
    expect(ran.length).toBe(4);
    expect(out.map((v) => [v.id, v.classProblems, v.problems, v.of, v.detail])).toEqual([
      ['gemv', 1, 1, 4, ''],
      ['tile', 3, 3, 5, ''],
    ]);
  });

  it('with time left, the rest runs round-robin and predicted overruns are skipped', async () => {
    const clock = new FakeClock();
    const b = new TuneBudget(clock, 20_000, 0.5, RULES);
    const ran: string[] = [];
    const out = await verifyWinners(
      b,
      [
        { id: 'gemv', classes: ['decode'] },
        { id: 'conv', classes: ['conv'] },
      ],
      problems,
      () => true,
      async (id, p) => {
        ran.push(`${id}:${p.name}`);
        clock.t += 100 + p.macs / 1000;
        return '';
      },
    );
    expect(ran.slice(0, 2)).toEqual(['gemv:d1', 'conv:c1']);
    // 'huge' (predicted >= 100 s) never starts; the others fit, alternating between the winners.
    expect(ran.slice(2)).toEqual(['gemv:s1', 'conv:d1', 'gemv:s2', 'conv:s1', 'gemv:c1', 'conv:s2']);
    expect(clock.t - 1000).toBeLessThanOrEqual(20_000);
    expect(out.map((v) => [v.problems, v.of])).toEqual([
      [4, 5],
      [4, 5],
    ]);
  });

  it('a winner stops at its first mismatch, which is reported; a winner with no own-class problem runs one anyway', async () => {
    const clock = new FakeClock();
    const b = new TuneBudget(clock, 1_000_000, 0.5, RULES);
    const ran: string[] = [];
    const out = await verifyWinners(
      b,
      [
        { id: 'broken', classes: ['square'] },
        { id: 'lonely', classes: ['conv'] },
      ],
      problems,
      (id, p) => id === 'broken' || p.cls === 'square',
      async (id, p) => {
        ran.push(`${id}:${p.name}`);
        clock.t += 10;
        return id === 'broken' && p.name === 's2' ? '3 of 16 elements differ' : '';
      },
    );
    expect(ran).toEqual(['broken:s1', 'broken:s2', 'lonely:s1', 'lonely:s2', 'lonely:huge']);
    expect(out[0]).toMatchObject({ id: 'broken', problems: 2, detail: '3 of 16 elements differ' });
    expect(out[1]).toMatchObject({ id: 'lonely', classProblems: 1, problems: 3, of: 3, detail: '' });
  });
});

describe('sweep and verification interleaved', () => {
  it("a winner's own-class verification is reserved in its shape's share and paid inside the sweep's time", async () => {
    const clock = new FakeClock();
    const b = new TuneBudget(clock, 30_000, 0.8, RULES);
    const problems = [0, 1, 2, 3].map((i) => ({ problem: i, class: 'square' as const, macs: 1000 }));
    const verifier = new WinnerVerifier(
      b,
      problems,
      () => true,
      async () => {
        clock.t += 1500; // SwiftShader-like: a compilation per problem
        return '';
      },
    );
    const costs: Record<string, CandidateCost> = {};
    const cands = (s: number) =>
      ['r', 'a', 'b', 'c'].map((id) => {
        costs[`${id}${s}`] = { setupMs: 2000, callMs: 30 };
        return { id: `${id}${s}`, family: 'registry' };
      });
    const log: string[] = [];
    const deadlines: number[] = [];
    let measuredBy = 0;
    for (let s = 0; s < 2; s++) {
      const r = await b.sweepShape(
        s,
        2,
        cands(s),
        async (c, d, w) => {
          deadlines.push(d - clock.now());
          const m = await fakeMeasure(clock, costs, log)(c, d, w);
          measuredBy = clock.t;
          return m;
        },
        () => verifier.predictOwn('square'),
      );
      await verifier.own(r.measured[0].candidate.id, 'square');
    }
    // Shape 0: before any verification, its 4 problems count as 4 set-ups (8 s), but at most half its
    // 12 s share is reserved, so a second configuration runs (the whole reservation starved it to the
    // rules' kernel: on an H200 the first square shape measured one configuration of 261); shape 1, the
    // last, reserves all of 4 x the measured 1.5 s and fits two.
    expect(log).toEqual(['r0', 'a0', 'r1', 'a1']);
    expect(deadlines[deadlines.length - 1]).toBeLessThan(deadlines[0]);
    expect(measuredBy - 1000).toBeLessThanOrEqual(24_000);
    expect(clock.t - 1000).toBeLessThanOrEqual(24_000); // sweep and own-class verification within the share
    await verifier.rest();
    expect(clock.t - 1000).toBeLessThanOrEqual(30_000);
    expect(verifier.results().map((v) => [v.id, v.problems, v.of])).toEqual([
      ['r0', 4, 4],
      ['r1', 4, 4],
    ]);
  });
});

describe("the rules' kernel's reserve", () => {
  it("is the class's problems a new winner would run, and nothing for a kernel that ran them as an earlier shape's winner", async () => {
    const clock = new FakeClock();
    const b = new TuneBudget(clock, 30_000, 0.8, RULES);
    const problems = [0, 1, 2].map((i) => ({ problem: i, class: 'square' as const, macs: 1000 }));
    const verifier = new WinnerVerifier(
      b,
      problems,
      () => true,
      async () => {
        clock.t += 1500;
        return '';
      },
    );
    b.recordCandidate('registry', { setupMs: 700, callMs: 1 });
    expect(verifier.predictOwn('square')).toBe(3 * 700); // no problem ran: a set-up each
    expect(verifier.predictOwn('square', 'r')).toBe(3 * 700); // 'r' has won nothing yet
    await verifier.own('r', 'square');
    expect(verifier.predictOwn('square')).toBe(3 * 1500);
    expect(verifier.predictOwn('square', 'r')).toBe(0); // own() would run none again
  });
});

describe('shape classes of verify problems', () => {
  it('few rows: decode; tall and narrow: conv; else square', () => {
    expect(problemClass(1, 1, 1)).toBe('decode');
    expect(problemClass(3, 200, 130)).toBe('decode');
    expect(problemClass(64, 64, 128)).toBe('square');
    expect(problemClass(130, 65, 200)).toBe('square');
    // A rhs of at most 4 bits: the 4-bit class, whatever the shape; 5 to 8 bits as above.
    expect(problemClass(130, 65, 200, 4)).toBe('decode-u4');
    expect(problemClass(1, 1, 1, 1)).toBe('decode-u4');
    expect(problemClass(64, 64, 128, 5)).toBe('square');
    expect(problemClass(196, 32, 288)).toBe('conv');
    expect(problemClass(128, 192, 320)).toBe('square');
  });
});
