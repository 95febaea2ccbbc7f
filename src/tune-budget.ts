// The tuner's time budget (src/tune.ts, `qgemm tune --budget`), apart from the GPU so that it can be
// tested with a fake clock: the sweep, which measures kernel configurations per shape, and the
// verification of the winners, which runs them on the verify suite. Both predict what the next step will
// cost from what the steps before it cost, and start it only where it fits:
// - a configuration costs its set-up (context, prepacked operands, pipeline compilation: the largest seen
//   in its family, else in any family) plus its warm-up and shortest batches at the call time the rules'
//   kernel showed at the shape; the rules' kernel must fit the sweep's end, any other configuration the
//   shape's share of what is left (shares are even over the shapes still to come);
// - a verify problem costs the least of the measured problems' times scaled up by its work (M x N x K,
//   never down); each winner first runs the suite's problems of its own shape class whatever the clock
//   says (exactness before speed), then the rest in turn, each where it fits the budget's end.
// What is skipped is returned, so the report can say so.

import type { ShapeClass } from './kernels/tuning.ts';

export interface Clock {
  now(): number;
}

export const performanceClock: Clock = { now: () => performance.now() };

/** What measuring one configuration took, in wall milliseconds. */
export interface CandidateCost {
  /** Context, prepacks, the first call (pipeline compilation). */
  setupMs: number;
  /** Wall time per call after warm-up. */
  callMs: number;
}

export interface SweepRules {
  warmupMs: number;
  batchMs: number;
  minBatches: number;
}

export interface Candidate {
  id: string;
  family: string;
}

export interface SweepShapeResult<M> {
  measured: { candidate: Candidate; m: M }[];
  /** Candidates not started: they would not have fit (predicted ms), or they threw. */
  skipped: { id: string; why: string }[];
}

export class TuneBudget {
  private readonly setups = new Map<string, number>();
  private readonly work: { macs: number; ms: number }[] = [];
  readonly start: number;
  readonly sweepEnd: number;
  readonly end: number;

  constructor(
    readonly clock: Clock,
    budgetMs: number,
    sweepShare: number,
    private readonly rules: SweepRules,
  ) {
    this.start = clock.now();
    this.sweepEnd = this.start + budgetMs * sweepShare;
    this.end = this.start + budgetMs;
  }

  /** The predicted wall time of measuring one more configuration of `family` at a shape whose calls take callMs. */
  predictCandidate(family: string, callMs: number | undefined): number {
    const seen = this.setups.get(family) ?? Math.max(0, ...this.setups.values());
    const call = callMs ?? 0;
    return seen + Math.max(this.rules.warmupMs, 2 * call) + this.rules.minBatches * Math.max(this.rules.batchMs, call);
  }

  recordCandidate(family: string, cost: CandidateCost): void {
    this.setups.set(family, Math.max(this.setups.get(family) ?? 0, cost.setupMs));
  }

  /**
   * Measures `candidates` at shape `index` of `shapes` (the first is the rules' kernel) while they fit:
   * the first must fit the sweep's end, the others this shape's share of the time left.
   */
  async sweepShape<M extends { cost: CandidateCost }>(
    index: number,
    shapes: number,
    candidates: readonly Candidate[],
    measure: (c: Candidate, deadline: number) => Promise<M>,
  ): Promise<SweepShapeResult<M>> {
    const now = this.clock.now();
    const shapeEnd = now + Math.max(0, this.sweepEnd - now) / (shapes - index);
    const out: SweepShapeResult<M> = { measured: [], skipped: [] };
    let callMs: number | undefined;
    for (const [i, c] of candidates.entries()) {
      const end = i === 0 ? this.sweepEnd : shapeEnd;
      const predicted = this.predictCandidate(c.family, callMs);
      const t = this.clock.now();
      if (t + predicted > end) {
        out.skipped.push({ id: c.id, why: `predicted ${Math.round(predicted)} ms, ${Math.round(Math.max(0, end - t))} ms left` });
        continue;
      }
      try {
        // Batches beyond the shortest run until half of what is left, so the next configurations keep theirs.
        const m = await measure(c, Math.min(end, t + Math.max(predicted, (end - t) / 2)));
        this.recordCandidate(c.family, m.cost);
        callMs ??= m.cost.callMs;
        out.measured.push({ candidate: c, m });
      } catch (e) {
        out.skipped.push({ id: c.id, why: (e as Error).message.split('\n')[0] });
      }
    }
    return out;
  }

