// The call plans of one device's resources (./resources.ts), by prepacked rhs: what a plan serves (the
// problem's snapshot, src/problem/snapshot.ts, and the rhs), what it owns (./record.ts PlanBuilder) and
// ran, at most PLANS_PER_RHS per rhs, freed with the rhs or the context. ./call-plan.ts makes and replays
// them. The plans of gemmOnGpu are kept apart (GPU_PLANS_PER_RHS), since each owns the dst it hands out:
// one whose dst the caller holds is busy, never replayed, and never freed, until releaseMatrix gives it
// back (a plan dropped while busy is freed then). The plans of GEMM chains (ChainPlans, made and replayed
// by ./chain-plan.ts) are kept here too, so that destroying any rhs of a chain frees its plan at once.

import { BufferPool } from '../gpu/pool.ts';
import { Staging } from '../gpu/readback.ts';
import { UniformArena } from '../gpu/uniforms.ts';
import { type ProblemSnapshot, sameProblem, snapshotProblem } from '../problem/snapshot.ts';
import type { GemmProblem, Operand } from '../types.ts';
import type { GpuMatrix, PackedOperand } from './operands.ts';
import type { PatchOperand } from './patches.ts';
import type { LastRun, PlanBuilder } from './record.ts';

/**
 * A problem a plan serves (./call-plan.ts plannable): a prepacked rhs, and a CPU lhs, a GpuMatrix one, or
 * a convolution's patches of either. The snapshot keys a GpuMatrix (the lhs, or the patches' input) by
 * its shape, dtype and stride (it has no data); the plan's lhsMatrix by its buffer.
 */
export type PlannedProblem = Omit<GemmProblem, 'rhs' | 'lhs'> & { rhs: PackedOperand; lhs: Operand | GpuMatrix | PatchOperand };
/** A planned problem as src/problem/snapshot.ts keys it (the lhs by operandKey, whatever its kind). */
const keyOf = (problem: PlannedProblem) => problem as Omit<GemmProblem, 'rhs'>;

/** The GpuMatrix a plan reads where it is, by what its recorded commands bind: null for a CPU lhs (or input). */
export type LhsMatrix = { buffer: GPUBuffer; dtype: string; stride: number } | null;

const sameMatrix = (a: LhsMatrix, b: LhsMatrix) =>
  a === b || (!!a && !!b && a.buffer === b.buffer && a.dtype === b.dtype && a.stride === b.stride);

/** Plans kept per prepacked rhs (e.g. one M for decode, one for prefill); the one unused longest goes first. */
const PLANS_PER_RHS = 2;

/**
 * gemmOnGpu plans kept per prepacked rhs, busy or free: a caller may hold several results of one problem
 * at once (each its own plan and dst), or alternate a decode and a prefill shape. A call finding every
 * plan of its rhs busy and GPU_PLANS_PER_RHS of them runs without a plan (its dst from the pool).
 */
const GPU_PLANS_PER_RHS = 4;

/**
 * A made plan: what it serves (`input`, `rhs`, `lhsMatrix`) and what it replays. `lhsMatrix`: a GpuMatrix
 * lhs (or a convolution's GpuMatrix input), read where it is by the recorded commands (so the plan serves
 * that buffer, with that dtype and stride, only); null: a CPU lhs (or input), written into lhsSource on
 * each replay.
 */
export interface CallPlan extends PlanBuilder {
  readonly rhs: PackedOperand;
  readonly input: ProblemSnapshot;
  readonly ran: LastRun;
  readonly lhsSource: GPUBuffer;
  readonly lhsMatrix: LhsMatrix;
  readonly dst: GpuMatrix;
  readonly label: string;
}

/** What a call that made a plan hands over besides its builder. */
type Made = { ran: LastRun; lhsSource: GPUBuffer; lhsMatrix: LhsMatrix; dst: GpuMatrix; label: string };

/** A gemmOnGpu plan: a call plan without readback whose dst is handed to the caller. */
export interface GpuCallPlan extends CallPlan {
  /** Its dst is handed out and not yet released: not replayed, not freed. */
  busy: boolean;
  /** Dropped (its rhs destroyed, or the context's plans freed) while busy: freed whole at release. */
  orphan: boolean;
}

