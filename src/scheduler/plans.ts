// The call plans of one device's resources (./resources.ts), by prepacked rhs: what a plan serves (the
// problem's snapshot, src/problem/snapshot.ts, and the rhs), what it owns (./record.ts PlanBuilder) and
// ran, at most PLANS_PER_RHS per rhs, freed with the rhs or the context. ./call-plan.ts makes and replays
// them.

import { BufferPool } from '../gpu/pool.ts';
import { Staging } from '../gpu/readback.ts';
import { UniformArena } from '../gpu/uniforms.ts';
import { type ProblemSnapshot, sameProblem, snapshotProblem } from '../problem/snapshot.ts';
import type { GemmProblem } from '../types.ts';
import type { GpuMatrix, PackedOperand } from './operands.ts';
import type { LastRun, PlanBuilder } from './record.ts';

/** A problem a plan serves: a CPU lhs and a prepacked rhs (./call-plan.ts plannable). */
export type PlannedProblem = Omit<GemmProblem, 'rhs'> & { rhs: PackedOperand };

/** Plans kept per prepacked rhs (e.g. one M for decode, one for prefill); the oldest goes first. */
const PLANS_PER_RHS = 2;

/** A made plan: what it serves (`input`, `rhs`) and what it replays. */
export interface CallPlan extends PlanBuilder {
  readonly rhs: PackedOperand;
  readonly input: ProblemSnapshot;
  readonly ran: LastRun;
  readonly lhsSource: GPUBuffer;
  readonly dst: GpuMatrix;
  readonly label: string;
}

/** The plans of one device's resources, by prepacked rhs. */
export class CallPlans {
  private readonly byRhs = new Map<PackedOperand, CallPlan[]>();
  constructor(private readonly device: GPUDevice) {}

  /** The plan that serves `problem` exactly, or null. */
  find(problem: PlannedProblem): CallPlan | null {
    const list = this.byRhs.get(problem.rhs);
    if (!list || problem.rhs.destroyed) return null;
    return list.find((plan) => sameProblem(problem, plan.input)) ?? null;
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

  /** Keeps the plan that `b` made for `problem` (the oldest of its rhs goes past PLANS_PER_RHS). */
  add(b: PlanBuilder, problem: PlannedProblem, made: { ran: LastRun; lhsSource: GPUBuffer; dst: GpuMatrix; label: string }): void {
    if (problem.rhs.destroyed) {
      free(b);
      return;
    }
    const list = this.byRhs.get(problem.rhs) ?? [];
    list.push({ ...b, ...made, rhs: problem.rhs, input: snapshotProblem(problem) });
    while (list.length > PLANS_PER_RHS) free(list.shift()!);
    this.byRhs.set(problem.rhs, list);
  }

  /** Frees what a builder holds, when its call failed or made no plan. */
  discard(b: PlanBuilder): void {
    free(b);
  }

  /** Frees the plans of `rhs` (it is being destroyed). */
  drop(rhs: PackedOperand): void {
    for (const plan of this.byRhs.get(rhs) ?? []) free(plan);
    this.byRhs.delete(rhs);
  }

  /** Plans held, in all (for tests). */
  get size(): number {
    let n = 0;
    for (const list of this.byRhs.values()) n += list.length;
    return n;
  }

  destroy(): void {
    for (const list of this.byRhs.values()) for (const plan of list) free(plan);
    this.byRhs.clear();
  }
}

function free(b: PlanBuilder): void {
  b.pool.destroy();
  b.uniforms.destroy();
  b.staging.destroy();
}
