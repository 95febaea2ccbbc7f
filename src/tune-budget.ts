// The tuner's time budget (src/tune.ts, `qgemm tune --budget`), apart from the GPU so that it can be
// tested with a fake clock: the sweep, which measures kernel configurations per shape, and the
// verification of the winners, which runs them on the verify suite. Both predict what the next step will
// cost from what the steps before it cost, and start it only where it fits:
// - a configuration costs its set-up (context, prepacked operands, pipeline compilation: the largest seen
//   in its family, else in any family; for a configuration measured shortly before at another shape, whose
//   pipelines the device still holds, the largest such warm set-up seen in its family, once there is one)
//   plus its warm-up (the family's last, which runs until the calls are steady) and shortest batches at
//   the call time the rules' kernel showed at the shape; the rules' kernel must fit the sweep's end, any
//   other configuration the shape's share of what is left (shares are even over the shapes still to come),
//   both less the predicted verification of the shape's winner on its class's problems, which follows the
//   shape (for the others at most half the share, but at the last shape);
// - a verify problem costs the least of the measured problems' times scaled up by its work (M x N x K,
//   never down); each winner runs the suite's problems of its own shape class as soon as it wins a shape,
//   whatever the clock says (exactness before speed), inside the sweep's time, so the shapes after it get
//   less; the rest of the suite follows, in turn, each problem where it fits the budget's end.
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
  /** The warm-up's wall time (it runs until the calls are steady, src/tune-measure.ts), where measured. */
  warmupMs?: number;
}

export interface SweepRules {
  /** The warm-up of a shape's first configuration (the rules' kernel): the clocks rise. */
  warmupMs: number;
  /** The warm-up of each later configuration of the shape, measured right after the previous one. */
  nextWarmupMs: number;
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

/**
 * How many of the last configurations measured count as warm: their pipelines are still in the device's
 * cache (src/gpu/pipelines.ts keeps 48 per device; a configuration compiles one or two, split-K's
 * reduction included, and a winner's verification a few more, one per output-stage mix), so measuring
 * one again at the next shape costs no compilation: on an H100 the subgroup-matrix kernel's first call
 * took 2.7 s (bench/results/2026-11-26-h100-first-call.txt), a warm one milliseconds.
 */
export const WARM_CONFIGURATIONS = 12;

export class TuneBudget {
  /** The largest cold set-up per family: a first measurement, its pipelines compiled. */
  private readonly setups = new Map<string, number>();
  /** The largest warm set-up per family: a configuration among the last WARM_CONFIGURATIONS measured. */
  private readonly warmSetups = new Map<string, number>();
  /** The ids of the configurations measured, most recent last (at most WARM_CONFIGURATIONS). */
  private readonly recent: string[] = [];
  /** The latest warm-up per family, where one was measured: it runs until the calls are steady. */
  private readonly warmups = new Map<string, number>();
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

  /** The warm-up of a shape's configuration `i` (0: the first, the rules' kernel). */
  warmupOf(i: number): number {
    return i === 0 ? this.rules.warmupMs : this.rules.nextWarmupMs;
  }

  /** Whether configuration `id` was among the last WARM_CONFIGURATIONS measured (its pipelines cached). */
  isWarm(id: string | undefined): boolean {
    return id !== undefined && this.recent.includes(id);
  }

  /**
   * The predicted wall time of measuring one more configuration of `family` at a shape whose calls take
   * callMs, as the shape's configuration `i`; `id` names it, so that one measured shortly before is
   * predicted at its family's warm set-up where one has been seen.
   */
  predictCandidate(family: string, callMs: number | undefined, i = 0, id?: string): number {
    const warm = this.isWarm(id) ? this.warmSetups.get(family) : undefined;
    const seen = warm ?? this.setups.get(family) ?? Math.max(0, ...this.setups.values());
    const call = callMs ?? 0;
    const warmup = Math.max(this.warmupOf(i), this.warmups.get(family) ?? 0, 2 * call);
    return seen + warmup + this.rules.minBatches * Math.max(this.rules.batchMs, call);
  }