/** The plans of one device's resources, by prepacked rhs. */
export class CallPlans {
  /** The plans of GEMM chains (./chain-plan.ts). */
  readonly chains = new ChainPlans();
  private readonly byRhs = new Map<PackedOperand, CallPlan[]>();
  /** gemmOnGpu's plans, by prepacked rhs, and every one whose dst may be handed out, by that dst. */
  private readonly onGpu = new Map<PackedOperand, GpuCallPlan[]>();
  private readonly byDst = new Map<GPUBuffer, GpuCallPlan>();
  /** Buffers read in place that may key a plan: a plan's dst, or one an earlier call read (inPlaceWorthPlanning). */
  private readonly seen = new WeakSet<GPUBuffer>();
  constructor(private readonly device: GPUDevice) {}

  /**
   * Whether a call that missed, reading `lhsMatrix` in place, should make a plan: yes for a CPU lhs; for a
   * buffer, only where it is a plan's dst or an earlier call read it. A plan serves one buffer, so one made
   * for a buffer that each call brings anew (a Sequential's elementwise output, made per run) would never
   * be replayed and would push out one that is; such a buffer is remembered, and its second call plans.
   */
  inPlaceWorthPlanning(lhsMatrix: LhsMatrix): boolean {
    if (!lhsMatrix || this.seen.has(lhsMatrix.buffer)) return true;
    this.seen.add(lhsMatrix.buffer);
    return false;
  }

  /** A free gemmOnGpu plan that serves `problem` (and its GpuMatrix lhs, by buffer, dtype and stride) exactly, or null. */
  findOnGpu(problem: PlannedProblem, lhsMatrix: LhsMatrix): GpuCallPlan | null {
    if (problem.rhs.destroyed) return null;
    const list = this.onGpu.get(problem.rhs);
    return list
      ? used(list, (plan) => !plan.busy && sameMatrix(plan.lhsMatrix, lhsMatrix) && sameProblem(keyOf(problem), plan.input))
      : null;
  }

  /** Whether a gemmOnGpu call of `rhs` may make a plan: room for one more, or a free one to push out. */
  roomOnGpu(rhs: PackedOperand): boolean {
    const list = this.onGpu.get(rhs) ?? [];
    return !rhs.destroyed && (list.length < GPU_PLANS_PER_RHS || list.some((plan) => !plan.busy));
  }

  /**
   * Keeps the gemmOnGpu plan that `b` made for `problem`, busy (its dst is being handed out); the free
   * plan of its rhs unused longest goes past GPU_PLANS_PER_RHS. A rhs destroyed meanwhile: the plan is dropped at once
   * (freed when its dst comes back).
   */
  addOnGpu(b: PlanBuilder, problem: PlannedProblem, made: Made): GpuCallPlan {
    const plan: GpuCallPlan = { ...b, ...made, rhs: problem.rhs, input: snapshotProblem(keyOf(problem)), busy: true, orphan: false };
    this.byDst.set(plan.dst.buffer, plan);
    this.seen.add(plan.dst.buffer); // handed out again by every replay: a next layer reading it plans at once
    const list = this.onGpu.get(problem.rhs) ?? [];
    list.push(plan);
    this.onGpu.set(problem.rhs, list);
    while (list.length > GPU_PLANS_PER_RHS) {
      const i = list.findIndex((p) => !p.busy);
      if (i < 0) break;
      this.dropOnGpu(list.splice(i, 1)[0]);
    }
    if (problem.rhs.destroyed) this.drop(problem.rhs);
    return plan;
  }

  /**
   * A dst given back by releaseMatrix: true where it is a gemmOnGpu plan's (the plan is free again, or
   * freed if it was dropped while busy); false for any other buffer (the pool's).
   */
  releaseDst(buffer: GPUBuffer): boolean {
    const plan = this.byDst.get(buffer);
    if (!plan) return false;
    plan.busy = false;
    if (plan.orphan) this.dropOnGpu(plan);
    return true;
  }

  /** gemmOnGpu plans held (busy or free, dropped ones waiting for their dst included), for tests. */
  get sizeOnGpu(): number {
    return this.byDst.size;
  }

  /** Frees a gemmOnGpu plan, or marks it to be freed when its dst comes back (busy). */
  private dropOnGpu(plan: GpuCallPlan): void {
    if (plan.busy) {
      plan.orphan = true;
      return;
    }
    this.byDst.delete(plan.dst.buffer);
    free(plan);
  }

  /** The plan that serves `problem` (and its GpuMatrix lhs, by buffer, dtype and stride) exactly, or null. */
  find(problem: PlannedProblem, lhsMatrix: LhsMatrix): CallPlan | null {
    const list = this.byRhs.get(problem.rhs);
    if (!list || problem.rhs.destroyed) return null;
    return used(list, (plan) => sameMatrix(plan.lhsMatrix, lhsMatrix) && sameProblem(keyOf(problem), plan.input));
  }