  /** The predicted wall time of verifying one problem of `macs` multiply-accumulates (Infinity before any). */
  predictProblem(macs: number): number {
    let best = Infinity;
    for (const w of this.work) best = Math.min(best, w.ms * Math.max(1, macs / w.macs));
    return best;
  }

  recordProblem(macs: number, ms: number): void {
    this.work.push({ macs: Math.max(1, macs), ms });
  }

  /**
   * Verifies each winner: first on the problems of its own classes (all of them), then on the rest while
   * each fits the budget's end. `check` returns the mismatch detail ('' when exact). A winner stops at its
   * first mismatch.
   */
  async verifyWinners<P>(
    winners: readonly { id: string; classes: readonly ShapeClass[] }[],
    problems: readonly { problem: P; class: ShapeClass; macs: number }[],
    supports: (winner: string, problem: P) => boolean,
    check: (winner: string, problem: P) => Promise<string>,
  ): Promise<WinnerVerification[]> {
    const out: WinnerVerification[] = winners.map((w) => ({ id: w.id, classProblems: 0, problems: 0, of: 0, detail: '', ms: 0 }));
    const run = async (v: WinnerVerification, p: (typeof problems)[number]) => {
      const t0 = this.clock.now();
      const why = await check(v.id, p.problem);
      const ms = this.clock.now() - t0;
      this.recordProblem(p.macs, ms);
      v.ms += ms;
      v.problems++;
      if (why) v.detail = why;
    };
    const queue: [WinnerVerification, (typeof problems)[number]][] = [];
    for (const [i, w] of winners.entries()) {
      const v = out[i];
      const mine = problems.filter((p) => supports(w.id, p.problem));
      v.of = mine.length;
      const own = mine.filter((p) => w.classes.includes(p.class));
      // At least one problem, whatever its class.
      for (const p of own.length ? own : mine.slice(0, 1)) {
        if (!v.detail) await run(v, p);
      }
      v.classProblems = v.problems;
      for (const p of mine) if (!own.includes(p) && !(own.length === 0 && p === mine[0])) queue.push([v, p]);
    }
    // The rest, round-robin over the winners, each problem where it fits.
    const rounds = new Map<WinnerVerification, (typeof problems)[number][]>();
    for (const [v, p] of queue) rounds.set(v, [...(rounds.get(v) ?? []), p]);
    for (let r = 0; [...rounds.values()].some((l) => r < l.length); r++) {
      for (const [v, list] of rounds) {
        const p = list[r];
        if (!p || v.detail) continue;
        if (this.clock.now() + this.predictProblem(p.macs) > this.end) continue;
        await run(v, p);
      }
    }
    return out;
  }
}

export interface WinnerVerification {
  id: string;
  /** Problems of the winner's own classes run first (all of them). */
  classProblems: number;
  /** Problems run in all, and how many of the suite the kernel can run: fully verified when equal. */
  problems: number;
  of: number;
  /** The first mismatch ('' when every problem run was exact). */
  detail: string;
  ms: number;
}

/** The shape class of a verify problem: few rows (decode), tall and narrow (conv), else square. */
export function problemClass(M: number, N: number, K: number): ShapeClass {
  if (M <= 16 || 4 * M <= Math.min(N, K)) return 'decode';
  if (N <= 64 && M >= 2 * N) return 'conv';
  return 'square';
}