  /** The smallest set-up seen (a first call: pipelines compiled), or 0 before any. */
  smallestSetup(): number {
    return this.setups.size ? Math.min(...this.setups.values()) : 0;
  }

  recordCandidate(family: string, cost: CandidateCost, id?: string): void {
    const setups = this.isWarm(id) ? this.warmSetups : this.setups;
    setups.set(family, Math.max(setups.get(family) ?? 0, cost.setupMs));
    if (cost.warmupMs !== undefined) this.warmups.set(family, cost.warmupMs);
    if (id === undefined) return;
    const at = this.recent.indexOf(id);
    if (at >= 0) this.recent.splice(at, 1);
    this.recent.push(id);
    if (this.recent.length > WARM_CONFIGURATIONS) this.recent.shift();
  }

  /**
   * Measures `candidates` at shape `index` of `shapes` (the first is the rules' kernel) while they fit:
   * the first must fit the sweep's end less `reserve(its id)` (so a shape measured is a shape verified
   * within the sweep), the others this shape's share of the time left less `reserve()`,
   * the predicted verification of the shape's winner that follows, which takes at most half the share
   * (all of it at the last shape: no shape comes after it to absorb an overrun). A whole reservation
   * starved the first shape of an H200's sweep: before any problem had run, its 11 square problems
   * counted as 11 set-ups of 1.9 s, twice its share, and 256³ measured the rules' kernel alone (the
   * verification took 5.2 s, bench/results/2026-11-28-h200-run-log.txt). After the first, `pick` chooses which
   * of the candidates not yet tried comes next (an index into them; default: the first), from what was
   * measured so far: the tuner's search around the fastest configuration (src/tune.ts).
   */
  async sweepShape<M extends { cost: CandidateCost; ms: number }>(
    index: number,
    shapes: number,
    candidates: readonly Candidate[],
    measure: (c: Candidate, deadline: number, warmupMs: number) => Promise<M>,
    reserve: (id?: string) => number = () => 0,
    pick: (left: readonly Candidate[], measured: SweepShapeResult<M>['measured']) => number = () => 0,
  ): Promise<SweepShapeResult<M>> {
    const now = this.clock.now();
    const shapeEnd = now + Math.max(0, this.sweepEnd - now) / (shapes - index);
    const reserveCap = index === shapes - 1 ? Infinity : (shapeEnd - now) / 2;
    const out: SweepShapeResult<M> = { measured: [], skipped: [] };
    let callMs: number | undefined;
    const left = [...candidates];
    for (let i = 0; left.length; i++) {
      const at = i === 0 ? 0 : pick(left, out.measured);
      const [c] = left.splice(Number.isInteger(at) && at >= 0 && at < left.length ? at : 0, 1);
      // The rules' kernel may take the rest of the sweep, less the verification it would commit to as this
      // shape's winner (0 before any set-up: the first shape always gets its rules' kernel; nothing for
      // the problems it ran as an earlier shape's winner).
      const end = i === 0 ? this.sweepEnd - reserve(c.id) : shapeEnd - Math.min(reserve(), reserveCap);
      const predicted = this.predictCandidate(c.family, callMs, i, c.id);
      const t = this.clock.now();
      if (t + predicted > end) {
        out.skipped.push({ id: c.id, why: `predicted ${Math.round(predicted)} ms, ${Math.round(Math.max(0, end - t))} ms left` });
        continue;
      }
      try {
        // Batches beyond the shortest run until half of what is left, so the next configurations keep theirs.
        const m = await measure(c, Math.min(end, t + Math.max(predicted, (end - t) / 2)), this.warmupOf(i));
        this.recordCandidate(c.family, m.cost, c.id);
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
}

export interface VerifyItem<P> {
  problem: P;
  class: ShapeClass;
  macs: number;
}

/**
 * The verification of the winners, in two steps: own(id, class) as soon as a winner wins a shape of that
 * class (the suite's problems of that class, all of them, whatever the clock says; at least one problem),
 * so that their cost is paid inside the sweep's time; rest() at the end, round-robin over the winners,
 * each remaining problem where its predicted time fits the budget's end. A winner stops at its first mismatch.
 */
export class WinnerVerifier<P> {
  private readonly byId = new Map<string, { v: WinnerVerification; mine: VerifyItem<P>[]; ran: Set<VerifyItem<P>> }>();

  constructor(
    private readonly budget: TuneBudget,
    private readonly problems: readonly VerifyItem<P>[],
    private readonly supports: (winner: string, problem: P) => boolean,
    private readonly check: (winner: string, problem: P) => Promise<string>,
  ) {}

  private state(id: string) {
    let st = this.byId.get(id);
    if (!st) {
      const mine = this.problems.filter((p) => this.supports(id, p.problem));
      st = { v: { id, classProblems: 0, problems: 0, of: mine.length, detail: '', ms: 0 }, mine, ran: new Set() };
      this.byId.set(id, st);
    }
    return st;
  }

  private async run(id: string, p: VerifyItem<P>): Promise<void> {
    const st = this.state(id);
    const clock = this.budget.clock;
    const t0 = clock.now();
    const why = await this.check(id, p.problem);
    const ms = clock.now() - t0;
    this.budget.recordProblem(p.macs, ms);
    st.ran.add(p);
    st.v.ms += ms;
    st.v.problems++;
    if (why) st.v.detail = why;
  }

  /** Winner `id` on the suite's problems of class `cls` (null: none in particular), at least one problem. */
  async own(id: string, cls: ShapeClass | null): Promise<WinnerVerification> {
    const st = this.state(id);
    const own = st.mine.filter((p) => p.class === cls);
    for (const p of own.length ? own : st.mine.slice(0, 1)) {
      if (!st.v.detail && !st.ran.has(p)) await this.run(id, p);
    }
    st.v.classProblems = st.v.problems;
    return st.v;
  }

  /**
   * The predicted time of own(<a new winner>, cls), or of own(id, cls) for a kernel that already won a
   * shape: each of the suite's problems of that class (that it has not run) at its predicted time, or,
   * before any problem ran, at the smallest set-up the sweep has seen (a compilation).
   * TuneBudget.sweepShape reserves at most half a shape's share for it (but the last shape's).
   */
  predictOwn(cls: ShapeClass, id?: string): number {
    // A kernel that already won a shape: the class's problems it has not run yet (own() runs no problem twice).
    const st = id === undefined ? undefined : this.byId.get(id);
    if (st) {
      const left = st.mine.filter((p) => p.class === cls && !st.ran.has(p));
      if (st.v.detail || !left.length) return 0;
      return left.reduce((sum, p) => sum + this.predicted(p), 0);
    }
    const own = this.problems.filter((p) => p.class === cls);
    return (own.length ? own : this.problems.slice(0, 1)).reduce((sum, p) => sum + this.predicted(p), 0);
  }

  private predicted(p: VerifyItem<P>): number {
    const t = this.budget.predictProblem(p.macs);
    return Number.isFinite(t) ? t : this.budget.smallestSetup();
  }

  /** The rest of the suite, round-robin over the winners, each problem where it fits the budget's end. */
  async rest(): Promise<void> {
    const lists = [...this.byId.entries()].map(([id, st]) => [id, st.mine.filter((p) => !st.ran.has(p))] as const);
    for (let r = 0; lists.some(([, l]) => r < l.length); r++) {
      for (const [id, list] of lists) {
        const p = list[r];
        if (!p || this.state(id).v.detail) continue;
        if (this.budget.clock.now() + this.budget.predictProblem(p.macs) > this.budget.end) continue;
        await this.run(id, p);
      }
    }
  }

  results(): WinnerVerification[] {
    return [...this.byId.values()].map((st) => st.v);
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

/** The shape class of a verify problem: a rhs of at most 4 bits (decode-u4), few rows (decode), tall and narrow (conv), else square. */
export function problemClass(M: number, N: number, K: number, rhsBits = 8): ShapeClass {
  if (rhsBits <= 4) return 'decode-u4';
  if (M <= 16 || 4 * M <= Math.min(N, K)) return 'decode';
  if (N <= 64 && M >= 2 * N) return 'conv';
  return 'square';
}