  /** Empty owned resources for a plan of `problem`. */
  builder(): PlanBuilder {
    return {
      pool: new BufferPool(this.device, 0),
      uniforms: new UniformArena(this.device),
      staging: new Staging(this.device),
      commands: [],
    };
  }

  /** Keeps the plan that `b` made for `problem` (the one of its rhs unused longest goes past PLANS_PER_RHS). */
  add(b: PlanBuilder, problem: PlannedProblem, made: Made): void {
    if (problem.rhs.destroyed) {
      free(b);
      return;
    }
    const list = this.byRhs.get(problem.rhs) ?? [];
    list.push({ ...b, ...made, rhs: problem.rhs, input: snapshotProblem(keyOf(problem)) });
    while (list.length > PLANS_PER_RHS) free(list.shift()!);
    this.byRhs.set(problem.rhs, list);
  }

  /** Frees what a builder holds, when its call failed or made no plan. */
  discard(b: PlanBuilder): void {
    free(b);
  }

  /** Frees the plans of `rhs` (it is being destroyed); a gemmOnGpu plan whose dst the caller holds, once it comes back. */
  drop(rhs: PackedOperand): void {
    for (const plan of this.byRhs.get(rhs) ?? []) free(plan);
    this.byRhs.delete(rhs);
    for (const plan of this.onGpu.get(rhs) ?? []) this.dropOnGpu(plan);
    this.onGpu.delete(rhs);
    this.chains.drop(rhs);
  }

  /** Frees every plan, gemmOnGpu's busy ones too (the context is destroyed: its matrices go with it). */
  destroy(): void {
    for (const list of this.byRhs.values()) for (const plan of list) free(plan);
    this.byRhs.clear();
    for (const plan of this.byDst.values()) free(plan);
    this.byDst.clear();
    this.onGpu.clear();
    this.chains.destroy();
  }
}

/** Chain plans kept per context (e.g. a decode and a prefill shape of two models); the one unused longest goes first. */
const CHAIN_PLANS = 4;

export interface ChainPlan {
  /** Each GEMM's problem but the lhs data (snapshotProblem of ./chain-plan.ts chainKey). */
  readonly input: ProblemSnapshot[];
  readonly rhs: PackedOperand[];
  readonly builders: PlanBuilder[];
  /** The whole chain as one call plan: every GEMM's commands, the first lhs upload, the last dst. */
  readonly call: CallPlan;
}

/** The chain plans of one context. */
export class ChainPlans {
  private plans: ChainPlan[] = [];

  /** The plan of a chain with these rhs (by identity) whose GEMMs are keyed `keys` (./chain-plan.ts chainKey), or null. */
  find(rhs: readonly PackedOperand[], keys: readonly Omit<GemmProblem, 'rhs'>[]): ChainPlan | null {
    return used(this.plans, (p) => p.rhs.length === rhs.length && rhs.every((x, i) => x === p.rhs[i] && sameProblem(keys[i], p.input[i])));
  }

  add(plan: ChainPlan): void {
    this.plans.push(plan);
    while (this.plans.length > CHAIN_PLANS) this.remove(this.plans[0]);
  }

  /** Frees the plans that use `rhs` (it is being destroyed). */
  drop(rhs: PackedOperand): void {
    for (const plan of this.plans.filter((p) => p.rhs.includes(rhs))) this.remove(plan);
  }

  /** Plans held (for tests). */
  get size(): number {
    return this.plans.length;
  }

  destroy(): void {
    for (const plan of [...this.plans]) this.remove(plan);
  }

  private remove(plan: ChainPlan): void {
    this.plans.splice(this.plans.indexOf(plan), 1);
    for (const b of plan.builders) free(b);
  }
}

/**
 * The first plan of `list` that `serves`, moved to the back: each list is kept in order of use, so that
 * the one unused longest, at the front, is the one pushed out.
 */
function used<T>(list: T[], serves: (plan: T) => boolean): T | null {
  const i = list.findIndex(serves);
  if (i < 0) return null;
  const [plan] = list.splice(i, 1);
  list.push(plan);
  return plan;
}

/** Frees what a plan's builder holds. */
export function freePlan(b: PlanBuilder): void {
  free(b);
}

function free(b: PlanBuilder): void {
  b.pool.destroy();
  b.uniforms.destroy();
  b.staging.destroy();
}
